"""Loop forensics throughput: ``toolchaos analyze`` over a generated 10-million-event trace.

The trace imitates the incident of the domain notes: one session making the same call
with near-identical results at millisecond spacing (a model turn and a tool call per
step), interleaved with healthy sessions, in the engine's own JSON Lines layout. It is
generated to a temporary file line by line (memory stays flat while writing), then
analysed in a child process so its peak RSS is the analyser's alone.

Figures: ``analyze_events_per_s`` (events read per second) and ``analyze_peak_rss_mb``
(peak resident memory of the analysing process). ``--quick`` uses 300,000 events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FULL_EVENTS = 10_000_000
QUICK_EVENTS = 300_000
ROOT = Path(__file__).resolve().parent.parent

_MODEL = ('{"run":"%s","seq":%d,"step":%d,"kind":"model","t":%.6f,"calls":[{"id":"call_%d_0","tool":"%s",'
          '"args":%s,"fp":"%s"}],"final":null,"tokens_in":%d,"tokens_out":22}\n')
_TOOL = ('{"run":"%s","seq":%d,"step":%d,"kind":"tool","t":%.6f,"latency":0.0,"tool":"%s","call_no":%d,'
         '"args":%s,"fp":"%s","call_id":"call_%d_0","outcome":"%s","class":"%s","code":"%s","retry_after":null,'
         '"executed":true,"effects":null}\n')


def generate(path: Path, events: int) -> int:
    """Write ``events`` trace events to ``path``, streaming; returns the number written."""
    loop_args, loop_fp = '{"invoice_id":"inv_1"}', "70d0bc78117f"
    written = 0
    with path.open("w", encoding="utf-8", buffering=1 << 20) as fh:
        step = 0
        while written < events:
            step += 1
            # every 1000th step a healthy session makes a distinct lookup
            if step % 1000 == 0:
                run, tool, args = f"healthy-{step // 1000 % 50}", "search", f'{{"query":"q{step}"}}'
                fp = f"{step:012x}"
                outcome, cls, code = "ok", "SUCCESS", "ok"
            else:
                run, tool, args, fp = "incident#0", "fetch_invoice", loop_args, loop_fp
                outcome, cls, code = "timeout", "RETRYABLE", "timeout"
            t = step * 0.001
            fh.write(_MODEL % (run, 2 * step - 1, step, t, step, tool, args, fp, 27 + step % 4000))
            fh.write(_TOOL % (run, 2 * step, step, t, tool, step, args, fp, step, outcome, cls, code))
            written += 2
    return written


_CHILD = r"""
import json, sys, time
import freezegun.api as fz
from bench_util import peak_rss_mb
from toolchaos.forensics import Analysis
start, cpu = fz.real_perf_counter(), time.process_time()
a = Analysis()
a.add_path(sys.argv[1])
reports = a.reports()
elapsed, cpu = fz.real_perf_counter() - start, time.process_time() - cpu
peak = peak_rss_mb()
print(json.dumps({"events": a.events, "seconds": elapsed, "cpu": cpu, "peak_mb": peak,
                  "verdicts": sorted({r.verdict for r in reports})}))
"""


def measure(quick: bool) -> dict[str, float]:
    events = QUICK_EVENTS if quick else FULL_EVENTS
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "incident.trace.jsonl"
        generate(path, events)
        path_dirs = [str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path_dirs)}
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env,
                             check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return {"analyze_events_per_s": data["events"] / data["seconds"], "analyze_peak_rss_mb": data["peak_mb"],
            "analyze_events_per_cpu_s": data["events"] / data["cpu"]}


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv)))
