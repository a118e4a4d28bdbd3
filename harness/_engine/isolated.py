"""Process isolation: a run's agent executes in a forked child; the trace streams to the parent as it is written.

A run whose ``RunSpec.isolation`` is ``"process"`` (``toolchaos.run(..., isolation="process")``;
pytest ``--chaos-isolation=process``, the default of ``--chaos-certify``; ``toolchaos certify
--isolation``, ``toolchaos run --isolation``) forks:
the child is a copy of the caller at the moment the run starts (the agent, its tools and
the policy already built, nothing imported again), contained by
``toolchaos._plumbing.children`` (its own PID namespace, a loopback-only network, where the
platform allows it). The child runs the engine exactly as in process, so the trace is the
same; each event is written to a pipe the moment it is appended (and each effect the
ledger records), so a child that is killed, calls ``os._exit``, forks or segfaults loses
nothing it did before. When the run ends normally the child sends its result (state,
answer, stop report, usage, ledger, world, store) as plain data; the parent builds the
``RunResult``, writes the trace file and checks the invariants.

The parent kills the child and everything it started (SIGKILL) once nothing new has arrived
from it for the run's no-progress limit plus ``KILL_GRACE`` while it could run, or once the
run's total real-time limit plus ``KILL_GRACE`` has passed (stuck, not slow: see ``_await``),
and the run ends WATCHDOG with the events that had arrived. A child that dies on its own ends the
run CRASHED. Nothing the child sends is executed: frames are plain data, unpickled with no
classes allowed, capped in size.

Runs that stay in process even then: a nested run inside an isolated one, the runs an
SDK or framework agent's own runner makes and ``toolchaos.wire`` runs (their HTTP record
lives in the caller), and a run whose ``store`` is not a plain dict (a ``SqliteStore`` keeps
a database connection, which must not cross a fork). ``placement`` says which, and why: the
engine keeps it on the ``RunResult`` (``isolation``, ``isolation_reason``). See docs/isolation.md.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from toolchaos._engine.result import RunResult
from toolchaos._engine.spec import RunSpec
from toolchaos._engine.state import RunState
from toolchaos._internal.events import Event
from toolchaos._plumbing import children
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import isolation as _guard
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos._plumbing.opportunity import LostClock, ProcessClock, could_run
from toolchaos.fake_tools import EffectLedger, World
from toolchaos.fake_tools.internals import Collection, StoredKey
from toolchaos.fake_tools.internals import warm as _warm_catalogue

KILL_GRACE = 0.5  # real seconds past a limit of the run before the parent kills the child
_LOOK = 0.25  # real seconds between the parent's looks at a child that sent nothing
STREAM_CAP = 64 << 20  # bytes of trace a child may stream (a run that writes more ends CRASHED)
EXIT_WAIT = 0.25  # real seconds the parent waits for a child that sent its result to exit, before killing it
_PIPE_SIZE = 1 << 20  # a larger pipe: the child rarely waits for the parent to read

_inside = False  # in an isolated child: its runs (nested ones) stay in it
NESTED = "a run started inside an isolated run: it shares that run's process"
NO_FORK = "this platform has no os.fork"


def default_for_certification() -> str:
    """``process`` on Linux, ``none`` elsewhere: forking a threaded process is routine on Linux,
    while on macOS a forked child can die in the system frameworks (which is why Python's
    multiprocessing spawns there), and there are no namespaces to gain."""
    return "process" if sys.platform.startswith("linux") and hasattr(os, "fork") else "none"


def placement(spec: RunSpec) -> tuple[str, str | None]:
    """How the run of ``spec`` executes, and why it stays here when ``process`` was asked for.

    ``("process", None)``: in a child. ``("none", None)``: in this process, as the spec says.
    ``("none", reason)``: in this process although ``process`` was asked for: the spec's own
    reason (an SDK or framework agent's runner, a ``chaos.wire`` block, ``serve``), a nested
    run, no ``fork``, or a store that must not cross a fork.
    """
    if spec.stays_because is not None:
        return "none", spec.stays_because
    if spec.isolation != "process":
        return "none", None
    if _inside:
        return "none", NESTED
    if not hasattr(os, "fork"):
        return "none", NO_FORK
    store = spec.store
    if store is not None and type(store) is not dict:
        return "none", (f"tools.store is a {type(store).__name__}, not a plain dict: what it holds (a SqliteStore's "
                        f"database connection) must not cross a fork")
    return "process", None


# --- frames: what the child streams -------------------------------------------------------

_EVENT, _PATCH, _EFFECT, _RESULT, _END = b"E", b"P", b"L", b"R", b"Z"
_HEAD = struct.Struct("!cI")
_DONE = _HEAD.pack(_END, len(pickle.dumps(None, protocol=4))) + pickle.dumps(None, protocol=4)


class _Writer:
    """Writes frames to the parent; only from the child's own process (a fork of it writes nothing)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.pid, self.lock = fd, os.getpid(), threading.Lock()

    def send(self, kind: bytes, value: Any, strict: bool = False) -> None:
        """One frame. A value the parent's plain-data reading would refuse goes as its JSON reading
        (the trace file's), or, ``strict``, raises ``pickle.PicklingError``."""
        if os.getpid() != self.pid:  # the agent forked: its copy must not write into this run's trace
            return
        body = _plain_dumps(value)
        if body is None:
            if strict:
                raise pickle.PicklingError("a value that is not plain data (builtins only)")
            body = pickle.dumps(_plain(value), protocol=4)
        with self.lock:  # workers append at once; a frame is written whole
            _write_all(self.fd, _HEAD.pack(kind, len(body)) + body)


def _plain_dumps(value: Any) -> bytes | None:
    try:
        body = pickle.dumps(value, protocol=4)
        _PlainUnpickler(io.BytesIO(body)).load()
    except Exception:
        return None
    return body


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Streamed(list[Event]):
    """The run's event list in the child: every append (and the one later touch, ``shown``) is sent at once."""

    def __init__(self, writer: _Writer) -> None:
        super().__init__()
        self._writer = writer

    def append(self, event: Event) -> None:
        super().append(event)
        self._writer.send(_EVENT, event)

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        if isinstance(index, int):
            self._writer.send(_PATCH, value)


def _first_odd(store: Any) -> str:
    """The first entry of the store that is not plain data, for the message."""
    for key, value in dict(store).items():
        if _plain_dumps(value) is None:
            return f"{key!r}: {type(value).__name__}"
    return "an entry"


def _plain(value: Any) -> Any:
    """``value`` as plain data (what the trace file's JSON would hold)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, int, float, bool, tuple)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value) if type(value) in (list, tuple) else [_plain(v) for v in value]
    return str(value)


class _PlainUnpickler(pickle.Unpickler):
    """Plain data only: no class, no function, so a frame the agent forged cannot run code here."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in ("set", "frozenset", "complex", "bytearray"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def _frames(data: bytes) -> Iterator[tuple[bytes, Any]]:
    """The frames in what the child wrote, up to the first cut or malformed one."""
    pos = 0
    while pos + _HEAD.size <= len(data):
        kind, size = _HEAD.unpack_from(data, pos)
        body = data[pos + _HEAD.size: pos + _HEAD.size + size]
        if len(body) < size:
            return
        try:
            value = _PlainUnpickler(io.BytesIO(body)).load()
        except Exception:
            return
        yield kind, value
        pos += _HEAD.size + size


# --- the result, both ways ----------------------------------------------------------------


def _payload(res: RunResult, interrupted: BaseException | None, store: object) -> dict[str, Any]:
    world = res.world
    return {
        "state": res.terminal_state, "answer": res.answer, "report": _plain(res.stop_report),
        "harness_stop": res.harness_stop, "error": res.error, "virtual_seconds": res.virtual_seconds,
        "usage": [(u.input_tokens, u.output_tokens) for u in res.usage],
        "ledger": [tuple(e) for e in res.ledger.effects],
        "world": {"collections": {n: (c.initial, c.log, c.numbered) for n, c in world.collections.items()},
                  "keys": {k: tuple(v) for k, v in world.keys.items()}, "applications": dict(world.applications),
                  "offset": world.offset},
        "rules_fired": dict(res.rules_fired), "rule_hits": {k: dict(v) for k, v in res.rule_hits.items()},
        "store": store, "warnings": list(res.warnings), "watchdog": res.watchdog,
        "interrupted": None if interrupted is None else
        (type(interrupted).__name__, "".join(traceback.format_exception_only(interrupted)).strip()),
    }


def restore_world(world: World, data: dict[str, Any]) -> None:
    """Put the child's world into the parent's ``World`` (the same object a restarted run gets)."""
    world.collections = {}
    for name, (initial, log, numbered) in data["collections"].items():
        c = Collection(initial)
        c.log, c.numbered = list(log), numbered
        world.collections[name] = c
    world.keys = {k: StoredKey(*v) for k, v in data["keys"].items()}
    world.applications = dict(data["applications"])
    world.offset = data["offset"]


def restore_ledger(ledger: EffectLedger, effects: list[tuple[Any, ...]]) -> None:
    """The parent's ledger, in place, as the child's (a resumed run goes on counting from it)."""
    ledger.__init__(effects)  # type: ignore[misc]


# --- running ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What came back from the child: its result when it finished the run, else how it ended."""

    events: list[Event]
    effects: list[tuple[Any, ...]]
    result: dict[str, Any] | None
    ended: children.Ended
    timed_out: str  # "" when the child sent its result; else the limit it ran past (watchdog.NO_PROGRESS, TOTAL)
    cut: bool  # the stream passed STREAM_CAP
    sealed: bool = field(default=False)


def fork_run(execute: Callable[[], tuple[RunResult, BaseException | None]], r: RunState,
             real_seconds: float, total: float) -> Outcome:
    """Run ``execute`` (the engine's in-process run of ``r``) in a contained child; what it left."""
    store = r.store

    def child(fd: int) -> None:  # pragma: no cover - runs in the forked child
        global _inside
        _inside = True
        _grow_pipe(fd)
        writer = _Writer(fd)
        r.events = _Streamed(writer)
        ledger = r.toolset.ledger
        record = ledger.record

        def streamed_record(*args: Any, **kwargs: Any) -> int:
            n = record(*args, **kwargs)
            writer.send(_EFFECT, tuple(ledger.effects[-1]))
            return n

        ledger.record = streamed_record  # type: ignore[method-assign]
        res, interrupted = execute()
        try:
            writer.send(_RESULT, _payload(res, interrupted, store), strict=True)
        except Exception:  # a value in the store no plain-data frame holds
            writer.send(_RESULT, {"unsendable": f"tools.store holds a value that is not plain data "
                                                f"({_first_odd(store)}); run it with --chaos-isolation=none"})
        writer.send(_END, None)

    with _forking:  # runs isolated from several threads at once (concurrent trials): one fork at a time
        _reap_finished()
        _warm()
        _watchdog.park()  # no run is armed here: one thread forks once (children.fork_call), not twice
        proc = children.fork_call(child, seal_network=not reaches_network(r.policy), cap=STREAM_CAP)
    timed_out = _await(proc, real_seconds, total, ProcessClock(proc.pid))
    if not timed_out:
        # The result is in, and the child exits right after sending it: wait for that (its
        # teardown, about a millisecond), and only then go on. Until the child is gone, each page
        # this process writes is copied (copy-on-write, several microseconds a page here), and
        # building the result, the trace file and the verdict writes hundreds; once it is gone,
        # the same write faults only mark the page as ours again.
        proc.wait(timeout=EXIT_WAIT)
    out = _collect(proc.stdout, children.Ended(0, None, False), timed_out, proc.sealed)
    if out.result is not None and proc.running():
        # Not gone: killed all the same (a thread of the agent may have sent the result while
        # the agent runs on), and reaped at the next run.
        proc.kill()
        _finishing.append(proc)
        return out
    out.ended = proc.end(grace=0.0)
    out.timed_out = timed_out
    return out


# One fork at a time: a pipe made for one child must not leak into a sibling forked meanwhile (the
# sibling would hold it open), and the bookkeeping below is shared.
_forking = threading.Lock()


def reaches_network(policy: Any) -> bool:
    """Whether the run's policy asks a live model over the network (a cassette being recorded): then its
    child keeps this machine's network instead of a sealed loopback, so that the model is reachable; the
    in-process guard still refuses every connection but the model's own (``isolation.allow_network``)."""
    return bool(getattr(policy, "reaches_network", False))


def placement_allows_fork() -> bool:
    """Whether a run asked to be isolated forks from here (not already inside an isolated child)."""
    return not _inside


def prepare_forks() -> None:
    """What the first isolated run sets up, done before several runs fork from threads at once."""
    _clock.install()
    _guard.install()
    with _forking:
        _warm()


_warmed = False


def _warm() -> None:
    """Once per process, before the first fork: what every child would otherwise build and lose."""
    global _warmed
    if not _warmed:
        _warm_catalogue()
        _warmed = True


def _await(proc: children.Child, real_seconds: float, total: float, lost: LostClock) -> str:
    """Wait for the child's result: "" when it came; else the limit the child ran past (then it is killed).

    Stuck, not slow: the child has run past its no-progress limit when nothing new arrived (an
    event, an effect) for the run's limit plus ``KILL_GRACE`` while it could run: time its
    processes were stopped (SIGSTOP) or waited for a CPU (``lost``, a ``ProcessClock``) does not
    count, so neither a long run that keeps working nor the machine's load cuts it short. It has
    run past its total limit after the run's total real time plus ``KILL_GRACE`` (stopped time
    included), so neither a child that only dribbles bytes nor one stopped for good holds the session. (The child's own
    watchdog ends a pure-Python spin at the limit first, as in process.) A look that comes late
    counts as ``4 * _LOOK`` at most: this process could not run either.
    """
    # (0, 0): the child was just born, so the first reading's waits all fall after this moment (no read now)
    polled, held = time.monotonic(), (0.0, 0.0)
    start, seen, idle = polled, 0, 0.0
    while True:
        if proc.wait_for(_has_result, timeout=_LOOK):
            return ""
        now, reading = time.monotonic(), lost()
        idle += could_run(now - polled, held, reading, 4 * _LOOK)
        polled, held = now, reading
        size = proc.stdout_size
        if size != seen:
            seen, idle = size, 0.0
        if now - start >= total + KILL_GRACE:
            return _watchdog.TOTAL
        if idle >= real_seconds + KILL_GRACE:
            return _watchdog.NO_PROGRESS


_finishing: list[children.Child] = []  # children that sent their result and are still exiting


def _reap_finished() -> None:
    for proc in list(_finishing):
        if proc.wait(timeout=0) is not None:
            _finishing.remove(proc)


def _has_result(data: bytes) -> bool:
    """Whether the last frame the child wrote is its result (read only the tail: this runs per chunk)."""
    return data.endswith(_DONE)


def _grow_pipe(fd: int) -> None:  # pragma: no cover - runs in the forked child
    import fcntl

    setpipe = getattr(fcntl, "F_SETPIPE_SZ", 1031)
    try:
        fcntl.fcntl(fd, setpipe, _PIPE_SIZE)
    except OSError:
        pass


def _collect(data: bytes, ended: children.Ended, timed_out: str, sealed: bool) -> Outcome:
    cut = data.endswith(b" more bytes cut]\n") and b"\n[toolchaos: " in data[-64:]
    by_seq: dict[int, Event] = {}
    effects: list[tuple[Any, ...]] = []
    result: dict[str, Any] | None = None
    for kind, value in _frames(data):
        if kind in (_EVENT, _PATCH) and isinstance(value, dict) and isinstance(value.get("seq"), int):
            by_seq[value["seq"]] = cast(Event, value)
        elif kind == _EFFECT and isinstance(value, tuple):
            effects.append(value)
        elif kind == _RESULT and isinstance(value, dict):
            result = value
    events = [by_seq[k] for k in sorted(by_seq)]
    return Outcome(events, effects, result, ended, timed_out, cut, sealed)
