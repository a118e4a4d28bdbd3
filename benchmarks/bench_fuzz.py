"""Fuzzing throughput: examples per second fuzzing ``builtin:guarded`` on a 3-tool scenario.

Every example draws fault schedules for three catalogue tools (a side effect, a read,
a polled job) and a model behaviour, runs the guarded agent and checks the invariants
that must hold under any schedule. ``--quick`` runs 100 examples, the full run 1,000.
Timed with the real clock saved by freezegun (the harness installs virtual time).
"""

from __future__ import annotations

import json
import sys
import time

import freezegun.api as fz

TOOLS = ("charge_payment", "fetch_invoice", "get_job_status")


def measure(quick: bool) -> dict[str, float]:
    from toolchaos.fake_tools import catalogue
    from toolchaos.fuzzing._core import fuzz

    tools = [catalogue.get(n) for n in TOOLS]
    fuzz("builtin:guarded", tools=tools, examples=20, database=None, seed=1)  # warm up: imports, faker, freezegun
    examples = 100 if quick else 1000
    start, cpu = fz.real_perf_counter(), time.process_time()
    report = fuzz("builtin:guarded", tools=tools, examples=examples, database=None, seed=2)
    elapsed, cpu = fz.real_perf_counter() - start, time.process_time() - cpu
    if not report.ok:  # pragma: no cover - a broken guarded agent is a bug, not a figure
        raise AssertionError(report.message())
    # per CPU second too: on a shared machine the wall-clock figure also measures the neighbours
    return {"fuzz_examples_per_s": report.examples / elapsed, "fuzz_examples_per_cpu_s": report.examples / cpu}


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv)))
