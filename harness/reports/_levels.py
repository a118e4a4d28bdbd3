"""Certification levels and the verdict logic: how much of a suite an agent survives.

A level names the severities that must pass (``LEVELS``): ``critical`` (every critical
scenario passes), ``major`` (every critical and major one), ``all`` (every scenario but the
advisory ones: an ``advisory`` scenario is reported apart and required by no level).
``certified(verdicts, level)`` is the gate; ``level_reached`` the highest level passed; the
certificate names advisory failures apart.
Both read scenario verdicts or report.json entries alike, so the pytest controller can
judge entries that crossed from its workers.

Nothing here imports the certification runner (and its YAML and pydantic): the CLI's
``--help`` and a plain pytest run read the levels without paying for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolchaos._internal.types import ADVISORY
from toolchaos.errors import ReportError, did_you_mean

if TYPE_CHECKING:
    from toolchaos.certification import ScenarioVerdict

LEVEL_ORDER: tuple[str, ...] = ("critical", "major", "all")
LEVELS: dict[str, str] = {
    "critical": "every critical scenario passes: no runaway loop, duplicate side effect or unbounded run "
                "on the failure modes that cost money or data",
    "major": "every critical and major scenario passes",
    "all": "every scenario passes, minor ones included (advisory ones are reported apart)",
}
DEFAULT_LEVEL = "all"

Row = tuple[str, bool]  # (severity, passed) of one scenario


def check_level(level: str) -> str:
    if level not in LEVEL_ORDER:
        raise ReportError(f"unknown level {level!r}{did_you_mean(str(level), LEVEL_ORDER)}; "
                          f"levels: {', '.join(LEVEL_ORDER)}")
    return level


def required_severities(level: str) -> tuple[str, ...] | None:
    """Severities a level requires to pass; ``None`` means every one but ``advisory``, which no level requires."""
    return {"critical": ("critical",), "major": ("critical", "major"), "all": None}[check_level(level)]


def required(severity: str, need: tuple[str, ...] | None) -> bool:
    """Does a level needing ``need`` (``required_severities``) count a scenario of this severity?"""
    return severity != ADVISORY and (need is None or severity in need)


# Harness stops that mean the scenario, not the agent, broke (or the agent was never run).
ERROR_STOPS = ("policy", "interrupted", "uncallable")


NOT_APPLICABLE = "n/a"  # the scenario does not apply to the agent's kind: not run, neither passed nor failed


def verdict_status(v: ScenarioVerdict) -> str:
    """pass | fail | error | n/a (``error``: the scenario itself broke, e.g. its policy raised, or the
    harness could not call the agent at all; ``n/a``: it needs what the agent's kind lacks, so it did not run)."""
    if getattr(v, "not_applicable", None) is not None:
        return NOT_APPLICABLE
    if v.result.harness_stop in ERROR_STOPS:
        return "error"
    return "pass" if v.passed else "fail"


def _status(it: Any) -> str:
    """The verdict of a verdict or a report entry."""
    return str(it.get("verdict")) if isinstance(it, Mapping) else verdict_status(it)


def applicable(items: Iterable[Any]) -> list[Any]:
    """The verdicts (or entries) of the scenarios that applied to the agent's kind: the ones a level counts."""
    return [it for it in items if _status(it) != NOT_APPLICABLE]


def not_applicable(items: Iterable[Any]) -> list[tuple[str, str]]:
    """(id, why) of each scenario that did not apply to the agent's kind, from verdicts or entries."""
    out = []
    for it in items:
        if _status(it) == NOT_APPLICABLE:
            out.append((str(it["id"]), str((it.get("not_applicable") or {}).get("reason")))
                       if isinstance(it, Mapping) else (it.id, str(it.not_applicable)))
    return out


def certificate(items: Sequence[Any], level: str, pass_k: tuple[int, float] | None = None,
                gate: bool | None = None) -> str:
    """The certificate's line: ``CERTIFIED for N of M applicable scenarios: level reached L, required R``
    (N passed of the M that applied; all of them apply, it says so), else ``NOT CERTIFIED: N of M ...; ...``.
    With ``pass_k`` (K, P), ``gate`` is the gate's answer (``toolchaos.reports._trials.gated``) and the line
    says the requirement."""
    judged = applicable(items)
    passed = sum(_status(it) == "pass" for it in judged)
    every = " (all applicable)" if len(judged) == len(items) else f" (N/A: {len(items) - len(judged)})"
    counted = f"{passed} of {len(judged)} applicable scenarios"
    levels = f"level reached {level_reached(items)}, required {level}"
    if pass_k is not None:
        levels += f", critical pass^{pass_k[0]} >= {pass_k[1]:g}"
    levels += advisory_clause(judged)
    if (certified(items, level) if gate is None else gate):
        return f"CERTIFIED for {counted}{every}: {levels}"
    return f"NOT CERTIFIED: {counted} passed{every}; {levels}"


def advisory_clause(items: Iterable[Any]) -> str:
    """``; advisory: N of M failed (required by no level)`` when an advisory scenario failed, else empty."""
    advisory = [ok for sev, ok in rows(items) if sev == ADVISORY]
    failed = advisory.count(False)
    return f"; advisory: {failed} of {len(advisory)} failed (required by no level)" if failed else ""


def not_applicable_lines(items: Iterable[Any]) -> list[str]:
    """The scenarios that did not apply, by reason: what a certificate names beside its line."""
    by_reason: dict[str, list[str]] = {}
    for sid, why in not_applicable(items):
        by_reason.setdefault(why, []).append(sid)
    if not by_reason:
        return []
    n = sum(len(ids) for ids in by_reason.values())
    return ([f"N/A ({n} scenario{'' if n == 1 else 's'}, not run: each needs what the agent's kind lacks):"]
            + [f"  {', '.join(ids)}: {why}" for why, ids in by_reason.items()])


def could_not_call(items: Iterable[Any]) -> str | None:
    """Why the agent could not be certified at all: the harness could not call it (verdicts or entries)."""
    for it in items:
        stop, error = ((it.get("harness_stop"), it.get("error")) if isinstance(it, Mapping)
                       else (it.result.harness_stop, it.result.error))
        if stop == "uncallable":
            return str(error)
    return None


def rows(items: Iterable[Any]) -> list[Row]:
    """(severity, passed) from verdicts or report entries; a scenario that did not apply is no row."""
    out = []
    for it in applicable(items):  # a failure counts at its failure severity (a reporting failure: at most major)
        if isinstance(it, Mapping):
            out.append((str(it.get("failure_severity") or it.get("severity", "")), it.get("verdict") == "pass"))
        else:
            out.append((str(it.failure_severity or it.severity), verdict_status(it) == "pass"))
    return out


def meets(scenario_rows: Sequence[Row], level: str) -> bool:
    need = required_severities(level)
    if not any(sev != ADVISORY for sev, _ in scenario_rows):
        return False  # nothing a level counts was tested: nothing is certified
    return all(ok for sev, ok in scenario_rows if required(sev, need))


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
