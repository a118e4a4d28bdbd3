"""No verdict from load: a certification's verdicts on an idle machine and under CPU hogs (opt-in: ``run.py --load``).

- ``load_runs``: scenario runs in each pass: ``COPIES`` copies of the bundled certification
  suite against ``builtin:guarded``, shared among ``load_workers`` worker processes (each
  isolated as a certification runs it: a contained child on Linux).
- ``load_idle_s``, ``load_hogged_s``: the real time of the pass as the machine is, then with
  ``load_hogs`` more processes spinning on the CPU all the time.
- ``load_verdicts_changed``: runs whose verdict (passed or not, and the terminal state)
  differs between the two passes: 0 when no verdict comes from the machine's load.
- ``load_watchdog_idle``, ``load_watchdog_hogged``: runs the watchdog ended in each pass.
- ``load_tight_*``: the same two passes with a no-progress limit of ``TIGHT`` seconds (and a
  total limit of a minute), where a run starved for a moment would be ended: how much of the
  machine's load still reaches the verdicts when the limit leaves no room.

Opt-in because it loads the machine on purpose for as long as the passes take (four; two with
``--quick``). Env ``TOOLCHAOS_BENCH_LOAD_WORKERS``: the worker processes (default: the CPUs, at least 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import freezegun.api as fz

COPIES = 10  # 10 x the 44 scenarios of the bundled suite: a 440-run certification
HOGS = 2
TIGHT = 0.05  # seconds: a no-progress limit a few scheduler time slices long
ROOT = Path(__file__).resolve().parents[1]

_WORKER = """
import json, sys
from toolchaos._engine import default_for_certification
from toolchaos.certification import run_scenario, suite

index, workers, copies = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
limit = float(sys.argv[4]) if sys.argv[4] else None
if sys.argv[5]:
    from toolchaos._engine import session_defaults
    session_defaults(total_seconds=float(sys.argv[5]), total_source="the load benchmark")
scenarios = suite()
isolation = default_for_certification()
for i in range(index, copies * len(scenarios), workers):
    v = run_scenario(scenarios[i % len(scenarios)], "builtin:guarded", isolation=isolation, real_seconds=limit)
    r = v.result
    print(json.dumps({"i": i, "id": v.id, "passed": bool(v.passed), "state": getattr(r, "terminal_state", None),
                      "error": getattr(r, "error", None),
                      "watchdog": getattr(r, "watchdog", None)}), flush=True)
"""


def _pass(workers: int, limit: str = "", total: str = "") -> tuple[float, dict[int, dict[str, object]]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    t0 = fz.real_perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(k), str(workers), str(COPIES), limit, total], env=env,
                              stdout=subprocess.PIPE, text=True) for k in range(workers)]
    rows: dict[int, dict[str, object]] = {}
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"a worker of the load benchmark failed ({p.returncode})")
        for line in out.splitlines():
            row = json.loads(line)
            rows[int(row["i"])] = row
    return fz.real_perf_counter() - t0, rows


def _idle_and_hogged(workers: int, limit: str = "", total: str = "") -> dict[str, float]:
    idle_s, idle = _pass(workers, limit, total)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(HOGS)]
    try:
        hogged_s, hogged = _pass(workers, limit, total)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    changed = [i for i in idle if (idle[i]["passed"], idle[i]["state"]) != (hogged[i]["passed"], hogged[i]["state"])]
    for i in changed:
        print(f"load{f' (limit {limit}s)' if limit else ''}: {idle[i]['id']} (run {i}): idle {idle[i]['state']}, "
              f"hogged {hogged[i]['state']} {hogged[i]['error'] or ''}", file=sys.stderr)
    return {
        "runs": float(len(idle)),
        "idle_s": idle_s,
        "hogged_s": hogged_s,
        "verdicts_changed": float(len(changed) + abs(len(idle) - len(hogged))),
        "watchdog_idle": float(sum(r["state"] == "WATCHDOG" for r in idle.values())),
        "watchdog_hogged": float(sum(r["state"] == "WATCHDOG" for r in hogged.values())),
    }


def measure(quick: bool) -> dict[str, float]:
    workers = int(os.environ.get("TOOLCHAOS_BENCH_LOAD_WORKERS") or max(2, os.cpu_count() or 2))
    figures = {"load_workers": float(workers), "load_hogs": float(HOGS)}
    figures.update({f"load_{k}": v for k, v in _idle_and_hogged(workers).items()})
    if not quick:
        tight = _idle_and_hogged(workers, str(TIGHT), "60")
        figures.update({f"load_tight_{k}": v for k, v in tight.items() if k != "runs"})
    return figures
