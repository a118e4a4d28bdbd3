"""Certification: run scenarios into verdicts, find the bundled suite, prove the suite.

- ``run_scenario(scenario, agent)`` runs one loaded scenario (twice, sharing the agent's
  ``store``, when it has a ``restart``) and checks its expectations: a ``Verdict`` (a
  ``toolchaos.certification._verdict.ScenarioVerdict`` that also knows which expectation each violation
  broke, for reports).
- ``suite()`` loads the bundled certification suite: the YAML files installed as the
  package ``toolchaos_scenarios`` (found with ``importlib.resources``, so it works from any
  directory), falling back to the repository's ``scenarios/`` directory.
- ``certify(agent)`` runs the suite against one agent.
- ``ablation_matrix()`` runs the suite against the reference agent, the naive loop, the
  reference agent with each guard switched off, and an over-eager guard, and lists what
  would make the suite untrustworthy (``Matrix.problems``): the reference agent failing
  anything, the naive agent passing a loop / error-class / side-effect / budget scenario,
  an ablation no scenario catches, the eager guard passing a legitimate-repetition
  scenario, a scenario no variant fails.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchaos._agents import GuardedAgent, naive
from toolchaos._engine import RunResult, run, safe_name
from toolchaos._internal.limits import session_real_seconds
from toolchaos._internal.trace import Trace
from toolchaos.certification._verdict import ScenarioVerdict
from toolchaos.errors import trace_file_line
from toolchaos.fake_tools import EffectLedger
from toolchaos.invariants import _builtin as _invariants
from toolchaos.invariants._builtin import Violation
from toolchaos.scenario._loader import SCENARIO_PATTERN, Expectation, Scenario, load_file, load_text

if TYPE_CHECKING:
    from importlib.abc import Traversable

SUITE_PACKAGE = "toolchaos_scenarios"
# Bump when a certification scenario is added, removed or changes what it demands: reports
# carry it next to the per-file hashes, so two certifications can be compared.
SUITE_VERSION = "1"
NAIVE_MUST_FAIL = ("loops", "error_classes", "side_effects", "budgets")
LEGIT = "legit"


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
        if self.passed:
            return f"PASS {self.id}"
        _, v = self.failures[0]
        return f"FAIL {self.id}: {v.headline()}"


# --- running one scenario ------------------------------------------------------------------


def agent_label(agent: Any) -> str:
    if isinstance(agent, str):
        return agent
    for label, variant in AGENT_VARIANTS.items():
        if agent is variant:
            return label
    return str(getattr(agent, "__qualname__", None) or getattr(agent, "__name__", None) or type(agent).__name__)


def run_scenario(scenario: Scenario, agent: Any = None, *, seed: int | None = None,
                 artifacts: str | Path | None = None, label: str | None = None) -> Verdict:
    """Run a scenario against ``agent`` (default: the scenario's own, else ``builtin:guarded``)."""
    agent = agent if agent is not None else (scenario.agent or "builtin:guarded")
    seed = scenario.seed if seed is None else seed
    store: dict[str, Any] = {}
    common: dict[str, Any] = {"seed": seed, "budgets": scenario.budgets, "ceiling": scenario.ceiling, "store": store}
    first = run(agent, task=scenario.task, tools=scenario.tools, policy=scenario.policy(), name=scenario.name,
                **common)
    runs = [first]
    result = first
    if scenario.restart is not None:
        r = scenario.restart
        second = run(agent, task=r.task, tools=r.tools, policy=r.policy(), name=f"{scenario.name}~restart",
                     **common)
        runs.append(second)
        result = combine(first, second)
    failures: list[tuple[Expectation, Violation]] = []
    for exp in scenario.expect:
        targets = {"run": [result], "before": [first], "each": runs}[exp.phase]
        for target in targets:
            for v in _check(exp.invariant, target):
                failures.append((exp, v))
    failures.sort(key=lambda f: (f[1].seq is None, f[1].seq or 0))
    if artifacts is not None:
        result.trace.write(Path(artifacts) / f"{safe_name(scenario.name)}.trace.jsonl")
    return Verdict(
        id=scenario.name, title=scenario.title, category=scenario.category, severity=scenario.severity,
        result=result, violations=[v for _, v in failures], expect=scenario.invariants, path=scenario.path,
        content_hash=scenario.content_hash, agent=label or agent_label(agent), scenario=scenario,
        failures=failures, runs=runs)


def _check(invariant: Any, result: RunResult) -> list[Violation]:
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
        ledger.record(f.tool, f.key, f.applied, f.status, f.seq)
    for f in second.ledger.effects:
        ledger.record(f.tool, f.key, f.applied, f.status, f.seq + seq_off)
    for e in events:  # the effect counts shown in the trace are the story's, not the restarted run's
        if e["kind"] == "tool" and e.get("effects") is not None and e["seq"] > seq_off:
            e["effects"] = sum(1 for f in ledger.effects if f.applied and f.tool == e["tool"] and f.seq <= e["seq"])
    return RunResult(
        run_id=f"{first.run_id}+restart", seed=second.seed, task=second.task, terminal_state=second.terminal_state,
        answer=second.answer, stop_report=second.stop_report, trace=Trace(events), ledger=ledger,
        usage=[*first.usage, *second.usage], harness_stop=first.harness_stop or second.harness_stop,
        error=first.error or second.error, virtual_seconds=first.virtual_seconds + second.virtual_seconds,
        tools={**first.tools, **second.tools})


# --- the bundled suite ---------------------------------------------------------------------


def suite_root() -> Traversable:
    """The bundled scenarios: the installed package ``toolchaos_scenarios``, else the repository's."""
    try:
        root = resources.files(SUITE_PACKAGE)
        if root.is_dir():
            return root
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "scenarios"


def _files(root: Traversable, pattern: str) -> list[Traversable]:
    suffix = pattern.lstrip("*")
    out: list[Traversable] = []
    todo = [root]
    while todo:
        cur = todo.pop()
        for child in cur.iterdir():
            if child.is_dir():
                if not child.name.startswith(("_", ".")):
                    todo.append(child)
            elif child.name.endswith(suffix):
                out.append(child)
    return sorted(out, key=lambda t: str(t))


@functools.lru_cache(maxsize=8)
def _load_cached(where: str, name: str) -> tuple[Scenario, ...]:
    root = suite_root() if where == "" else Path(where)
    folder = root.joinpath(name) if name else root
    out: list[Scenario] = []
    for f in _files(folder, SCENARIO_PATTERN):
        if isinstance(f, Path):
            out.extend(load_file(f))
        else:  # pragma: no cover - a zipped install
            out.extend(load_text(f.read_text(encoding="utf-8"), f"{SUITE_PACKAGE}/{name}/{f.name}"))
    return tuple(sorted(out, key=lambda s: s.name))


def suite(name: str = "certification", root: str | Path | None = None) -> list[Scenario]:
    """The scenarios of a bundled suite (``certification`` or ``examples``), sorted by id."""
    return list(_load_cached("" if root is None else str(root), name))


def suite_files(name: str = "certification") -> list[Traversable]:
    return _files(suite_root().joinpath(name), SCENARIO_PATTERN)


def certify(agent: Any = "builtin:guarded", scenarios: Iterable[Scenario] | None = None, *,
            artifacts: str | Path | None = None, label: str | None = None) -> list[Verdict]:
    """Run the certification suite (or ``scenarios``) against one agent."""
    todo = suite() if scenarios is None else list(scenarios)
    return [run_scenario(s, agent, artifacts=artifacts, label=label) for s in todo]


# --- the ablation matrix -------------------------------------------------------------------

ABLATIONS: dict[str, str] = {
    "normalise_args": "no argument normalisation",
    "detect_cycles": "no cycle detection",
    "check_progress": "no progress check",
    "idempotency": "no idempotency ledger",
    "honour_retry_after": "no Retry-After",
    "classify_errors": "no error classes",
    "budgets": "no budgets",
    "stop_report": "no stop report",
}

AGENT_VARIANTS: dict[str, Callable[..., Any]] = {
    "guarded": GuardedAgent(),
    "naive": naive,
    **{f"-{flag}": GuardedAgent(None, **{flag: False}) for flag in ABLATIONS},
    "eager": GuardedAgent(eager=True),
}


@dataclass
class Matrix:
    """Scenario x agent variant: which variant fails which scenario, and why."""

    scenarios: list[Scenario]
    variants: list[str]
    verdicts: dict[tuple[str, str], Verdict]

    def failed(self, scenario: str, variant: str) -> bool:
        return not self.verdicts[(scenario, variant)].passed

    def caught_by(self, variant: str) -> list[str]:
        return [s.name for s in self.scenarios if self.failed(s.name, variant)]

    def problems(self) -> list[str]:
        """Everything that would make the suite untrustworthy (empty when it proves itself)."""
        out: list[str] = []
        for s in self.scenarios:
            if "guarded" in self.variants and self.failed(s.name, "guarded"):
                bad = self.verdicts[(s.name, "guarded")].violations[0]
                out.append(f"{s.name}: the reference agent (guarded) fails it: {bad.headline()}")
            if "naive" in self.variants and s.category in NAIVE_MUST_FAIL and not self.failed(s.name, "naive"):
                out.append(f"{s.name}: the naive agent passes a {s.category} scenario; it proves nothing")
            if "eager" in self.variants and s.category == LEGIT and not self.failed(s.name, "eager"):
                out.append(f"{s.name}: the over-eager guard passes this legitimate-repetition scenario")
            if not any(self.failed(s.name, c) for c in self.variants if c != "guarded"):
                out.append(f"{s.name}: no agent variant fails it; it catches nothing")
        for c in self.variants:
            if c.startswith("-") and not self.caught_by(c):
                out.append(f"ablation {c} ({ABLATIONS.get(c[1:], c)}): no scenario catches it")
        return out

    def markdown(self) -> str:
        """The matrix as a Markdown document (what docs/certification-matrix.md holds)."""
        cols = self.variants
        head = ["scenario", "category", "severity", *[f"`{c}`" for c in cols]]
        lines = [
            "# Certification matrix",
            "",
            "<!-- generated by `toolchaos certify --matrix --output docs/certification-matrix.md`; "
            "do not edit by hand -->",
            "",
            "Each bundled certification scenario (rows) run against the reference agent and its "
            "variants (columns): `naive` is the plain loop with no guard; `-FLAG` is `builtin:guarded` "
            "with that one guard switched off (`GuardedAgent(FLAG=False)`); `eager` stops on any second "
            "identical call. A cell names the first invariant the variant broke; `ok` means every "
            "expectation held.",
            "",
            "What makes the suite trustworthy (checked by `tests/certification/test_certification.py`): "
            "`guarded` passes everything; `naive` fails every loop, error-class, side-effect and budget scenario; every "
            "ablation fails at least one scenario; `eager` fails every legitimate-repetition scenario; "
            "every scenario fails for at least one variant.",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] * len(head)) + "|",
        ]
        for s in self.scenarios:
            cells = []
            for c in cols:
                verdict = self.verdicts[(s.name, c)]
                cells.append("ok" if verdict.passed else f"**{verdict.violations[0].invariant}**")
            lines.append("| " + " | ".join([f"`{s.name}`", s.category, s.severity, *cells]) + " |")
        lines += ["", "## What catches each ablation", "", "| variant | guard removed | caught by |", "|---|---|---|"]
        for c in cols:
            if c.startswith("-") or c in ("naive", "eager"):
                what = ABLATIONS.get(c[1:], "every guard" if c == "naive" else "over-eager: stops any repeat")
                caught = self.caught_by(c)
                lines.append(f"| `{c}` | {what} | {len(caught)}: " + ", ".join(f"`{n}`" for n in caught) + " |")
        problems = self.problems()
        lines += ["", "## Problems", ""]
        lines += [f"- {p}" for p in problems] if problems else ["None: the suite proves itself."]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        """A compact terminal rendering: one row per scenario, one column per variant."""
        cols = self.variants
        width = max(len(s.name) for s in self.scenarios) if self.scenarios else 8
        head = f"{'scenario':<{width}}  " + " ".join(f"{c[:8]:>8}" for c in cols)
        rows = [head, "-" * len(head)]
        for s in self.scenarios:
            cells = " ".join(f"{'.' if self.verdicts[(s.name, c)].passed else 'FAIL':>8}" for c in cols)
            rows.append(f"{s.name:<{width}}  {cells}")
        problems = self.problems()
        rows.append("")
        rows += [f"PROBLEM: {p}" for p in problems] if problems else ["the suite proves itself: no problems"]
        return "\n".join(rows)


def ablation_matrix(scenarios: Sequence[Scenario] | None = None,
                    variants: Mapping[str, Callable[..., Any]] | None = None) -> Matrix:
    todo = suite() if scenarios is None else list(scenarios)
    chosen = dict(AGENT_VARIANTS if variants is None else variants)
    verdicts = {(s.name, label): run_scenario(s, agent, label=label)
                for s in todo for label, agent in chosen.items()}
    return Matrix(todo, list(chosen), verdicts)


# --- reporting one verdict -----------------------------------------------------------------


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
    if first.seq is not None:
        lines.append(f"trace around event #{first.seq}:")
        lines.append(result.trace.table(around=first.seq, radius=6))
    else:
        lines.append("trace (last events):")
        lines.append(result.trace.table(around=result.trace.events[-1]["seq"] if result.trace.events else None,
                                        radius=10))
    lines.append(trace_file_line(result))
    limit = session_real_seconds()  # a watchdog failure must reproduce under the same limit
    again = f" --real-seconds {limit:g}" if limit is not None else ""
    lines.append(f"reproduce: toolchaos run {where} --agent {verdict.agent} --seed {result.seed}{again}")
    return "\n".join(lines)
