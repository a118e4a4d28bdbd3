"""Core figures: the per-tool-call path, the fixed cost of a run, and virtual-time speed-up.

- bare_call_us: a plain Python call of a tool function returning its payload (the floor)
- per_call_overhead_us: harness cost per intercepted call (schedule, validation, fingerprint,
  trace event, effect ledger), minus the bare call; measured on a side-effect tool
- per_call_overhead_read_us: the same on a read-only tool (no ledger entry)
- scenario_overhead_ms: set up and tear down one run (tool states, clock switch, watchdog arm)
- virtual_seconds_per_wall_second: a run whose timeouts add up to 20 minutes of waiting
"""

from __future__ import annotations

from typing import Any

from bench_util import best as _best
from bench_util import clock
from toolchaos import policies, run
from toolchaos.fake_tools import catalogue, faults


def measure(quick: bool = False) -> dict[str, float]:
    n = 20_000 if quick else 200_000
    repeat = 3 if quick else 5
    payload = {"record_id": "r1", "version": 3, "status": "written"}

    def write_record(record_id: str, data: dict[str, Any]) -> dict[str, Any]:
        return payload

    args = {"record_id": "r1", "data": {"a": 1}}

    def bare() -> None:
        for _ in range(n):
            write_record(**args)

    bare_s = _best(bare, repeat) / n

    def harness_calls(tool_name: str, call_args: dict[str, Any]) -> float:
        # Many runs of 500 calls, not one huge run: a run's trace of 10^5 events would make
        # the garbage collector, not the call path, dominate the figure.
        tool = catalogue.get(tool_name)
        per_run = 500
        timing: dict[str, float] = {"s": 0.0}

        def agent(task: str, model: Any, tools: Any) -> str:
            call = tools.call
            t0 = clock()
            for _ in range(per_run):
                call(tool_name, call_args)
            timing["s"] += clock() - t0
            return "done"

        best = float("inf")
        for _ in range(repeat):
            timing["s"] = 0.0
            for _ in range(n // per_run):
                run(agent, task="bench", tools=[tool], policy=policies.scripted([]))
            best = min(best, timing["s"])
        return best / n

    write_s = harness_calls("write_record", args)
    read_s = harness_calls("fetch_invoice", {"invoice_id": "inv_1"})

    runs = 500 if quick else 3000
    tools = [catalogue.get("fetch_invoice")]
    pol = policies.scripted([])

    def noop(task: str, model: Any, tools: Any) -> str:
        return "done"

    def many_runs() -> None:
        for _ in range(runs):
            run(noop, task="t", tools=tools, policy=pol)

    many_runs()  # warm: virtual time installed, imports done
    scenario_s = _best(many_runs, repeat) / runs

    slow = [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]  # 40 x 30 s = 20 minutes
    stubborn = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})
    holder: dict[str, Any] = {}

    def twenty_minutes() -> None:
        holder["r"] = run("builtin:naive", task="t", tools=slow, policy=stubborn)

    wall = _best(twenty_minutes, repeat)
    return {
        "bare_call_us": bare_s * 1e6,
        "per_call_overhead_us": (write_s - bare_s) * 1e6,
        "per_call_overhead_read_us": (read_s - bare_s) * 1e6,
        "scenario_overhead_ms": scenario_s * 1e3,
        "virtual_seconds_per_wall_second": holder["r"].virtual_seconds / wall,
    }
