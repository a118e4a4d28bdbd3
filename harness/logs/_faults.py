"""The fault that answers a recorded call the way the log says it was answered.

A toolchaos trace records the outcome itself (kind, code, latency, effects); any other
log records what the tool said, which is read the way a model reads it (``interpret``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from toolchaos._internal.model import interpret
from toolchaos.fake_tools import faults as F
from toolchaos.logs._conversation import RecordedCall

_LOST = 30.0  # seconds: how long a call the log never saw answered waits, as a timeout
_TRANSIENT: dict[str, str | int] = {"unavailable": 503, "rate_limited": 429, "connection_reset": "reset",
                                    "internal_error": 500}
_FATAL = ("permission_denied", "not_found", "invalid_argument", "policy_blocked")
_MALFORMED = ("invalid_json", "schema_violation", "truncated", "wrong_type")


def fault_of(call: RecordedCall, previous_effects: int | None = None) -> F.Fault | None:
    """The fault that answers a call the way the log says it was answered (None: plain ok or unknown)."""
    if call.outcome is not None and call.outcome.get("kind") == "tool":
        return _fault_of_event(call.outcome, previous_effects)
    if not call.has_result:
        return F.timeout(_LOST)  # the log never saw an answer: a lost response
    content = call.result
    kind, retryable, _, retry_after = interpret(content)
    if call.is_error and kind not in ("error", "refused"):
        kind, retryable = "error", None
    if kind == "error":
        text = json.dumps(content, default=str).lower() if not isinstance(content, str) else content.lower()
        return _error_fault(text, retryable, retry_after)
    return _answer_fault(kind, content)


def _error_fault(text: str, retryable: bool | None, retry_after: float | None) -> F.Fault:
    """An error answer, by what its words say (the first that applies wins)."""
    if "timeout" in text or "timed out" in text:
        return F.timeout(_LOST)
    if "429" in text or "rate limit" in text or "rate_limited" in text:
        return F.transient(429, retry_after=retry_after)
    if retryable:
        return F.transient(503)
    if "not found" in text or "not_found" in text:
        return F.fatal("not_found")
    if "invalid" in text or "missing" in text:
        return F.fatal("invalid_argument")
    if retryable is False or "denied" in text or "forbidden" in text or "permission" in text:
        return F.fatal("permission_denied")
    return F.transient(500)


def _answer_fault(kind: str, content: Any) -> F.Fault | None:
    """A non-error answer: empty, malformed, still pending, or the data itself."""
    if kind == "empty":
        return F.empty(content if isinstance(content, (list, dict)) else None)
    if kind == "malformed":
        return F.malformed("invalid_json")
    if kind == "pending":
        return F.pending(polls=None)
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except json.JSONDecodeError:
            pass
    return F.ok(content) if content is not None else None


def _fault_of_event(e: Mapping[str, Any], previous_effects: int | None) -> F.Fault | None:
    """A trace's tool event: its outcome again, as slow as it was. A timeout applied its side effect
    when the ledger count grew past the previous call's."""
    outcome, code = e.get("outcome"), str(e.get("code") or "")
    latency = float(e.get("latency") or 0.0)
    if outcome == "timeout":
        effects = e.get("effects")
        applied = isinstance(effects, int) and effects > (previous_effects or 0)
        return F.timeout(latency or _LOST, applied=applied)
    # ok, paginated, contradictory, invalid_call: the tool's own behaviour reproduces them
    make = _EVENT_FAULTS.get(outcome) if isinstance(outcome, str) else None
    fault = make(e, code) if make is not None else None
    return F.slow(latency, then=fault) if latency else fault  # slow(then=None) answers ok


def _transient(e: Mapping[str, Any], code: str) -> F.Fault:
    ra = e.get("retry_after")
    return F.transient(_TRANSIENT.get(code, 503), retry_after=float(ra) if ra else None)


def _fatal(e: Mapping[str, Any], code: str) -> F.Fault:
    return F.fatal(code if code in _FATAL else "permission_denied")


def _pending(e: Mapping[str, Any], code: str) -> F.Fault:
    return F.pending(polls=None, interval=float(e.get("retry_after") or 5.0))


def _malformed(e: Mapping[str, Any], code: str) -> F.Fault:
    variant = code.removeprefix("malformed_")
    return F.malformed(variant if variant in _MALFORMED else "invalid_json")


_EVENT_FAULTS: dict[str, Callable[[Mapping[str, Any], str], F.Fault]] = {
    "transient": _transient, "fatal": _fatal, "pending": _pending, "malformed": _malformed,
    "empty": lambda e, code: F.empty(), "oversized": lambda e, code: F.oversized(100_000),
}
