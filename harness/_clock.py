"""Virtual time: a run's clock, shown to the agent through freezegun.

Why installed once per process, not per run: ``freezegun.freeze_time().start()`` scans
every loaded module to patch ``time``/``datetime`` references, which costs tens of
milliseconds once large SDKs are imported. So the harness starts freezegun once (at the
first run, or when the pytest plugin configures under ``--chaos``) and replaces its time
source with ``_TimeSource``: while a run is active it answers the run's virtual clock,
otherwise the real wall clock. Starting or ending a run is then one assignment.

``time.sleep`` and ``asyncio.sleep`` (freezegun leaves those alone) are patched at the
same moment, including references taken with ``from time import sleep``; inside a run
they advance the virtual clock and return at once, outside a run they really sleep.
Asyncio event loops keep real monotonic time (freezegun's ``real_asyncio``), so loop
machinery is not confused by the jumps of virtual time.

Caveat: monotonic clocks read before installation are not comparable with readings
after it (freezegun derives them from the wall clock); install early.
"""

from __future__ import annotations

import asyncio
import atexit
import datetime as _dt
import sys
import threading
import time
from typing import Any

import freezegun
import freezegun.api as _fz

EPOCH = _dt.datetime(2026, 1, 1, 0, 0, 0)  # every run's virtual time starts here (naive UTC)
_real_sleep = time.sleep
_real_async_sleep = asyncio.sleep


class VirtualClock:
    """Seconds since the run began; moves only when a fault, a latency or a sleep says so."""

    __slots__ = ("_lock", "t")

    def __init__(self) -> None:
        self.t = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self.t += seconds

    def datetime(self) -> _dt.datetime:
        return EPOCH + _dt.timedelta(seconds=self.t)


# freezegun's module scan leaves these alone, so references they took to the real
# functions stay real (test-runner durations, hypothesis deadlines, the watchdog).
REAL_TIME_MODULES = ("_pytest", "pytest", "pluggy", "xdist", "execnet", "hypothesis", "harness._clock",
                     "harness._watchdog", "bench_", "benchmarks")
_saved_stack_limit: int | None = None

_active: VirtualClock | None = None
_freezer: Any = None
_undo: list[tuple[Any, str, Any]] = []
_install_lock = threading.Lock()


class _TimeSource:
    """freezegun's time factory: the active run's virtual time, else the real time."""

    def __call__(self) -> _dt.datetime:
        clock = _active
        if clock is None:
            # Read freezegun's saved original at call time: a module-level alias would be
            # patched by freezegun's own module scan and recurse into this factory.
            return _fz.real_datetime.now(_dt.timezone.utc).replace(tzinfo=None)
        return EPOCH + _dt.timedelta(seconds=clock.t)

    # freezegun's API on factories; a test that ticks inside a run moves the run's clock.
    def tick(self, delta: Any = 1.0) -> _dt.datetime:
        if _active is not None:
            _active.advance(delta.total_seconds() if isinstance(delta, _dt.timedelta) else float(delta))
        return self()

    def move_to(self, target: Any) -> None:  # pragma: no cover - not used by the harness
        raise RuntimeError("toolchaos owns the virtual clock; use tick() inside a run")


def _virtual_sleep(seconds: float) -> None:
    clock = _active
    if clock is None:
        _real_sleep(seconds)
    else:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        clock.advance(seconds)


async def _virtual_async_sleep(delay: float, result: Any = None) -> Any:
    clock = _active
    if clock is None:
        return await _real_async_sleep(delay, result)
    clock.advance(delay)
    return await _real_async_sleep(0, result)


def installed() -> bool:
    return _freezer is not None


def install() -> None:
    """Start freezegun and the sleep patches, once per process (idempotent)."""
    global _freezer
    with _install_lock:
        if _freezer is not None:
            return
        freezer = freezegun.freeze_time(EPOCH, real_asyncio=True, ignore=list(REAL_TIME_MODULES))
        freezer.start()
        _fz.freeze_factories[-1] = _TimeSource()  # type: ignore[call-overload]
        # No call-stack inspection: the time source already answers real time outside a
        # run, and inside one every caller must see the virtual clock (an agent called
        # from a test is a few frames below pytest, which an ignore list would match).
        global _saved_stack_limit
        _saved_stack_limit = _fz.call_stack_inspection_limit
        _fz.call_stack_inspection_limit = 0
        _patch_sleeps()
        _freezer = freezer
        atexit.register(uninstall)


def uninstall() -> None:
    global _freezer, _active
    with _install_lock:
        if _freezer is None:
            return
        _active = None
        for owner, name, value in reversed(_undo):
            setattr(owner, name, value)
        _undo.clear()
        _freezer.stop()
        _freezer = None
        if _saved_stack_limit is not None:
            _fz.call_stack_inspection_limit = _saved_stack_limit


def _patch_sleeps() -> None:
    swaps = {id(_real_sleep): _virtual_sleep, id(_real_async_sleep): _virtual_async_sleep}
    for name, module in list(sys.modules.items()):
        if module is None or name.startswith(("freezegun", "harness._clock", "threading", "asyncio.base")):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            new = swaps.get(id(value))
            if new is not None and (value is _real_sleep or value is _real_async_sleep):
                setattr(module, attr, new)
                _undo.append((module, attr, value))


def activate(clock: VirtualClock | None) -> VirtualClock | None:
    """Make ``clock`` the time every patched function reads; returns the previous one."""
    global _active
    previous, _active = _active, clock
    return previous


def active() -> VirtualClock | None:
    return _active


def real_monotonic() -> float:
    """Real monotonic time, whatever is installed (for watchdogs and benchmarks)."""
    return float(_fz.real_monotonic())


def real_perf_counter() -> float:
    """Real high-resolution time, whatever is installed (for benchmarks)."""
    return float(_fz.real_perf_counter())


def real_sleep(seconds: float) -> None:
    _real_sleep(seconds)
