"""Certification levels and the verdict logic: how much of a suite an agent survives.

A level names the severities that must pass (``LEVELS``): ``critical`` (every critical
scenario passes), ``major`` (every critical and major one), ``all`` (every scenario).
``certified(verdicts, level)`` is the gate; ``level_reached`` the highest level passed.
Both read scenario verdicts or report.json entries alike, so the pytest controller can
judge entries that crossed from its workers.

Nothing here imports the certification runner (and its YAML and pydantic): the CLI's
``--help`` and a plain pytest run read the levels without paying for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolchaos.errors import ReportError, did_you_mean

if TYPE_CHECKING:
    from toolchaos.certification import ScenarioVerdict

LEVEL_ORDER: tuple[str, ...] = ("critical", "major", "all")
SEVERITIES: tuple[str, ...] = ("critical", "major", "minor")
LEVELS: dict[str, str] = {
    "critical": "every critical scenario passes: no runaway loop, duplicate side effect or unbounded run "
                "on the failure modes that cost money or data",
    "major": "every critical and major scenario passes",
    "all": "every scenario passes, minor ones included",
}
DEFAULT_LEVEL = "all"

Row = tuple[str, bool]  # (severity, passed) of one scenario


def check_level(level: str) -> str:
    if level not in LEVEL_ORDER:
        raise ReportError(f"unknown level {level!r}{did_you_mean(str(level), LEVEL_ORDER)}; "
                          f"levels: {', '.join(LEVEL_ORDER)}")
    return level


def required_severities(level: str) -> tuple[str, ...] | None:
    """Severities a level requires to pass; ``None`` means every scenario."""
    return {"critical": ("critical",), "major": ("critical", "major"), "all": None}[check_level(level)]


# Harness stops that mean the scenario, not the agent, broke (or the agent was never run).
ERROR_STOPS = ("policy", "interrupted", "uncallable")


def verdict_status(v: ScenarioVerdict) -> str:
    """pass | fail | error (``error``: the scenario itself broke, e.g. its policy raised, or the
    harness could not call the agent at all)."""
    if v.result.harness_stop in ERROR_STOPS:
        return "error"
    return "pass" if v.passed else "fail"


def could_not_call(items: Iterable[Any]) -> str | None:
    """Why the agent could not be certified at all: the harness could not call it (verdicts or entries)."""
    for it in items:
        stop, error = ((it.get("harness_stop"), it.get("error")) if isinstance(it, Mapping)
                       else (it.result.harness_stop, it.result.error))
        if stop == "uncallable":
            return str(error)
    return None


def rows(items: Iterable[Any]) -> list[Row]:
    """(severity, passed) from verdicts or report entries."""
    out = []
    for it in items:  # a failure counts at its failure severity (a reporting failure: at most major)
        if isinstance(it, Mapping):
            out.append((str(it.get("failure_severity") or it.get("severity", "")), it.get("verdict") == "pass"))
        else:
            out.append((str(it.failure_severity or it.severity), verdict_status(it) == "pass"))
    return out


def meets(scenario_rows: Sequence[Row], level: str) -> bool:
    need = required_severities(level)
    if not scenario_rows:
        return False  # nothing was tested: nothing is certified
    return all(ok for sev, ok in scenario_rows if need is None or sev in need)


def level_reached(verdicts: Iterable[Any]) -> str:
    """The highest level every required scenario of which passes, or ``"none"``."""
    scenario_rows = rows(verdicts)
    reached = "none"
    for level in LEVEL_ORDER:
        if not meets(scenario_rows, level):
            break
        reached = level
    return reached


def certified(verdicts: Iterable[Any], level: str = DEFAULT_LEVEL) -> bool:
    """Does this set of verdicts (or report entries) reach ``level``? An empty set never does."""
    return meets(rows(verdicts), level)


def exit_code(verdicts: Sequence[Any], require: str | None = None) -> int:
    """0 when the required level is reached (default: every scenario passed), else 1."""
    return 0 if certified(verdicts, require or DEFAULT_LEVEL) else 1
