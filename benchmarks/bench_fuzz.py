"""Fuzzing throughput: examples per second fuzzing ``builtin:guarded`` on a 3-tool scenario.

Every example draws fault schedules for three catalogue tools (a side effect, a read,
a polled job) and a model behaviour, runs the guarded agent and checks the invariants
that must hold under any schedule. ``--quick`` runs 100 examples, the full run 1,000.
Timed with the real clock saved by freezegun (the harness installs virtual time).

``fuzz_vs_floor``: the fuzzer's examples per CPU second over those of a trivial ``@given``
(a list of integers and an integer, the test body a sum) under the fuzzer's own settings,
measured in the same run, the two alternating in blocks (best block of each): 1.0 would
mean the harness costs nothing beyond hypothesis drawing a small example.
``fuzz_vs_floor_pair_median``: the median over those blocks of each fuzz block's rate over the
floor block run next to it: on a machine whose speed drifts within the run, neighbours share
the drift, where the best block of each arm may come from different minutes.

Where a fuzz example's time goes, per example in the same process (the draw and the run: the best
of three passes over the examples of the first block's seed):
``fuzz_draw_us`` is hypothesis drawing the fuzzer's choices and the plan decoded, the test body
left out; ``fuzz_run_us`` the runs of those examples replayed back to back, without hypothesis
(each run with its invariants); ``fuzz_example_us`` and ``fuzz_floor_example_us`` the whole
example of each arm; ``fuzz_interleave_us`` what the fuzz example costs beyond its draw and its
run: running the two in one loop (caches, branch history, the collector). ``fuzz_vs_floor_bound``
is ``fuzz_vs_floor`` if nothing were lost to the interleaving: the floor's example over the
draw and the run.

Counted, not timed (``run.py --count``, or env ``TOOLCHAOS_BENCH_COUNT=1``; needs valgrind):
``fuzz_instructions_per_example`` and ``fuzz_floor_instructions_per_example`` are the
instructions callgrind counts inside one fuzz call of 200 examples and one floor call of 200
examples (same seed, warm process, instrumentation switched on only around the call), and
``fuzz_vs_floor_instructions`` their ratio, floor over fuzz: the same figure as
``fuzz_vs_floor`` in work done, identical from run to run and machine to machine (to ~0.1%).
The timed ratio is lower: the run's code, spread over many small functions, runs at fewer
instructions a second between hypothesis's steps than either does alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
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
    pairs: list[float] = []
    for b in range(3 if quick else 5):  # alternating blocks, the best of each: the least disturbed
        pair: dict[str, float] = {}
        for arm in ("fuzz", "floor") if b % 2 else ("floor", "fuzz"):
            cpu = time.process_time()
            pair[arm] = _block(arm, tools, block, 10 + b) / (time.process_time() - cpu)
            rates[arm] = max(rates[arm], pair[arm])
        pairs.append(pair["fuzz"] / pair["floor"])
    figures.update(_split(tools, block, rates))
    figures["fuzz_floor_examples_per_cpu_s"] = rates["floor"]
    figures["fuzz_vs_floor"] = round(rates["fuzz"] / rates["floor"], 3)
    figures["fuzz_vs_floor_pair_median"] = round(statistics.median(pairs), 3)
    if os.environ.get("TOOLCHAOS_BENCH_COUNT") and shutil.which("valgrind"):
        counted = {arm: _instructions(arm, COUNTED_EXAMPLES) / COUNTED_EXAMPLES for arm in ("fuzz", "floor")}
        figures["fuzz_instructions_per_example"] = round(counted["fuzz"])
        figures["fuzz_floor_instructions_per_example"] = round(counted["floor"])
        figures["fuzz_vs_floor_instructions"] = round(counted["floor"] / counted["fuzz"], 3)
    return figures


def _block(arm: str, tools: list[Any], examples: int, seed: int) -> int:
    """One fuzz call, or one floor call, of ``examples`` examples; the examples run."""
    from toolchaos.fuzzing._core import fuzz

    if arm == "fuzz":
        return fuzz("builtin:guarded", tools=tools, examples=examples, database=None, seed=seed).examples
    _floor(examples, seed)()
    return examples


def _split(tools: list[Any], examples: int, rates: dict[str, float]) -> dict[str, float]:
    """The fuzz example in parts: its draw without the run, its runs without hypothesis (see above)."""
    from toolchaos.fuzzing._core import FuzzTarget, _hypothesis_test

    target = FuzzTarget("builtin:guarded", tools, "vary")
    cases: list[tuple[Any, Any, int]] = []

    def record(plan: Any, policy: Any, seed: int) -> None:
        cases.append((plan, policy, seed))
        target.run_case(plan, policy, seed)

    def test(body: Any) -> Any:  # the same seed: the same examples drawn, with or without their runs
        return _hypothesis_test(target, body, examples=examples, seed=10, ci=False, database=None, blob=None)

    draw = test(lambda plan, policy, seed: None)
    draw_s = min(_cpu(draw) for _ in range(3))
    test(record)()
    run_s = min(_cpu(lambda: [target.run_case(*case) for case in cases]) for _ in range(3))
    us = {"draw": 1e6 * draw_s / examples, "run": 1e6 * run_s / len(cases),
          "fuzz": 1e6 / rates["fuzz"], "floor": 1e6 / rates["floor"]}
    return {"fuzz_draw_us": round(us["draw"], 1), "fuzz_run_us": round(us["run"], 1),
            "fuzz_example_us": round(us["fuzz"], 1), "fuzz_floor_example_us": round(us["floor"], 1),
            "fuzz_interleave_us": round(us["fuzz"] - us["draw"] - us["run"], 1),
            "fuzz_vs_floor_bound": round(us["floor"] / (us["draw"] + us["run"]), 3)}


def _cpu(fn: Any) -> float:
    cpu = time.process_time()
    fn()
    return time.process_time() - cpu


COUNTED_EXAMPLES = 200


def _instructions(arm: str, examples: int) -> int:
    """Instructions callgrind counts inside one ``_block`` call, in a warm process (``--count`` below)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # set and dict order, hence the work, the same every run
    out = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
                          sys.executable, str(Path(__file__).resolve()), "--count", arm, str(examples)],
                         capture_output=True, text=True, check=True, env=env)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:  # pragma: no cover - a valgrind that does not print its count
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def _counted(arm: str, examples: int) -> None:
    """Under callgrind: warm up, then switch instrumentation on for one block only."""
    from toolchaos.fake_tools import catalogue

    tools = [catalogue.get(n) for n in TOOLS]
    for warm in ("fuzz", "floor"):
        _block(warm, tools, 20, 1)

    def instrument(state: str) -> None:
        subprocess.run(["callgrind_control", "--instr=" + state, str(os.getpid())], check=True, capture_output=True)

    instrument("on")
    _block(arm, tools, examples, 10)
    instrument("off")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--count"]:
        _counted(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps(measure("--quick" in sys.argv)))
