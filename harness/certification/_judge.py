"""Judging a scenario: its expectations checked on its runs, the verdict, and what a failing one prints.

``judge(scenario, first, second)`` is shared by every way of running a scenario: in
process (``toolchaos.certification.run_scenario``) and through the wire with a framework
(``toolchaos.adapters.matrix``), so both check exactly the same. A scenario with a
``restart`` is judged on one story (``combine``): the first run and the restarted one,
in one trace and one effect ledger; an expectation's ``phase`` picks the story
(``run``), the first run (``before``) or each run (``each``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos import invariants as _invariants
from toolchaos._engine import RunResult, session_real_seconds, session_total_seconds
from toolchaos._internal.trace import Trace
from toolchaos.certification._applicable import NOT_RUN, as_judged
from toolchaos.certification._grade import grade_run
from toolchaos.certification._verdict import ScenarioVerdict
from toolchaos.errors import trace_file_line
from toolchaos.fake_tools import EffectLedger
from toolchaos.invariants import Violation, coverage_text, fault_coverage
from toolchaos.scenario import Expectation, Scenario


@dataclass
class Verdict(ScenarioVerdict):
    """A ``ScenarioVerdict`` that remembers which expectation each violation broke."""

    scenario: Scenario | None = None
    failures: list[tuple[Expectation, Violation]] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)  # the single run, or the first run and the restarted one

    @property
    def first(self) -> tuple[Expectation, Violation] | None:
        return self.failures[0] if self.failures else None

    def headline(self) -> str:
        if self.not_applicable is not None:
            return f"N/A {self.id}: {self.not_applicable}"
        if self.passed:
            return f"PASS {self.id}"
        _, v = self.failures[0]
        return f"FAIL {self.id}: {v.headline()}"


def check_invariant(invariant: Any, result: RunResult) -> list[Violation]:
    """The violations of one invariant on one run; an invariant that raises is one violation, saying so."""
    try:
        return _invariants.check_all(result, [invariant])
    except Exception as exc:  # a custom invariant's bug: a failed check, reported, not a crash of the run
        name = str(getattr(invariant, "name", type(invariant).__name__))
        return [Violation(name, "the invariant to run", f"it raised {type(exc).__name__}: {exc}")]


def combine(first: RunResult, second: RunResult) -> RunResult:
    """One story from a run and its restart: one trace (the second run's events after the
    first's, in sequence and virtual time) and one effect ledger; the state is the last run's."""
    seq_off = max((e["seq"] for e in first.trace.events), default=0)
    step_off = first.turns
    t_off = first.virtual_seconds
    events = list(first.trace.events)
    for e in second.trace.events:
        moved = e.copy()  # the same keys in the same order, moved in sequence and time
        moved["seq"] += seq_off
        moved["step"] += step_off
        moved["t"] = round(e["t"] + t_off, 6)
        events.append(moved)
    ledger = EffectLedger()
    for f in first.ledger.effects:
        ledger.record(*f)
    for f in second.ledger.effects:
        ledger.record(*f._replace(seq=f.seq + seq_off))
    for e in events:  # the effect counts shown in the trace are the story's, not the restarted run's
        if e["kind"] == "tool" and e.get("effects") is not None and e["seq"] > seq_off:
            e["effects"] = sum(1 for f in ledger.effects if f.applied and f.tool == e["tool"] and f.seq <= e["seq"])
    return RunResult(
        run_id=f"{first.run_id}+restart", seed=second.seed, task=second.task, terminal_state=second.terminal_state,
        answer=second.answer, stop_report=second.stop_report, trace=Trace(events), ledger=ledger,
        usage=[*first.usage, *second.usage], harness_stop=first.harness_stop or second.harness_stop,
        error=first.error or second.error, virtual_seconds=first.virtual_seconds + second.virtual_seconds,
        tools={**first.tools, **second.tools}, world=second.world,
        rules_fired={**first.rules_fired, **second.rules_fired}, rule_hits=_hits(first, second),
        isolation=second.isolation, isolation_reason=second.isolation_reason, agent_kind=second.agent_kind)


def _hits(first: RunResult, second: RunResult) -> dict[str, dict[int, int]]:
    """The calls each fault rule answered over both runs (a restarted run's tools start their counts afresh)."""
    out = {tool: dict(hits) for tool, hits in first.rule_hits.items()}
    for tool, hits in second.rule_hits.items():
        mine = out.setdefault(tool, {})
        for i, n in hits.items():
            mine[i] = mine.get(i, 0) + n
    return {tool: dict(sorted(h.items())) for tool, h in out.items()}


def judge(scenario: Scenario, first: RunResult, second: RunResult | None = None, *, agent: str,
          kind: str | None = None) -> Verdict:
    """The verdict on a scenario's run (``second``: the restarted run, for a scenario with a restart).

    ``kind``: the agent's kind (default: the one the run recorded), whose capabilities say how it
    is judged: by harm, where it cannot report a stop (``_applicable``).
    """
    runs = [first] if second is None else [first, second]
    result = first if second is None else combine(first, second)
    targets = {"run": [result], "before": [first], "each": runs}
    expect = as_judged(scenario.expect, kind or first.agent_kind)
    failures = [(exp, v) for exp in expect for target in targets[exp.phase]
                for v in check_invariant(exp.invariant, target)]
    failures.sort(key=lambda f: (f[1].seq is None, f[1].seq or 0))
    return Verdict(
        id=scenario.name, title=scenario.title, category=scenario.category, severity=scenario.severity,
        result=result, violations=[v for _, v in failures], expect=[e.invariant for e in expect], path=scenario.path,
        content_hash=scenario.content_hash, agent=agent, whys=[e.why for e in expect],
        grade=grade_run(scenario.useful, result), scenario=scenario, failures=failures, runs=runs)


def not_run(scenario: Scenario, *, agent: str, kind: str, reason: str, seed: int | None = None) -> Verdict:
    """The N/A verdict of a scenario that does not apply to the agent's kind: ``reason`` says why; nothing ran."""
    result = RunResult(run_id=scenario.name, seed=scenario.seed if seed is None else seed, task=scenario.task,
                       terminal_state=NOT_RUN, answer=None, stop_report=None, trace=Trace([]), ledger=EffectLedger(),
                       usage=[], agent_kind=kind)
    return Verdict(
        id=scenario.name, title=scenario.title, category=scenario.category, severity=scenario.severity,
        result=result, violations=[], expect=[], path=scenario.path, content_hash=scenario.content_hash, agent=agent,
        not_applicable=reason, scenario=scenario, runs=[])


def _shown(path: Path | None) -> str:
    if path is None:
        return "<scenario>"
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def render_failure(verdict: Verdict) -> str:
    """What a failing scenario prints: the broken invariant, its YAML, the trace around it."""
    sc = verdict.scenario
    result = verdict.result
    where = _shown(verdict.path)
    if result.harness_stop == "uncallable":  # nothing ran: no invariant has anything to say
        return (f"chaos scenario {verdict.id} could not run: {result.error}\n"
                f"  file: {where}:{sc.line if sc is not None else 1}")
    exp, first = verdict.failures[0]
    at = f" at step {first.step} (trace event #{first.seq})" if first.seq is not None else ""
    phase = " [first run, before the restart]" if exp.phase == "before" else ""
    lines = [f"invariant {first.invariant} broke{at}{phase}",
             f"  expected: {first.expected}",
             f"  actual:   {first.actual}"]
    if exp.line is not None:
        lines.append(f"  expectation ({where}:{exp.line}):")
        lines += [f"    {text}" for text in exp.text.splitlines()]
    else:
        lines.append(f"  expectation: {exp.text} (always checked)")
    if len(verdict.failures) > 1:
        lines.append("also broke:")
        for e, v in verdict.failures[1:]:
            line = f" (line {e.line})" if e.line is not None else ""
            lines.append(f"  - {v.headline()}{line}")
    lines.append("")
    lines.append(f"chaos scenario {verdict.id} against {verdict.agent} ({verdict.category}, {verdict.severity}): "
                 f"{sc.title if sc is not None else ''}")
    lines.append(f"  file: {where}:{sc.line if sc is not None else 1}")
    lines.append("")
    lines.append(result.summary())
    if result.error:
        lines.append(f"agent error: {result.error.strip().splitlines()[-1]}")
    lines += _process_lines(result)
    lines.append("fault coverage:")  # what the run really met: a rule that never fired tested nothing
    lines += coverage_text(fault_coverage(result))
    if first.seq is not None:
        lines.append(f"trace around event #{first.seq}:")
        lines.append(result.trace.table(around=first.seq, radius=6))
    else:
        lines.append("trace (last events):")
        lines.append(result.trace.table(around=result.trace.events[-1]["seq"] if result.trace.events else None,
                                        radius=10))
    lines.append(trace_file_line(result))
    limit, total = session_real_seconds(), session_total_seconds()  # a watchdog failure reproduces under the same
    again = (f" --real-seconds {limit:g}" if limit is not None else "") + (
        f" --total-seconds {total:g}" if total is not None else "")
    only = verdict.id.split("[", 1)[0].split("#", 1)[0]  # -k is a glob: a variant's brackets would be a class
    # a trial is its scenario run once with the trial's own seed (seed + i): the same run, named without #trial=
    once = " --trials 1" if getattr(getattr(verdict, "scenario", None), "trials", 1) > 1 else ""
    lines.append(f"reproduce: toolchaos run {shlex.quote(where)} -k {shlex.quote(only)} "
                 f"--agent {shlex.quote(str(verdict.agent))} --seed {result.seed}{once}{again}")
    return "\n".join(lines)


def _process_lines(result: Any) -> list[str]:
    """A process agent's end and the tail of its output (``toolchaos.process``'s ``process`` on the result)."""
    proc = getattr(result, "process", None)
    if proc is None:
        return []
    tail = proc.tail()
    return [proc.summary()] + ([f"its output ended with:\n{tail}"] if tail else [])
