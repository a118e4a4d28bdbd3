"""The ablation matrix: the suite proving itself against the reference agent, its variants and published designs.

``ablation_matrix()`` runs the suite against the reference agent, the naive loop, the
reference agent with each guard switched off, an over-eager guard and the ports of
published guard designs, and lists what would make the suite untrustworthy
(``Matrix.problems``): the reference agent failing anything, the naive agent passing a
loop / error-class / side-effect / budget scenario, an ablation no scenario catches (by a
failure, or by wasting more than the reference agent: bounds leave room for every sound
guard, so a guard whose absence another guard makes up for within that room shows in the
waste grade), the eager guard passing a legitimate-repetition scenario, the sound
published design failing a loop scenario, a scenario no variant fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolchaos.certification._judge import Verdict
from toolchaos.certification._run import run_scenario
from toolchaos.certification._suite import suite
from toolchaos.certification._variants import ABLATIONS, AGENT_VARIANTS, PORTS, SOUND_PORTS
from toolchaos.scenario import Scenario

NAIVE_MUST_FAIL = ("loops", "error_classes", "side_effects", "budgets")
LEGIT = "legit"


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

    def wastes_more(self, variant: str, than: str = "guarded") -> list[str]:
        """Scenarios ``variant`` passes while wasting more executions (or as many and more turns) than ``than``."""
        out = []
        for s in self.scenarios:
            mine, theirs = self.verdicts[(s.name, variant)].grade, self.verdicts[(s.name, than)].grade
            if (mine and theirs and not self.failed(s.name, variant)
                    and (mine.wasted_executions, mine.wasted_turns) > (theirs.wasted_executions, theirs.wasted_turns)):
                out.append(s.name)
        return out

    def _cell(self, scenario: str, variant: str) -> str:
        verdict = self.verdicts[(scenario, variant)]
        if not verdict.passed:
            return f"**{verdict.violations[0].invariant}**"
        grade = verdict.grade
        return "ok" if grade is None or grade.level == "none" else f"ok, {grade.level}"

    def problems(self) -> list[str]:
        """Everything that would make the suite untrustworthy (empty when it proves itself)."""
        out = [p for s in self.scenarios for p in self._scenario_problems(s)]
        for c in self.variants:
            if c.startswith("-") and not self.caught_by(c) and not self._wastes_more_than_guarded(c):
                out.append(f"ablation {c} ({ABLATIONS.get(c[1:], c)}): no scenario catches it")
        return out

    def _scenario_problems(self, s: Scenario) -> list[str]:
        out: list[str] = []
        if "guarded" in self.variants and self.failed(s.name, "guarded"):
            bad = self.verdicts[(s.name, "guarded")].violations[0]
            out.append(f"{s.name}: the reference agent (guarded) fails it: {bad.headline()}")
        if "naive" in self.variants and s.category in NAIVE_MUST_FAIL and not self.failed(s.name, "naive"):
            out.append(f"{s.name}: the naive agent passes a {s.category} scenario; it proves nothing")
        if "eager" in self.variants and s.category == LEGIT and not self.failed(s.name, "eager"):
            out.append(f"{s.name}: the over-eager guard passes this legitimate-repetition scenario")
        for port in SOUND_PORTS:  # a bound that leaves a sound design no room measures closeness to the reference
            if port in self.variants and s.category == "loops" and self.failed(s.name, port):
                bad = self.verdicts[(s.name, port)].violations[0]
                out.append(f"{s.name}: the sound published design {port} fails this loop scenario, "
                           f"its bounds leave no room for it: {bad.headline()}")
        if not any(self.failed(s.name, c) for c in self.variants if c != "guarded"):
            out.append(f"{s.name}: no agent variant fails it; it catches nothing")
        return out

    def _wastes_more_than_guarded(self, variant: str) -> list[str]:
        return self.wastes_more(variant) if "guarded" in self.variants else []

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
            "identical call; " + "; ".join(f"`{name}` is {what}" for name, what in PORTS.items())
            + " (independent runtimes written from the documents alone, docs/independent-runtimes.md). "
            "A cell names the first invariant the variant broke; `ok` means every expectation held, "
            "`ok, low` or `ok, high` that it held with that waste beyond the scenario's useful work "
            "(docs/report-schema.md, a grade).",
            "",
            "What makes the suite trustworthy (checked by `tests/certification/test_certification.py`): "
            "`guarded` passes everything; `naive` fails every loop, error-class, side-effect and budget scenario; every "
            "ablation fails at least one scenario or wastes more than `guarded` in one; `eager` fails every "
            "legitimate-repetition scenario; " + ", ".join(f"`{p}`" for p in SOUND_PORTS)
            + (" (sound designs) pass" if len(SOUND_PORTS) > 1 else " (a sound design) passes")
            + " every loop scenario; every scenario fails for at least one variant. "
            "Each port's verdicts, with the reason for each failure, are checked by "
            "`tests/certification/test_independent_runtimes.py`. An ablation counts as caught when it fails a "
            "scenario or wastes more than `guarded` in one; why `-detect_cycles` is caught by waste alone, and "
            "why that was kept, is in docs/independent-runtimes.md (\"Cycle detection: caught by waste alone\").",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] * len(head)) + "|",
        ]
        for s in self.scenarios:
            cells = [self._cell(s.name, c) for c in cols]
            lines.append("| " + " | ".join([f"`{s.name}`", s.category, s.severity, *cells]) + " |")
        lines += ["", "## What catches each ablation", "",
                  "| variant | guard removed | caught by | wastes more than `guarded` in |", "|---|---|---|---|"]
        for c in cols:
            if c.startswith("-") or c in ("naive", "eager"):
                what = ABLATIONS.get(c[1:], "every guard" if c == "naive" else "over-eager: stops any repeat")
                caught, more = self.caught_by(c), self._wastes_more_than_guarded(c)
                lines.append(f"| `{c}` | {what} | {_listed(caught)} | {_listed(more)} |")
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


def _listed(names: Sequence[str]) -> str:
    return f"{len(names)}: " + ", ".join(f"`{n}`" for n in names) if names else "none"


def ablation_matrix(scenarios: Sequence[Scenario] | None = None,
                    variants: Mapping[str, Callable[..., Any]] | None = None) -> Matrix:
    todo = suite() if scenarios is None else list(scenarios)
    chosen = dict(AGENT_VARIANTS if variants is None else variants)
    verdicts = {(s.name, label): run_scenario(s, agent, label=label)
                for s in todo for label, agent in chosen.items()}
    return Matrix(todo, list(chosen), verdicts)


