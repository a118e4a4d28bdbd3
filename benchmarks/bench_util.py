"""Timing helpers shared by the benchmarks (not a benchmark: it has no ``measure``).

The harness installs virtual time process-wide; benchmarks need the real clock that
freezegun saved. The module name starts with ``bench_`` so freezegun leaves the alias
below alone (see ``toolchaos._internal.clock.REAL_TIME_MODULES``).
"""

from __future__ import annotations

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
