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

Async agents run on a ``VirtualEventLoop`` instead (the engine creates one per async run):
its ``time()`` is the run's virtual clock, and when nothing is ready it jumps the clock to
the next timer instead of waiting. So ``asyncio.sleep``, ``asyncio.wait_for`` and
``asyncio.timeout`` are virtual too, and concurrent sleepers overlap (two tasks sleeping
10 s in parallel take 10 virtual seconds, not 20). While real work is pending (a thread of
the loop's executor, a socket or pipe the agent registered) virtual time only flows as fast
as real time, so a real answer is never overtaken by a virtual timeout.

Outside a run every patched function answers the real time at once, so monotonic
clocks read before installation stay comparable with readings after it.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as _dt
import selectors
import sys
import threading
import time
from collections.abc import Awaitable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

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
REAL_TIME_MODULES = ("_pytest", "pytest", "pluggy", "xdist", "execnet", "hypothesis", "toolchaos._internal.clock",
                     "toolchaos._internal.watchdog", "bench_", "benchmarks")


def _outside_run() -> bool:
    return _active is None

_active: VirtualClock | None = None
_freezer: Any = None
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
    if clock is None or delay <= 0 or type(asyncio.get_running_loop()) in _OWN_TIME_LOOPS:
        return await _real_async_sleep(delay, result)  # on a virtual loop the timer itself is virtual
    clock.advance(delay)
    return await _real_async_sleep(0, result)


@contextmanager
def real_datetime() -> Iterator[None]:
    """The real ``datetime``/``date`` classes in ``datetime`` for a block, even with the clock installed.

    For imports: a module imported while freezegun is active binds its fakes, and ``pydantic.v1``
    (which LangChain imports) then fails at import (``class ConstrainedDate(date, metaclass=...)``
    is a metaclass conflict with freezegun's ``FakeDate``). Imported in this block, it binds the
    real classes (fake instances still pass its checks: they subclass the real ones).
    """
    saved = (_dt.datetime, _dt.date)
    faked = saved[0] is not _fz.real_datetime
    if faked:
        _dt.datetime, _dt.date = _fz.real_datetime, _fz.real_date  # type: ignore[misc]
    try:
        yield
    finally:
        if faked:
            _dt.datetime, _dt.date = saved  # type: ignore[misc]


def installed() -> bool:
    return _freezer is not None


def install() -> None:
    """Start freezegun and the sleep patches, once per process (idempotent), never stopped.

    Not stopped at exit either: freezegun's ``stop()`` reads every attribute of every module
    loaded since ``start()``, which imports the SDKs' lazy submodules (a thousand modules, a
    second or more per process; long enough under coverage for pytest-xdist to kill a worker
    that is still exiting). Outside a run every patched function answers the real time anyway.
    """
    global _freezer
    with _install_lock:
        if _freezer is not None:
            return
        freezer = freezegun.freeze_time(EPOCH, real_asyncio=True, ignore=list(REAL_TIME_MODULES))
        freezer.start()
        _fz.freeze_factories[-1] = _TimeSource()  # type: ignore[call-overload]
        # freezegun's fakes ask ``_should_use_real_time()`` first. Answer "outside a run":
        # then between runs every time function is the real one at the cost of one call
        # (monotonic clocks stay comparable across installation), and inside a run every
        # caller sees the virtual clock, with no call-stack inspection (an agent called
        # from a test is a few frames below pytest, which an ignore list would match).
        _fz._should_use_real_time = _outside_run
        _patch_sleeps()
        _freezer = freezer


def _patch_sleeps() -> None:
    swaps = {id(_real_sleep): _virtual_sleep, id(_real_async_sleep): _virtual_async_sleep}
    for name, module in list(sys.modules.items()):
        if module is None or name.startswith(("freezegun", "toolchaos._internal.clock", "threading", "asyncio.base")):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            new = swaps.get(id(value))
            if new is not None and (value is _real_sleep or value is _real_async_sleep):
                setattr(module, attr, new)


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


# -- asyncio on virtual time ------------------------------------------------------------

REAL_SLICE = 0.01  # while real work is pending, wait for it in slices of this many real seconds

_T = TypeVar("_T")


class _VirtualSelector(selectors.BaseSelector):
    """The loop's selector: polls real I/O, and jumps virtual time when only timers are left."""

    def __init__(self, clock: VirtualClock) -> None:
        self._sel = selectors.DefaultSelector()
        self._clock = clock
        self.jobs = 0  # executor jobs in flight (run_in_executor, to_thread, getaddrinfo)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._sel.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._sel.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._sel.modify(fileobj, events, data)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._sel.get_map()

    def close(self) -> None:
        self._sel.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= 0:
            return self._sel.select(0)
        ready = self._sel.select(0)
        if ready:
            return ready
        # The loop's own self-pipe is always registered: more means the agent waits on real I/O.
        if self.jobs or len(self._sel.get_map()) > 1:
            real = REAL_SLICE if timeout is None else min(timeout, REAL_SLICE)
            t0 = _fz.real_monotonic()
            ready = self._sel.select(real)
            if timeout is not None and not ready:
                self._clock.advance(min(timeout, _fz.real_monotonic() - t0))
            return ready
        if timeout is None:  # no timer, no real work: only another thread can wake the loop
            return self._sel.select(None)
        self._clock.advance(timeout)  # only timers are left: jump to the next one
        return []


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is a run's ``VirtualClock`` (see the module docstring)."""

    def __init__(self, clock: VirtualClock) -> None:
        self._vclock = clock
        self._vselector = _VirtualSelector(clock)
        super().__init__(self._vselector)
        # Timers are compared with a tolerance of one clock resolution: virtual seconds are
        # floats that a jump reaches up to rounding, so use a microsecond, not a nanosecond.
        self._clock_resolution = 1e-6

    def time(self) -> float:
        return self._vclock.t

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> asyncio.Future[Any]:  # type: ignore[override]
        fut: asyncio.Future[Any] = super().run_in_executor(executor, func, *args)
        self._vselector.jobs += 1
        fut.add_done_callback(self._job_done)
        return fut

    def _job_done(self, fut: asyncio.Future[Any]) -> None:
        self._vselector.jobs -= 1


class RealTimeEventLoop(asyncio.SelectorEventLoop):
    """An event loop that keeps real time inside a run: ``asyncio.sleep`` on it really sleeps.

    For the harness's own servers (``toolchaos serve``, ``toolchaos mcp``): their loops tick
    and time out in real seconds while a run's virtual clock is active in the process; a
    virtual ``asyncio.sleep`` there would spin and move the run's clock, and timers read from
    a ``time.monotonic`` that answers the run's clock would fire at the wrong moments.
    """

    def time(self) -> float:
        return float(_fz.real_monotonic())


_OWN_TIME_LOOPS = (VirtualEventLoop, RealTimeEventLoop)


def run_awaitable(awaitable: Awaitable[_T], clock: VirtualClock) -> _T:
    """``run_coroutine`` for whatever an async agent returned (a coroutine, a future, any ``__await__``)."""
    async def _await() -> _T:
        return await awaitable

    return run_coroutine(_await(), clock)


def run_coroutine(coro: Coroutine[Any, Any, _T], clock: VirtualClock) -> _T:
    """``asyncio.run(coro)`` on a ``VirtualEventLoop`` bound to ``clock``."""
    loop = VirtualEventLoop(clock)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            _keep_unfinished(loop, coro)
            asyncio.set_event_loop(None)
            loop.close()


def _keep_unfinished(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
    """Never let an unfinished coroutine of the agent be garbage-collected.

    A coroutine still suspended when the run ends (the watchdog ended it, or it swallowed its
    cancellation) is closed when it is freed: ``GeneratorExit`` is thrown in, and an agent that
    catches ``BaseException`` and loops would then spin inside the garbage collector, in a later
    test, with no watchdog armed. One extra reference, never released, keeps it from being freed,
    even at interpreter exit: a little memory, for a hostile agent only.
    """
    unfinished = [t.get_coro() for t in asyncio.all_tasks(loop) if not t.done()]
    if getattr(coro, "cr_await", None) is not None:  # suspended, awaiting something: not finished
        unfinished.append(coro)
    for c in unfinished:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(c))


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
