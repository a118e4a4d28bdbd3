"""The real-time watchdog: ends an agent that spins without calling tools.

One daemon thread per process (started lazily) checks the armed deadline a few times a
second, so arming and disarming a run is two assignments, not a thread start. When the
deadline passes it raises ``WatchdogExpired`` inside the agent's thread (an asynchronous
exception, delivered at the next bytecode), and repeats while the run is still armed, in
case the agent swallowed it. It uses real time: a virtual clock cannot stop a spin.
"""

from __future__ import annotations

import ctypes
import threading

from . import _clock


class HarnessStop(BaseException):
    """Base of the harness's own stops. A ``BaseException`` so ``except Exception`` in an agent cannot swallow it."""


class WatchdogExpired(HarnessStop):
    """The agent ran longer than the real-time limit."""


_POLL = 0.05
_armed: tuple[int, float, int] | None = None  # (thread id, real deadline, token)
_thread: threading.Thread | None = None
_lock = threading.Lock()
_fire_lock = threading.Lock()
_token = 0


def _loop() -> None:
    wake = threading.Event()
    while True:
        wake.wait(_POLL)  # threading is outside freezegun's reach: this is real time
        with _fire_lock:  # disarm() takes it too: no firing after a run has ended
            armed = _armed
            if armed is not None and _clock.real_monotonic() >= armed[1]:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(armed[0]), ctypes.py_object(WatchdogExpired))


def arm(seconds: float) -> int:
    """Watch the calling thread; returns a token for ``disarm``."""
    global _armed, _thread, _token
    if _thread is None:
        with _lock:
            if _thread is None:
                _thread = threading.Thread(target=_loop, name="toolchaos-watchdog", daemon=True)
                _thread.start()
    _token += 1
    _armed = (threading.get_ident(), _clock.real_monotonic() + seconds, _token)
    return _token


def disarm(token: int) -> None:
    global _armed
    with _fire_lock:
        armed = _armed
        if armed is not None and armed[2] == token:
            _armed = None
    clear_pending()


def clear_pending() -> None:
    """Drop an asynchronous exception queued for this thread after the run ended."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)
