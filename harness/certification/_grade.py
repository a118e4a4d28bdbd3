"""The waste grade of a run: executions, model turns and tokens spent beyond a scenario's useful work.

A scenario's bounds are set from the harm they prevent, with room for every sound published
guard, so they fail a runtime that lets a loop run on, not one that stops it a few calls later
than another would. What the later stop costs is still worth knowing: a design that stops a
read-only repeat at the fifth identical call spends more than one that stops at the second. That
difference is reported as a grade, never as a failure.

The scenario says what its useful work is (``useful: {executions, turns, why}``): the tool
executions worth making and the model turns a runtime cannot avoid (the turn that asks for the
repeat a runtime then refuses included). Everything past it is waste: executions beyond the
useful ones, and the turns (with their tokens) after the useful turns. The level:

- ``none``: nothing wasted;
- ``low``: the waste is at most the useful work again (no more wasted executions than useful
  ones, no more wasted tokens than the useful turns cost);
- ``high``: more than that.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from toolchaos._engine import RunResult
from toolchaos._internal.types import WASTE_LEVELS

if TYPE_CHECKING:  # the loader brings pydantic and PyYAML; a verdict read by a report needs neither
    from toolchaos.scenario import Useful

LEVELS = WASTE_LEVELS


@dataclass(frozen=True)
class Grade:
    """What a run spent beyond its scenario's useful work."""

    useful_executions: int
    useful_turns: int
    useful_tokens: int  # what the useful turns cost
    wasted_executions: int
    wasted_turns: int
    wasted_tokens: int
    level: str
    why: str  # the scenario's reason for its useful work

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def grade_run(useful: Useful | None, result: RunResult) -> Grade | None:
    """The run's waste against ``useful``; None for a scenario that does not say what its useful work is."""
    if useful is None:
        return None
    totals = [u.total for u in result.usage]
    useful_tokens = sum(totals[:useful.turns])
    wasted_executions = max(0, result.total_executions - useful.executions)
    wasted_tokens = sum(totals[useful.turns:])
    return Grade(useful.executions, useful.turns, useful_tokens, wasted_executions,
                 max(0, len(totals) - useful.turns), wasted_tokens,
                 _level(wasted_executions, wasted_tokens, useful.executions, useful_tokens), useful.why)


def _level(wasted_executions: int, wasted_tokens: int, useful_executions: int, useful_tokens: int) -> str:
    none, low, high = LEVELS
    if not wasted_executions and not wasted_tokens:
        return none
    if wasted_executions <= useful_executions and wasted_tokens <= useful_tokens:
        return low
    return high
