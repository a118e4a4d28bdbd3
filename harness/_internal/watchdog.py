"""The real-time watchdog: ends an agent that spins without calling tools.

One daemon thread per process (started lazily) checks the armed deadline a few times a
second, so arming and disarming a run is two assignments, not a thread start. When the
deadline passes it raises ``WatchdogExpired`` inside the agent's thread (an asynchronous
exception, delivered at the next bytecode), and repeats while the run is still armed, in
case the agent swallowed it. It uses real time: a virtual clock cannot stop a spin.

An asynchronous exception waits for the next bytecode, so it cannot end a thread blocked
inside C (``sock.recv()``, ``lock.acquire()``, ``select``, ``queue.get()``). When the
agent runs in the main thread (pytest and xdist run tests there), the watchdog also sends
it ``SIGUSR2``, whose handler raises ``WatchdogExpired``: the blocking call returns with
EINTR and the exception surfaces. The handler is installed once, and only if nobody else
handles ``SIGUSR2``. Sockets that connect during a run get a timeout bounded by the same
deadline (``toolchaos._internal.isolation``), which covers other threads.

The watchdog thread runs untraced and unprofiled. On CPython 3.11 an asynchronous
exception queued for a thread blocked in C keeps the interpreter's "eval breaker" set
until that thread runs again, and a traced or profiled thread then re-dispatches its next
instruction forever: a watchdog thread traced by coverage, a debugger or a profiler would
spin after its first firing and never send the signal that unblocks the agent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from types import FrameType

from toolchaos._internal import clock as _clock
from toolchaos.errors import WatchdogExpired

_POLL = 0.05
_armed: tuple[int, float, int] | None = None  # (thread id, real deadline, token)
_thread: threading.Thread | None = None
_lock = threading.Lock()
_fire_lock = threading.Lock()
_token = 0
_fired = -1  # token of the last run the watchdog fired at
_SIGNAL: signal.Signals | None = getattr(signal, "SIGUSR2", None) if hasattr(signal, "pthread_kill") else None
_signal_state = 0  # 0: not tried yet, 1: our handler is installed, -1: SIGUSR2 belongs to someone else


def _expired(armed: tuple[int, float, int] | None) -> bool:
    return armed is not None and _clock.real_monotonic() >= armed[1]


def _on_signal(signum: int, frame: FrameType | None) -> None:
    armed = _armed
    if _expired(armed) and armed is not None and armed[0] == threading.get_ident():
        raise WatchdogExpired()


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


def _interrupt(armed: tuple[int, float, int], again: bool) -> None:  # pragma: no cover - untraced (see _loop)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(armed[0]), ctypes.py_object(WatchdogExpired))
    # The signal only from the second firing on: the asynchronous exception did not end the
    # run, so the thread is blocked in C (or swallowed it). Never send it once someone else
    # replaced the handler: SIGUSR2's default action ends the process.
    if (again and _signal_state == 1 and _SIGNAL is not None and armed[0] == threading.main_thread().ident
            and signal.getsignal(_SIGNAL) is _on_signal):
        signal.pthread_kill(armed[0], _SIGNAL)


def _loop() -> None:  # pragma: no cover - runs untraced, so coverage cannot record it
    global _fired
    # Before any firing: a tracer or profiler inherited from threading.settrace/setprofile
    # would stall this thread while the agent is blocked in C (see the module docstring).
    sys.settrace(None)
    sys.setprofile(None)
    wake = threading.Event()
    while True:
        wake.wait(_POLL)  # threading is outside freezegun's reach: this is real time
        with _fire_lock:  # disarm() takes it too: no firing after a run has ended
            armed = _armed
            if armed is not None and _expired(armed):
                _interrupt(armed, again=_fired == armed[2])
                _fired = armed[2]


def _after_fork() -> None:
    """In a forked child (an isolated run): no watchdog thread yet, and locks nobody holds."""
    global _thread, _lock, _fire_lock
    _thread = None  # the parent's thread did not come along: the next arm() starts one
    _lock, _fire_lock = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def arm(seconds: float) -> int:
    """Watch the calling thread; returns a token for ``disarm``."""
    global _armed, _thread, _token
    if not _signal_state:
        _install_signal()
    if _thread is None:
        with _lock:
            if _thread is None:
                _thread = threading.Thread(target=_loop, name="toolchaos-watchdog", daemon=True)
                _thread.start()
    _token += 1
    _armed = (threading.get_ident(), _clock.real_monotonic() + seconds, _token)
    return _token


def remaining() -> float | None:
    """Real seconds left before the armed run's deadline (None when no run is armed)."""
    armed = _armed
    return None if armed is None else armed[1] - _clock.real_monotonic()


def disarm(token: int) -> None:
    """Stop watching. A firing that raced with the end of the run is absorbed here, not leaked."""
    global _armed
    for _ in range(3):
        try:
            with _fire_lock:
                armed = _armed
                if armed is not None and armed[2] == token:
                    _armed = None
            if _fired == token:  # only a run the watchdog fired at can have one still queued
                clear_pending()
            return
        except WatchdogExpired:  # delivered while disarming: the run is over anyway
            continue


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
