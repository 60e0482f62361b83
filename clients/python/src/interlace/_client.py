"""The clients: one AgentApp's endpoint on an Interlace router
(``<base_url>/v1/apps/<namespace>/<app>``), with its API key. :class:`Client`
is blocking; :class:`AsyncClient` is the same for asyncio. Both are context
managers that close their HTTP connections."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse, connect_sse

from ._errors import api_error
from ._functions import SemanticFunction, app_function
from ._program import AsyncProgram, Program
from ._session import AsyncSession, Session, session_body

#: Streams wait as long as the server keeps them open; connecting does not.
_STREAM_TIMEOUT = httpx.Timeout(30.0, read=None)


def _app_url(base_url: str, app: str) -> str:
    namespace, sep, name = app.partition("/")
    if not sep or not namespace or not name:
        raise ValueError(f'app must be "<namespace>/<name>", got {app!r}')
    return f"{base_url.rstrip('/')}/v1/apps/{namespace}/{name}/"


def _headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def _function(app: dict[str, Any], name: str) -> SemanticFunction[..., Any]:
    for f in app.get("functions", []):
        if f["name"] == name:
            return app_function(name, f["inputs"], f["outputs"])
    known = ", ".join(f["name"] for f in app.get("functions", [])) or "none"
    raise KeyError(f"AgentApp {app['namespace']}/{app['name']} has no semantic function {name!r} (it has {known})")


class Client:
    """A blocking client of one AgentApp: ``Client("http://router:8080", app="default/reports", api_key=...)``."""

    def __init__(self, base_url: str, app: str, *, api_key: str | None = None, timeout: float = 60.0, http_client: httpx.Client | None = None) -> None:
        self._http = http_client or httpx.Client(timeout=timeout)
        self._base = _app_url(base_url, app)
        self._headers = _headers(api_key)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def program(self) -> Program:
        """A new program: ``with client.program() as p:`` (calls made inside go to it)."""
        return Program(self)

    def function(self, name: str) -> SemanticFunction[..., Any]:
        """One of the AgentApp's own semantic functions, by name (call it with keyword inputs)."""
        return _function(self._request("GET", "").json(), name)

    def session(self, prompt: str | list[dict[str, str]], *, max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None, policy: dict[str, Any] | None = None) -> Session:
        """Opens a session (placed by the router); read it with ``events()``."""
        return Session(self, self._request("POST", "sessions", json=session_body(prompt, max_tokens, temperature, seed, policy)).json())

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        res = self._http.request(method, self._base + path if path else self._base.rstrip("/"), headers=self._headers, **kwargs)
        if res.status_code >= 400:
            raise api_error(res)
        return res

    def _sse(self, path: str, last_event_id: str | None = None) -> Iterator[ServerSentEvent]:
        headers = {**self._headers, **({"last-event-id": last_event_id} if last_event_id is not None else {})}
        with connect_sse(self._http, "GET", self._base + path, headers=headers, timeout=_STREAM_TIMEOUT) as source:
            if source.response.status_code >= 400:
                source.response.read()
                raise api_error(source.response)
            # A blank line after a `: ping` comment is no event (httpx-sse yields it with empty data).
            yield from (sse for sse in source.iter_sse() if sse.data != "")


class AsyncClient:
    """The asyncio client: ``async with AsyncClient(...) as client``."""

    def __init__(self, base_url: str, app: str, *, api_key: str | None = None, timeout: float = 60.0, http_client: httpx.AsyncClient | None = None) -> None:
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._base = _app_url(base_url, app)
        self._headers = _headers(api_key)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    def program(self) -> AsyncProgram:
        """A new program: ``async with client.program() as p:``."""
        return AsyncProgram(self)

    async def function(self, name: str) -> SemanticFunction[..., Any]:
        return _function((await self._request("GET", "")).json(), name)

    async def session(self, prompt: str | list[dict[str, str]], *, max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None, policy: dict[str, Any] | None = None) -> AsyncSession:
        return AsyncSession(self, (await self._request("POST", "sessions", json=session_body(prompt, max_tokens, temperature, seed, policy))).json())

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        res = await self._http.request(method, self._base + path if path else self._base.rstrip("/"), headers=self._headers, **kwargs)
        if res.status_code >= 400:
            raise api_error(res)
        return res

    async def _sse(self, path: str, last_event_id: str | None = None) -> AsyncIterator[ServerSentEvent]:
        headers = {**self._headers, **({"last-event-id": last_event_id} if last_event_id is not None else {})}
        async with aconnect_sse(self._http, "GET", self._base + path, headers=headers, timeout=_STREAM_TIMEOUT) as source:
            if source.response.status_code >= 400:
                await source.response.aread()
                raise api_error(source.response)
            async for sse in source.aiter_sse():
                if sse.data != "":
                    yield sse
