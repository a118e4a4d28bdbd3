"""Letting the interpreter exit without the threads an agent left running.

At exit CPython joins every non-daemon thread; one blocked in C, or looping, would hold the
process (and the user's pytest session) forever. Setting ``daemon`` on a started thread is
refused by ``threading``, and how the interpreter remembers which threads to join is private
and changed in 3.13, so each known mechanism is tried in turn; ``release`` says whether one
applied, so that a Python whose mechanism is unknown is reported, never silently skipped.

- CPython <= 3.12: a non-daemon thread's ``_tstate_lock`` sits in ``threading._shutdown_locks``,
  which ``threading._shutdown`` waits on; dropping the lock from it is enough.
- CPython >= 3.13: ``threading._shutdown`` ends with ``_thread._shutdown()``, which joins every
  thread started non-daemon (a list kept in C, out of reach). It is replaced, once, by a join of
  the threads that are still non-daemon, as ``threading`` sees them: the released ones are
  marked daemon and so are left out, every other thread is waited for as before.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["release"]


def release(t: threading.Thread) -> bool:
    """Mark ``t`` daemon and keep the interpreter from waiting for it at exit; False where no
    known mechanism applies (the thread is marked daemon, but the exit may still wait for it)."""
    t._daemonic = True  # type: ignore[attr-defined]
    return _drop_shutdown_lock(t) or _skip_in_thread_shutdown()


def _drop_shutdown_lock(t: threading.Thread) -> bool:
    lock = getattr(t, "_tstate_lock", None)
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    if lock is None or locks is None or guard is None:
        return False
    with guard:
        locks.discard(lock)
    return True


def _join_non_daemon() -> None:
    """What ``_thread._shutdown`` does, for the threads ``threading`` still counts as non-daemon."""
    me = threading.current_thread()
    while True:
        waiting = [t for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]
        if not waiting:
            return
        for t in waiting:
            t.join()


def _skip_in_thread_shutdown() -> bool:
    current: Any = getattr(threading, "_thread_shutdown", None)
    if current is _join_non_daemon:
        return True
    shutdown = getattr(threading, "_shutdown", None)
    code = getattr(shutdown, "__code__", None)
    # Only where threading._shutdown really ends by calling the module's _thread_shutdown
    # (3.13 and later), and that is still the interpreter's own C function.
    if current is None or code is None or "_thread_shutdown" not in code.co_names:
        return False
    if type(current).__name__ != "builtin_function_or_method":
        return False  # someone else replaced it: theirs is left alone
    threading._thread_shutdown = _join_non_daemon  # type: ignore[attr-defined]
    return True
