"""Every loop bound has room above the constants it is derived from (docs/independent-runtimes.md).

``builtin:guarded`` with each of its numeric limits raised by one, one at a time, passes every
loop scenario: no bound equals a constant of the reference. The derivations table of
docs/independent-runtimes.md names each loop scenario's bound as its YAML states it.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest
from toolchaos._agents.guarded import GuardConfig, GuardedAgent
from toolchaos.certification import certify, suite
from toolchaos.scenario import load_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "independent-runtimes.md"
LIMITS = [f for f in fields(GuardConfig) if isinstance(f.default, (int, float)) and not isinstance(f.default, bool)]


def _loops() -> list:
    return [s for s in suite() if s.category == "loops"]


def test_the_limits_are_the_references_numbers() -> None:
    assert {f.name for f in LIMITS} >= {"max_attempts", "max_repeats", "max_refusals", "no_progress_limit",
                                         "max_steps", "max_executions", "max_tokens", "poll_deadline"}


@pytest.mark.parametrize("limit", LIMITS, ids=[f.name for f in LIMITS])
def test_the_reference_with_one_limit_raised_by_one_passes_every_loop_scenario(limit) -> None:
    agent = GuardedAgent(**{limit.name: limit.default + 1})
    failed = {v.id: sorted({x.invariant for x in v.violations}) for v in certify(agent, _loops()) if not v.passed}
    assert failed == {}


def test_a_bound_without_room_is_caught_here() -> None:
    """The check can fail: the no-progress scenario with its bound back at the reference's own count."""
    scenario, = [s for s in _loops() if s.name == "loop-no-progress-exploration"]
    assert scenario.path is not None
    text = Path(scenario.path).read_text(encoding="utf-8")
    assert "bounded: {executions: 5, turns: 7}" in text
    tight, = load_text(text.replace("bounded: {executions: 5, turns: 7}", "bounded: {executions: 4, turns: 7}"))
    verdict, = certify(GuardedAgent(no_progress_limit=4), [tight])
    assert [x.invariant for x in verdict.violations] == ["bounded.executions"]
    assert certify(GuardedAgent(no_progress_limit=4), [scenario])[0].passed  # the bound as shipped holds


def _table() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    part = text[text.index("## Bounds and their derivations"):]
    part = part[:part.index("\n## ", 5)]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z0-9-]+)` \| ([^|]+) \|", part, re.M)}


def _spelled(params: dict) -> str:
    words = [f"{params['executions']} executions", f"{params['turns']} turns"]
    if "tokens" in params:
        words.append(f"{params['tokens']:,} tokens")
    return ", ".join(words)


def test_the_derivations_table_names_every_loop_bound_as_the_scenarios_state_it() -> None:
    table = _table()
    bounds = {s.name: next(e.invariant.params() for e in s.expect if e.invariant.name == "bounded")
              for s in _loops()}
    assert set(table) == set(bounds)
    assert {name: _spelled(p) for name, p in bounds.items()} == {name: cell.strip() for name, cell in table.items()}
