"""The watchdog's two limits, driven by clocks the test holds: no progress while the run could run, and total time.

Each test builds a watch and polls it (``_due``) at times it chooses, with a lost-time clock
it moves itself: no real time passes and nothing depends on the machine's load. The one
test on real processes (a stopped ``sleep``) waits only for the kernel to report a state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from chaos_samples import state_becomes
from toolchaos._plumbing import opportunity
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos._plumbing.opportunity import Lost, ProcessClock, could_run

LIMIT = 5.0
POLL = 0.05


class Lost_:
    """A lost-time clock the test moves: seconds waited for a CPU, seconds stopped."""

    def __init__(self) -> None:
        self.waited = 0.0
        self.stopped = 0.0

    def __call__(self) -> Lost:
        return self.waited, self.stopped


class Events:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        return self.n


def watch(lost: Lost_, progress: Events | None = None, total: float | None = None) -> _watchdog._Watch:
    return _watchdog._Watch(0, 1, LIMIT, LIMIT * _watchdog.TOTAL_FACTOR if total is None else total,
                            progress, 0, lost, 0.0, lost())


def poll_until(w: _watchdog._Watch, lost: Lost_, until: float, *, waits: float = 0.0,
               stops: float = 0.0, step: float = POLL, progress: Events | None = None) -> float | None:
    """Poll every ``step`` seconds up to ``until``; each step the run waited ``waits`` and was stopped ``stops``
    of it (fractions). The time it was ended at, or None."""
    now = w.polled
    while now < until - 1e-9:
        now = round(now + step, 9)
        lost.waited += waits * step
        lost.stopped += stops * step
        if progress is not None:
            progress.n += 1
        if _watchdog._due(w, now):
            return now
    return None


def test_the_default_total_is_a_few_times_the_no_progress_limit_not_ten() -> None:
    assert _watchdog.TOTAL_FACTOR == 3.0


# --- runs that still end at the limit ----------------------------------------------------


def test_a_blocked_run_ends_at_its_no_progress_limit() -> None:
    # Blocked in a call (a lock, a socket, a sleep): it uses no CPU and waits for none: every second counts.
    lost = Lost_()
    w = watch(lost)
    assert poll_until(w, lost, LIMIT - POLL) is None
    assert poll_until(w, lost, LIMIT + POLL) == pytest.approx(LIMIT)
    assert w.why == _watchdog.NO_PROGRESS


def test_a_spinning_run_ends_at_its_no_progress_limit() -> None:
    # Spinning, on a CPU of its own: it runs all the time and waits for no CPU; a spin waits a little at times.
    lost = Lost_()
    w = watch(lost)
    assert poll_until(w, lost, LIMIT * 1.05, waits=0.01) == pytest.approx(LIMIT / 0.99, abs=2 * POLL)
    assert w.why == _watchdog.NO_PROGRESS


def test_a_run_that_keeps_making_progress_is_ended_by_its_total_limit() -> None:
    lost, events = Lost_(), Events()
    w = watch(lost, events)
    assert poll_until(w, lost, 3 * LIMIT - POLL, progress=events) is None
    assert poll_until(w, lost, 3 * LIMIT + POLL, progress=events) == pytest.approx(3 * LIMIT)
    assert w.why == _watchdog.TOTAL


def test_progress_starts_the_no_progress_count_again() -> None:
    lost, events = Lost_(), Events()
    w = watch(lost, events, total=100.0)
    assert poll_until(w, lost, LIMIT - POLL) is None
    events.n += 1
    assert poll_until(w, lost, 2 * LIMIT - POLL) is None  # counted from the poll that saw it
    assert poll_until(w, lost, 2 * LIMIT + POLL) is not None and w.why == _watchdog.NO_PROGRESS


# --- runs that could not run are not stuck -----------------------------------------------


def test_a_run_starved_of_cpu_past_the_limit_is_not_ended_as_stuck() -> None:
    # Two hogs on its CPU: it waits two thirds of the time for its turn.
    lost = Lost_()
    w = watch(lost, total=100.0)
    assert poll_until(w, lost, 2 * LIMIT, waits=2 / 3) is None
    assert w.idle == pytest.approx(2 * LIMIT / 3)
    # ... and it is still bounded: given the CPU back, it ends when it had the limit's worth of chances
    assert poll_until(w, lost, 100.0) == pytest.approx(2 * LIMIT + LIMIT / 3, abs=POLL)
    assert w.why == _watchdog.NO_PROGRESS


def test_a_starved_run_is_still_ended_by_its_total_limit() -> None:
    lost = Lost_()
    w = watch(lost)
    assert poll_until(w, lost, 10 * LIMIT, waits=0.9) == pytest.approx(3 * LIMIT)
    assert w.why == _watchdog.TOTAL


def test_a_process_stopped_with_the_watchdog_in_it_is_not_ended_as_stuck() -> None:
    # SIGSTOP (Ctrl-Z) stops the watchdog's thread too: its next poll comes late, and counts as GAP at most.
    lost = Lost_()
    w = watch(lost, total=100.0)
    assert poll_until(w, lost, LIMIT - 1.0) is None
    assert not _watchdog._due(w, w.polled + 2 * LIMIT)  # stopped for two limits, then continued
    assert w.idle == pytest.approx(LIMIT - 1.0 + _watchdog.GAP)
    assert w.spent == pytest.approx(3 * LIMIT - 1.0)  # the total limit counts real time, stopped or not
    assert poll_until(w, lost, w.polled + 1.0 - _watchdog.GAP + POLL) is not None  # then it counts again
    assert w.why == _watchdog.NO_PROGRESS


def test_a_run_whose_process_is_stopped_elsewhere_is_not_ended_as_stuck() -> None:
    # The agent's process (an isolated child, a process agent) is stopped; the watchdog's thread is not.
    lost = Lost_()
    w = watch(lost)
    assert poll_until(w, lost, 3 * LIMIT - POLL, stops=1.0) is None
    assert w.idle == pytest.approx(0.0, abs=1e-6)
    # ... and a process stopped for good is still ended, by the total limit: real time
    assert poll_until(w, lost, 3 * LIMIT + POLL, stops=1.0) == pytest.approx(3 * LIMIT)
    assert w.why == _watchdog.TOTAL


def test_could_run_leaves_out_what_was_waited_and_stopped() -> None:
    assert could_run(1.0, (0.0, 0.0), (0.25, 0.0), cap=5.0) == 0.75
    assert could_run(1.0, (0.0, 0.0), (0.0, 0.5), cap=5.0) == 0.5
    assert could_run(1.0, (0.0, 0.0), (0.75, 0.5), cap=5.0) == 0.0  # never below nothing
    assert could_run(9.0, (0.0, 0.0), (0.0, 0.0), cap=0.25) == 0.25
    assert could_run(1.0, (2.0, 2.0), (1.0, 1.0), cap=5.0) == 1.0  # a clock that went back loses nothing


# --- the public side: observe, extend, remaining, arm's default clock --------------------


def test_observe_changes_the_progress_count_and_lost_clock_of_the_callers_run() -> None:
    token = _watchdog.arm(60.0, lambda: 0)
    try:
        lost, events = Lost_(), Events()
        assert _watchdog.observe(progress=events, lost=lost)
        w = _watchdog._innermost(threading.get_ident())
        assert w is not None and w.progress is events and w.lost is lost and w.total == 180.0
    finally:
        _watchdog.disarm(token)
    assert not _watchdog.observe(progress=Events())  # no run armed in this thread


def test_remaining_counts_down_the_nearer_limit() -> None:
    token = _watchdog.arm(60.0, lambda: 0, total=90.0)
    try:
        w = _watchdog._watches[-1]
        with _watchdog._fire_lock:  # no poll meanwhile (remaining() does not take the lock)
            w.idle, w.spent, w.polled = 50.0, 85.0, time.monotonic() + 3600  # nothing pending
            assert _watchdog.remaining() == pytest.approx(5.0)
            w.spent = 40.0
            assert _watchdog.remaining() == pytest.approx(10.0)
    finally:
        _watchdog.disarm(token)


def test_extend_gives_the_engine_its_grace_under_both_limits() -> None:
    token = _watchdog.arm(60.0, lambda: 0, total=90.0)
    try:
        w = _watchdog._watches[-1]
        with _watchdog._fire_lock:
            w.idle, w.spent, w.polled = 59.0, 89.9, time.monotonic() + 3600
        _watchdog.extend(token, 1.0)  # a poll in between counts nothing: its time is before ``polled``
        assert (w.idle, w.limit, w.progress) == (0.0, 1.0, None) and w.total == pytest.approx(90.9, abs=0.01)
    finally:
        _watchdog.disarm(token)


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="Linux scheduler statistics")
def test_a_runs_default_clock_reads_its_own_threads_wait_for_a_cpu() -> None:
    clock = opportunity.thread_clock()
    first = clock()
    assert first[1] == 0.0 and first[0] >= 0.0
    with open("/proc/thread-self/schedstat", "rb") as f:
        now_ns = int(f.read().split()[1])
    assert clock()[0] >= first[0] and abs(clock()[0] - now_ns * 1e-9) < 1.0  # its own thread, not another


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="Linux scheduler statistics")
def test_in_a_pid_namespace_the_clock_finds_its_thread_through_thread_self(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opportunity, "_tasks", "")  # as when this process's ids are not /proc's
    clock = opportunity.thread_clock()
    assert clock.args == (f"/proc/{os.readlink('/proc/thread-self')}/schedstat",)  # type: ignore[attr-defined]
    assert clock()[0] > 0.0


def test_a_clock_where_proc_says_nothing_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opportunity, "_tasks", "/proc/no-such-process/task/")
    assert opportunity.thread_clock()() == (0.0, 0.0)
    assert opportunity._waited_ns("/proc/no-such-task/schedstat") is None


# --- a real process, stopped --------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_clock_counts_the_time_a_process_tree_is_stopped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"])
    try:
        deadline = time.monotonic() + 10
        while not opportunity._children(child.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        grandchild = opportunity._children(child.pid)[0]  # the tree is followed
        assert state_becomes(child.pid, "S") and state_becomes(grandchild, "S")
        t = [100.0]
        clock = ProcessClock(child.pid, now=lambda: t[0])
        t[0] += 2.0
        assert clock()[1] == 0.0  # sleeping: not stopped
        os.kill(grandchild, signal.SIGSTOP)  # one process of the tree is enough
        assert state_becomes(grandchild, "Tt")
        t[0] += 7.0
        assert clock()[1] == 7.0
        os.kill(grandchild, signal.SIGCONT)
        assert state_becomes(grandchild, "S")
        t[0] += 3.0
        waited, stopped = clock()
        assert stopped == 7.0 and 0.0 <= waited <= 3.0
    finally:
        child.kill()
        child.wait(10)


def test_a_runs_first_poll_only_reads_its_clock() -> None:
    # Arming reads nothing (no system call per run): what the run could do before its first poll is not known,
    # so that interval counts towards the total limit only.
    lost = Lost_()
    w = _watchdog._Watch(0, 1, LIMIT, 3 * LIMIT, None, 0, lost, 0.0)
    lost.waited = 0.04
    assert not _watchdog._due(w, 0.05)
    assert (w.idle, w.spent, w.held) == (0.0, 0.05, (0.04, 0.0))
    assert poll_until(w, lost, LIMIT + 0.05 + 2 * POLL) == pytest.approx(LIMIT + 0.05, abs=POLL)  # then it counts
