"""Sessions: one agent turn on an engine, with its event stream (text, tool
calls, interrupts injected, traps, done), user interrupts sent while it
decodes, tool outputs the client already has (``cache-tool-output``), and
cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._client import AsyncClient, Client


@dataclass(frozen=True)
class Event:
    """One session event: its ``type`` (``started``, ``text``, ``call``,
    ``interrupt``, ``trap``, ``resume``, ``done``, ``error``...) and fields."""

    type: str
    data: dict[str, Any]
    id: str | None = None

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


@dataclass(frozen=True)
class ToolOutput:
    """An output the client already has for a tool call: served from the
    engine's tool cache when the session makes that call (``params`` absent:
    any call of the tool); kept ``keep_alive`` seconds."""

    name: str
    output: Any
    params: dict[str, Any] | None = None
    keep_alive: float | None = None

    def entry(self) -> dict[str, Any]:
        e: dict[str, Any] = {"name": self.name, "output": self.output}
        if self.params is not None:
            e["params"] = self.params
        if self.keep_alive is not None:
            e["keep_alive"] = self.keep_alive
        return e


InterruptKind = Literal["user", "agent"]


def session_body(prompt: str | list[dict[str, str]], max_tokens: int | None, temperature: float | None, seed: int | None, policy: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"prompt": prompt}
    for key, value in (("maxTokens", max_tokens), ("temperature", temperature), ("seed", seed), ("policy", policy)):
        if value is not None:
            body[key] = value
    return body


def interrupt_body(value: str, kind: InterruptKind, id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"value": value, "kind": kind}
    if id is not None:
        body["id"] = id
    return body


class Session:
    """A session opened through the router (``client.session(...)``)."""

    def __init__(self, client: Client, created: dict[str, Any]) -> None:
        self.client = client
        self.id: str = created["id"]
        #: The engine pod it was placed on, and why.
        self.engine: str = created["engine"]
        self.placement: dict[str, Any] = created["placement"]

    def events(self, last_event_id: str | None = None) -> Iterator[Event]:
        """The session's events until ``done`` (past ones first; ``last_event_id`` resumes after one)."""
        for sse in self.client._sse(f"sessions/{self.id}/events", last_event_id):
            yield Event(sse.event, sse.json(), sse.id or None)

    def interrupt(self, value: str, *, kind: InterruptKind = "user", id: str | None = None) -> dict[str, Any]:
        """Injects ``value`` into the live session as an interrupt (the app must take user interrupts)."""
        accepted: dict[str, Any] = self.client._request("POST", f"sessions/{self.id}/interrupts", json=interrupt_body(value, kind, id)).json()
        return accepted

    def cache_tool_output(self, outputs: Iterable[ToolOutput]) -> int:
        """Gives the engine tool outputs the client already has; returns how many were cached."""
        res = self.client._request("POST", f"sessions/{self.id}/cache-tool-output", json=[o.entry() for o in outputs])
        cached: int = res.json()["cached"]
        return cached

    def cancel(self) -> None:
        """Cancels the session on its engine."""
        self.client._request("DELETE", f"sessions/{self.id}")


class AsyncSession:
    """A session opened through the router (``await client.session(...)``)."""

    def __init__(self, client: AsyncClient, created: dict[str, Any]) -> None:
        self.client = client
        self.id: str = created["id"]
        self.engine: str = created["engine"]
        self.placement: dict[str, Any] = created["placement"]

    async def events(self, last_event_id: str | None = None) -> AsyncIterator[Event]:
        async for sse in self.client._sse(f"sessions/{self.id}/events", last_event_id):
            yield Event(sse.event, sse.json(), sse.id or None)

    async def interrupt(self, value: str, *, kind: InterruptKind = "user", id: str | None = None) -> dict[str, Any]:
        accepted: dict[str, Any] = (await self.client._request("POST", f"sessions/{self.id}/interrupts", json=interrupt_body(value, kind, id))).json()
        return accepted

    async def cache_tool_output(self, outputs: Iterable[ToolOutput]) -> int:
        res = await self.client._request("POST", f"sessions/{self.id}/cache-tool-output", json=[o.entry() for o in outputs])
        cached: int = res.json()["cached"]
        return cached

    async def cancel(self) -> None:
        await self.client._request("DELETE", f"sessions/{self.id}")
