"""Programs (Parrot §4): semantic variables are futures, and each call of a
semantic function is submitted to the router the moment it is made, so the
router sees the DAG before any value is needed. Nothing runs until a value
is asked for: ``get`` (with its ``criteria``, latency or throughput) tells
the router which final output the calls feed, and the router deduces each
call's objective from there (Parrot §5.2) before it starts them. Leaving the
``with`` block closes the program (what was not asked for runs then);
leaving it on an exception cancels it.

The sync :class:`Program` posts each call as it is made; the
:class:`AsyncProgram` queues it and a background task posts what has queued
in one request while the previous one is in flight, so making a call never
waits on the network.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Union

from ._errors import CallFailed, OutputParseError, ProgramCancelled
from ._functions import VARIABLE_NAME, SemanticFunction

if TYPE_CHECKING:
    from ._client import AsyncClient, Client

T = TypeVar("T")
Criteria = Literal["latency", "throughput"]
"""Parrot's performance criteria on a ``get``: end-to-end latency, or throughput."""

_current: contextvars.ContextVar[_ProgramBase | None] = contextvars.ContextVar("interlace_program", default=None)

#: How a text value is read (no parsing).
_TEXT: tuple[str, Callable[[str], Any]] = ("str", lambda v: v)

#: How long one long-poll of a variable waits on the router (its maximum is 120 s).
_POLL_MS = 60_000


def current_program(function: str) -> _ProgramBase:
    program = _current.get()
    if program is None:
        raise RuntimeError(f"{function}(...) was called outside a program: call it inside `with client.program():` (or `async with`)")
    return program


@dataclass(frozen=True)
class ProgramEvent:
    """One event of a program's stream: ``value``, ``failed`` or ``done`` and its fields."""

    type: str
    data: dict[str, Any]


class SemanticVariable(Generic[T]):
    """A variable of a program: an input given by value or the future output of a call."""

    def __init__(self, program: _ProgramBase, name: str, call: str | None, reader: tuple[str, Callable[[str], Any]]) -> None:
        self.program = program
        self.name = name
        #: The call producing it (None for a program input).
        self.call = call
        self._reader = reader

    @property
    def id(self) -> str:
        """``<program id>.<name>``, the router's variable id."""
        return f"{self.program.id}.{self.name}"

    def _query(self, criteria: Criteria | None, wait_ms: int) -> dict[str, str]:
        params = {"timeoutMs": str(wait_ms)}
        if criteria is not None:
            params["criteria"] = criteria
        return params

    def _read(self, body: dict[str, Any]) -> T:
        if body["state"] == "failed":
            e = body["error"]
            kind = ProgramCancelled if e["code"] == "cancelled" else CallFailed
            raise kind(self.name, e["call"], e["code"], e["message"], e.get("variable"))
        value = str(body["value"])
        target, parse = self._reader
        try:
            result: T = parse(value)
            return result
        except ValueError as err:
            raise OutputParseError(self.name, value, target, err) from err

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} of {self.call or 'the program inputs'}>"


class Var(SemanticVariable[T]):
    """A variable of a sync :class:`Program`."""

    program: Program

    def get(self, criteria: Criteria | None = None, *, timeout: float | None = None) -> T:
        """Waits for the value. ``criteria`` makes it a final output with that
        performance criterion (Parrot's ``get(perf=...)``); without it, the
        app's objective. Raises :class:`CallFailed` naming the call that failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _wait_ms(deadline)
            res = self.program.client._request("GET", f"variables/{self.id}", params=self._query(criteria, wait), timeout=wait / 1000 + 30)
            if res.status_code == 200:
                return self._read(res.json())
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"variable {self.name} not ready after {timeout} s")


class AsyncVar(SemanticVariable[T]):
    """A variable of an :class:`AsyncProgram`."""

    program: AsyncProgram

    async def get(self, criteria: Criteria | None = None, *, timeout: float | None = None) -> T:
        """As :meth:`Var.get`; first waits for the calls made so far to reach the router."""
        await self.program.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _wait_ms(deadline)
            res = await self.program.client._request("GET", f"variables/{self.id}", params=self._query(criteria, wait), timeout=wait / 1000 + 30)
            if res.status_code == 200:
                return self._read(res.json())
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"variable {self.name} not ready after {timeout} s")


def _wait_ms(deadline: float | None) -> int:
    if deadline is None:
        return _POLL_MS
    return max(0, min(_POLL_MS, int((deadline - time.monotonic()) * 1000)))


In = Union[str, SemanticVariable[Any], Sequence[Union[str, SemanticVariable[Any]]]]
"""What a semantic function takes for an input: a value, a variable, or a list of them (joined by blank lines)."""


@dataclass
class _Batch:
    """Calls (with the inputs and functions they bring) not yet sent to the router."""

    inputs: dict[str, str] = field(default_factory=dict)
    functions: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: _Batch) -> None:
        self.inputs.update(other.inputs)
        self.functions.extend(other.functions)
        self.calls.extend(other.calls)

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls}
        if self.inputs:
            out["inputs"] = self.inputs
        if self.functions:
            out["functions"] = self.functions
        return out


class _ProgramBase:
    """What sync and async programs share: naming, and calls turned into request bodies."""

    kind: type[SemanticVariable[Any]]

    def __init__(self) -> None:
        self.id = ""
        self._cancelled = False
        self._count = 0
        self._sent_functions: set[str] = set()

    def _next(self) -> int:
        self._count += 1
        return self._count

    def _input(self, value: str, name: str | None, batch: _Batch) -> str:
        """Adds an input variable holding `value` to `batch`; returns its name."""
        if name is None:
            name = f"input_{self._next()}"
        elif not VARIABLE_NAME.match(name):
            raise ValueError(f"input name {name!r} must match {VARIABLE_NAME.pattern}")
        batch.inputs[name] = value
        return name

    def _variable(self, value: Any, fn: str, arg: str, batch: _Batch) -> str:
        if isinstance(value, str):
            return self._input(value, None, batch)
        if isinstance(value, SemanticVariable):
            if value.program is not self:
                raise ValueError(f"{fn}({arg}=...): variable {value.name} belongs to another program")
            return value.name
        raise TypeError(f"{fn}({arg}=...): expected a str, a variable or a list of them, got {type(value).__name__}")

    def _build(self, fn: SemanticFunction[..., Any], arguments: dict[str, Any]) -> tuple[_Batch, Any]:
        """The request body of one call, and what the caller gets back (a variable or a tuple of them)."""
        if fn.kind is not None and fn.kind != self.kind.__name__:
            raise TypeError(f"{fn.name} is annotated to return {fn.kind}, but this program's variables are {self.kind.__name__}s")
        batch = _Batch()
        missing = [i for i in fn.inputs if i not in arguments]
        if missing:
            raise TypeError(f"{fn.name}: missing input(s) {missing}")
        bind: dict[str, Any] = {}
        for arg, value in arguments.items():
            if arg not in fn.inputs:
                raise TypeError(f"{fn.name} has no input {arg!r} (it takes {fn.inputs})")
            if isinstance(value, (list, tuple)):
                bind[arg] = [self._variable(v, fn.name, arg, batch) for v in value]
            else:
                bind[arg] = self._variable(value, fn.name, arg, batch)
        n = self._next()
        call_id = f"{fn.name[:48]}_{n}"
        produces = {o: f"{o[:48]}_{n}" for o in fn.output_names}
        call: dict[str, Any] = {"id": call_id, "function": fn.name, "inputs": bind, "outputs": produces}
        if fn.policy is not None:
            call["policy"] = fn.policy
        batch.calls.append(call)
        if fn.defined and fn.name not in self._sent_functions:
            batch.functions.append(fn.definition())
            self._sent_functions.add(fn.name)
        outs = [self.kind(self, produces[o], call_id, fn.readers[i]) for i, o in enumerate(fn.output_names)]
        return batch, outs[0] if len(outs) == 1 else tuple(outs)

    def call(self, fn: SemanticFunction[..., Any], arguments: dict[str, Any]) -> Any:
        raise NotImplementedError


class Program(_ProgramBase):
    """A program run by the router; use it as a context manager (``with client.program() as p``)."""

    kind = Var

    def __init__(self, client: Client) -> None:
        super().__init__()
        self.client = client
        self._token: contextvars.Token[_ProgramBase | None] | None = None

    def __enter__(self) -> Program:
        res = self.client._request("POST", "programs", json={"open": True})
        self.id = res.json()["id"]
        self._token = _current.set(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
        if self._cancelled:
            return
        if exc is None:
            self.close()
        else:
            self.cancel()

    def input(self, value: str, name: str | None = None) -> Var[str]:
        """A program input variable holding ``value`` (a str passed to a function becomes one too)."""
        batch = _Batch()
        var: Var[str] = Var(self, self._input(value, name, batch), None, _TEXT)
        self._post(batch)
        return var

    def call(self, fn: SemanticFunction[..., Any], arguments: dict[str, Any]) -> Any:
        """Submits one call now; returns its output variable(s)."""
        batch, out = self._build(fn, arguments)
        self._post(batch)
        return out

    def _post(self, batch: _Batch) -> None:
        self.client._request("POST", f"programs/{self.id}/calls", json=batch.body())

    def close(self) -> None:
        """No more calls: what has not been asked for runs now (the router keeps values for a while)."""
        self.client._request("POST", f"programs/{self.id}/calls", json={"close": True})

    def cancel(self) -> bool:
        """Cancels the program and its running calls; False when it had already ended."""
        self._cancelled = True
        cancelled: bool = self.client._request("DELETE", f"programs/{self.id}").json()["cancelled"]
        return cancelled

    def status(self) -> dict[str, Any]:
        """The router's view: state, every variable and call (objective, engine, usage)."""
        body: dict[str, Any] = self.client._request("GET", f"programs/{self.id}").json()
        return body

    def events(self) -> Iterator[ProgramEvent]:
        """The program's events (past ones first) until it ends."""
        for sse in self.client._sse(f"programs/{self.id}/events"):
            yield ProgramEvent(sse.event, sse.json())


class AsyncProgram(_ProgramBase):
    """A program run by the router; ``async with client.program() as p``."""

    kind = AsyncVar

    def __init__(self, client: AsyncClient) -> None:
        super().__init__()
        self.client = client
        self._token: contextvars.Token[_ProgramBase | None] | None = None
        self._queue = _Batch()
        self._sender: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    async def __aenter__(self) -> AsyncProgram:
        res = await self.client._request("POST", "programs", json={"open": True})
        self.id = res.json()["id"]
        self._token = _current.set(self)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
        if self._cancelled:
            return
        if exc is None:
            await self.close()
        else:
            await self.cancel()

    def input(self, value: str, name: str | None = None) -> AsyncVar[str]:
        batch = _Batch()
        var: AsyncVar[str] = AsyncVar(self, self._input(value, name, batch), None, _TEXT)
        self._enqueue(batch)
        return var

    def call(self, fn: SemanticFunction[..., Any], arguments: dict[str, Any]) -> Any:
        """Queues one call (sent at once in the background); returns its output variable(s)."""
        batch, out = self._build(fn, arguments)
        self._enqueue(batch)
        return out

    def _enqueue(self, batch: _Batch) -> None:
        self._queue.merge(batch)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        # Whatever queued while a request was in flight goes in the next one, in order.
        while self._queue.calls or self._queue.inputs:
            batch, self._queue = self._queue, _Batch()
            try:
                await self.client._request("POST", f"programs/{self.id}/calls", json=batch.body())
            except BaseException as err:  # surfaced by flush(), on the next get or on exit
                self._error = err
                return

    async def flush(self) -> None:
        """Waits until every call made so far has reached the router; raises a submission's error."""
        if self._sender is not None:
            await asyncio.shield(self._sender)
        if self._error is not None:
            raise self._error

    async def close(self) -> None:
        await self.flush()
        await self.client._request("POST", f"programs/{self.id}/calls", json={"close": True})

    async def cancel(self) -> bool:
        self._cancelled = True
        if self._sender is not None:
            await asyncio.wait([self._sender])
        cancelled: bool = (await self.client._request("DELETE", f"programs/{self.id}")).json()["cancelled"]
        return cancelled

    async def status(self) -> dict[str, Any]:
        body: dict[str, Any] = (await self.client._request("GET", f"programs/{self.id}")).json()
        return body

    async def events(self) -> AsyncIterator[ProgramEvent]:
        async for sse in self.client._sse(f"programs/{self.id}/events"):
            yield ProgramEvent(sse.event, sse.json())
