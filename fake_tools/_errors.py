"""Which exception a fake tool raises for an outcome, when it delivers faults as exceptions.

The classes live in ``toolchaos.errors``: each is the exception a real client library
would raise (a ``TimeoutError`` for a timeout, a ``ConnectionResetError`` for a reset,
a ``PermissionError`` for permission denied), always a ``ToolError`` too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolchaos.errors import (
    ToolConnectionReset,
    ToolError,
    ToolInvalidArgument,
    ToolNotFound,
    ToolPermissionDenied,
    ToolTimeout,
)

if TYPE_CHECKING:
    from toolchaos.fake_tools._outcomes import Outcome

_BY_CODE: dict[str, type[ToolError]] = {
    "timeout": ToolTimeout,
    "connection_reset": ToolConnectionReset,
    "permission_denied": ToolPermissionDenied,
    "policy_blocked": ToolPermissionDenied,
    "not_found": ToolNotFound,
    "invalid_argument": ToolInvalidArgument,
    "missing_argument": ToolInvalidArgument,
    "wrong_type": ToolInvalidArgument,
    "idempotency_key_reused": ToolInvalidArgument,
}


def exception_for(tool: str, outcome: Outcome) -> ToolError:
    """The exception a real client would raise for this outcome."""
    return _BY_CODE.get(outcome.code, ToolError)(tool, outcome)
