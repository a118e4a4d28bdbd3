"""The decisions: what the runtime does with the model's requests, apart from how each one is sent.

The transport (``_transport``) retries one request the way the SDKs do; everything here is about
the model's requests, each of which may have cost the transport up to three attempts:

- a request is identified by its fingerprint: the tool and its arguments with the differences
  that mean nothing removed (key order, whitespace, the schema's defaults, request ids, the
  idempotency-key argument);
- **progress** is an answer whose content (request ids left out) the run has not seen before;
- **identical requests**: the model's third identical request since the run last made
  progress is refused, and the run stops (``IDENTICAL_LIMIT``);
- **no progress**: after ``NO_PROGRESS_LIMIT`` answers in a row that brought nothing new, the
  next request is refused and the run stops;
- **after a final error**: a request answered with an error retrying cannot fix (a 4xx: an
  invalid argument, a denied permission, a missing resource) is refused if the model asks for it
  again unchanged, and the run stops in the state that error calls for;
- **server waits**: a request is held back until the server's Retry-After, or a pending job's
  poll interval, has passed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

IDENTICAL_LIMIT = 3  # the model's third identical request without progress is refused
NO_PROGRESS_LIMIT = 3  # answers in a row that brought nothing new
# The names HTTP clients give a request's own id: never part of what the request asks for.
VOLATILE = frozenset({"request_id", "requestId", "nonce", "trace_id", "traceparent", "idempotency_key"})
HUMAN_STATUS = frozenset({400, 401, 403, 422})  # the input or a permission must change: a person decides
_PENDING = frozenset({"pending", "processing", "queued", "running", "in_progress"})


@dataclass(frozen=True)
class Verdict:
    """A request refused: the guard, why, and the terminal state the run stops in."""

    state: str
    guard: str
    reason: str
    unmet: str
    resume: str


def _normalised(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _normalised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalised(v) for v in value]
    return " ".join(value.split()) if isinstance(value, str) else value


def fingerprint(spec: Mapping[str, Any], name: str, args: Mapping[str, Any]) -> str:
    """The tool and the arguments that say what the request asks for, as one canonical text."""
    props = (spec.get("parameters") or {}).get("properties") or {}
    defaults = {k: p["default"] for k, p in props.items() if isinstance(p, Mapping) and "default" in p}
    ignored = VOLATILE | {spec.get("x-idempotency-key")}
    meaningful = {**defaults, **{k: v for k, v in args.items() if k not in ignored}}
    return name + json.dumps(_normalised(meaningful), sort_keys=True, default=str, separators=(",", ":"))


def digest(content: Any) -> str:
    """The content of an answer, request ids left out, as a digest."""
    return hashlib.sha256(json.dumps(_without_volatile(content), sort_keys=True, default=str).encode()).hexdigest()


def _without_volatile(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_without_volatile(v) for v in value]
    return value


def poll_interval(result: Any) -> float | None:
    """A pending job's poll interval (``{"status": "processing", "retry_after": 30}``), or None."""
    if not isinstance(result, Mapping) or str(result.get("status", "")).lower() not in _PENDING:
        return None
    wait = result.get("retry_after")
    return float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else 0.0


def final_error_state(status: int | None) -> str:
    """The terminal state a final (non-retryable) error calls for: a person for input and permissions."""
    return "NEEDS_HUMAN" if status in HUMAN_STATUS else "FAILED"


@dataclass
class Decisions:
    """What the run has asked and learned, and the verdict on the model's next request."""

    seen: set[str] = field(default_factory=set)
    window: list[str] = field(default_factory=list)  # fingerprints asked since the last progress
    stale: int = 0  # answers in a row that brought nothing new
    final: dict[str, tuple[int | None, str]] = field(default_factory=dict)  # fingerprint -> (status, code)
    not_before: dict[str, float] = field(default_factory=dict)  # tool or fingerprint -> earliest next request

    def check(self, tool: str, fp: str) -> Verdict | None:
        """A verdict refusing the request, or None to send it."""
        if fp in self.final:
            status, code = self.final[fp]
            state = final_error_state(status)
            return Verdict(state, f"final_error.{code}", f"{tool} was answered {code} ({status}); asked again "
                           "unchanged", f"{tool} answers other than {code}",
                           "a person fixes the cause" if state == "NEEDS_HUMAN" else "the resource exists")
        if self.window.count(fp) >= IDENTICAL_LIMIT - 1:
            return Verdict("STOPPED_LOOP_GUARD", "identical_requests",
                           f"{tool} asked for {IDENTICAL_LIMIT} times with nothing new since the first",
                           "an answer that changes", "the tool's answers change or the task is narrowed")
        if self.stale >= NO_PROGRESS_LIMIT:
            return Verdict("STOPPED_LOOP_GUARD", "no_progress", f"{self.stale} answers in a row brought nothing new",
                           "a request that brings new information", "a different approach, in a new run")
        return None

    def due(self, tool: str, fp: str) -> float:
        """The virtual time before which this request must not go out (0: now)."""
        return max(self.not_before.get(tool, 0.0), self.not_before.get(fp, 0.0))

    def answered(self, fp: str, content: Any) -> bool:
        """Record an answer the model will see; True when it brought something new."""
        d = digest(content)
        new = d not in self.seen
        self.seen.add(d)
        if new:
            self.window.clear()  # progress opens a new window
            self.stale = 0
        else:
            self.window.append(fp)
            self.stale += 1
        return new

    def failed(self, fp: str, status: int | None, code: str | None, retryable: bool) -> None:
        """Record an error answer: nothing new; a final one is never sent unchanged again."""
        self.window.append(fp)
        self.stale += 1
        if not retryable:
            self.final[fp] = (status, code or "error")
