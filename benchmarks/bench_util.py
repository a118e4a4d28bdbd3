"""Timing helpers shared by the benchmarks (not a benchmark: it has no ``measure``).

The harness installs virtual time process-wide; benchmarks need the real clock that
freezegun saved. The module name starts with ``bench_`` so freezegun leaves the alias
below alone (see ``toolchaos._plumbing.clock.REAL_TIME_MODULES``).
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Callable
from typing import Any

import freezegun.api as fz

clock: Callable[[], float] = fz.real_perf_counter


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls, in seconds (the least disturbed one, as timeit says)."""
    fastest = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        fastest = min(fastest, clock() - t0)
    return fastest


def peak_rss_mb() -> float:
    """This process's own peak resident memory.

    Linux carries ``ru_maxrss`` across fork and exec: a suite started from a large benchmark
    process reported that process's size (~80 MB in a whole ``run.py`` run against ~48 MB run
    alone). ``VmHWM`` belongs to the address space, which exec replaces; ``ru_maxrss`` is the
    fallback where there is no ``/proc``.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / 1024 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere
