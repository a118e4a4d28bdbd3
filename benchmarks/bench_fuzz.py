"""Fuzzing throughput: examples per second fuzzing ``builtin:guarded`` on a 3-tool scenario.

Every example draws fault schedules for three catalogue tools (a side effect, a read,
a polled job) and a model behaviour, runs the guarded agent and checks the invariants
that must hold under any schedule. ``--quick`` runs 100 examples, the full run 1,000.
Timed with the real clock saved by freezegun (the harness installs virtual time).

``fuzz_vs_floor``: the fuzzer's examples per CPU second over those of a trivial ``@given``
(a list of integers and an integer, the test body a sum) under the fuzzer's own settings,
measured in the same run, the two alternating in blocks (best block of each): 1.0 would
mean the harness costs nothing beyond hypothesis drawing a small example.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import freezegun.api as fz

TOOLS = ("charge_payment", "fetch_invoice", "get_job_status")


def _floor(examples: int, seed: int) -> Any:
    """A trivial ``@given`` under the settings ``fuzz`` gives its own test."""
    from hypothesis import HealthCheck, Verbosity, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st
    from toolchaos.fuzzing._core import _PHASES

    @hseed(seed)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              report_multiple_bugs=True, verbosity=Verbosity.quiet, phases=_PHASES)
    @given(xs=st.lists(st.integers()), n=st.integers())
    def trivial(xs: list[int], n: int) -> None:
        sum(xs, n)

    return trivial


def measure(quick: bool) -> dict[str, float]:
    from toolchaos.fake_tools import catalogue
    from toolchaos.fuzzing._core import fuzz

    tools = [catalogue.get(n) for n in TOOLS]
    fuzz("builtin:guarded", tools=tools, examples=20, database=None, seed=1)  # warm up: imports, faker, freezegun
    _floor(20, 1)()
    examples = 100 if quick else 1000
    start, cpu = fz.real_perf_counter(), time.process_time()
    report = fuzz("builtin:guarded", tools=tools, examples=examples, database=None, seed=2)
    elapsed, cpu = fz.real_perf_counter() - start, time.process_time() - cpu
    if not report.ok:  # pragma: no cover - a broken guarded agent is a bug, not a figure
        raise AssertionError(report.message())
    # per CPU second too: on a shared machine the wall-clock figure also measures the neighbours
    figures = {"fuzz_examples_per_s": report.examples / elapsed, "fuzz_examples_per_cpu_s": report.examples / cpu}
    block = 100 if quick else 200
    rates: dict[str, float] = {"fuzz": 0.0, "floor": 0.0}
    for b in range(3 if quick else 5):  # alternating blocks, the best of each: the least disturbed
        for arm in ("fuzz", "floor") if b % 2 else ("floor", "fuzz"):
            cpu = time.process_time()
            if arm == "fuzz":
                n = fuzz("builtin:guarded", tools=tools, examples=block, database=None, seed=10 + b).examples
            else:
                _floor(block, 10 + b)()
                n = block
            rates[arm] = max(rates[arm], n / (time.process_time() - cpu))
    figures["fuzz_floor_examples_per_cpu_s"] = rates["floor"]
    figures["fuzz_vs_floor"] = round(rates["fuzz"] / rates["floor"], 3)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv)))
