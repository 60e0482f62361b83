"""Interlace's Python client: Parrot-style programs of semantic functions
defined in code, whose variables are futures the router resolves as a DAG;
sessions with their event stream, user interrupts and cached tool outputs.

    from interlace import Client, In, Var, semantic_function

    @semantic_function(max_tokens=48)
    def summarize(chunk: In) -> Var[str]:
        \"\"\"Summarize this part of the report in one sentence.

        Part:
        {{input:chunk}}

        Summary: {{output:summary}}\"\"\"

    with Client("http://localhost:8080", app="default/reports") as client:
        with client.program():
            summaries = [summarize(chunk) for chunk in chunks]
            ...
"""

from ._client import AsyncClient, Client
from ._errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    CallFailed,
    ConflictError,
    InterlaceError,
    NotFoundError,
    OutputParseError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ProgramCancelled,
    RateLimitError,
)
from ._functions import Output, SemanticFunction, app_function, semantic_function
from ._program import In
from ._program import AsyncProgram, AsyncVar, Criteria, Program, ProgramEvent, SemanticVariable, Var
from ._session import AsyncSession, Event, Session, ToolOutput

__all__ = [
    "APIError",
    "AsyncClient",
    "AsyncProgram",
    "AsyncSession",
    "AsyncVar",
    "AuthenticationError",
    "BadRequestError",
    "CallFailed",
    "Client",
    "ConflictError",
    "Criteria",
    "Event",
    "In",
    "InterlaceError",
    "NotFoundError",
    "Output",
    "OutputParseError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Program",
    "ProgramCancelled",
    "ProgramEvent",
    "RateLimitError",
    "SemanticFunction",
    "SemanticVariable",
    "Session",
    "ToolOutput",
    "Var",
    "app_function",
    "semantic_function",
]
