"""Concurrent workers (threads, and threads with tasks) share tools and ledger; every count stays exact."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest
from toolchaos import Ceiling, policies, run
from toolchaos.fake_tools import EffectLedger, ToolSet, catalogue, fake_tool

WORKERS, CALLS = 8, 250


@pytest.fixture(autouse=True)
def _switch_often():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # make the interpreter interleave threads as often as it can
    yield
    sys.setswitchinterval(old)


def threaded(fn, n=WORKERS):
    start = threading.Barrier(n)

    def go(w):
        start.wait()
        fn(w)

    ts = [threading.Thread(target=go, args=(w,)) for w in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def test_threads_sharing_a_side_effect_tool_leave_exact_counts():
    def agent(task, model, tools):
        def worker(w):
            for i in range(CALLS):
                key = f"op-{i % 50}" if w % 2 else f"w{w}-{i}"  # odd workers repeat 50 keys
                tools.call("charge_payment", {"customer_id": f"c{w}", "amount": 1, "idempotency_key": key})

        threaded(worker)
        return "ok"

    # an API without dedupe: every execution applies, so every count is one per call
    r = run(agent, task="t", tools=[catalogue.get("charge_payment", idempotency="ignored")],
            policy=policies.scripted([]), ceiling=Ceiling(max_tool_calls=WORKERS * CALLS, real_seconds=60))
    total = WORKERS * CALLS
    assert r.harness_stop is None, r.error
    events = r.trace.tool_events
    assert len(events) == total == r.ledger.executions("charge_payment") == r.ledger.applied("charge_payment")
    assert sorted(e["call_no"] for e in events) == list(range(1, total + 1))  # no number lost or repeated
    assert sorted(e["effects"] for e in events) == list(range(1, total + 1))
    seqs = [e["seq"] for e in r.trace.events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # the trace is in seq order
    keys = r.ledger.keys("charge_payment")
    assert sum(keys.values()) == total
    assert all(keys[f"op-{k}"] == (WORKERS // 2) * (CALLS // 50) for k in range(50))
    assert len(r.ledger.duplicates()) == 50


def test_threads_racing_with_one_idempotency_key_apply_it_once():
    def agent(task, model, tools):
        def worker(w):
            for i in range(CALLS):
                tools.call("charge_payment", {"customer_id": "c1", "amount": 1, "idempotency_key": f"op-{i % 50}"})

        threaded(worker)
        return "ok"

    r = run(agent, task="t", tools=[catalogue.get("charge_payment")], policy=policies.scripted([]),
            ceiling=Ceiling(max_tool_calls=WORKERS * CALLS, real_seconds=60))
    assert r.harness_stop is None, r.error
    assert r.ledger.applied("charge_payment") == 50 and not r.ledger.duplicates()
    assert r.ledger.replayed("charge_payment") == WORKERS * CALLS - 50


def test_the_ledger_alone_is_exact_under_threads():
    ledger = EffectLedger()
    counts: list[int] = []

    def worker(w):
        for i in range(2000):
            counts.append(ledger.record("t", f"{w}:{i}", True, "ok", i))

    threaded(worker)
    assert sorted(counts) == list(range(1, WORKERS * 2000 + 1)) and ledger.applied("t") == WORKERS * 2000


def test_a_toolset_used_alone_numbers_calls_atomically():
    ts = ToolSet([fake_tool("ping", side_effect=True)])
    seen: list[int] = []

    def worker(w):
        for _ in range(1000):
            seen.append(ts.run_call("ping", {})[5])

    threaded(worker)
    assert sorted(seen) == list(range(1, WORKERS * 1000 + 1)) and ts.ledger.applied() == WORKERS * 1000


def test_threads_asking_the_model_at_once_get_distinct_turns():
    def agent(task, model, tools):
        steps: list[int] = []

        def worker(w):
            for _ in range(10):
                steps.append(model.complete([{"role": "user", "content": f"worker {w}"}]).step)

        threaded(worker, 4)
        return "ok"

    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.stubborn("search", {"query": "q"}),
            ceiling=Ceiling(real_seconds=60))
    assert sorted(e["step"] for e in r.trace.model_events) == list(range(1, 41))


def test_threads_each_running_an_event_loop_share_the_tools():
    """A worker pool where each thread runs its own asyncio loop (the way some frameworks do)."""

    def agent(task, model, tools):
        async def tasks(w):
            await asyncio.gather(*(tools.acall("charge_payment", {"customer_id": "c", "amount": 1,
                                                                  "idempotency_key": f"{w}-{i}"}) for i in range(50)))

        threaded(lambda w: asyncio.run(tasks(w)), 4)
        return "ok"

    r = run(agent, task="t", tools=[catalogue.get("charge_payment")], policy=policies.scripted([]),
            ceiling=Ceiling(real_seconds=60))
    assert r.harness_stop is None, r.error
    assert r.ledger.applied() == 200 and not r.ledger.duplicates()
    assert sorted(e["call_no"] for e in r.trace.tool_events) == list(range(1, 201))


def test_the_ceiling_is_exact_under_threads():
    def agent(task, model, tools):
        def worker(w):
            try:
                while True:
                    tools.call("search", {"query": f"{w}"})
            except BaseException:
                pass

        threaded(worker)
        return "ok"

    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.scripted([]),
            ceiling=Ceiling(max_tool_calls=777, real_seconds=60))
    assert (r.terminal_state, r.total_executions) == ("HARD_CEILING", 777)


def test_a_thread_the_agent_started_outside_threading_does_not_break_the_end_of_the_run():
    # A thread started through _thread (as C code does) shows in threading.enumerate() as a dummy
    # thread once it asks threading who it is; it cannot be joined, and the run's end must not try.
    import _thread

    from toolchaos import policies, run
    from toolchaos.fake_tools import catalogue

    seen, done = threading.Event(), threading.Event()

    def foreign():
        threading.current_thread()  # registers a dummy thread
        seen.set()
        done.wait(5)

    def agent(task, model, tools):
        _thread.start_new_thread(foreign, ())
        seen.wait(5)
        return "ok"

    try:
        r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.scripted([]))
        assert r.harness_stop is None, r.error
    finally:
        done.set()
