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

The user's own freezegun: the harness's freezer sits at the bottom of freezegun's stack.
Outside a run, a test's ``freeze_time(...)`` (``tick=True``, ``auto_tick_seconds`` too) is
answered by freezegun exactly as without toolchaos (its factory, its ignore list, its
``tz_offset``); inside a run the run's virtual clock wins, whatever the test froze. With only
the harness's freezer on, freezegun's date classes answer through the real methods (the machine's
zone, not UTC). A user's time-machine patches those real C functions, so its travels answer
between runs too; the harness imports it before freezegun starts and lets it start under the
harness's freezer (``_DatetimeForTimeMachine``).

The time zone: during a run the agent's local time is UTC (``TZ=UTC`` and ``time.tzset()``
while a run is active, the previous zone put back after it), so ``time.localtime``,
``time.strftime``, ``datetime.fromtimestamp`` and ``datetime.now().astimezone()`` give the
same answer on every machine and traces do not depend on the host's zone.

Which threads move a run's clock: the thread that runs the agent, the non-daemon threads
started while that run is active (the agent's own workers) and a thread pool's worker while it
runs a job the run submitted (``asyncio.to_thread``, ``run_in_executor``, an executor reused
from an earlier run). A daemon thread (an SDK's tracing exporter, telemetry) or a thread left
over from an earlier run sleeps in real time: its retry loops cannot advance a run's clock. It
also reads real time (``time.monotonic``, ``time.time``, ``datetime.now``): an exporter that
schedules its next export on the clock it reads and then sleeps would otherwise schedule on the
virtual clock (a date in 2026, far ahead of the real monotonic clock) and sleep in real time, so
it never exported on schedule between runs and sent what it held in the middle of a later run.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as _dt
import os
import selectors
import sys
import threading
import time
import types
from collections.abc import Awaitable, Coroutine, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import freezegun
import freezegun.api as _fz
from toolchaos._plumbing.pydantic_time import patch_pydantic

EPOCH = _dt.datetime(2026, 1, 1, 0, 0, 0)  # every run's virtual time starts here (naive UTC)
_real_sleep = time.sleep
_real_async_sleep = asyncio.sleep
_real_ctime = time.ctime
_real_asctime = time.asctime


class VirtualClock:
    """Seconds since the run began; moves only when a fault, a latency or a sleep says so."""

    __slots__ = ("_lock", "owner", "t")

    def __init__(self) -> None:
        self.t = 0.0
        self._lock = threading.Lock()
        self.owner: int | None = None  # the thread that runs the agent (set by ``activate``)

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
REAL_TIME_MODULES = ("_pytest", "pytest", "pluggy", "xdist", "execnet", "hypothesis", "toolchaos._plumbing.clock",
                     "toolchaos._plumbing.watchdog", "bench_", "benchmarks")


_STARTED_IN = "_toolchaos_clock"  # on a Thread: the run's clock that was active when it was started
_JOB_OF = "_toolchaos_job_clock"  # on a pool worker: the clock of the run whose job it is running


def _run_clock() -> VirtualClock | None:
    """The active run's clock if the calling thread is one of the run's (see the module docstring), else None.

    A thread that is not the run's sleeps in real time, so it reads real time too: an exporter
    that schedules its next export with ``time.monotonic()`` and then sleeps must see one clock.
    """
    clock = _active
    return clock if clock is not None and _moves_clock(clock) else None


def in_run_thread() -> bool:
    """Whether a run is active and the calling thread is one of its threads (it reads and moves the run's clock)."""
    return _run_clock() is not None


def _use_real_time() -> bool:
    """freezegun's question "real time for this caller?": never in a run's thread; elsewhere, freezegun's own rule."""
    if _run_clock() is not None:
        return False
    if len(_fz.freeze_factories) <= 1:  # only the harness's freezer: real time, at the cost of one call
        return True
    return _ignored_caller()


def _ignored_caller() -> bool:
    """A user's ``freeze_time`` is on: real time for callers in its ignore list (freezegun's rule)."""
    ignore = _fz.ignore_lists[-1] if _fz.ignore_lists else ()
    if not ignore:
        return False
    frame = sys._getframe(3)  # this, _use_real_time, freezegun's fake: then the caller
    for _ in range(int(_fz.call_stack_inspection_limit)):
        name = frame.f_globals.get("__name__")
        if name and name.startswith(ignore):
            return True
        if frame.f_back is None:
            break
        frame = frame.f_back
    return False


def _current_time() -> _dt.datetime:
    """freezegun's ``get_current_time``: the run's clock in a run's thread, else the top freezer's time."""
    clock = _run_clock()
    if clock is not None:
        return EPOCH + _dt.timedelta(seconds=clock.t)
    return _fz.freeze_factories[-1]()


def _tz_offset(cls: Any) -> _dt.timedelta:
    """freezegun's ``tz_offset`` of the top freezer, except in a run (UTC, no offset)."""
    return _dt.timedelta(0) if _run_clock() is not None else _fz.tz_offsets[-1]


def _moves_clock(clock: VirtualClock) -> bool:
    """Whether a sleep in this thread advances ``clock`` (see the module docstring)."""
    if clock.owner == threading.get_ident():
        return True
    thread = threading.current_thread()
    if getattr(thread, _JOB_OF, None) is clock:  # a pool worker, daemon or not, running a job the run submitted
        return True
    return getattr(thread, _STARTED_IN, None) is clock and not thread.daemon


_active: VirtualClock | None = None
_freezer: Any = None
_install_lock = threading.Lock()


class _TimeSource:
    """freezegun's time factory: the active run's virtual time, else the real time."""

    def __call__(self) -> _dt.datetime:
        clock = _run_clock()
        if clock is None:
            # Read freezegun's saved original at call time: a module-level alias would be
            # patched by freezegun's own module scan and recurse into this factory.
            return _fz.real_datetime.now(_dt.UTC).replace(tzinfo=None)
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
    if clock is None or not _moves_clock(clock):
        _real_sleep(seconds)
    else:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        clock.advance(seconds)


def _virtual_ctime(secs: float | None = None) -> str:
    """``time.ctime``, which freezegun leaves alone: the run's time in a run's thread (as ``time.time``)."""
    return _real_ctime(time.time() if secs is None and _run_clock() is not None else secs)


def _virtual_asctime(t: Any = None) -> str:
    return _real_asctime(time.localtime() if t is None and _run_clock() is not None else t)


async def _virtual_async_sleep(delay: float, result: Any = None) -> Any:
    clock = _active
    if (clock is None or delay <= 0 or type(asyncio.get_running_loop()) in _OWN_TIME_LOOPS
            or not _moves_clock(clock)):
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
    patch_pydantic()  # an import may build pydantic models against the real classes
    saved = (_dt.datetime, _dt.date)
    faked = saved[0] is not _fz.real_datetime
    if faked:
        _dt.datetime, _dt.date = _fz.real_datetime, _fz.real_date  # type: ignore[misc]
    try:
        yield
    finally:
        if faked:
            _dt.datetime, _dt.date = saved  # type: ignore[misc]
        patch_pydantic()  # pydantic may have been imported by the block


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
        _time_machine = _import_time_machine()  # before freezegun's fakes replace what it captures
        freezer = freezegun.freeze_time(EPOCH, real_asyncio=True, ignore=list(REAL_TIME_MODULES))
        with _scan_module_dicts():
            freezer.start()
        _bottom_of_stack()
        _real_answers_between_runs()
        if _time_machine is not None:
            _time_machine.dt = _DatetimeForTimeMachine()
        # freezegun's fakes ask ``_should_use_real_time()`` first. Between runs, with no user
        # freezer, every time function is the real one at the cost of one call (monotonic
        # clocks stay comparable across installation); inside a run every caller sees the
        # virtual clock, with no call-stack inspection (an agent called from a test is a few
        # frames below pytest, which an ignore list would match).
        _fz._should_use_real_time = _use_real_time
        _fz.get_current_time = _current_time
        _fz.FakeDatetime._tz_offset = classmethod(_tz_offset)  # type: ignore[method-assign,assignment]
        _fz.FakeDate._tz_offset = classmethod(_tz_offset)  # type: ignore[method-assign,assignment]
        _patch_sleeps()
        time.ctime, time.asctime = _virtual_ctime, _virtual_asctime  # type: ignore[assignment]
        _patch_thread_start()
        _patch_executor()
        _freezer = freezer


def _harness_only() -> bool:
    """No run active and no user's ``freeze_time`` on: every clock should answer as without toolchaos."""
    return _run_clock() is None and len(_fz.freeze_factories) <= 1


def _real_answers_between_runs() -> None:
    """Between runs, freezegun's date classes answer as the real ones do, in the machine's own zone.

    freezegun computes in UTC and shifts by its ``tz_offset``: right under a user's freezer, but
    with only the harness's freezer on it would make ``datetime.now()``, ``date.today()``,
    ``fromtimestamp(t)`` and a naive ``timestamp()`` answer in UTC on a machine in another zone.
    The real methods also see a user's time-machine travel (which patches them in C).
    """
    fdt, fd = _fz.FakeDatetime, _fz.FakeDate
    frozen_now, frozen_today = fdt.now.__func__, fd.today.__func__  # type: ignore[attr-defined]
    frozen_fromtimestamp, frozen_timestamp = fdt.fromtimestamp.__func__, fdt.timestamp  # type: ignore[attr-defined]

    def now(cls: Any, tz: Any = None) -> Any:
        if _harness_only():
            return _fz.datetime_to_fakedatetime(_fz.real_datetime.now(tz))
        return frozen_now(cls, tz)

    def today(cls: Any) -> Any:
        return _fz.date_to_fakedate(_fz.real_date.today()) if _harness_only() else frozen_today(cls)

    def fromtimestamp(cls: Any, t: float, tz: Any = None) -> Any:
        if _harness_only():
            return _fz.datetime_to_fakedatetime(_fz.real_datetime.fromtimestamp(t, tz))
        return frozen_fromtimestamp(cls, t, tz)

    def timestamp(self: Any) -> float:
        return _fz.real_datetime.timestamp(self) if _harness_only() else float(frozen_timestamp(self))

    fdt.now, fdt.fromtimestamp = classmethod(now), classmethod(fromtimestamp)  # type: ignore[method-assign,assignment]
    fdt.timestamp = timestamp  # type: ignore[method-assign]
    fd.today = classmethod(today)  # type: ignore[method-assign,assignment]


def _import_time_machine() -> Any:
    """The user's time-machine, imported before freezegun starts (or ``None`` if it is not installed).

    Its C part keeps the ``time``/``datetime`` functions it finds at import and later rewrites them
    in place: imported after freezegun had replaced them with Python functions, it would write
    into those and crash the process at its first ``travel``. Installed as a pytest plugin it is
    already imported; otherwise this import costs a few milliseconds, once.
    """
    import importlib.util

    if "time_machine" not in sys.modules and importlib.util.find_spec("time_machine") is None:
        return None
    import time_machine

    return time_machine if getattr(time_machine, "dt", None) is _dt else None


class _DatetimeForTimeMachine(types.ModuleType):
    """time-machine's view of ``datetime``: the real ``datetime`` class while only the harness's freezer is on.

    time-machine refuses to start while ``datetime.datetime`` is freezegun's class, because a
    user's ``freeze_time`` would then answer instead of it. The harness's freezer answers the real
    functions outside a run (which time-machine patches), and inside a run virtual time should win
    anyway, so a travel may start; under a user's ``freeze_time`` it still refuses, as without toolchaos.
    """

    def __init__(self) -> None:
        super().__init__("datetime")

    def __getattr__(self, name: str) -> Any:
        if name == "datetime" and len(_fz.freeze_factories) <= 1:
            return _fz.real_datetime
        return getattr(_dt, name)


@contextmanager
def _scan_module_dicts() -> Iterator[None]:
    """freezegun's ``start()`` reads the attributes of every loaded module with ``getattr``, for
    each name ``dir()`` lists: that runs the ``__getattr__`` of modules that load their exports
    lazily (toolchaos's own, anyio's, dateutil's), which imported some 200 modules nobody asked
    for (the scenario loader, pydantic, YAML: ~0.2 s in every pytest process under ``--chaos``).

    Only a name already bound in a module's dict can hold a real time function or class that
    freezegun must replace (a lazy export is bound when it is first loaded, after the start,
    when ``datetime.datetime`` and ``time.time`` are freezegun's already), so the scan reads
    the dict: the same names and values for every other module.
    """
    original = getattr(_fz, "_get_module_attributes", None)
    if original is None:  # a freezegun without that helper: its own scan
        yield
        return
    _fz._get_module_attributes = _module_dict_items
    try:
        yield
    finally:
        _fz._get_module_attributes = original


def _module_dict_items(module: Any) -> list[tuple[str, Any]]:
    try:
        return list(vars(module).items())
    except TypeError:  # an object without a __dict__ standing in sys.modules
        return []


def _bottom_of_stack() -> None:
    """Move the freezer just started to the bottom of freezegun's stacks, under a user's freezer if one is on.

    So a user's ``freeze_time`` that was active when the harness installed still ends with its
    own ``stop()`` (which pops the top), and the harness's freezer is never popped.
    """
    stacks: list[list[Any]] = [_fz.freeze_factories, _fz.ignore_lists, _fz.tick_flags, _fz.tz_offsets]
    for stack in stacks:
        stack.insert(0, stack.pop())
    _fz.freeze_factories[0] = _TimeSource()  # type: ignore[call-overload]


def _patch_executor() -> None:
    """A pool worker moves the clock of the run that submitted its job, for the length of that job.

    Pools outlive runs (an SDK's event loop and its default executor are reused from run to run), so
    a worker's start tells nothing: ``asyncio.to_thread`` and ``run_in_executor`` submit here.
    """
    real_submit = ThreadPoolExecutor.submit

    def submit(self: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        clock = _active
        if clock is None:
            return real_submit(self, fn, *args, **kwargs)

        def job(*a: Any, **k: Any) -> Any:
            thread = threading.current_thread()
            saved = getattr(thread, _JOB_OF, None)
            setattr(thread, _JOB_OF, clock)
            try:
                return fn(*a, **k)
            finally:
                setattr(thread, _JOB_OF, saved)

        return real_submit(self, job, *args, **kwargs)

    ThreadPoolExecutor.submit = submit  # type: ignore[method-assign,assignment]


def _patch_thread_start() -> None:
    """Mark each thread with the run that was active when it started (whose clock it may move)."""
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        setattr(self, _STARTED_IN, _active)
        real_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]


def _patch_sleeps() -> None:
    swaps = {id(_real_sleep): _virtual_sleep, id(_real_async_sleep): _virtual_async_sleep}
    for name, module in list(sys.modules.items()):
        if module is None or name.startswith(("freezegun", "toolchaos._plumbing.clock", "threading", "asyncio.base")):
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
    """Make ``clock`` the time every patched function reads; returns the previous one.

    Called by the thread that runs the agent: that thread moves the clock with its sleeps.
    The first clock of a run switches the process to UTC; ``None`` puts the zone back.
    """
    global _active
    if clock is not None and clock.owner is None:
        clock.owner = threading.get_ident()
    previous, _active = _active, clock
    if previous is None and clock is not None:
        _utc.enter()
    elif previous is not None and clock is None:
        _utc.leave()
    return previous


class _UtcZone:
    """``TZ=UTC`` for the length of a run, the previous ``TZ`` put back after it (not on Windows: no tzset)."""

    def __init__(self) -> None:
        self.saved: tuple[str | None] | None = None

    def enter(self) -> None:
        if not hasattr(time, "tzset") or (time.timezone == 0 and time.daylight == 0 and time.tzname[0] == "UTC"):
            return  # already UTC (most CI machines): nothing to switch
        self.saved = (os.environ.get("TZ"),)
        os.environ["TZ"] = "UTC"
        time.tzset()

    def leave(self) -> None:
        if self.saved is None:
            return
        (tz,), self.saved = self.saved, None
        if tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = tz
        time.tzset()


_utc = _UtcZone()


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


def real_time() -> float:
    """Real seconds since the epoch, whatever is installed (a live server's HTTP dates)."""
    return float(_fz.real_time())


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
