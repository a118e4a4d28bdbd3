"""A pending job is polled at its interval: sooner polls are waste, more than the factor inside one interval fail.

The pending fault finishes a job on its own clock (``pending: {after: seconds}``), so a runtime
that polls five times at t=0 no longer finishes it sooner: it only asks more often. The bundled
``legit-poll-to-completion`` passes for a runtime that sits out the interval (and for one that
polls twice as often, with the waste reported) and fails one that polls past the factor.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from toolchaos import AgentResult, policies, run, tool_message
from toolchaos import invariants as inv
from toolchaos.certification import run_scenario, suite
from toolchaos.errors import InvariantError
from toolchaos.fake_tools import catalogue
from toolchaos.scenario import load_text


def poller(every: float) -> Any:
    """A plain loop that sleeps ``every`` virtual seconds before each poll after the first."""
    def agent(task: str, model: Any, tools: Any) -> AgentResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for n in range(40):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return AgentResult("COMPLETED", answer=turn.text)
            for call in turn.tool_calls:
                if n:
                    time.sleep(every)  # virtual under the harness
                messages.append(tool_message(call, tools.call(call.name, call.arguments, call_id=call.id)))
        return AgentResult("STOPPED_LOOP_GUARD", report={"guard": "turns", "reason": "40 turns", "completed": [],
                                                         "resume_condition": "none"})
    return agent


def _job(every: float, after: float = 120) -> Any:
    return run(poller(every), task="Wait for the job",
               tools=[catalogue.get("get_job_status", faults={"pending": {"after": after, "interval": 30}})],
               policy=policies.poll_until("get_job_status", {"job_id": "j1"}))


def _broken(result: Any, factor: int = 3) -> list[str]:
    return [v.invariant for v in result.violations(inv.poll_interval_honoured(factor))]


def test_polls_at_the_interval_hold_and_say_so() -> None:
    r = _job(every=30)
    assert _broken(r) == [] and r.total_executions == 5 and r.terminal_state == "COMPLETED"
    assert inv.poll_interval_honoured().actual_text(r) == "5 polls, each at the interval"


def test_polls_sooner_than_the_interval_within_the_factor_hold_as_waste() -> None:
    r = _job(every=10)  # three polls in each 30 s interval: waste, not harm
    assert _broken(r) == [] and r.terminal_state == "COMPLETED" and r.total_executions == 13
    assert inv.poll_interval_honoured().actual_text(r) == "13 polls, 12 before the interval (waste)"


def test_more_polls_than_the_factor_inside_one_interval_fail() -> None:
    r = _job(every=5)
    (v,) = r.violations(inv.poll_interval_honoured())
    assert v.expected == "at most 3 polls of get_job_status inside its 30s interval"
    assert v.actual == "4 polls between t=0s and t=15s"
    assert _broken(_job(every=10), factor=2) == ["poll_interval_honoured"]  # the factor is the scenario's to state


def test_a_run_without_a_pending_job_has_nothing_to_judge() -> None:
    r = run("builtin:guarded", task="Get it", tools=[catalogue.get("fetch_invoice")],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    assert _broken(r) == [] and inv.poll_interval_honoured().actual_text(r) == "no pending job"


def test_the_factor_is_checked_and_written_only_when_not_the_default() -> None:
    with pytest.raises(InvariantError, match="factor must be an integer >= 1"):
        inv.poll_interval_honoured(0)
    assert inv.poll_interval_honoured().to_data() == "poll_interval_honoured"
    assert inv.poll_interval_honoured(2).to_data() == {"poll_interval_honoured": {"factor": 2}}
    with pytest.raises(Exception, match="factor"):
        load_text("id: s\ntitle: t\ncategory: legit\nseverity: major\ntask: t\ntools: {get_job_status: {}}\n"
                  "policy: {poll_until: {tool: get_job_status}}\nexpect:\n  - poll_interval_honoured: {factor: 0}\n")


SCENARIO = next(s for s in suite() if s.name == "legit-poll-to-completion")


@pytest.mark.parametrize("agent", ["builtin:guarded", "builtin:production", "builtin:sdk-retries"])
def test_runtimes_that_sit_out_the_interval_pass_the_bundled_pending_scenario(agent: str) -> None:
    v = run_scenario(SCENARIO, agent)
    assert v.passed, v.violations
    assert v.result.total_executions == 5 and v.grade is not None and v.grade.level == "none"


def test_polling_twice_as_often_passes_with_the_waste_graded() -> None:
    v = run_scenario(SCENARIO, poller(15))
    assert v.passed, v.violations
    assert v.grade is not None and v.grade.wasted_executions == 4  # 9 polls where 5 were useful


@pytest.mark.parametrize("agent", [poller(5), "builtin:naive"])
def test_polling_past_the_factor_fails_the_bundled_pending_scenario(agent: Any) -> None:
    v = run_scenario(SCENARIO, agent)
    assert not v.passed and "poll_interval_honoured" in {x.invariant for x in v.violations}
