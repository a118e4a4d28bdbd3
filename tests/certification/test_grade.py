"""The waste grade: what a run spent beyond its scenario's useful work, and where reports show it."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolchaos import policies, run
from toolchaos.certification import run_scenario, suite
from toolchaos.certification._grade import grade_run
from toolchaos.fake_tools import catalogue
from toolchaos.reports import build_report, scenario_entry
from toolchaos.reports._markdown import render_markdown
from toolchaos.scenario import Useful


def empty_search(agent: str):
    return run(agent, task="t", tools=[catalogue.get("search", faults="empty")],
               policy=policies.stubborn("search", {"query": "q"}))


def test_waste_counts_executions_turns_and_tokens_past_the_useful_work() -> None:
    r = empty_search("builtin:guarded")  # 2 searches, the third refused, then the model's answer: 4 turns
    g = grade_run(Useful(1, 3, "one search answers it"), r)
    assert g is not None and (r.total_executions, r.turns) == (2, 4)
    assert (g.wasted_executions, g.wasted_turns) == (1, 1)
    assert g.wasted_tokens == r.usage[3].total and g.useful_tokens == sum(u.total for u in r.usage[:3])
    assert g.level == "low" and g.why == "one search answers it"
    assert grade_run(Useful(2, 4, "x"), r).level == "none"  # type: ignore[union-attr]
    assert grade_run(None, r) is None


def test_waste_beyond_the_useful_work_again_is_high() -> None:
    g = grade_run(Useful(1, 3, "one search answers it"), empty_search("builtin:naive"))  # 40 searches
    assert g is not None and g.level == "high" and g.wasted_executions == 39 and g.wasted_turns == 37


@pytest.fixture(scope="module")
def loopguard_verdict():
    # not gemini's stop within 5 identical calls any more: its model reads the feedback as the refusal it
    # is and gives up, and the plain loop's COMPLETED fails the scenario
    (sc,) = [s for s in suite() if s.name == "loop-oversized-refetch"]
    return run_scenario(sc, "builtin:loopguard")


def test_a_pass_can_carry_a_high_waste_grade(loopguard_verdict) -> None:
    """The design's same-call limit passes the bounds; what it spent past the useful work shows in the grade."""
    v = loopguard_verdict
    assert v.passed and v.grade is not None and v.grade.level == "high" and v.grade.wasted_executions == 2
    assert v.whys[0] and "80,000" in v.whys[0]  # the bound's reason, in the order of expect


def test_reports_carry_the_grade_and_each_why(loopguard_verdict, tmp_path: Path) -> None:
    entry, events = scenario_entry(loopguard_verdict)
    assert entry["grade"]["level"] == "high" and entry["grade"]["wasted_executions"] == 2
    assert entry["invariants"][0]["name"] == "bounded" and "80,000" in entry["invariants"][0]["why"]
    assert entry["invariants"][-1]["why"] is None  # an implicit check has no reason of its own
    report, traces = build_report([(entry, events)], {"agent": "builtin:loopguard"})
    assert report["waste"] == {"graded": 1, "none": 0, "low": 0, "high": 1, "wasted_executions": 2,
                               "wasted_turns": 1, "wasted_tokens": entry["grade"]["wasted_tokens"]}
    md = render_markdown(report, traces)
    assert "| Waste | 0 none, 0 low, 1 high of 1 graded; 2 executions and" in md
    assert "| high: +2 exec, +" in md
