"""A scenario's verdict: what the certification runner produces and reports consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos._engine import RunResult
from toolchaos.certification._grade import Grade
from toolchaos.invariants._builtin import Violation


@dataclass
class ScenarioVerdict:
    id: str
    title: str
    category: str  # loops | error_classes | side_effects | budgets | legit | resume | ...
    severity: str  # critical | major | minor
    result: RunResult
    violations: list[Violation]
    expect: list[Any] = field(default_factory=list)  # the invariants checked
    path: Path | None = None  # the scenario file
    content_hash: str = ""  # sha256 of the scenario file's bytes
    agent: str = ""
    whys: list[str | None] = field(default_factory=list)  # each expectation's `why:`, in the order of expect
    grade: Grade | None = None  # what the run wasted beyond the scenario's useful work

    @property
    def passed(self) -> bool:
        return not self.violations
