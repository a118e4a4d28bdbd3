"""Benchmarks: print figures, never fail on them.

    python benchmarks/run.py            # a table
    python benchmarks/run.py --json     # one JSON object
    python benchmarks/run.py --only core
    python benchmarks/run.py --only fuzz --count   # also instructions counted under valgrind
    python benchmarks/run.py --load     # also the verdicts under CPU hogs (bench_load.py; minutes)

Each ``benchmarks/bench_<name>.py`` exposes ``measure(quick: bool) -> dict[str, float]``;
this script runs them all (or ``--only``) and merges their figures; the opt-in ones
(``OPT_IN``: they load the machine on purpose) only when asked for by their flag or ``--only``. Timings use the
real clock saved by freezegun, since the harness installs virtual time process-wide.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPT_IN = {"load": "--load"}  # bench_<name>.py -> the flag that adds it
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--only", action="append", default=[], help="run only bench_<NAME>.py (repeatable)")
    ap.add_argument("--count", action="store_true",
                    help="also count instructions under valgrind where a benchmark can (slower; needs valgrind)")
    ap.add_argument("--load", action="store_true",
                    help="also a certification's verdicts idle and under two CPU hogs (bench_load.py; minutes)")
    args = ap.parse_args()
    if args.count:
        os.environ["TOOLCHAOS_BENCH_COUNT"] = "1"
    names = sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))
    if args.only:
        names = [n for n in names if n in args.only]
    else:
        names = [n for n in names if n not in OPT_IN or getattr(args, OPT_IN[n].lstrip("-"))]
    figures: dict[str, float] = {}
    for name in names:
        mod = importlib.import_module(f"bench_{name}")
        if hasattr(mod, "measure"):  # bench_util holds shared helpers
            figures.update(mod.measure(args.quick))
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        for k, v in sorted(figures.items()):
            print(f"{k:40} {v:,.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
