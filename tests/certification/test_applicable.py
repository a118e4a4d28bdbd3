"""What a scenario asks of an agent's kind: N/A from the declarations alone, and judged by harm.

- every bundled scenario declares its ``needs``; the process kind lacks virtual time, a restart
  and two workers, so exactly the scenarios needing them are N/A to it, and none is N/A to the
  in-process kinds;
- N/A is decided before anything runs: the same scenario is N/A, with the same reason, for a
  process agent that would loop, one that would exit at once and one whose program does not
  exist, and nothing is started;
- a kind that cannot report a stop is judged by harm: a run it ended by itself counts as stopped
  where a stop state is demanded, a stop report is not asked of it, and every invariant of harm
  still fails a run that broke it (runs of in-process agents, judged as a process agent's would be);
- ``run_scenario``, ``certify`` and the command line give the N/A its reason and never a failure.
"""

from __future__ import annotations

import sys
import time

import pytest
import toolchaos
from toolchaos._agents import NEEDS, ProcessAgent, kinds
from toolchaos.certification import certify, judge, run_scenario, suite
from toolchaos.certification._applicable import StoppedByItself, StopReportNotAsked, as_judged, not_applicable_to
from toolchaos.cli import main
from toolchaos.reports import verdict_status
from toolchaos.scenario import load_text

PROCESS_NA = {"budget-pending-never-finishes", "budget-wall-clock", "budget-steps", "budget-tokens-growing-context",
              "err-rate-limit-retry-after",
              "legit-poll-to-completion", "resume-redo-only-unfinished", "side-write-before-guard-resume",
              "side-concurrent-same-key"}


def _by_name(name: str) -> toolchaos.scenario.Scenario:
    return next(s for s in suite() if s.name == name)


def test_the_bundled_scenarios_that_a_process_agent_cannot_be_judged_on_are_exactly_those_needing_what_it_lacks() -> None:
    process, in_process = kinds()["process"], kinds()["in-process"]
    na = {s.name: not_applicable_to(s, process) for s in suite()}
    expected = PROCESS_NA | {s.name for s in suite() if s.id == "err-rate-limit-reset-forms"}
    assert {name for name, why in na.items() if why} == expected
    assert len(expected) == 17 and len(suite()) - len(expected) == 27
    assert na["budget-wall-clock"] == (f"needs virtual_time, which a process agent lacks ({NEEDS['virtual_time'].meaning}); "
                                       f"needs budgets, which a process agent lacks ({NEEDS['budgets'].meaning})")
    assert na["budget-steps"] == f"needs budgets, which a process agent lacks ({NEEDS['budgets'].meaning})"
    assert na["side-concurrent-same-key"].startswith("needs two_workers, which a process agent lacks")  # type: ignore[union-attr]
    assert na["resume-redo-only-unfinished"].startswith("needs restart, which a process agent lacks")  # type: ignore[union-attr]
    for name in ("loop-argument-jitter", "err-permission-denied", "side-email-asked-repeatedly", "legit-transient-503"):
        assert na[name] is None  # loop scenarios demanding a stop are judged by harm, not N/A
    for kind in ("in-process", "sdk", "openai-agents", "pydantic-ai", "langgraph"):
        assert not any(not_applicable_to(s, kinds()[kind]) for s in suite())
    assert not any(not_applicable_to(s, in_process) for s in suite())


def test_every_bundled_scenario_declares_what_it_needs() -> None:
    for s in suite():
        assert s.spec is not None and s.spec.needs is not None, f"{s.name}: no needs: declared"
        assert set(s.needs) >= set(s.spec.needs)


@pytest.mark.parametrize("agent", [
    ProcessAgent(preset="python"),  # would call tools
    ProcessAgent((sys.executable, "-c", "pass")),  # would exit at once
    ProcessAgent(("/nonexistent/agent-program",)),  # could not even start
    f"cmd:{sys.executable} -c 'while True: pass'",  # would spin until the watchdog
])
def test_na_comes_from_the_declarations_never_from_a_run(agent: object) -> None:
    scenario = _by_name("budget-wall-clock")
    t0 = time.monotonic()
    verdict = run_scenario(scenario, agent)
    assert time.monotonic() - t0 < 1.0  # nothing was started: no server, no child
    assert verdict.not_applicable == not_applicable_to(scenario, kinds()["process"])
    assert verdict_status(verdict) == "n/a" and not verdict.passed and not verdict.violations
    assert verdict.runs == [] and verdict.result.terminal_state == "N/A" and not verdict.result.trace.events
    assert verdict.result.agent_kind == "process"
    assert verdict.headline().startswith("N/A budget-wall-clock: needs virtual_time")


def test_the_same_scenario_applies_to_an_in_process_agent_and_is_judged_as_written() -> None:
    verdict = run_scenario(_by_name("budget-wall-clock"), "builtin:guarded")
    assert verdict.not_applicable is None and verdict.passed and verdict.runs
    assert verdict.result.terminal_state == "STOPPED_LOOP_GUARD"


# --- judged by harm ----------------------------------------------------------------------------


def _gives_up_after(n: int) -> object:
    """An in-process agent that does what the model asks ``n`` times and then just returns (no stop report)."""
    def agent(task: str, model: object, tools: object) -> str:
        messages = [{"role": "user", "content": task}]
        for _ in range(n):
            turn = model.complete(messages, tools.specs)  # type: ignore[attr-defined]
            messages.append(turn.as_message())
            for call in turn.tool_calls:
                result = tools.call(call.name, call.arguments, call_id=call.id)  # type: ignore[attr-defined]
                messages.append(toolchaos.tool_message(call, result))
        return "I stopped."

    return agent


def test_a_run_that_ends_by_itself_within_bounds_counts_as_stopped_for_a_kind_that_cannot_report_one() -> None:
    scenario = _by_name("loop-exact-repeat-timeout")  # bounded 4 executions; STOPPED_LOOP_GUARD or NEEDS_HUMAN
    result = toolchaos.run(_gives_up_after(3), scenario_spec(scenario))
    assert result.terminal_state == "FAILED" and result.harness_stop is None and result.total_executions == 3
    as_written = judge(scenario, result, agent="gives-up", kind="in-process")
    assert [v.invariant for v in as_written.violations] == ["terminal_state", "stop_report"]  # it reports stops
    by_harm = judge(scenario, result, agent="gives-up", kind="process")
    assert by_harm.passed, by_harm.violations
    rows = {type(i).__name__: (i.expected_text(), i.actual_text(result)) for i in by_harm.expect}
    assert rows["StoppedByItself"][1] == "FAILED: ended by itself, counted as stopped"
    assert "or, as a process agent cannot report a stop, an end by itself" in rows["StoppedByItself"][0]
    assert rows["StopReportNotAsked"] == ("a stop report with guard, reason, completed, resume_condition (unless "
                                          "COMPLETED): not asked of a process agent, which cannot report a stop",
                                          "not judged")


def test_a_run_past_its_bounds_still_fails_on_harm_and_one_the_harness_ended_is_no_stop() -> None:
    scenario = _by_name("loop-exact-repeat-timeout")
    looped = toolchaos.run(_gives_up_after(8), scenario_spec(scenario))  # ends by itself, 8 executions
    verdict = judge(scenario, looped, agent="loops", kind="process")
    assert [v.invariant for v in verdict.violations] == ["bounded.executions", "bounded.turns"]
    assert verdict.failure_severity == "critical"  # the harm: executions past the bound

    fused = scenario_spec(scenario).with_(ceiling=toolchaos.Ceiling(max_model_turns=10))
    ceiling = toolchaos.run("builtin:naive", fused)  # the harness's ceiling ended it
    assert ceiling.harness_stop == "ceiling"
    broke = {v.invariant: v for v in judge(scenario, ceiling, agent="naive", kind="process").violations}
    assert {"bounded.executions", "terminal_state", "terminated"} <= set(broke)
    assert "stop_report" not in broke  # never asked of it
    assert "an end by itself" in broke["terminal_state"].expected


def test_side_effects_and_resends_judge_a_process_agent_unchanged() -> None:
    for name in ("side-email-asked-repeatedly", "err-permission-denied"):
        scenario = _by_name(name)
        result = toolchaos.run("builtin:naive", scenario_spec(scenario))
        as_written = {v.invariant for v in judge(scenario, result, agent="naive", kind="in-process").violations}
        by_harm = {v.invariant for v in judge(scenario, result, agent="naive", kind="process").violations}
        harm = {"max_side_effects", "idempotent", "world_state.created", "no_unchanged_resend", "bounded.executions",
                "bounded.turns"}
        assert as_written & harm and as_written & harm == by_harm & harm  # the same harm, found the same way


def test_a_demanded_state_without_a_stop_and_a_kind_that_reports_stops_are_left_as_written() -> None:
    text = ("id: x\ntitle: t\ntask: t\ntools: {fetch_invoice: {}}\npolicy: {stubborn: {tool: fetch_invoice, "
            "args: {invoice_id: inv_1}}}\nexpect: [{terminal_state: [COMPLETED]}, stop_report]\n")
    (scenario,) = load_text(text)
    judged = as_judged(scenario.expect, "process")
    assert type(judged[0].invariant).__name__ == "TerminalState"  # COMPLETED demanded: no stop to stand in for
    assert isinstance(judged[1].invariant, StopReportNotAsked)
    assert [e.invariant for e in as_judged(scenario.expect, "in-process")] == [e.invariant for e in scenario.expect]
    assert not isinstance(judged[0].invariant, StoppedByItself)


def scenario_spec(scenario: toolchaos.scenario.Scenario) -> toolchaos.RunSpec:
    from toolchaos.certification import scenario_spec as spec_of

    return spec_of(scenario)


# --- certify and the command line ---------------------------------------------------------------


def test_certify_and_the_command_line_name_the_na_scenarios_with_their_reason(capsys: pytest.CaptureFixture[str]) -> None:
    na = [s for s in suite() if s.name in PROCESS_NA]
    verdicts = certify(ProcessAgent(("/nonexistent/agent-program",)), na)
    assert [verdict_status(v) for v in verdicts] == ["n/a"] * len(na)
    assert main(["certify", "--agent", "cmd:/nonexistent/agent-program", "-k", ",".join(sorted(PROCESS_NA))]) == 1
    out, err = capsys.readouterr()
    assert out.count("N/A  ") == len(PROCESS_NA) and "FAIL" not in out
    lines = err.strip().splitlines()
    assert lines[-1] == (f"NOT CERTIFIED: 0 of 0 applicable scenarios passed (N/A: {len(PROCESS_NA)}); level reached "
                         "none, required all")  # nothing applied: nothing is certified
    assert f"N/A ({len(PROCESS_NA)} scenarios, not run: each needs what the agent's kind lacks):" in lines
    assert any(line.startswith("  budget-pending-never-finishes, budget-wall-clock: needs virtual_time, which a "
                               "process agent lacks") and "; needs budgets, which a process agent lacks" in line
               for line in lines)
    assert any(line.startswith("  budget-steps, budget-tokens-growing-context: needs budgets, which a process agent "
                               "lacks") for line in lines)
