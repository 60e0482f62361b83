"""Sessions through the real router: a user interrupt injected into a live
session, a tool output the client already had served from the engine's tool
cache (the call's one-minute tool never runs), cancel, and the asyncio
client. The sessions are scripted (a `policy`): the generated model's
weights are random."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import env
from interlace import AsyncClient, Client, PermissionDeniedError, ToolOutput


def waits_for(interrupt: str, ms: int = 1) -> dict[str, object]:
    """A session whose call `after` is only made once the user interrupt `interrupt` is injected."""
    return {
        "type": "lpt-dag",
        "calls": [{"id": "after", "tool": "sleep", "arguments": {"ms": ms}, "dependsOn": [], "estimatedLatencyMs": ms, "afterInterrupt": interrupt}],
        "finalText": "ok",
    }


def test_user_interrupt(client: Client, other_client: Client) -> None:
    session = client.session("Wait for my go.", policy=waits_for("u1"))
    with pytest.raises(PermissionDeniedError):
        other_client._request("POST", f"sessions/{session.id}/interrupts", json={"value": "hijack"})
    accepted = session.interrupt("go", id="u1")
    assert accepted["kind"] == "user" and accepted["sessionId"] == session.id
    events = list(session.events())
    user = [e for e in events if e.type == "interrupt" and e["kind"] == "user"]
    assert [(e["id"], e["value"]) for e in user] == [("u1", "go")]
    assert any(e.type == "call" and e["callId"] == "after" for e in events), "the call the interrupt released"
    assert events[-1].type == "done" and events[-1]["reason"] != "error"


def test_cache_tool_output(client: Client) -> None:
    session = client.session("Run the long job when I say go.", policy=waits_for("go", ms=60_000))
    assert session.cache_tool_output([ToolOutput("sleep", "finished from the client's cache", params={"ms": 60_000})]) == 1
    session.interrupt("go", id="go")
    started = time.monotonic()
    events = list(session.events())
    results = [e for e in events if e.type == "interrupt" and e["kind"] == "tool_result"]
    assert [e["value"] for e in results] == ["finished from the client's cache"]
    assert events[-1].type == "done"
    assert time.monotonic() - started < 55, "the one-minute tool did not run"


def test_cancel_session(client: Client) -> None:
    session = client.session("Wait for a go that never comes.", policy=waits_for("never"))
    session.cancel()
    events = list(session.events())
    assert events[-1].type == "done" and events[-1]["reason"] == "cancelled"


def test_async_session_with_interrupt() -> None:
    async def main() -> None:
        async with AsyncClient(env("INTERLACE_URL"), app=env("INTERLACE_APP"), api_key=env("INTERLACE_API_KEY")) as client:
            session = await client.session("Wait for my go.", policy=waits_for("u2"))
            seen = []
            async for event in session.events():
                seen.append(event)
                if event.type == "started":
                    await session.interrupt("go now", id="u2")
            assert any(e.type == "interrupt" and e["id"] == "u2" and e["value"] == "go now" for e in seen)
            assert seen[-1].type == "done"

    asyncio.run(main())
