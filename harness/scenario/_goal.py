"""A scenario's ``goal:``: what COMPLETED means for its task, checked from ground truth.

    goal:
      successes: {fetch_invoice: 1}   # the invoice fetched: an execution answered with usable data
      effects: {send_email: 1}        # the email sent: a side effect applied (the effect ledger)

The goal is the invariant ``goal`` (``toolchaos.invariants.goal``), checked on every run that
ends COMPLETED: the whole story, and the first run alone when the scenario restarts. A
COMPLETED claim without the goal met is a reporting failure with its own name and a severity
of at most major, not a runaway loop: in a scenario with a goal, ``terminal_state`` leaves a
COMPLETED claim to the goal, so the run is judged on the calls, effects and cost it allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchaos.fake_tools import FakeTool
from toolchaos.invariants import TerminalState
from toolchaos.invariants import goal as goal_invariant
from toolchaos.scenario._context import Context
from toolchaos.scenario._locate import locate
from toolchaos.scenario._scenario import Expectation
from toolchaos.scenario._spec import GoalSpec


def build_goal(spec: GoalSpec, ctx: Context, root: Any, tools: Sequence[FakeTool],
               restarts: bool) -> list[Expectation]:
    """The goal's expectations: the whole run, and the first run alone when the scenario restarts."""
    if not spec.successes and not spec.effects:
        raise ctx.error("goal: name at least one part (successes: {tool: N}, effects: {tool: N})", ["goal"], root=root)
    by_name = {t.name: t for t in tools}
    for part, counts in (("successes", spec.successes or {}), ("effects", spec.effects or {})):
        for tool in counts:
            if tool not in by_name:
                raise ctx.error(f"goal: {part} names the tool {tool!r}, which this scenario does not define "
                                f"(tools: {', '.join(sorted(by_name))})", ["goal", part, tool], key=True, root=root)
            if part == "effects" and not by_name[tool].side_effect:
                raise ctx.error(f"goal: effects of {tool!r}, a tool without side effects: none can ever apply "
                                f"(count its usable results under successes instead)", ["goal", part, tool],
                                key=True, root=root)
    inv = goal_invariant(spec.successes, spec.effects)
    span = locate(root, ["goal"], key=True)  # from the key: `goal:` and its parts, whichever YAML style
    text = ctx.source_of(span, root["goal"]) if span is not None else "goal"
    line = span.line if span is not None else None
    return [Expectation(inv, text, line, phase) for phase in (("run", "before") if restarts else ("run",))]


def completed_by_goal(expect: list[Expectation]) -> list[Expectation]:
    """``terminal_state`` expectations that leave a COMPLETED claim to the goal (a scenario with a goal)."""
    out = []
    for e in expect:
        inv = e.invariant
        if isinstance(inv, TerminalState) and "COMPLETED" not in inv.states:
            e = Expectation(TerminalState(*inv.states, completed_by_goal=True), e.text, e.line, e.phase)
        out.append(e)
    return out
