"""The tests run against a real router with two real engines and a real
nats-server, which `test/clients/interlace-python.test.ts` starts and names
in the environment: INTERLACE_URL, INTERLACE_APP (an AgentApp with a
`summarize` function and the `sleep` tool), INTERLACE_API_KEY and
INTERLACE_OTHER_API_KEY (a second principal)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from interlace import Client


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through test/clients/interlace-python.test.ts, which starts the router they need")
    return value


@pytest.fixture
def client() -> Iterator[Client]:
    with Client(env("INTERLACE_URL"), app=env("INTERLACE_APP"), api_key=env("INTERLACE_API_KEY")) as c:
        yield c


@pytest.fixture
def other_client() -> Iterator[Client]:
    with Client(env("INTERLACE_URL"), app=env("INTERLACE_APP"), api_key=env("INTERLACE_OTHER_API_KEY")) as c:
        yield c
