"""Error classes: what a tool's answer means for the next move.

Each answer is read once into a ``Reading``: its class, the code, the server's wait, the field at
fault, and whether a side effect may have happened although the caller got an error. The
classes and what the runtime does with each:

| class | examples | what the runtime does |
|---|---|---|
| ``OK`` | data | hand it to the model |
| ``PENDING`` | ``{"status": "processing"}`` | poll no sooner than its interval, within the poll cap and deadline |
| ``TRANSIENT`` | timeout, 503, connection reset | retry with backoff and jitter, a bounded number of times |
| ``RATE_LIMITED`` | 429 | the same, never before the server's wait |
| ``INVALID`` | a missing or mistyped argument | give the model the field; refuse the same request unchanged |
| ``CONFLICT`` | an idempotency key reused with other arguments | as ``INVALID``: the request must change |
| ``NOT_FOUND`` | the resource does not exist | stop (FAILED): asking again cannot create it |
| ``AUTH`` | permission denied, blocked by policy | stop and hand over to a person (NEEDS_HUMAN), never probe around it |
| ``PERMANENT`` | any other non-retryable error | stop (FAILED) |

Errors come as an error payload (``{"error": {"code", "class", "retryable", ...}}``) or as a
raised exception: a client library's exception carries what the server said (``exc.outcome``
in the harness's tools), else its built-in type is all there is to go by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from toolchaos._agents._production._retry_after import server_wait


class ErrorClass(str, Enum):
    OK = "OK"
    PENDING = "PENDING"
    TRANSIENT = "TRANSIENT"
    RATE_LIMITED = "RATE_LIMITED"
    INVALID = "INVALID"
    CONFLICT = "CONFLICT"
    NOT_FOUND = "NOT_FOUND"
    AUTH = "AUTH"
    PERMANENT = "PERMANENT"


RETRY = frozenset({ErrorClass.TRANSIENT, ErrorClass.RATE_LIMITED})
FIX_INPUT = frozenset({ErrorClass.INVALID, ErrorClass.CONFLICT})
STOP = frozenset({ErrorClass.NOT_FOUND, ErrorClass.AUTH, ErrorClass.PERMANENT})

_BY_CODE: dict[str, ErrorClass] = {
    "rate_limited": ErrorClass.RATE_LIMITED, "too_many_requests": ErrorClass.RATE_LIMITED,
    "timeout": ErrorClass.TRANSIENT, "connection_reset": ErrorClass.TRANSIENT, "unavailable": ErrorClass.TRANSIENT,
    "overloaded": ErrorClass.TRANSIENT, "internal": ErrorClass.TRANSIENT, "bad_gateway": ErrorClass.TRANSIENT,
    "invalid_argument": ErrorClass.INVALID, "missing_argument": ErrorClass.INVALID, "wrong_type": ErrorClass.INVALID,
    "unknown_argument": ErrorClass.INVALID, "idempotency_key_reused": ErrorClass.CONFLICT,
    "not_found": ErrorClass.NOT_FOUND,
    "permission_denied": ErrorClass.AUTH, "policy_blocked": ErrorClass.AUTH, "unauthorized": ErrorClass.AUTH,
    "forbidden": ErrorClass.AUTH, "needs_human": ErrorClass.AUTH,
}
# The server never answered: a write may have been applied although the caller got an error.
_OUTCOME_UNKNOWN = frozenset({"timeout", "connection_reset"})
_BY_WIRE_CLASS = {"RETRYABLE": ErrorClass.TRANSIENT, "PRECONDITION": ErrorClass.INVALID, "FATAL": ErrorClass.PERMANENT}
_PENDING = frozenset({"pending", "processing", "queued", "running", "in_progress"})


@dataclass(frozen=True)
class Reading:
    """One answer of a tool, as the runtime reads it."""

    cls: ErrorClass
    code: str | None = None
    wait: float | None = None  # seconds the server asked for (Retry-After in any form, a poll interval)
    field: str | None = None  # the argument at fault
    outcome_unknown: bool = False  # an error after which a side effect may have happened anyway

    @property
    def is_error(self) -> bool:
        return self.cls not in (ErrorClass.OK, ErrorClass.PENDING)


def error_class(code: str | None, wire_class: str | None = None, retryable: bool | None = None) -> ErrorClass:
    """The class of an error from its code, else the class the API gave it, else its retryable flag."""
    if code and code.lower() in _BY_CODE:
        return _BY_CODE[code.lower()]
    if code and code.isdigit():  # an HTTP status as the code
        status = int(code)
        return (ErrorClass.RATE_LIMITED if status == 429 else ErrorClass.TRANSIENT if status >= 500
                else ErrorClass.AUTH if status in (401, 403) else ErrorClass.NOT_FOUND if status == 404
                else ErrorClass.INVALID)
    if wire_class and wire_class.upper() in _BY_WIRE_CLASS:
        return _BY_WIRE_CLASS[wire_class.upper()]
    return ErrorClass.TRANSIENT if retryable else ErrorClass.PERMANENT


def read_result(result: Any, now: datetime) -> Reading:
    """Read a returned result: an error payload, a pending job, or data."""
    if isinstance(result, Mapping):
        error = result.get("error")
        if isinstance(error, Mapping):
            return _read_error(error, now)
        if isinstance(error, str) and error:
            return Reading(ErrorClass.PERMANENT, wait=server_wait(text=error, now=now))
        if str(result.get("status", "")).lower() in _PENDING:
            interval = result.get("retry_after")
            return Reading(ErrorClass.PENDING, wait=float(interval) if isinstance(interval, (int, float)) else None)
    return Reading(ErrorClass.OK)


def _read_error(error: Mapping[str, Any], now: datetime) -> Reading:
    code = error.get("code")
    code = str(code) if code is not None else None
    cls = error_class(code, error.get("class"), error.get("retryable"))
    headers = error.get("headers")
    wait = server_wait(error.get("retry_after"), headers if isinstance(headers, Mapping) else None,
                       str(error.get("message") or ""), now=now)
    return Reading(cls, code, wait, error.get("field"), code in _OUTCOME_UNKNOWN)


def read_exception(exc: BaseException, now: datetime) -> Reading:
    """Read a raised tool error: what it carries from the server, else its built-in type."""
    said = getattr(exc, "outcome", None)
    code = getattr(said, "code", None)
    wire = getattr(said, "cls", None)
    if code is not None or wire is not None:
        cls = error_class(code, getattr(wire, "value", wire), getattr(said, "retryable", None))
        wait = server_wait(getattr(said, "retry_after", None), getattr(said, "headers", None) or None,
                           str(exc), now=now)
        return Reading(cls, code, wait, getattr(said, "field", None), code in _OUTCOME_UNKNOWN)
    wait = server_wait(text=str(exc), now=now)
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return Reading(ErrorClass.TRANSIENT, "timeout" if isinstance(exc, TimeoutError) else "connection_reset",
                       wait, outcome_unknown=True)
    if isinstance(exc, PermissionError):
        return Reading(ErrorClass.AUTH, "permission_denied")
    if isinstance(exc, LookupError):
        return Reading(ErrorClass.NOT_FOUND, "not_found")
    if isinstance(exc, (ValueError, TypeError)):
        return Reading(ErrorClass.INVALID, "invalid_argument")
    return Reading(ErrorClass.TRANSIENT if wait is not None else ErrorClass.PERMANENT, type(exc).__name__, wait)
