"""A run's chance to run: the real time it lost waiting for a CPU or stopped, read from Linux's /proc.

The watchdog ends a run that made no progress for its limit. "No progress for 5 s" is only a
verdict about the agent when the agent could run for those 5 s: on a loaded machine a
runnable thread waits its turn for a CPU, and a stopped process (SIGSTOP, Ctrl-Z, a debugger)
does not run at all. So the watchdog asks a *lost-time clock* how much of the real time that
passed the run could not use, and counts only the rest (``toolchaos._plumbing.watchdog``):

- ``thread_clock()``, for a run in this process: the run thread's time spent runnable but
  waiting for a CPU (the second field of its ``schedstat``). A thread blocked in a call (a
  ``sleep``, a lock, a socket that never answers) is not waiting for a CPU: its time counts,
  and a blocked run still ends at the limit; so does a spinning one, which runs. A stopped
  process is seen by the watchdog itself, whose own polls stop with it (see the watchdog).
- ``ProcessClock(pid)``, for a run in another process (an isolated run's child, a process
  agent): the time any process of its tree was stopped (state ``T`` or ``t``), and the most any
  of them waited for a CPU.

Only the no-progress limit is measured so. The total limit is real time, stopped time
included: a process stopped for good (by itself, or a debugger left attached) still ends.

A clock returns two running totals in real seconds, ``(waited, stopped)``; the watchdog
reads it at each poll and uses the differences. Where /proc does not say (another system, a
kernel without scheduler statistics), the clocks lose nothing: the limits are then plain real time.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable

from toolchaos._plumbing.clock import real_monotonic

__all__ = ["Lost", "LostClock", "ProcessClock", "could_run", "nothing_lost", "thread_clock"]

Lost = tuple[float, float]  # running totals, real seconds: (waited for a CPU, stopped)
LostClock = Callable[[], Lost]
_NS = 1e-9
_TREE_CAP = 64  # processes of a tree looked at (a process agent and what it started): a fork bomb is not read


def nothing_lost() -> Lost:
    """The clock of a run whose chance to run is not known: every real second counts."""
    return 0.0, 0.0


def could_run(gap: float, before: Lost, after: Lost, cap: float) -> float:
    """Of ``gap`` real seconds between two readings of a lost-time clock, the seconds the run could run.

    Neither stopped nor waiting for a CPU: what a no-progress limit counts (a total limit counts
    all of ``gap``). A gap longer than ``cap`` counts as ``cap`` at most: the one who measures
    could not run either (stopped with the run, or starved), and what the run could do
    meanwhile is not known.
    """
    waited, stopped = max(0.0, after[0] - before[0]), max(0.0, after[1] - before[1])
    return max(0.0, min(gap, cap) - stopped - waited)


def _waited_ns(path: str) -> int | None:
    """The nanoseconds a task spent runnable, waiting for a CPU (``schedstat``: run, wait, slices), or None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fields = os.read(fd, 128).split()
    except OSError:
        return None
    finally:
        os.close(fd)
    return int(fields[1]) if len(fields) >= 2 and fields[1].isdigit() else None


# Where this process's threads are in /proc, found once per process: "/proc/<pid>/task/" when the
# threads' own ids name them there; "" when they do not (a PID namespace whose /proc is the host's:
# each run's thread then asks /proc/thread-self); None before the first look.
_tasks: str | None = None


def _tasks_dir() -> str:
    global _tasks
    if _tasks is None:
        try:
            pid = os.readlink("/proc/self")
        except OSError:
            pid = ""
        _tasks = f"/proc/{pid}/task/" if pid == str(os.getpid()) else ""
    return _tasks


def _forget_tasks() -> None:
    global _tasks
    _tasks = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_tasks)  # an isolated child has a new PID (and maybe namespace)


def thread_clock() -> LostClock:
    """The lost-time clock of the calling thread (call it in the run's thread; read it from any thread).

    Costs next to nothing when a run ends quickly: the thread's /proc path is known without a
    system call (outside a PID namespace), and the file is read only by the watchdog's polls.
    """
    tasks = _tasks_dir()
    if tasks:
        native = threading.current_thread().native_id
        return functools.partial(_thread_lost, f"{tasks}{native or threading.get_native_id()}/schedstat")
    try:  # in a PID namespace: /proc/thread-self knows the thread by the id /proc gives it
        return functools.partial(_thread_lost, f"/proc/{os.readlink('/proc/thread-self')}/schedstat")
    except OSError:
        return nothing_lost  # no /proc: every real second counts


def _thread_lost(path: str) -> Lost:
    ns = _waited_ns(path)
    return (0.0 if ns is None else ns * _NS), 0.0


class ProcessClock:
    """The lost-time clock of another process and the processes it started (an isolated run, a process agent).

    Each reading looks at the tree once: while any of its processes is stopped, the real time
    since the previous reading counts as stopped; otherwise the largest time any of them spent
    waiting for a CPU counts as waited. ``now`` is the real clock (a test gives its own).
    """

    def __init__(self, pid: int, now: Callable[[], float] = real_monotonic) -> None:
        self.pid = pid
        self._now = now
        self._last = now()
        self._waits: dict[int, int] = {}
        self.waited = 0.0
        self.stopped = 0.0

    def __call__(self) -> Lost:
        now = self._now()
        gap, self._last = max(0.0, now - self._last), now
        stopped, waits = self._look()
        if stopped:  # the waits of the tree are kept: a stopped process does not wait for a CPU
            self.stopped += gap
            return self.waited, self.stopped
        if waits:
            # a process first seen now waited only since the previous reading (it did not exist before)
            most = max((ns - self._waits.get(pid, 0)) * _NS for pid, ns in waits.items())
            self.waited += min(max(0.0, most), gap)
        self._waits = waits
        return self.waited, self.stopped

    def _look(self) -> tuple[bool, dict[int, int]]:
        """Whether a process of the tree is stopped, and each one's wait so far (nanoseconds)."""
        waits: dict[int, int] = {}
        todo = [self.pid]
        while todo and len(waits) < _TREE_CAP:
            pid = todo.pop()
            state = _state(pid)
            if state is None or state in "ZX":  # gone, or a zombie: it cannot run
                continue
            if state in "Tt":
                return True, waits
            ns = _waited_ns(f"/proc/{pid}/schedstat")
            waits[pid] = 0 if ns is None else ns
            todo.extend(_children(pid))
        return False, waits


def _state(pid: int) -> str | None:
    """A process's state letter (``R`` running, ``S`` sleeping, ``T`` stopped, ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read(512)
    except OSError:
        return None
    after = raw.rpartition(b")")[2].split()  # the command's name, in parentheses, may hold spaces
    return after[0].decode("ascii", "replace") if after else None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []
