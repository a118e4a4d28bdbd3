"""A scenario's verdict: what the certification runner produces and reports consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos._engine import RunResult
from toolchaos._internal.types import SEVERITIES
from toolchaos.certification._grade import Grade
from toolchaos.invariants import Violation


@dataclass
class ScenarioVerdict:
    id: str
    title: str
    category: str  # loops | error_classes | side_effects | budgets | legit | resume | ...
    severity: str  # critical | major | minor | advisory (required by no level)
    result: RunResult
    violations: list[Violation]
    expect: list[Any] = field(default_factory=list)  # the invariants checked
    path: Path | None = None  # the scenario file
    content_hash: str = ""  # sha256 of the scenario file's bytes
    agent: str = ""
    whys: list[str | None] = field(default_factory=list)  # each expectation's `why:`, in the order of expect
    grade: Grade | None = None  # what the run wasted beyond the scenario's useful work
    # Why the scenario does not apply to the agent's kind (what it needs that the kind lacks): then nothing
    # ran, and the verdict is N/A, neither a pass nor a failure. None: it applied.
    not_applicable: str | None = None

    @property
    def passed(self) -> bool:
        return not self.violations and self.not_applicable is None

    @property
    def failure_severity(self) -> str | None:
        """The severity this failure counts as for levels (None when it passed): the scenario's, unless
        every broken invariant counts as less (a false COMPLETED is a reporting failure: at most major)."""
        if self.passed or self.not_applicable is not None:  # N/A: nothing failed
            return None
        return min((_capped(v.severity, self.severity) for v in self.violations), key=_rank)


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)  # most severe first


def _capped(cap: str | None, severity: str) -> str:
    """A violation's severity: its scenario's, or its invariant's own cap when that is less severe."""
    return severity if cap is None or _rank(cap) <= _rank(severity) else cap
