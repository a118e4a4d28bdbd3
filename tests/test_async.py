"""Async agents are first-class: async tools, parallel calls in one turn, virtual timeouts, the same invariants."""

from __future__ import annotations

import asyncio
import time

import pytest
from toolchaos import Ceiling, RunClosed, invariants, policies, run, tool_message
from toolchaos._plumbing import clock as _clock
from toolchaos.fake_tools import catalogue, faults

SLACK = 8.0


def search(**kw):
    return [catalogue.get("search", **kw)]


def quick(agent, tools=None, policy=None, **kw):
    t0 = _clock.real_monotonic()
    r = run(agent, task="t", tools=tools or search(), policy=policy or policies.scripted([]), **kw)
    return r, _clock.real_monotonic() - t0


def test_sleep_wait_for_and_timeout_are_virtual_and_do_not_hang():
    seen = {}

    async def agent(task, model, tools):
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)  # nobody sets it
        except TimeoutError:
            seen["wait_for"] = loop.time()
        try:
            async with asyncio.timeout(60):
                await asyncio.sleep(3600)
        except TimeoutError:
            seen["timeout"] = loop.time()
        await asyncio.sleep(10)
        seen["slept"] = (loop.time(), time.time())
        return "ok"

    r, took = quick(agent, ceiling=Ceiling(real_seconds=5))
    assert r.harness_stop is None, r.error
    assert seen["wait_for"] == pytest.approx(30) and seen["timeout"] == pytest.approx(90)
    assert seen["slept"][0] == pytest.approx(100) and r.virtual_seconds == pytest.approx(100)
    assert seen["slept"][1] == pytest.approx(_clock.EPOCH.replace(tzinfo=__import__("datetime").timezone.utc)
                                             .timestamp() + 100)  # time.time() agrees with the loop
    assert took < SLACK


def test_concurrent_sleepers_overlap_in_virtual_time():
    async def agent(task, model, tools):
        await asyncio.gather(asyncio.sleep(10), asyncio.sleep(10), asyncio.sleep(4))
        return str(tools.now())

    r, _ = quick(agent)
    assert r.answer == "10.0"


def test_parallel_tool_calls_of_one_turn_start_together_and_end_with_the_slowest():
    slow = [catalogue.get("search", faults=[{"match": {"query": "slow"}, "outcome": faults.slow(30)}],
                          default=faults.slow(2))]
    policy = policies.scripted([{"calls": [{"call": "search", "args": {"query": q}} for q in ("a", "slow", "b")]},
                                {"final": "done"}])

    async def agent(task, model, tools):
        messages = [{"role": "user", "content": task}]
        turn = await model.acomplete(messages, tools.specs)
        results = await asyncio.gather(*(tools.acall(c.name, c.arguments, call_id=c.id) for c in turn.tool_calls))
        messages += [turn.as_message(), *(tool_message(c, res) for c, res in zip(turn.tool_calls, results))]
        return (await model.acomplete(messages, tools.specs)).text

    r, _ = quick(agent, tools=slow, policy=policy)
    assert (r.terminal_state, r.answer) == ("COMPLETED", "done")
    calls = r.trace.tool_events
    assert [(e["call_id"], e["t"], e["call_no"]) for e in calls] == [
        ("call_1_0", 0.0, 1), ("call_1_1", 0.0, 2), ("call_1_2", 0.0, 3)]
    assert r.virtual_seconds == pytest.approx(30)  # the slowest, not the sum (34)
    assert r.trace.model_events[1]["t"] == pytest.approx(30)
    assert not r.trace.of_kind("skipped")


def test_an_agent_timeout_around_a_slow_async_tool_fires_in_virtual_time():
    slow = search(faults=faults.slow(120))

    async def agent(task, model, tools):
        try:
            await asyncio.wait_for(tools.acall("search", {"query": "q"}), timeout=10)
        except TimeoutError:
            return f"gave up at {tools.now()}"
        return "waited"

    r, took = quick(agent, tools=slow)
    assert r.answer == "gave up at 10.0" and took < SLACK
    assert r.trace.tool_events[0]["executed"]  # the request went out: its effect may have happened


def test_async_delivery_raises_like_sync():
    tools = [catalogue.get("search", faults=faults.fatal("permission_denied"), delivery="raise")]

    async def agent(task, model, tools):
        try:
            await tools.acall("search", {"query": "q"})
        except Exception as exc:
            return type(exc).__name__
        return "no error"

    r, _ = quick(agent, tools=tools)
    assert r.answer not in (None, "no error")


def test_tasks_sharing_tools_count_exactly_and_interleave_deterministically():
    pay = [catalogue.get("charge_payment")]

    async def agent(task, model, tools):
        async def worker(w):
            for i in range(50):
                await tools.acall("charge_payment", {"customer_id": f"c{w}", "amount": 1, "idempotency_key": f"{w}-{i}"})

        await asyncio.gather(*(worker(w) for w in range(8)))
        return "ok"

    r1, _ = quick(agent, tools=pay)
    r2, _ = quick(agent, tools=pay)
    assert r1.ledger.applied("charge_payment") == 400 and not r1.ledger.duplicates()
    assert sorted(e["call_no"] for e in r1.trace.tool_events) == list(range(1, 401))
    assert sorted(e["effects"] for e in r1.trace.tool_events) == list(range(1, 401))
    assert r1.trace.jsonl() == r2.trace.jsonl()
    first = [e["args"]["customer_id"] for e in r1.trace.tool_events[:8]]
    assert first == [f"c{w}" for w in range(8)]  # tasks take turns at every call


def test_to_thread_work_is_not_overtaken_by_virtual_timeouts():
    def sync_work():
        _clock.real_sleep(0.05)  # real work in a thread
        return "done"

    async def agent(task, model, tools):
        got = await asyncio.wait_for(asyncio.to_thread(sync_work), timeout=1)
        return got

    r, _ = quick(agent)
    assert r.answer == "done", r.error


def test_the_watchdog_stops_an_async_spinner_and_an_async_deadlock():
    async def spins(task, model, tools):
        while True:
            pass

    async def deadlock(task, model, tools):
        await asyncio.Event().wait()  # no timer, no I/O: nothing will ever wake it

    for agent in (spins, deadlock):
        r, took = quick(agent, ceiling=Ceiling(real_seconds=0.3))
        assert (r.terminal_state, r.harness_stop) == ("WATCHDOG", "watchdog") and took < SLACK


TRACED = """
import asyncio, faulthandler, json, sys, threading
faulthandler.dump_traceback_later(40, exit=True)  # a hang prints every thread's stack instead of waiting forever
from toolchaos import Ceiling, policies, run
from toolchaos._plumbing import clock
from toolchaos.fake_tools import catalogue

async def spins(task, model, tools):
    while True:
        pass

async def deadlock(task, model, tools):
    await asyncio.Event().wait()

def hook(frame, event, arg):
    return hook

getattr(threading, sys.argv[1])(hook)  # as coverage and profilers do: every new thread too
getattr(sys, sys.argv[1])(hook)
for agent in (spins, deadlock):
    t0 = clock.real_monotonic()
    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.scripted([]),
            ceiling=Ceiling(real_seconds=%(limit)r))
    print(json.dumps([agent.__name__, r.terminal_state, r.harness_stop, clock.real_monotonic() - t0]))
"""


@pytest.mark.parametrize("how", ["settrace", "setprofile"])
def test_the_watchdog_stops_async_agents_under_a_tracer_or_profiler(how, tmp_path):
    """Coverage, debuggers and profilers trace the watchdog thread too; on CPython 3.11 a traced
    thread stalls while an asynchronous exception waits for a thread blocked in C, so the deadlock
    would never get its signal. A subprocess with a timeout: a regression fails instead of hanging."""
    import json
    import subprocess
    import sys

    limit, grace = 0.3, 6.0  # the grace absorbs a loaded machine (3.5 s seen at load 8); a regression hangs to the timeout
    script = tmp_path / "traced.py"
    script.write_text(TRACED % {"limit": limit})
    out = subprocess.run([sys.executable, str(script), how], capture_output=True, text=True, timeout=120)
    ended = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e[:3] for e in ended] == [["spins", "WATCHDOG", "watchdog"], ["deadlock", "WATCHDOG", "watchdog"]], \
        out.stderr[-3000:]
    assert all(took < limit + grace for *_, took in ended), ended


def test_an_async_agent_looping_on_a_failing_tool_meets_the_same_invariants():
    async def naive(task, model, tools):
        messages = [{"role": "user", "content": task}]
        while True:
            turn = await model.acomplete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return turn.text
            for c in turn.tool_calls:
                messages.append(tool_message(c, await tools.acall(c.name, c.arguments, call_id=c.id)))

    r, _ = quick(naive, tools=search(faults=faults.timeout(after=30)),
                 policy=policies.stubborn("search", {"query": "q"}), ceiling=Ceiling(max_tool_calls=25))
    assert r.terminal_state == "HARD_CEILING"
    assert r.virtual_seconds == pytest.approx(25 * 30)
    assert invariants.bounded(executions=3).check(r)  # violated, as for a sync agent


def test_acall_after_the_run_is_refused():
    kept = {}

    async def agent(task, model, tools):
        kept["tools"] = tools
        return "bye"

    quick(agent)
    with pytest.raises(RunClosed):
        asyncio.run(kept["tools"].acall("search", {"query": "q"}))


def test_the_virtual_loop_is_closed_after_the_run():
    loops = []

    async def agent(task, model, tools):
        loops.append(asyncio.get_running_loop())
        asyncio.get_running_loop().create_task(asyncio.sleep(1000))  # left pending: cancelled at the end
        return "ok"

    quick(agent)
    assert loops[0].is_closed() and isinstance(loops[0], _clock.VirtualEventLoop)
