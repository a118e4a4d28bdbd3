"""Verdicts do not depend on machine load: LangGraph's unbounded loop ends at the ceiling, slowed or not."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from toolchaos import Ceiling, policies, wire
from toolchaos._plumbing import clock as _clock
from toolchaos.fake_tools import catalogue, faults

TURNS = 12
LIMIT = 2.0  # real seconds without progress; the slowed run takes longer than this in all


def _langgraph() -> Any:
    pytest.importorskip("langgraph", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    pytest.importorskip("langchain_openai", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    from toolchaos.adapters import langgraph

    return langgraph.agent()


class _Slow:
    """The stubborn model double, answering each turn after a real delay (a slow, loaded machine)."""

    name = "slow-stubborn"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.inner = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})

    def decide(self, view: Any) -> Any:
        if self.delay:
            _clock.real_sleep(self.delay)
        return self.inner.decide(view)


def _run(delay: float) -> tuple[Any, float]:
    t0 = _clock.real_monotonic()
    result = wire.run(_langgraph(), task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))], policy=_Slow(delay),
                      ceiling=Ceiling(max_model_turns=TURNS, real_seconds=LIMIT))
    return result, _clock.real_monotonic() - t0


def test_langgraph_unbounded_ends_at_the_ceiling_however_slow_the_machine() -> None:
    fast, _ = _run(0.0)
    stop = threading.Event()

    def hog() -> None:  # competes for the interpreter with the run, as a loaded machine does
        n = 0
        while not stop.is_set():
            n += 1

    hogs = [threading.Thread(target=hog, daemon=True) for _ in range(2)]
    for t in hogs:
        t.start()
    try:
        slow, took = _run(0.25)
    finally:
        stop.set()
        for t in hogs:
            t.join()
    assert took > LIMIT  # longer in all than the real-time limit: a total-time watchdog would have ended it
    assert (slow.terminal_state, slow.harness_stop) == (fast.terminal_state, fast.harness_stop) == (
        "HARD_CEILING", "ceiling"), slow.error
    assert slow.total_executions == fast.total_executions and slow.turns == fast.turns
    assert slow.trace.jsonl() == fast.trace.jsonl()  # the same run, event for event
