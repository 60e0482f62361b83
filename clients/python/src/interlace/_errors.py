"""Exceptions: an HTTP error from the router keeps its status and code; a
semantic variable whose call failed raises :class:`CallFailed`, naming the
call where the failure started."""

from __future__ import annotations

from typing import Any

import httpx


class InterlaceError(Exception):
    """Base of every error this package raises."""


class APIError(InterlaceError):
    """The router answered with an error (``{"error": {"code", "message"}}``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class BadRequestError(APIError):
    """400: the body is invalid; the message names the field."""


class AuthenticationError(APIError):
    """401: no API key, or an unknown one."""


class PermissionDeniedError(APIError):
    """403: the resource belongs to another API key, or the app forbids it."""


class NotFoundError(APIError):
    """404: unknown app, program, session or variable."""


class ConflictError(APIError):
    """409: the program or session has ended (or the program was closed)."""


class PayloadTooLargeError(APIError):
    """413: a value, template or program over the limits."""


class RateLimitError(APIError):
    """429: no capacity now; retry after ``retry_after`` seconds."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None) -> None:
        super().__init__(status, code, message)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
}


def api_error(response: httpx.Response) -> APIError:
    """The error an error response stands for (its body already read)."""
    code, message = "http_error", response.text
    try:
        body: Any = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            code = str(body["error"].get("code", code))
            message = str(body["error"].get("message", message))
    except ValueError:
        pass
    if response.status_code == 429:
        retry = response.headers.get("retry-after")
        return RateLimitError(429, code, message, float(retry) if retry is not None else None)
    return _BY_STATUS.get(response.status_code, APIError)(response.status_code, code, message)


class CallFailed(InterlaceError):
    """The value of ``variable`` will never come: call ``call`` failed.

    ``call`` is where the failure started; for a value that depended on a
    failed one, ``failed_input`` is the input variable it read.
    """

    def __init__(self, variable: str, call: str, code: str, message: str, failed_input: str | None = None) -> None:
        super().__init__(f'variable "{variable}": call "{call}" failed ({code}): {message}')
        self.variable = variable
        self.call = call
        self.code = code
        self.message = message
        self.failed_input = failed_input


class ProgramCancelled(CallFailed):
    """The program was cancelled before this value was produced."""


class OutputParseError(InterlaceError):
    """A value could not be read as the type its function declares (``Var[int]``...)."""

    def __init__(self, variable: str, value: str, target: str, cause: Exception) -> None:
        super().__init__(f'variable "{variable}": {value!r} is not a {target} ({cause})')
        self.variable = variable
        self.value = value
