"""The watchdog: ends a run that makes no progress, and bounds every run in total real time.

One daemon thread per process (started lazily) looks at the armed runs a few times a second,
so arming and disarming a run costs a list append and a removal, not a thread start. Each run
has two limits, each named for what it measures:

- **no progress**: the run's progress count (the number of trace events: model requests, tool
  calls, refusals) has not moved while the run had the chance to run for its limit. The chance
  to run is real time minus what a lost-time clock (``toolchaos._plumbing.opportunity``) says
  the run could not use: time its thread waited for a CPU, time its process was stopped. So a
  run starved by the machine's load, or stopped (SIGSTOP, Ctrl-Z), is not ended as stuck; a
  run blocked in a call (no CPU used while a CPU was free) or spinning still is, at the limit.
- **total**: the run's real time, however it progresses (by default ``TOTAL_FACTOR`` times the
  no-progress limit), so a run that trickles one event at a time still ends, and so does one
  stopped for good.

For the no-progress limit, a poll that comes more than ``GAP`` after the previous one counts as
``GAP``: the watchdog's own thread could not run (this process was stopped, or starved with
the run), and nothing the run did in that time is known. Nor is it before a run's first poll,
which only reads its lost-time clock (arming a run reads nothing: no system call per run).

When a run is due the watchdog raises ``WatchdogExpired`` inside the run's thread (an
asynchronous exception, delivered at the next bytecode), and repeats while the run is still
armed, in case the agent swallowed it. A run that keeps making progress is ended by the harness
ceiling (turns, tool calls, refusals), whatever the machine's load: the verdict does not depend
on how fast the machine is.

Runs nest: an agent may call ``toolchaos.run`` itself. Each ``arm`` pushes a watch; only the
innermost watch of a thread is checked, and when it is disarmed the outer one starts counting
again from that moment (the inner run was progress of the outer one).

An asynchronous exception waits for the next bytecode, so it cannot end a thread blocked
inside C (``sock.recv()``, ``lock.acquire()``, ``select``, ``queue.get()``). When the
agent runs in the main thread (pytest and xdist run tests there), the watchdog also sends
it ``SIGUSR2``, whose handler raises ``WatchdogExpired``: the blocking call returns with
EINTR and the exception surfaces. The handler is installed once, and only if nobody else
handles ``SIGUSR2``; ``tampering()`` tells the engine when a run replaced, ignored or masked
it (the engine fails the run and puts it back). Sockets that connect during a run get a
timeout bounded by the same limit (``toolchaos._plumbing.isolation``), which covers other
threads.

The exception is never delivered inside a garbage collection: a collection runs Python
callbacks (hypothesis registers one), and an exception raised there is "unraisable" noise,
lost to the run. The watchdog skips a poll while a collection runs, and switches automatic
collection off before it fires (the engine switches it back on when the run is disarmed), so
no collection can start between the firing and the exception's arrival. Its own two callbacks
bracket everyone else's (first at "start", last at "stop"), re-placed at every ``arm``, and
removed when no run is armed (a signal's exception can land in any Python gc callback).

An agent that swallows every exception in a tight loop (``while True: try: call() except
BaseException: pass``) is ended when an exception lands outside its ``try``: at the loop's
backward jump. Where an asynchronous exception lands is the interpreter's choice; from CPython
3.12 on it nearly always lands inside the call, where the loop swallows it again (seen here:
~190 firings, 10 to 30 s, against 2 on 3.11). So from a run's third firing on, where
``sys.monitoring`` exists, the watchdog also asks for the interpreter's JUMP events (a free
tool id, the whole process, only until no firing is pending) and raises the exception from the
jump itself, in the run's thread and only where a firing may land.

The watchdog thread runs untraced and unprofiled. On CPython 3.11 an asynchronous
exception queued for a thread blocked in C keeps the interpreter's "eval breaker" set
until that thread runs again, and a traced or profiled thread then re-dispatches its next
instruction forever: a watchdog thread traced by coverage, a debugger or a profiler would
spin after its first firing and never send the signal that unblocks the agent.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from toolchaos._internal.limits import TOTAL_FACTOR
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing.opportunity import Lost, LostClock, could_run, thread_clock
from toolchaos.errors import WatchdogExpired

_POLL = 0.05
GAP = 0.25  # real seconds a poll counts at most: beyond it the watchdog itself could not run (stopped, starved)
NO_PROGRESS, TOTAL = "no_progress", "total"  # which limit ended a run (``why``)


@dataclass(slots=True, eq=False)
class _Watch:
    """One armed run: its thread, its limits, how it shows progress, and what the watchdog saw."""

    thread: int
    token: int
    limit: float  # seconds of chance to run without progress
    total: float  # seconds of real time, progress or not
    progress: Callable[[], int] | None  # e.g. the run's event list's __len__: read, never called into agent code
    seen: int
    lost: LostClock  # what of the real time the run could not use (toolchaos._plumbing.opportunity)
    polled: float  # the real time accounted up to
    held: Lost | None = None  # the lost clock at ``polled`` (None: not read yet; the next poll reads it)
    idle: float = 0.0  # seconds the run could run since its progress count last moved
    spent: float = 0.0  # real seconds of the run so far
    fired: bool = False
    why: str = ""  # NO_PROGRESS | TOTAL, once fired
    firings: int = 0


_watches: list[_Watch] = []  # armed runs, outermost first
# Safe points (see ``safe_points``): code objects where a firing may land (the agent's call, the
# engine reading agent objects) and where it must wait (the engine's own handling of a run's end).
_interruptible: frozenset[CodeType] = frozenset()
_holding: frozenset[CodeType] = frozenset()
_WALK = 5_000  # frames looked at from the top; a deeper stack is the agent's (a runaway recursion)
_thread: threading.Thread | None = None
_lock = threading.Lock()
_fire_lock = threading.Lock()
_token = 0
_gc_off = False  # the watchdog switched automatic collection off before a firing
_in_gc = False
_SIGNAL: signal.Signals | None = getattr(signal, "SIGUSR2", None) if hasattr(signal, "pthread_kill") else None
_signal_state = 0  # 0: not tried yet, 1: our handler is installed, -1: SIGUSR2 belongs to someone else


def _innermost(thread: int) -> _Watch | None:
    for w in reversed(_watches):
        if w.thread == thread:
            return w
    return None


def _on_signal(signum: int, frame: FrameType | None) -> None:
    w = _innermost(threading.get_ident())
    if w is not None and w.fired:
        raise WatchdogExpired()


def _on_gc_start(phase: str, info: dict[str, Any]) -> None:
    global _in_gc
    if phase == "start":
        _in_gc = True


def _on_gc_stop(phase: str, info: dict[str, Any]) -> None:
    global _in_gc
    if phase == "stop":
        _in_gc = False


def _bracket_gc() -> None:  # the callbacks themselves are holding (see safe_points, below)
    """Our gc callbacks first and last, so a collection counts as running while any other callback runs."""
    callbacks = gc.callbacks
    if not callbacks or callbacks[0] is not _on_gc_start:
        if _on_gc_start in callbacks:
            callbacks.remove(_on_gc_start)
        callbacks.insert(0, _on_gc_start)
    if callbacks[-1] is not _on_gc_stop:
        if _on_gc_stop in callbacks:
            callbacks.remove(_on_gc_stop)
        callbacks.append(_on_gc_stop)


def _unbracket_gc() -> None:
    """No run is armed: our callbacks leave (see ``_resume``)."""
    global _in_gc
    for callback in (_on_gc_start, _on_gc_stop):
        while callback in gc.callbacks:
            gc.callbacks.remove(callback)
    _in_gc = False  # a collection in another thread may be half-way: the next arm starts clean


def _install_signal() -> None:
    """Take SIGUSR2 for the watchdog, from the main thread, unless someone else handles it."""
    global _signal_state
    if _signal_state or _SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(_SIGNAL) in (signal.SIG_DFL, None, _on_signal):
            signal.signal(_SIGNAL, _on_signal)
            _signal_state = 1
        else:
            _signal_state = -1
    except (ValueError, OSError):  # pragma: no cover - embedded interpreters
        _signal_state = -1


def safe_points(interruptible: Iterable[Callable[..., Any]], holding: Iterable[Callable[..., Any]]) -> None:
    """Where the watchdog's exception may land, and where it waits.

    The engine calls the agent (and reads the agent's objects) in ``interruptible`` functions;
    the rest of its handling of a run's end happens in ``holding`` functions. When a run is due,
    the watchdog looks at the thread's stack from the top: the first registered function it meets
    decides. So a firing never lands in the engine's own cleanup (where it would escape
    ``run``), and still ends an agent object whose ``__str__`` spins while the engine reads it.
    """
    global _interruptible, _holding
    _interruptible = _interruptible | {f.__code__ for f in interruptible}
    _holding = _holding | {f.__code__ for f in holding}


safe_points((), (_on_gc_start, _on_gc_stop))  # an exception raised in a gc callback is lost, "unraisable"


def _may_land(thread: int) -> bool:  # pragma: no cover - untraced (see _loop)
    frame: FrameType | None = sys._current_frames().get(thread)
    for _ in range(_WALK):
        if frame is None:
            break
        code = frame.f_code
        if code in _interruptible:
            return True
        if code in _holding:
            return False
        frame = frame.f_back
    return True


def _due(w: _Watch, now: float, lost: Lost | None = None) -> bool:
    """Account the real time since the last poll, as the run could use it; whether a limit is reached.

    ``lost``: the run's lost-time clock, read by the caller (else read here).
    """
    gap, w.polled = now - w.polled, now
    if lost is None:
        lost = w.lost()
    held, w.held = w.held, lost
    w.spent += max(0.0, gap)
    if held is not None:  # the first poll of a run (or of a new clock) only reads it: what came before is not known
        w.idle += could_run(gap, held, lost, GAP)
    if w.progress is not None:
        n = w.progress()
        if n != w.seen:
            w.seen, w.idle = n, 0.0
    if w.spent >= w.total:
        w.why = TOTAL
        return True
    if w.idle >= w.limit:
        w.why = w.why or NO_PROGRESS
        return True
    return False


def _interrupt(w: _Watch) -> None:  # pragma: no cover - untraced (see _loop)
    global _gc_off
    if gc.isenabled():  # no collection (and its Python callbacks) between now and the exception's arrival
        gc.disable()
        _gc_off = True
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(w.thread), ctypes.py_object(WatchdogExpired))
    # The signal only from the second firing on: the asynchronous exception did not end the
    # run, so the thread is blocked in C (or swallowed it). Never send it once someone else
    # replaced the handler: SIGUSR2's default action ends the process.
    if (w.fired and _signal_state == 1 and _SIGNAL is not None and w.thread == threading.main_thread().ident
            and signal.getsignal(_SIGNAL) is _on_signal):
        signal.pthread_kill(w.thread, _SIGNAL)
    w.fired = True
    w.firings += 1
    if w.firings >= _JUMP_AFTER:
        _land_at_jump(w.thread)


# --- a firing raised at a backward jump (a loop that swallows every exception; see the docstring) ---

_JUMP_AFTER = 3  # firings an agent swallowed before the watchdog also raises at its jumps
_jump_tool: int | None = None  # the sys.monitoring tool id in use, while any thread waits for a jump
_at_jump: set[int] = set()  # threads whose next jump raises WatchdogExpired


def _land_at_jump(thread: int) -> None:  # pragma: no cover - runs in the watchdog's thread
    """Raise at the next backward jump of ``thread`` (once), where the interpreter can be asked to tell."""
    global _jump_tool
    monitoring: Any = getattr(sys, "monitoring", None)
    if monitoring is None:
        return  # before 3.12: the asynchronous exception lands at the jumps often enough
    _at_jump.add(thread)
    if _jump_tool is not None:
        return
    for tool in (3, 4):  # the ids Python leaves free for tools other than debuggers, coverage, profilers, optimisers
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "toolchaos-watchdog")
            monitoring.register_callback(tool, monitoring.events.JUMP, _on_jump)
            monitoring.set_events(tool, monitoring.events.JUMP)
            _jump_tool = tool
            return
    _at_jump.discard(thread)  # both taken: the asynchronous exception and the signal go on alone


def _on_jump(code: CodeType, offset: int, destination: int) -> Any:
    """A backward jump, in any thread: raise the pending firing if it is this thread's and may land here."""
    me = threading.get_ident()
    if me not in _at_jump or code in _holding:
        return None
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_WALK):
        if frame is None or frame.f_code in _interruptible:
            break
        if frame.f_code in _holding:
            return None
        frame = frame.f_back
    _at_jump.discard(me)
    raise WatchdogExpired()


def _stop_jumps(thread: int) -> None:
    """The run of ``thread`` is over: no jump of it raises, and the events stop when no thread waits."""
    global _jump_tool
    _at_jump.discard(thread)
    if _jump_tool is not None and not _at_jump:
        monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 - 3.12+, and mypy checks for 3.11
        monitoring.set_events(_jump_tool, 0)
        monitoring.register_callback(_jump_tool, monitoring.events.JUMP, None)
        monitoring.free_tool_id(_jump_tool)
        _jump_tool = None


def _poll() -> None:  # pragma: no cover - runs untraced, so coverage cannot record it
    with _fire_lock:  # disarm() takes it too: no firing after a run has ended
        done: set[int] = set()
        looked: list[tuple[_Watch, Lost]] = []
        for w in reversed(_watches):
            if w.thread in done:  # an outer run of a thread whose inner run is armed: paused
                continue
            done.add(w.thread)
            looked.append((w, w.lost()))
        # Only now: reading a lost-time clock (a file in /proc) lets other threads run, and a
        # collection may start meanwhile. From here to the firing this thread keeps the GIL.
        if _in_gc:  # a collection is running its callbacks: fire at the next poll
            return
        now = _clock.real_monotonic()
        for w, lost in looked:
            if _due(w, now, lost) and _may_land(w.thread):
                _interrupt(w)


def _loop() -> None:  # pragma: no cover - runs untraced, so coverage cannot record it
    # Before any firing: a tracer or profiler inherited from threading.settrace/setprofile
    # would stall this thread while the agent is blocked in C (see the module docstring).
    sys.settrace(None)
    sys.setprofile(None)
    me = threading.current_thread()
    while True:
        _wake.wait(_POLL)  # threading is outside freezegun's reach: this is real time
        if _parked(me):
            return
        _poll()


_wake = threading.Event()  # set by park(): the thread looks at once whether it may stop
_park_asked = False


def _parked(me: threading.Thread) -> bool:  # pragma: no cover - runs in the watchdog's thread
    """Whether the thread stops now: park() asked, and no run is armed (under ``_lock``, as ``_start``)."""
    global _thread, _park_asked
    if not _park_asked:
        return False
    with _lock:
        _wake.clear()
        if _watches or _thread is not me:
            return False
        _thread, _park_asked = None, False
        return True


def park() -> bool:
    """Stop the watchdog's thread while no run is armed; whether this process has no such thread now.

    The next ``arm`` starts it again. An isolated run forks cheaper from a process with one
    thread (see ``toolchaos._plumbing.children``), and between runs the thread has nothing to watch.
    """
    global _park_asked
    thread = _thread
    if thread is None:
        return True
    if _watches:
        return False
    _park_asked = True
    _wake.set()
    thread.join(timeout=1.0)
    if thread.is_alive():  # pragma: no cover - a run was armed meanwhile (another thread)
        return False
    return _os_thread_gone(thread.native_id)


def _os_thread_gone(native_id: int | None, within: float = 0.005) -> bool:
    """Whether the OS thread has gone (join returns as its Python part ends, a moment before it exits)."""
    task = f"/proc/self/task/{native_id}"
    deadline = _clock.real_monotonic() + within
    while native_id is not None and os.path.exists(task):
        if _clock.real_monotonic() > deadline:  # pragma: no cover - a loaded machine
            return False
        os.sched_yield()
    return True


def _after_fork() -> None:
    """In a forked child (an isolated run): no watchdog thread yet, and locks nobody holds."""
    global _thread, _lock, _fire_lock, _wake, _park_asked
    _thread = None  # the parent's thread did not come along: the next arm() starts one
    _lock, _fire_lock = threading.Lock(), threading.Lock()
    _wake, _park_asked = threading.Event(), False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _start() -> None:
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_loop, name="toolchaos-watchdog", daemon=True)
            _thread.start()


def arm(seconds: float, progress: Callable[[], int] | None = None, *, total: float | None = None,
        lost: LostClock | None = None) -> int:
    """Watch the calling thread; returns a token for ``disarm``.

    With ``progress`` (a cheap count that grows while the run does something), the run is
    ended after ``seconds`` without progress while it could run, and after ``total`` seconds of
    real time in all (default ``TOTAL_FACTOR * seconds``); without it, after ``seconds``.
    ``lost``: what of the real time the run could not use (default: the calling thread's wait
    for a CPU, ``toolchaos._plumbing.opportunity.thread_clock``).
    """
    global _token
    if not _signal_state:
        _install_signal()
    if total is None:
        total = seconds * TOTAL_FACTOR if progress is not None else seconds
    clock = lost if lost is not None else thread_clock()
    now = _clock.real_monotonic()
    with _fire_lock:  # with the append: a disarm in another thread removes the bracket only with no watch left
        _token += 1
        seen = progress() if progress is not None else 0
        _watches.append(_Watch(threading.get_ident(), _token, seconds, total, progress, seen, clock, now))
        token = _token
        _bracket_gc()  # callbacks registered since the last run (hypothesis adds one) run inside the bracket
    if _thread is None:  # after the append: a thread that parks meanwhile sees the watch, or is restarted here
        _start()
    return token


def observe(thread: int | None = None, *, progress: Callable[[], int] | None = None,
            lost: LostClock | None = None) -> bool:
    """Change how the innermost armed run of ``thread`` (default: the calling one) shows progress or loses time.

    For a run whose agent is elsewhere: a served run counts the requests that move it on (not
    a retry of the same request), and loses the time the agent's process was stopped or
    waited for a CPU. Whether such a run was armed.
    """
    with _fire_lock:
        w = _innermost(threading.get_ident() if thread is None else thread)
        if w is None:
            return False
        if progress is not None:
            w.progress, w.seen = progress, progress()
        if lost is not None:
            w.lost, w.held = lost, None
        return True


def remaining() -> float | None:
    """Real seconds left before the innermost armed run would be ended, if it could run throughout (None: no run)."""
    watches = _watches
    if not watches:
        return None
    w = watches[-1]
    pending = max(0.0, _clock.real_monotonic() - w.polled)  # not accounted yet: as if the run could run
    moved = w.progress is not None and w.progress() != w.seen
    left = w.limit if moved else w.limit - w.idle - pending
    return min(left, w.total - w.spent - pending)


def why(token: int) -> str:
    """Which limit ended run ``token``: ``NO_PROGRESS``, ``TOTAL`` or "" (it did not fire, or the run is disarmed)."""
    for w in _watches:
        if w.token == token:
            return w.why
    return ""


def extend(token: int, seconds: float) -> None:
    """Give run ``token`` ``seconds`` more from now (at most): the engine reading the agent's result, bounded."""
    now = _clock.real_monotonic()
    with _fire_lock:
        for w in _watches:
            if w.token == token:
                w.idle, w.limit, w.progress = 0.0, min(w.limit, seconds), None
                w.total = max(w.total, w.spent + max(0.0, now - w.polled) + w.limit)


def disarm(token: int) -> str:
    """Stop watching; returns why the watchdog fired at this run ("" when it did not).

    A firing that raced with the end of the run is absorbed here, not leaked; the outer run of
    a nested one starts counting again.
    """
    reason = ""
    fired = False
    for _ in range(3):
        try:
            with _fire_lock:
                for w in _watches:
                    if w.token == token:
                        reason, fired = w.why, w.fired
                        _watches.remove(w)
                        break
                if _jump_tool is not None:
                    _stop_jumps(threading.get_ident())
                _resume(threading.get_ident())
            if fired:  # only a run the watchdog fired at can have one still queued
                clear_pending()
            return reason
        except WatchdogExpired:  # delivered while disarming: the run is over anyway
            continue
    return reason


def _resume(thread: int) -> None:
    """After a run is disarmed: its outer run counts from now; collection is back on when nothing is firing."""
    global _gc_off
    outer = _innermost(thread)
    if outer is not None:  # the inner run's time is the outer run's real time, and was progress of it
        now = _clock.real_monotonic()
        outer.spent += max(0.0, now - outer.polled)
        outer.polled, outer.held, outer.idle = now, None, 0.0
    if _gc_off and not any(w.fired for w in _watches):
        _gc_off = False
        gc.enable()
    if not _watches:
        # Only an armed run needs to know when a collection runs. A Python gc callback is a place
        # where a signal's exception can land (pytest-xdist's worker sends itself SIGINT when it
        # is slow to shut down; the KeyboardInterrupt, raised inside the callback, is lost and
        # printed as an unraisable-exception warning): outside runs there is none of ours.
        _unbracket_gc()


# The C function: signal.getsignal wraps it to build an enum member, a cost on every run.
_getsignal: Callable[[int], Any] = getattr(getattr(signal, "_signal", None), "getsignal", signal.getsignal)


def tampering() -> str | None:
    """What the calling thread's run did to the watchdog's signal, or None; the signal is put back as it was.

    Called by the engine in the run's thread, once the agent has returned: a replaced or
    ignored handler, or the signal blocked in this thread, means the watchdog could no longer
    end a call blocked in C.
    """
    if _signal_state != 1 or _SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return None
    found: list[str] = []
    handler = _getsignal(_SIGNAL)
    if handler is not _on_signal:
        found.append("ignored it" if handler in (signal.SIG_IGN, int(signal.SIG_IGN)) else "replaced its handler")
        signal.signal(_SIGNAL, _on_signal)
    if _SIGNAL in signal.pthread_sigmask(signal.SIG_BLOCK, []):
        found.append("blocked it")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [_SIGNAL])
    if not found:
        return None
    return (f"the agent {' and '.join(found)} (SIGUSR2, the watchdog's signal): the watchdog could not end a "
            f"call blocked in C; the harness put it back")


def _tick() -> None:
    pass


def clear_pending() -> None:
    """Let an asynchronous exception still queued for this thread arrive, and drop it.

    Not ``PyThreadState_SetAsyncExc(id, NULL)``: on CPython 3.11 that clears the exception
    but leaves the interpreter's "async exception pending" flag set, and from then on any
    profiler or tracer (cProfile, pyinstrument, coverage, debuggers) spins forever on the
    next instruction. A queued exception is raised at the next call, so a few calls let it
    surface here, where it is swallowed.
    """
    for _ in range(3):
        try:
            for _ in range(16):
                _tick()
            return
        except WatchdogExpired:
            continue
