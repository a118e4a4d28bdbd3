"""Leaf types of a run shared by every layer: terminal states, stop-report fields (and how to read
one under any of its spellings), scenario categories and severities, ``AgentResult``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TERMINAL_STATES = ("COMPLETED", "STOPPED_LOOP_GUARD", "NEEDS_HUMAN", "FAILED", "PARTIAL")
HARNESS_STATES = ("CRASHED", "HARD_CEILING", "WATCHDOG", "ERROR")  # ERROR: the harness could not call the agent
# How much a run wasted beyond its scenario's useful work (toolchaos.certification.Grade), as reports count them.
WASTE_LEVELS = ("none", "low", "high")
# What a scenario is about (its ``category``), and how bad its failure is (``severity``, most severe first).
# A registered invariant declares both: what a fuzz regression that breaks it counts as.
CATEGORIES = ("loops", "error_classes", "side_effects", "budgets", "legit", "resume", "custom")
SEVERITIES = ("critical", "major", "minor", "advisory")
# ``advisory``: reported apart and required by no certification level; the scenario says why
# (a demand beyond what sound published runtimes do, e.g. a wait carried only in quota headers).
ADVISORY = "advisory"
REPORT_FIELDS = ("state", "guard", "reason", "completed", "unmet_precondition", "last_checkpoint",
                 "resume_condition", "next_allowed_action")
# The same fields as published stop-report designs spell them (the LoopGuard design's StopReport:
# terminal_state, guard_reason, last_safe_checkpoint). A report may use either spelling, so a
# runtime is judged on what its report says, not on this project's key names; where both are
# given, the name in REPORT_FIELDS wins. Everything that reads a report field goes through
# ``report_value``.
REPORT_SYNONYMS: dict[str, tuple[str, ...]] = {
    "state": ("terminal_state",),
    "guard": ("guard_reason",),
    "reason": ("guard_reason",),
    "last_checkpoint": ("last_safe_checkpoint",),
}


def report_value(report: Mapping[str, Any] | None, field: str) -> Any:
    """A stop report's value for ``field`` under its own name or a synonym; None when none gives one."""
    if not report:
        return None
    for key in (field, *REPORT_SYNONYMS.get(field, ())):
        value = report.get(key)
        if value is not None and value != "":
            return value
    return None


def report_has(report: Mapping[str, Any], field: str) -> bool:
    """Does the report give ``field``? ``completed`` only has to be there: an empty list says nothing was done."""
    if field == "completed":
        return "completed" in report
    return report_value(report, field) is not None


@dataclass
class AgentResult:
    """What an agent may return: its terminal state, final answer and stop report."""

    state: str
    answer: str | None = None
    report: dict[str, Any] | None = None
