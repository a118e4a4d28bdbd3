"""Long runs: what a model turn costs as the conversation grows, and what memory a run keeps.

An in-process agent loop of the plain kind (``builtin:naive``'s, without its 40-step cap) against
a tool that always times out, answered by a stubborn model: every turn adds the model's call and
the error to the conversation the agent sends again, so turn t hands the model double 2t messages.

- us_per_turn_100, us_per_turn_1000, us_per_turn_3000: CPU microseconds per model turn (the whole
  turn: model double, tool call, trace events) of a run of that many turns, best of three runs
- us_per_turn_ratio: us_per_turn_3000 / us_per_turn_100 (1.0: a turn costs the same whatever the
  history already seen)
- meter_work_per_turn_100, meter_work_per_turn_3000: the model double's token meter's work per
  turn (messages compared, copied or measured: ``TokenMeter.work``), a count rather than a time
- peak_kb_1000, peak_kb_3000, peak_kb_10000: peak memory allocated while a run of that many turns
  runs, is judged and its trace written out (tracemalloc), in KB
- peak_bytes_per_turn: the slope of the line through the peaks at 1,000 and 10,000 turns
- peak_linearity_pct: how far the peak at 3,000 turns lies from that line, in percent of the line

    python benchmarks/run.py --only long
    python benchmarks/bench_long.py 100 1000 3000    # us per turn of runs of those lengths
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from typing import Any

from toolchaos import Ceiling, invariants, policies, run
from toolchaos._agents.naive import naive
from toolchaos.fake_tools import catalogue, faults

_cpu = time.process_time  # CPU time: what a turn costs, whatever else runs on the machine


def _run(turns: int, work: dict[str, int] | None = None) -> Any:
    """One run of ``turns`` model turns; ``work``: filled with the token meter's work, if given."""
    tools = [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]
    policy = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}, max_turns=turns + 5)

    def agent(task: str, model: Any, tools: Any) -> str | None:
        answer = naive(task, model, tools, max_steps=turns)  # the plain loop, for as many turns as asked
        if work is not None:
            work["meter"] = model._run.prompt_meter.work  # the engine's own meter (not public: a benchmark reads it)
        return answer

    ceiling = Ceiling(max_model_turns=turns + 10, max_tool_calls=turns + 10, real_seconds=3600)
    return run(agent, task="Total of inv_1?", tools=tools, policy=policy, ceiling=ceiling)


def us_per_turn(turns: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = _cpu()
        _run(turns)
        best = min(best, _cpu() - start)
    return best / turns * 1e6


def meter_work_per_turn(turns: int) -> float:
    work: dict[str, int] = {}
    _run(turns, work)
    return work["meter"] / turns


def peak_kb(turns: int) -> float:
    """Peak memory allocated while a run of ``turns`` turns runs, is judged and its trace written out."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = _run(turns)
        result.violations(invariants.bounded(turns=turns + 1), invariants.no_unchanged_resend(),
                          invariants.retry_after_honoured(), invariants.terminated())
        result.trace.jsonl()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def measure(quick: bool = False) -> dict[str, float]:
    repeat = 1 if quick else 3
    _run(50)  # warm: imports done, virtual time installed
    figures = {f"us_per_turn_{n}": us_per_turn(n, repeat) for n in (100, 1000, 3000)}
    figures["us_per_turn_ratio"] = figures["us_per_turn_3000"] / figures["us_per_turn_100"]
    for n in (100, 3000):
        figures[f"meter_work_per_turn_{n}"] = meter_work_per_turn(n)
    peaks = {n: peak_kb(n) for n in (1000, 3000, 10_000)}
    slope = (peaks[10_000] - peaks[1000]) / 9000
    line = peaks[1000] + slope * 2000
    figures.update({f"peak_kb_{n}": kb for n, kb in peaks.items()})
    figures["peak_bytes_per_turn"] = slope * 1024
    figures["peak_linearity_pct"] = abs(peaks[3000] - line) / line * 100
    return figures


if __name__ == "__main__":
    _run(50)
    for arg in sys.argv[1:] or ["100", "1000", "3000"]:
        print(f"us_per_turn_{arg} {us_per_turn(int(arg)):.1f}")
