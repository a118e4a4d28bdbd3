"""The per-run cost of process isolation (``--chaos-isolation=process``).

- ``isolation_overhead_ms_per_run``: the median real time of one certification run in a
  contained child (fork, its own PID namespace and loopback-only network where the platform
  allows it, the trace streamed back) minus the median of the same run in process. The runs
  are the bundled certification scenarios against ``builtin:guarded``, in this process (the
  suite loaded, so the fork copies what a real session has).
- ``isolation_cpu_ms_per_run``: the same difference in CPU time, this process and its
  children together (what it costs a loaded machine, where real time also waits for a core).
- ``isolation_bare_child_cpu_ms``: CPU time of one contained child that does nothing
  (``toolchaos._plumbing.children.fork_call``, sealed where the platform allows it): the part
  of the cost that is the fork and the namespaces, not the run's copy-on-write faults. This
  process has one thread here, so the child is one ``clone(2)`` where the platform allows it.
- ``isolation_bare_child_two_forks_cpu_ms``: the same child the portable way, two forks (what
  a process with another thread alive pays, e.g. a pytest-xdist worker).
- ``isolation_one_fork``: 1 when the isolated runs above were one ``clone(2)`` each.
- ``isolation_sealed``: 1 when the children got their own namespaces here, 0 when only a
  process group.

Timings use the real clock saved by freezegun: the harness installs virtual time process-wide.
"""

from __future__ import annotations

import resource
import statistics
from collections.abc import Callable

import freezegun.api as fz


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _per_run(work: Callable[[], int], rounds: int) -> tuple[float, float]:
    """(median real ms per run, mean CPU ms per run) over ``rounds`` passes of ``work`` (which returns its run count)."""
    walls, cpu0, runs = [], _cpu(), 0
    for _ in range(rounds):
        t0 = fz.real_perf_counter()
        n = work()
        walls.append((fz.real_perf_counter() - t0) * 1000 / n)
        runs += n
    return statistics.median(walls), (_cpu() - cpu0) * 1000 / runs


def measure(quick: bool) -> dict[str, float]:
    from toolchaos._plumbing import children, watchdog
    from toolchaos.certification import run_scenario, suite

    scenarios = suite()
    rounds = 2 if quick else 5

    def work() -> int:
        return sum(len(run_scenario(s, "builtin:guarded").runs) for s in scenarios)

    work()  # warm: imports, caches, the first fork's page faults
    plain_wall, plain_cpu = _per_run(work, rounds)
    from toolchaos._engine import session_defaults

    restore = session_defaults(isolation="process")
    try:
        work()
        iso_wall, iso_cpu = _per_run(work, rounds)
    finally:
        restore()
    one_fork = children._one_fork_tid() is not None
    bare = 20 if quick else 100
    watchdog.park()  # the in-process runs above started its thread; an isolated run parks it the same way
    cpu0 = _cpu()
    for _ in range(bare):
        children.fork_call(_nothing, seal_network=True).wait(timeout=10)
    bare_cpu = (_cpu() - cpu0) * 1000 / bare
    saved, children._one_fork = children._one_fork, False
    try:
        cpu0 = _cpu()
        for _ in range(bare):
            children.fork_call(_nothing, seal_network=True).wait(timeout=10)
        two_forks = (_cpu() - cpu0) * 1000 / bare
    finally:
        children._one_fork = saved
    return {"isolation_overhead_ms_per_run": iso_wall - plain_wall, "isolation_cpu_ms_per_run": iso_cpu - plain_cpu,
            "isolation_bare_child_cpu_ms": bare_cpu, "isolation_bare_child_two_forks_cpu_ms": two_forks,
            "isolation_one_fork": float(one_fork), "isolation_sealed": float(children.sealing_available())}


def _nothing(fd: int) -> None:
    pass
