"""The run engine: results, ceilings, watchdog, crashes, refusal inference, async agents, artifacts."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from toolchaos import AgentResult, Ceiling, RunClosed, policies, run, tool_message
from toolchaos.errors import PolicyCrashed
from toolchaos.fake_tools import catalogue, faults


def search_tools():
    return [catalogue.get("search")]


def test_result_carries_state_answer_trace_ledger_usage():
    r = run("builtin:naive", task="find", tools=search_tools(),
            policy=policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "found it"}]))
    assert (r.terminal_state, r.answer, r.turns, r.executions) == ("COMPLETED", "found it", 2, {"search": 1})
    kinds = [e["kind"] for e in r.trace]
    assert kinds == ["model", "tool", "model", "end"]
    tool = r.trace.tool_events[0]
    assert tool["args"] == {"query": "q", "limit": 3}  # defaults filled: the normalised form
    assert tool["class"] == "SUCCESS" and tool["executed"] is True and tool["call_id"] == "call_1_0"
    assert r.usage[1].input_tokens > r.usage[0].input_tokens  # context grows every turn


def test_an_agent_that_returns_without_an_answer_is_not_completed():
    def gives_up(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        return None

    r = run(gives_up, task="t", tools=search_tools(), policy=policies.stubborn("search", {"query": "q"}))
    assert r.terminal_state == "FAILED"
    assert [e["kind"] for e in r.trace] == ["model", "skipped", "end"]  # asked for, never executed


def test_hard_ceiling_ends_an_unbounded_agent():
    def forever(task, model, tools):
        messages = [{"role": "user", "content": task}]
        while True:
            turn = model.complete(messages)
            for c in turn.tool_calls:
                try:
                    tools.call(c.name, c.arguments)
                except Exception:
                    pass  # even swallowing everything does not stop the ceiling

    r = run(forever, task="t", tools=search_tools(), policy=policies.stubborn("search", {"query": "q"}, until="never"),
            ceiling=Ceiling(max_tool_calls=50, max_model_turns=1000))
    assert (r.terminal_state, r.harness_stop, r.total_executions) == ("HARD_CEILING", "ceiling", 50)
    assert "50 tool calls" in (r.error or "")
    r2 = run(forever, task="t", tools=search_tools(), policy=policies.scripted([]),
             ceiling=Ceiling(max_model_turns=30))
    assert (r2.terminal_state, r2.turns) == ("HARD_CEILING", 30)


def test_watchdog_ends_a_spinning_agent_with_its_trace():
    def spins(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        while True:
            try:
                sum(range(1000))
            except Exception:
                pass

    t0 = time.monotonic()
    r = run(spins, task="t", tools=search_tools(), policy=policies.scripted([]), ceiling=Ceiling(real_seconds=0.3))
    assert (r.terminal_state, r.harness_stop) == ("WATCHDOG", "watchdog")
    assert r.trace.model_events and r.trace.events[-1]["kind"] == "end"
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("exc", [ZeroDivisionError("boom"), SystemExit(2), GeneratorExit()])
def test_an_agent_that_raises_is_a_failed_run_with_its_trace(exc, tmp_path):
    def crashes(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        tools.call("search", {"query": "q"})
        raise exc

    r = run(crashes, task="t", tools=search_tools(), policy=policies.stubborn("search", {"query": "q"}),
            artifacts=tmp_path, name="crash")
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "crash")
    assert type(exc).__name__ in (r.error or "")
    lines = (tmp_path / "crash.trace.jsonl").read_text().splitlines()
    assert [json.loads(x)["kind"] for x in lines] == ["model", "tool", "end"]


def test_ctrl_c_writes_the_trace_then_propagates(tmp_path):
    def interrupted(task, model, tools):
        tools.call("search", {"query": "q"})
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(interrupted, task="t", tools=search_tools(), policy=policies.scripted([]), artifacts=tmp_path, name="ctrl")
    assert (tmp_path / "ctrl.trace.jsonl").exists()


def test_a_broken_policy_is_a_test_bug_not_an_agent_failure():
    def bad_policy(view):
        raise KeyError("oops")

    with pytest.raises(KeyError):
        run("builtin:naive", task="t", tools=search_tools(), policy=bad_policy)
    assert issubclass(PolicyCrashed, BaseException) and not issubclass(PolicyCrashed, Exception)


def test_async_agents_run_with_virtual_sleep():
    async def agent(task, model, tools):
        messages = [{"role": "user", "content": task}]
        turn = await model.acomplete(messages)
        await asyncio.sleep(600)  # virtual: returns at once
        call = turn.tool_calls[0]
        messages += [turn.as_message(), tool_message(call, tools.call(call.name, call.arguments, call_id=call.id))]
        return (await model.acomplete(messages)).text

    t0 = time.monotonic()
    r = run(agent, task="t", tools=search_tools(),
            policy=policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}]))
    assert (r.terminal_state, r.answer) == ("COMPLETED", "done")
    assert r.trace.tool_events[0]["t"] == 600 and time.monotonic() - t0 < 2


def test_time_inside_a_run_is_virtual_and_outside_real():
    import datetime

    seen = {}

    def agent(task, model, tools):
        seen["start"] = (time.time(), datetime.datetime.now())
        time.sleep(3600)
        seen["after"] = time.time()
        return "ok"

    real_before = time.time()
    run(agent, task="t", tools=search_tools(), policy=policies.scripted([]))
    assert seen["start"][1] == datetime.datetime(2026, 1, 1)
    assert seen["after"] - seen["start"][0] == pytest.approx(3600)
    assert abs(time.time() - real_before) < 60  # outside the run: the real clock again


def test_calls_after_the_run_are_refused_and_not_recorded():
    kept = {}

    def agent(task, model, tools):
        kept["t"], kept["m"] = tools, model
        return "bye"

    r = run(agent, task="t", tools=search_tools(), policy=policies.scripted([]))
    with pytest.raises(RunClosed):
        kept["t"].call("search", {"query": "x"})
    with pytest.raises(RunClosed):
        kept["m"].complete([])
    with pytest.raises(RunClosed):
        kept["m"].count_tokens([])
    assert r.trace.events[-1]["kind"] == "end" and r.ledger.executions("search") == 0


def test_count_tokens_is_the_prompt_a_turn_reports_and_not_a_turn():
    seen = []

    def agent(task, model, tools):
        messages = [{"role": "user", "content": task}]
        for _ in range(3):
            counted = model.count_tokens(messages)
            turn = model.complete(messages, tools.specs)
            seen.append((counted, turn.usage.input_tokens))
            messages.append(turn.as_message())
            for call in turn.tool_calls:
                messages.append(tool_message(call, tools.call(call.name, call.arguments, call_id=call.id)))
        return "done"

    r = run(agent, task="find it", tools=search_tools(),
            policy=policies.scripted([{"call": "search", "args": {"query": f"q{i}"}} for i in range(3)]))
    assert [c for c, _ in seen] == [t for _, t in seen] and seen[0][0] < seen[1][0] < seen[2][0]
    assert r.turns == 3


def test_unknown_agent_reference_is_a_clear_error():
    from toolchaos._agents import AgentRefError

    with pytest.raises(AgentRefError, match=r"did you mean 'builtin:guarded'"):
        run("builtin:gaurded", task="t", tools=search_tools(), policy=policies.scripted([]))
    with pytest.raises(AgentRefError, match="cannot import"):
        run("no_such_module_xyz:agent", task="t", tools=search_tools(), policy=policies.scripted([]))


def test_refusals_match_the_request_they_answer():
    def refuser(task, model, tools):
        messages = [{"role": "user", "content": task}]
        turn = model.complete(messages)
        c = turn.tool_calls[0]
        tools.refuse(c.name, c.arguments, guard="g", reason="r")  # no call id: matched by fingerprint
        return AgentResult("STOPPED_LOOP_GUARD")

    r = run(refuser, task="t", tools=search_tools(), policy=policies.stubborn("search", {"query": "q"}))
    ref = r.trace.of_kind("refusal")[0]
    assert (ref["call_id"], ref["guard"], ref["executed"]) == ("call_1_0", "g", False)
    assert not r.trace.of_kind("skipped")


def test_dict_results_are_accepted():
    r = run(lambda task, model, tools: {"state": "NEEDS_HUMAN", "report": {"guard": "x"}}, task="t",
            tools=search_tools(), policy=policies.scripted([]))
    assert (r.terminal_state, r.guard) == ("NEEDS_HUMAN", "x")


def test_effects_column_counts_the_ledger_after_each_call():
    pay = catalogue.get("charge_payment", faults=[{"call": 2, "outcome": faults.transient(503)}])
    r = run("builtin:naive", task="t", tools=[pay], policy=policies.scripted(
        [{"call": "charge_payment", "args": {"customer_id": "c", "amount": 1, "idempotency_key": f"k{i}"}}
         for i in range(3)]))
    assert [e["effects"] for e in r.trace.tool_events] == [1, 1, 2]
