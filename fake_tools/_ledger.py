"""The effect ledger: how many times each side effect really happened.

The ledger is the ground truth the harness judges by, never what the agent believes.
Every execution of a side-effect tool is recorded with its operation key (the value of
the tool's idempotency argument, or the call's fingerprint when it has none), whether
the effect applied, and what the caller could know (ok / failed / unknown). A call the
runtime refused never reaches a tool, so it never appears here.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Effect:
    tool: str
    key: str
    applied: bool
    status: str  # ok | failed | unknown (a timeout: the caller cannot know)
    seq: int  # position of the execution in the run's trace


class EffectLedger:
    """Counts executions and applied effects per tool and per operation key.

    Thread-safe: concurrent workers share one ledger and its counts stay exact.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.effects: list[Effect] = []
        self._executions: Counter[str] = Counter()
        self._applied: Counter[str] = Counter()
        self._by_key: Counter[tuple[str, str]] = Counter()

    def record(self, tool: str, key: str, applied: bool, status: str, seq: int) -> int:
        """Record one execution; returns the tool's applied-effect count after it."""
        with self._lock:
            self.effects.append(Effect(tool, key, applied, status, seq))
            self._executions[tool] += 1
            if applied:
                self._applied[tool] += 1
                self._by_key[(tool, key)] += 1
            return self._applied[tool]

    def executions(self, tool: str) -> int:
        return self._executions[tool]

    def applied(self, tool: str | None = None) -> int:
        """Effects that really happened, for one tool or in total."""
        if tool is None:
            return sum(self._applied.values())
        return self._applied[tool]

    def applied_for(self, tool: str, key: str) -> int:
        return self._by_key[(tool, key)]

    def keys(self, tool: str) -> dict[str, int]:
        """Applied count per operation key of one tool."""
        return {k: n for (t, k), n in self._by_key.items() if t == tool}

    def duplicates(self) -> list[tuple[str, str, int]]:
        """(tool, key, count) for every operation applied more than once."""
        return sorted((t, k, n) for (t, k), n in self._by_key.items() if n > 1)

    def summary(self) -> dict[str, Any]:
        tools = sorted(self._executions)
        return {t: {"executions": self._executions[t], "applied": self._applied[t]} for t in tools}
