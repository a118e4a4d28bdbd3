"""The waste grade: what a run spent beyond its scenario's useful work, and where reports show it."""

from __future__ import annotations

from toolchaos import policies, run
from toolchaos.certification._grade import grade_run
from toolchaos.fake_tools import catalogue
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
