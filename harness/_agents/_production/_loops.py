"""Loop detection that respects progress.

Progress is new information from outside: an answer whose content (without the tool's volatile
fields) this run has not seen before. Repetition that brings it (a job whose status moves, a
feed with new items, the next page) is work; repetition that does not is a loop. Before each
call the detector says whether to refuse it:

- **unchanged resend**: the same request after the API rejected its input;
- **retries spent**: the same request after the retry policy gave up on it;
- **cycle**: the last ``k`` calls (``k`` = 1 to ``MAX_PERIOD``) repeated the ``k`` before them and
  that second round brought nothing new, and this call would start a third round. ``k`` = 1 is an
  exact repeat: the same call answered twice with nothing new is not called a third time;
- **no progress**: ``NO_PROGRESS_LIMIT`` answers in a row brought nothing new, whatever the calls
  (reworded queries, new arguments that find the same documents);
- **poll cap**: a job polled ``POLL_LIMIT`` times (the deadline usually ends polling first).

A refused call is remembered: the same call again is refused again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

MAX_PERIOD = 3
NO_PROGRESS_LIMIT = 3
POLL_LIMIT = 15


def content_digest(content: Any, volatile: Collection[str] = ()) -> str:
    """A digest of an answer's content, its volatile fields (request ids and the like) left out."""
    return hashlib.sha256(json.dumps(_without(content, set(volatile)), sort_keys=True, default=str).encode()).hexdigest()


def _without(value: Any, volatile: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, (list, tuple)):
        return [_without(v, volatile) for v in value]
    return value


@dataclass
class LoopDetector:
    """What the run has called and seen, and the verdict on the next call."""

    history: list[tuple[str, bool]] = field(default_factory=list)  # (fingerprint, brought something new)
    seen: set[str] = field(default_factory=set)
    rejected: dict[str, str] = field(default_factory=dict)  # fingerprint -> the field the API rejected
    spent: set[str] = field(default_factory=set)  # fingerprints the retry policy gave up on
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    polls: dict[str, int] = field(default_factory=dict)

    def check(self, fp: str) -> tuple[str, str] | None:
        """(guard, reason) to refuse the call with this fingerprint, or None to let it run."""
        if fp in self.refused:
            return self.refused[fp]
        verdict = self._verdict(fp)
        if verdict is not None:
            self.refused[fp] = verdict
        return verdict

    def _verdict(self, fp: str) -> tuple[str, str] | None:
        if fp in self.rejected:
            return "unchanged_resend", f"the API rejected this request ({self.rejected[fp]}); it must change"
        if fp in self.spent:
            return "retries_spent", "the retry policy already gave up on this request"
        period = self._cycle(fp)
        if period == 1:
            return "repeat", "the same call answered twice with nothing new"
        if period:
            return "cycle", f"a cycle of {period} calls came round again with nothing new"
        stale = 0
        for _, new in reversed(self.history):
            if new:
                break
            stale += 1
        if stale >= NO_PROGRESS_LIMIT:
            return "no_progress", f"{stale} answers in a row brought nothing new"
        if self.polls.get(fp, 0) >= POLL_LIMIT:
            return "poll_limit", f"polled {POLL_LIMIT} times"
        return None

    def _cycle(self, fp: str) -> int:
        fps = [f for f, _ in self.history]
        for k in range(1, MAX_PERIOD + 1):
            if len(fps) < 2 * k or fps[-k] != fp or fps[-k:] != fps[-2 * k:-k]:
                continue
            if not any(new for _, new in self.history[-k:]):
                return k
        return 0

    def answered(self, fp: str, content: Any, volatile: Collection[str] = (), pending: bool = False) -> bool:
        """Record an answer with content; True when it brought something new."""
        digest = content_digest(content, volatile)
        new = digest not in self.seen
        self.seen.add(digest)
        self.history.append((fp, new))
        if pending:
            self.polls[fp] = self.polls.get(fp, 0) + 1
        return new

    def failed(self, fp: str) -> None:
        """Record an answer that was an error: nothing new."""
        self.history.append((fp, False))
