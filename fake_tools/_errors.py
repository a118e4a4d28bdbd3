"""Exceptions raised by fake tools, and the error for a bad tool or fault definition.

When a tool delivers faults as exceptions, each fault raises the exception a real
client library would raise (a ``TimeoutError`` for a timeout, a ``ConnectionResetError``
for a reset, a ``PermissionError`` for permission denied), always a ``ToolError`` too,
so a runtime can read the outcome class without guessing from the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolchaos.fake_tools._outcomes import Outcome


class DefinitionError(ValueError):
    """A fake tool, fault or schedule definition is invalid.

    The message names the tool and the field, what was given and what was expected.
    """

    def __init__(self, tool: str, field: str, problem: str) -> None:
        self.tool = tool
        self.field = field
        self.problem = problem
        super().__init__(f"tool {tool!r}, field {field!r}: {problem}")


class ToolError(Exception):
    """A fault delivered as an exception. ``outcome`` carries class, code and retry hints."""

    def __init__(self, tool: str, outcome: Outcome) -> None:
        self.tool = tool
        self.outcome = outcome
        self.code = outcome.code
        self.cls = outcome.cls
        self.retryable = outcome.retryable
        self.retry_after = outcome.retry_after
        self.field = outcome.field
        detail = outcome.message or outcome.code.replace("_", " ")
        super().__init__(f"{tool}: {detail} [{outcome.cls.value}/{outcome.code}]")


class ToolTimeout(ToolError, TimeoutError):
    """The call timed out; whether its effect applied is unknown to the caller."""


class ToolConnectionReset(ToolError, ConnectionResetError):
    """The connection was reset before a response arrived."""


class ToolPermissionDenied(ToolError, PermissionError):
    """The caller is not allowed to do this; retrying cannot help."""


class ToolNotFound(ToolError, LookupError):
    """The resource does not exist."""


class ToolInvalidArgument(ToolError, ValueError):
    """An argument is missing or invalid; ``field`` names it."""


_BY_CODE: dict[str, type[ToolError]] = {
    "timeout": ToolTimeout,
    "connection_reset": ToolConnectionReset,
    "permission_denied": ToolPermissionDenied,
    "policy_blocked": ToolPermissionDenied,
    "not_found": ToolNotFound,
    "invalid_argument": ToolInvalidArgument,
    "missing_argument": ToolInvalidArgument,
    "wrong_type": ToolInvalidArgument,
}


def exception_for(tool: str, outcome: Outcome) -> ToolError:
    """The exception a real client would raise for this outcome."""
    return _BY_CODE.get(outcome.code, ToolError)(tool, outcome)
