"""Programs written with the decorator, against the real router: a
map-reduce and a chain, submitted call by call and run once a value is asked
for; functions that exist only in code; an error raised as an exception
naming the failing call; a cancel mid-program; the asyncio client."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import env
from interlace import (
    AsyncClient,
    AsyncVar,
    BadRequestError,
    CallFailed,
    Client,
    In,
    Output,
    OutputParseError,
    PermissionDeniedError,
    ProgramCancelled,
    Var,
    semantic_function,
)

CHUNKS = [
    "Revenue rose to 4.2 million in the north region, led by Ada Berg's team.",
    "Costs in the south fell by 8 percent after the warehouse in Lund closed.",
    "The east office hired 12 engineers; Omar Nasser now leads the platform group.",
    "Cash reserves stand at 9.1 million; the board approved a 0.3 dividend.",
]


@semantic_function(max_tokens=6)
def digest(part: In) -> Var[str]:
    """Summarize this part of the quarterly report in one sentence, keeping every figure.

    Part:
    {{input:part}}

    Summary: {{output:summary}}"""


@semantic_function(max_tokens=6)
def merge(summaries: In) -> Var[str]:
    """Merge these summaries into one paragraph for the board.

    {{input:summaries}}

    Paragraph: {{output:paragraph}}"""


@semantic_function(max_tokens=6)
def refine(summary: In, part: In) -> Var[str]:
    """Refine the running summary with the next part.

    Summary so far: {{input:summary}}
    Next part: {{input:part}}
    Updated summary: {{output:updated}}"""


def test_map_reduce(client: Client) -> None:
    with client.program() as p:
        parts = [digest(chunk) for chunk in CHUNKS]
        report = merge(parts)
        # Every call reached the router as it was made; none runs before a value is asked for.
        seen = p.status()
        assert list(seen["calls"]) == [v.call for v in parts] + [report.call]
        assert {c["state"] for c in seen["calls"].values()} == {"waiting"}
        text = report.get(criteria="latency")
        assert isinstance(text, str) and text != ""
        calls = p.status()["calls"]
    maps = [calls[v.call] for v in parts]
    # Deduced over the whole DAG (Parrot §5.2): the maps are one task group, the reduce latency-critical.
    assert {m["objective"] for m in maps} == {"task-group"}
    assert calls[report.call]["objective"] == "latency"
    assert len({m["engine"] for m in maps}) == 1, "a task group is placed on one engine"
    assert all(m["state"] == "done" for m in maps)


def test_chain(client: Client) -> None:
    with client.program() as p:
        summary: In = "(nothing yet)"
        steps = []
        for chunk in CHUNKS[:3]:
            summary = refine(summary, chunk)
            steps.append(summary)
        last = steps[-1]
        assert isinstance(last, Var)
        assert last.get(criteria="latency") != ""
        calls = p.status()["calls"]
    assert [calls[s.call]["objective"] for s in steps] == ["latency"] * 3, "a chain is all on the critical path"
    assert all(s.get() != "" for s in steps), "every step's value stays readable"


@semantic_function(template="Name the risk in {{input:plan}}: {{output:risk}}\nIts severity from 1 to 5: {{output:severity}}", outputs={"risk": Output(max_tokens=6), "severity": Output(max_tokens=4)}, policy={"type": "text", "pieces": ["4"]})
def assess(plan: In) -> tuple[Var[str], Var[int]]: ...


@semantic_function(max_tokens=4, policy={"type": "text", "pieces": ["soon"]})
def when(plan: In) -> Var[int]:
    """When does {{input:plan}} ship? Answer with a number of weeks: {{output:weeks}}"""


def test_functions_only_in_code(client: Client) -> None:
    app_summarize = client.function("summarize")
    with client.program() as p:
        # The app's own (reviewed) function beside ones that exist only here.
        plan = app_summarize(chunk="Ship the new warehouse system in spring.")
        risk, severity = assess(plan)
        weeks = when(plan)
        assert severity.get(criteria="latency") == 4, "a typed output is read as its type"
        assert risk.get() == "4"
        with pytest.raises(OutputParseError) as err:
            weeks.get()
        assert err.value.variable == weeks.name and err.value.value == "soon"
        functions = {c["function"] for c in p.status()["calls"].values()}
    assert functions == {"summarize", "assess", "when"}


def test_bad_definition_is_refused_naming_the_field(client: Client) -> None:
    @semantic_function(max_tokens=100_000)
    def ramble(topic: In) -> Var[str]:
        """Ramble about {{input:topic}}: {{output:text}}"""

    with client.program():
        with pytest.raises(BadRequestError) as err:
            ramble("cats")
    assert err.value.status == 400
    assert "functions[0].outputs[0].maxTokens" in err.value.message


def test_error_names_the_failing_call(client: Client) -> None:
    huge = " ".join(f"word{i}" for i in range(2400))[:15_000]
    with client.program():
        first = digest(huge)
        after = digest(first)
        with pytest.raises(CallFailed) as err:
            after.get(criteria="latency")
    assert err.value.code == "dependency_failed"
    assert err.value.call == first.call, "the call where the failure started"
    assert err.value.failed_input == first.name
    with pytest.raises(CallFailed) as root:
        first.get()
    assert root.value.code == "context_overflow" and root.value.call == first.call
    assert first.call in str(root.value)


# Room for the call block before the text: the session then waits on the one-minute sleep.
@semantic_function(max_tokens=64, tools=["sleep"], policy={"type": "lpt-dag", "calls": [{"id": "w", "tool": "sleep", "arguments": {"ms": 60_000}, "dependsOn": []}], "finalText": "done"})
def wait_for(job: In) -> Var[str]:
    """Wait for {{input:job}} to finish.
    Status: {{output:status}}"""


def test_cancel_mid_program(client: Client, other_client: Client) -> None:
    with client.program() as p:
        status = wait_for("the nightly export")
        later = refine(status, "more")
        with pytest.raises(TimeoutError):
            status.get(criteria="latency", timeout=0.2)  # asks for it: the call starts
        deadline = time.monotonic() + 30
        while p.status()["calls"][status.call]["state"] != "running":
            assert time.monotonic() < deadline, "the call never started"
            time.sleep(0.1)
        with pytest.raises(PermissionDeniedError):
            other_client._request("DELETE", f"programs/{p.id}")  # bound to the key that made it
        assert p.cancel() is True
        with pytest.raises(ProgramCancelled) as err:
            status.get()
        assert err.value.call == status.call
        with pytest.raises(ProgramCancelled):
            later.get()
        seen = p.status()
    assert seen["state"] == "cancelled"
    assert seen["calls"][status.call]["state"] == "cancelled"
    assert [e.type for e in p.events()][-1] == "done"


def test_program_bound_to_its_key(client: Client, other_client: Client) -> None:
    with client.program() as p:
        summary = digest(CHUNKS[0])
        assert summary.get() != ""
        with pytest.raises(PermissionDeniedError) as err:
            other_client._request("GET", f"variables/{summary.id}")
        assert err.value.status == 403
    with pytest.raises(PermissionDeniedError):
        other_client._request("GET", f"programs/{p.id}")


# The same templates, for an AsyncProgram (its variables are AsyncVars).
@semantic_function(max_tokens=6, template=digest.template)
def adigest(part: In) -> AsyncVar[str]: ...


@semantic_function(max_tokens=6, template=merge.template)
def amerge(summaries: In) -> AsyncVar[str]: ...


def test_async_map_reduce() -> None:
    async def main() -> None:
        async with AsyncClient(env("INTERLACE_URL"), app=env("INTERLACE_APP"), api_key=env("INTERLACE_API_KEY")) as client:
            async with client.program() as p:
                # Making a call never waits on the network: they are queued and sent in the background.
                parts = [adigest(chunk) for chunk in CHUNKS]
                report = amerge(parts)
                final = await report.get(criteria="latency")
                # The maps' values are there too (several gets may wait at once).
                values = await asyncio.gather(*(v.get() for v in parts))
                assert final != "" and all(v != "" for v in values)
                calls = (await p.status())["calls"]
                assert calls[report.call]["objective"] == "latency"
                assert {calls[v.call]["objective"] for v in parts} == {"task-group"}

    asyncio.run(main())


def test_a_sync_function_in_an_async_program_is_refused() -> None:
    async def main() -> None:
        async with AsyncClient(env("INTERLACE_URL"), app=env("INTERLACE_APP"), api_key=env("INTERLACE_API_KEY")) as client:
            async with client.program():
                with pytest.raises(TypeError, match="AsyncVar"):
                    digest("x")

    asyncio.run(main())
