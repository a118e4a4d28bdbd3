"""The effect ledger: how many times each side effect really happened.

The ledger is the ground truth the harness judges by, never what the agent believes.
Every execution of a side-effect tool is recorded with its operation key (the value of
the tool's idempotency argument, or the call's fingerprint when it has none), whether
the effect applied, and what the caller could know (ok / failed / unknown). A call the
runtime refused never reaches a tool, so it never appears here. An execution the API
answered from an idempotency key it had seen (a *replay*) is recorded too, as not applied
and ``replayed``: "replayed by the API" and "applied twice" are different facts.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple


class Effect(NamedTuple):  # a tuple: built on every side-effect execution, keep it cheap
    tool: str
    key: str
    applied: bool
    status: str  # ok | failed | unknown (a timeout: the caller cannot know)
    seq: int  # position of the execution in the run's trace
    replayed: bool = False  # the API answered it from a known idempotency key; nothing applied


class EffectLedger:
    """Counts executions and applied effects per tool and per operation key.

    Safe under concurrent workers without a lock on the hot path: ``list.append`` and
    ``next()`` on an ``itertools.count`` are atomic in CPython, and every count is
    derived from the list of effects, so counts stay exact under concurrency.
    """

    def __init__(self, effects: Iterable[Effect] = ()) -> None:
        """``effects``: a history to continue from (a run resumed after a restart keeps counting)."""
        self.effects: list[Effect] = []
        self._counters: dict[str, itertools.count[int]] = {}
        self._last: dict[str, int] = {}
        for e in effects:
            EffectLedger.record(self, *e)

    def record(self, tool: str, key: str, applied: bool, status: str, seq: int, replayed: bool = False) -> int:
        """Record one execution; returns the tool's applied-effect count after it."""
        self.effects.append(Effect(tool, key, applied, status, seq, replayed))
        if not applied:
            return self._last.get(tool, 0)
        counter = self._counters.get(tool)
        if counter is None:
            counter = self._counters.setdefault(tool, itertools.count(1))
        n = next(counter)
        self._last[tool] = n
        return n

    def executions(self, tool: str) -> int:
        return sum(1 for e in self.effects if e.tool == tool)

    def applied(self, tool: str | None = None) -> int:
        """Effects that really happened, for one tool or in total."""
        return sum(1 for e in self.effects if e.applied and (tool is None or e.tool == tool))

    def applied_for(self, tool: str, key: str) -> int:
        return sum(1 for e in self.effects if e.applied and e.tool == tool and e.key == key)

    def answered(self, tool: str, key: str) -> bool:
        """Whether the operation applied and its caller was told so (status ok): the work is known done."""
        return any(e.applied and e.status == "ok" and e.tool == tool and e.key == key for e in self.effects)

    def replayed(self, tool: str | None = None, key: str | None = None) -> int:
        """Executions the API answered from a known idempotency key (nothing applied)."""
        return sum(1 for e in self.effects if e.replayed and (tool is None or e.tool == tool)
                   and (key is None or e.key == key))

    def keys(self, tool: str) -> dict[str, int]:
        """Applied count per operation key of one tool."""
        return dict(Counter(e.key for e in self.effects if e.applied and e.tool == tool))

    def duplicates(self) -> list[tuple[str, str, int]]:
        """(tool, key, count) for every operation applied more than once."""
        counts = Counter((e.tool, e.key) for e in self.effects if e.applied)
        return sorted((t, k, n) for (t, k), n in counts.items() if n > 1)

    def summary(self) -> dict[str, Any]:
        tools = sorted({e.tool for e in self.effects})
        out: dict[str, Any] = {}
        for t in tools:
            out[t] = {"executions": self.executions(t), "applied": self.applied(t)}
            if self.replayed(t):
                out[t]["replayed"] = self.replayed(t)
        return out
