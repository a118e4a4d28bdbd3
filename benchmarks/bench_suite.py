"""The certification suite's cost: in one process, and through pytest end to end.

- ``suite_wall_s``: load the bundled certification suite (parse, validate, build) and
  run every scenario against ``builtin:guarded``, checking its expectations, in a fresh
  process after the imports (the suite's own work, cold caches). Median of the runs.
- ``suite_warm_wall_s``: the same again in that process (loading cached, freezegun and
  faker warm): what each further certification costs.
- ``suite_pytest_wall_s``: ``pytest --chaos --chaos-certify -q`` in an empty directory,
  from process start to exit, with only the toolchaos plugin (and pytest's own) loaded:
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 -p toolchaos``. Unrelated pytest plugins installed in
  the environment (each imported at every pytest start) are left out of this figure;
- ``suite_pytest_autoload_wall_s`` is the same run with every installed plugin.

Timings use the real clock saved by freezegun (``freezegun.api.real_perf_counter``, read
at call time): the harness installs virtual time process-wide.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import freezegun.api as fz

ROOT = Path(__file__).resolve().parent.parent

_IN_PROCESS = """
import json
import freezegun.api as fz
from toolchaos.certification import certify
from toolchaos._agents import guarded  # noqa: F401  (imports are not the suite's work)
t0 = fz.real_perf_counter()
verdicts = certify("builtin:guarded")
t1 = fz.real_perf_counter()
again = certify("builtin:guarded")
t2 = fz.real_perf_counter()
assert all(v.passed for v in verdicts + again), [v.headline() for v in verdicts if not v.passed]
print(json.dumps({"cold": t1 - t0, "warm": t2 - t1, "n": len(verdicts)}))
"""


def _python(code: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def _pytest_once(autoload: bool) -> float:
    env = dict(os.environ)
    args = [sys.executable, "-m", "pytest", "--chaos", "--chaos-certify", "-q", "-p", "no:cacheprovider"]
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args += ["-p", "toolchaos"]
    with tempfile.TemporaryDirectory() as empty:
        started = fz.real_perf_counter()
        res = subprocess.run(args, capture_output=True, text=True, cwd=empty, env=env)
        took = fz.real_perf_counter() - started
    if res.returncode != 0:
        raise RuntimeError(f"pytest --chaos-certify failed ({res.returncode}):\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return took


def measure(quick: bool) -> dict[str, float]:
    runs = 1 if quick else 3
    inproc = [_python(_IN_PROCESS) for _ in range(runs)]
    figures = {
        "suite_wall_s": statistics.median(r["cold"] for r in inproc),
        "suite_warm_wall_s": statistics.median(r["warm"] for r in inproc),
        "suite_scenarios": float(inproc[0]["n"]),
        "suite_pytest_wall_s": statistics.median(_pytest_once(False) for _ in range(runs)),
    }
    figures["suite_pytest_autoload_wall_s"] = statistics.median(_pytest_once(True) for _ in range(1 if quick else 2))
    return {k: round(v, 4) for k, v in figures.items()}


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), indent=2, sort_keys=True))
