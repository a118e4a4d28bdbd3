"""Process isolation: each run's agent in a contained child, the trace streamed back, the verdict kept here.

The hostile agents run in a pytest session of their own (a subprocess, so a failure of
the isolation cannot take this session down), each followed by nothing but the next one;
canary tests at the end must pass, and nothing the agents started may outlive the session.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from toolchaos import Ceiling, SqliteStore, policies, run
from toolchaos._engine import RunSpec, isolated, session_defaults
from toolchaos._plumbing import children
from toolchaos.certification import run_scenario, suite
from toolchaos.errors import UserError
from toolchaos.fake_tools import catalogue

needs_ns = pytest.mark.skipif(not children.sealing_available(), reason="no unprivileged namespaces here")
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
ONE_FORK_HERE = (children.sealing_available() and os.uname().machine == "x86_64"
                 and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc "))


@pytest.fixture
def isolated_runs() -> object:
    restore = session_defaults(isolation="process")
    yield
    restore()


def _stubborn() -> dict[str, object]:
    return {"task": "t", "tools": [catalogue.get("search")],
            "policy": policies.stubborn("search", {"query": "q"}, until="never")}


# --- same traces, same verdicts -------------------------------------------------------------


@needs_fork
@pytest.mark.parametrize("agent", ["builtin:guarded", "builtin:naive", "builtin:production"])
def test_the_certification_suite_gives_byte_identical_traces_in_a_child(agent: str) -> None:
    scenarios = suite()
    here = [run_scenario(s, agent) for s in scenarios]
    restore = session_defaults(isolation="process")
    try:
        there = [run_scenario(s, agent) for s in scenarios]
    finally:
        restore()
    for a, b in zip(here, there, strict=True):
        assert [r.trace.jsonl() for r in a.runs] == [r.trace.jsonl() for r in b.runs], a.scenario.name
        assert (a.passed, [r.terminal_state for r in a.runs]) == (b.passed, [r.terminal_state for r in b.runs])
        assert [r.ledger.effects for r in a.runs] == [r.ledger.effects for r in b.runs]
        assert [(r.usage, r.rules_fired, r.rule_hits, r.virtual_seconds, r.stop_report, r.warnings) for r in a.runs] == \
            [(r.usage, r.rules_fired, r.rule_hits, r.virtual_seconds, r.stop_report, r.warnings) for r in b.runs]


def _writes(task, model, tools):  # type: ignore[no-untyped-def]
    tools.store["seen"] = (1, {2: "x"})
    turn = model.complete([{"role": "user", "content": task}])
    tools.call("send_email", turn.tool_calls[0].arguments, call_id=turn.tool_calls[0].id)
    return "done"


def _email_run(store: dict[str, object]):  # type: ignore[no-untyped-def]
    return run(_writes, task="t", tools=[catalogue.get("send_email")], store=store,
               policy=policies.scripted([{"call": "send_email", "args": {"to": "a@b.c", "subject": "s", "body": "b"}},
                                         {"final": "ok"}]))


@needs_fork
def test_the_store_world_and_ledger_come_back_as_in_process() -> None:
    here_store: dict[str, object] = {}
    here = _email_run(here_store)
    restore = session_defaults(isolation="process")
    try:
        there_store: dict[str, object] = {}
        there = _email_run(there_store)
    finally:
        restore()
    assert there_store == here_store == {"seen": (1, {2: "x"})}
    assert there.ledger.effects == here.ledger.effects and there.ledger.applied("send_email") == 1
    assert there.world.keys == here.world.keys
    assert {n: c.rows for n, c in there.world.collections.items()} == {n: c.rows for n, c in here.world.collections.items()}
    assert (there.terminal_state, there.answer, there.usage) == (here.terminal_state, here.answer, here.usage)
    assert there.trace.jsonl() == here.trace.jsonl()
    assert (here.isolation, there.isolation) == ("none", "process")  # only the result says where it ran


@needs_fork
def test_a_store_value_that_is_not_plain_data_fails_the_run_naming_it(isolated_runs: object) -> None:
    class Odd:
        pass

    def keeps(task, model, tools):  # type: ignore[no-untyped-def]
        tools.store["odd"] = Odd()
        return "done"

    res = run(keeps, **_stubborn(), store={})
    assert (res.terminal_state, res.harness_stop) == ("CRASHED", "crash")
    assert "tools.store holds a value that is not plain data ('odd': Odd)" in (res.error or "")


@needs_fork
def test_a_policy_bug_is_raised_here(isolated_runs: object) -> None:
    def broken(view):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("the test's own bug")

    with pytest.raises(ZeroDivisionError, match="the test's own bug"):
        run("builtin:guarded", task="t", tools=[catalogue.get("search")], policy=broken)


@needs_fork
def test_the_childs_own_watchdog_thread_is_not_taken_for_one_the_agent_left(isolated_runs: object) -> None:
    # arm() starts the watchdog's thread in a fresh child: counted as the agent's, every run
    # waited the whole thread grace for it (a tenth of a second each, by default).
    import freezegun.api as fz

    start = fz.real_monotonic()
    res = run("builtin:guarded", **_stubborn(), ceiling=Ceiling(real_seconds=10.0, thread_grace=10.0))
    assert fz.real_monotonic() - start < 5.0
    assert res.terminal_state != "CRASHED" and res.warnings == []


def test_a_warm_catalogue_has_its_pools_before_any_fork() -> None:
    from toolchaos.fake_tools import _catalogue

    _catalogue.warm()
    assert {"company", "sentence-5", "sentence-12"} <= set(_catalogue._pools)


def test_runs_that_stay_in_process(isolated_runs: object, tmp_path: Path) -> None:
    def spec(**kw: object) -> RunSpec:
        return RunSpec.of(task="t", tools=[catalogue.get("search")], policy=policies.scripted([]), **kw)  # type: ignore[arg-type]

    assert isolated.placement(spec())[0] == ("process" if hasattr(os, "fork") else "none")
    assert isolated.placement(spec(isolation="none")) == ("none", None)  # the run's own setting wins
    assert isolated.placement(spec(store=SqliteStore(tmp_path / "s.db")))[1] == (
        "tools.store is a SqliteStore, not a plain dict: what it holds (a SqliteStore's database connection) must "
        "not cross a fork")
    staying = spec().staying("the caller's").staying("an inner runner's")
    assert isolated.placement(staying) == ("none", "the caller's")  # the outermost reason: the caller's
    assert spec(isolation="none").staying("a reason").stays_because is None  # nothing asked: nothing to explain
    with pytest.raises(UserError, match="expected one of none, process"):
        session_defaults(isolation="thread")
    with pytest.raises(UserError, match="expected one of none, process"):
        spec(isolation="thread")


def test_a_run_says_how_it_ran(tmp_path: Path) -> None:
    def asks_nothing(task, model, tools):  # type: ignore[no-untyped-def]
        return "done"

    plain = run(asks_nothing, **_stubborn())
    assert (plain.isolation, plain.isolation_reason) == ("none", None)  # the session asked for nothing
    restore = session_defaults(isolation="process")
    try:
        kept = run(asks_nothing, **_stubborn(), store=SqliteStore(tmp_path / "s.db"))
    finally:
        restore()
    assert kept.isolation == "none" and (kept.isolation_reason or "").startswith("tools.store is a SqliteStore")


@needs_fork
def test_an_isolated_run_says_so_and_a_run_nested_in_it_says_why_it_shares_it(isolated_runs: object) -> None:
    def nests(task, model, tools):  # type: ignore[no-untyped-def]
        inner = run(lambda *_: "inner", **_stubborn())
        return f"{inner.isolation}: {inner.isolation_reason}"

    res = run(nests, **_stubborn())
    assert (res.isolation, res.isolation_reason) == ("process", None)
    assert res.answer == f"none: {isolated.NESTED}"


@needs_fork
def test_a_killed_child_keeps_what_it_streamed(isolated_runs: object, tmp_path: Path) -> None:
    def spins_in_c(task, model, tools):  # type: ignore[no-untyped-def]
        import collections
        import itertools

        turn = model.complete([{"role": "user", "content": task}])
        tools.call("search", {"query": "q"}, call_id=turn.tool_calls[0].id)
        collections.deque(itertools.count(), maxlen=0)

    res = run(spins_in_c, **_stubborn(), ceiling=Ceiling(real_seconds=0.3), artifacts=tmp_path, name="c")
    assert (res.terminal_state, res.harness_stop) == ("WATCHDOG", "watchdog")
    assert "its process was killed" in (res.error or "")
    assert [e["kind"] for e in res.trace] == ["model", "tool", "end"]
    assert (tmp_path / "c.trace.jsonl").read_text().count("\n") == 3


# --- hostile agents, in a session of their own ------------------------------------------------

HOSTILE = '''
import collections, ctypes, itertools, os, re, select, signal, socket, subprocess, sys, threading, time
import _socket
import pytest
from toolchaos import Ceiling, policies, run
from toolchaos._plumbing import children, clock
from toolchaos.fake_tools import catalogue

TOKEN = "{token}"
LIMIT = 0.5
BOUND = 3 * LIMIT + 0.5 + 2.5  # the total limit (a stuck run starved by a loaded machine ends there), the kill
# grace, and room for a loaded machine


def first(model, tools):
    turn = model.complete([{{"role": "user", "content": "t"}}])
    tools.call("search", {{"query": "q"}}, call_id=turn.tool_calls[0].id)


def escaped(what):
    open(f"escaped-{{what}}", "w").close()


def recursion(task, model, tools):
    first(model, tools)
    sys.setrecursionlimit(10**8)
    def f(n):
        return f(n + 1) + 1
    f(0)

def c_spin(task, model, tools):
    first(model, tools); collections.deque(itertools.count(), maxlen=0)

def system_sleep(task, model, tools):
    first(model, tools); os.system(f"sleep 30 # {{TOKEN}}")

def huge_power(task, model, tools):
    first(model, tools); return str(3 ** 30_000_000)

def regex(task, model, tools):
    first(model, tools); re.match(r"(a+)+$", "a" * 64 + "b")

def sigusr2_ignored(task, model, tools):
    first(model, tools); signal.signal(signal.SIGUSR2, signal.SIG_IGN); select.select([], [], [], 30)

def sigusr2_masked(task, model, tools):
    first(model, tools); signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2]); threading.Event().wait(30)

def thread_in_c(task, model, tools):
    first(model, tools)
    t = threading.Thread(target=select.select, args=([], [], [], 60))
    t.start(); t.join()

def forks(task, model, tools):
    first(model, tools)
    if os.fork() == 0:
        return "the copy returns into the harness"
    collections.deque(itertools.count(), maxlen=0)

def new_session(task, model, tools):
    first(model, tools)
    subprocess.Popen(["sh", "-c", f"sleep 300 # {{TOKEN}}"], start_new_session=True)
    collections.deque(itertools.count(), maxlen=0)

def exits(task, model, tools):
    first(model, tools); os._exit(3)

def segfault(task, model, tools):
    first(model, tools); ctypes.string_at(0)

def udp_sendto(task, model, tools):
    first(model, tools)
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("198.51.100.7", 53)); escaped("udp")

def raw_connect(task, model, tools):
    first(model, tools)
    s = _socket.socket(); s.settimeout(2); s.connect(("198.51.100.7", 80)); escaped("connect")

def resolve(task, model, tools):
    first(model, tools); socket.gethostbyname("example.com"); escaped("dns")


@pytest.mark.parametrize("agent", [recursion, c_spin, system_sleep, huge_power, regex, sigusr2_ignored,
                                   sigusr2_masked, thread_in_c, forks, new_session, exits, segfault,
                                   udp_sendto, raw_connect, resolve], ids=lambda a: a.__name__)
def test_hostile(agent, tmp_path):
    t0 = clock.real_monotonic()
    policy = policies.stubborn("search", {{"query": "q"}}, until="never")
    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policy, ceiling=Ceiling(real_seconds=LIMIT),
            artifacts=tmp_path, name=agent.__name__)
    took = clock.real_monotonic() - t0
    assert r.terminal_state in ("WATCHDOG", "CRASHED") and r.harness_stop in ("watchdog", "crash"), r.summary()
    assert took < BOUND, took
    kinds = [e["kind"] for e in r.trace]
    assert kinds[:2] == ["model", "tool"] and kinds[-1] == "end"
    assert (tmp_path / f"{{agent.__name__}}.trace.jsonl").read_text().count("\\n") == len(kinds)
    print("HOSTILE", agent.__name__, r.terminal_state, round(took, 2))


def test_canary():
    r = run("builtin:guarded", task="t", tools=[catalogue.get("search")],
            policy=policies.scripted([{{"call": "search", "args": {{"query": "q"}}}}, {{"final": "ok"}}]))
    assert r.terminal_state == "COMPLETED" and os.getpid() == PID
    print("CANARY", os.getpid(), "one fork:", children._one_fork)


PID = os.getpid()
'''


def _alive(token: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


@needs_ns
def test_hostile_agents_each_end_as_a_failed_run_and_the_session_goes_on(pytester: pytest.Pytester) -> None:
    token = uuid.uuid4().hex
    pytester.makepyfile(test_hostile=textwrap.dedent(HOSTILE.format(token=token)))
    res = pytester.runpytest_subprocess("-p", "toolchaos", "--chaos", "--chaos-isolation=process", "-s",
                                        "-p", "no:randomly", "-p", "no:cacheprovider", timeout=180)
    res.assert_outcomes(passed=16)
    out = res.stdout.str()
    assert out.count("HOSTILE ") == 15 and out.count("CANARY ") == 1, out
    if ONE_FORK_HERE:  # a pytest session has one thread: each hostile run was one clone(2)
        assert "one fork: True" in out, out
    assert not list(pytester.path.glob("escaped-*")), "an agent reached the network"
    assert not _alive(token), "a process an agent started outlived its run"
    assert sys.platform.startswith("linux")


# --- the frames, read in this process --------------------------------------------------------


def test_frames_come_back_as_sent_and_a_forged_one_runs_nothing(tmp_path: Path) -> None:
    import pickle

    r, w = os.pipe()
    writer = isolated._Writer(w)
    events = isolated._Streamed(writer)
    events.append({"run": "r", "seq": 1, "kind": "model", "t": 0.0})  # type: ignore[typeddict-item]
    events.append({"run": "r", "seq": 2, "kind": "tool", "args": {"when": Path("/x")}})  # type: ignore[typeddict-item]
    events[0] = {**events[0], "shown": []}  # type: ignore[typeddict-item]
    writer.send(isolated._EFFECT, ("send_email", "k", True, "ok", 2, False))
    writer.send(isolated._RESULT, {"state": "COMPLETED", "store": {"a": (1, {2})}}, strict=True)
    with pytest.raises(pickle.PicklingError):
        writer.send(isolated._RESULT, {"odd": object()}, strict=True)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, (f"touch {marker}",))

    evil = pickle.dumps(Evil(), protocol=4)
    os.write(w, isolated._HEAD.pack(isolated._RESULT, len(evil)) + evil)
    writer.send(isolated._END, None)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    out = isolated._collect(data, children.Ended(0, None, False), False, True)
    assert [e["seq"] for e in out.events] == [1, 2]
    assert out.events[0]["shown"] == [] and out.events[1]["args"] == {"when": "/x"}  # type: ignore[typeddict-item]
    assert out.effects == [("send_email", "k", True, "ok", 2, False)]
    assert out.result == {"state": "COMPLETED", "store": {"a": (1, {2})}}  # the forged frame ends the reading
    assert not marker.exists()
    assert not isolated._has_result(data[:-1]) and isolated._has_result(isolated._DONE)


def test_a_stream_cut_short_keeps_the_whole_frames_before_the_cut() -> None:
    r, w = os.pipe()
    writer = isolated._Writer(w)
    writer.send(isolated._EVENT, {"seq": 1, "kind": "model"})
    writer.send(isolated._EVENT, {"seq": 2, "kind": "tool"})
    os.close(w)
    data = os.read(r, 65536)
    os.close(r)
    out = isolated._collect(data[:-3], children.Ended(None, 9, True), True, True)
    assert [e["seq"] for e in out.events] == [1] and out.result is None and out.timed_out


def test_plain_reading_of_what_pickle_cannot_hold_plainly() -> None:
    assert isolated._plain({"k": (1, [Path("/p")]), 3: None, ("a",): {1.5}}) == {
        "k": (1, ["/p"]), 3: None, ("a",): "{1.5}"}
    assert isolated._first_odd({"fine": 1, "odd": object()}) == "'odd': object"


def test_a_result_is_plain_data_that_rebuilds_the_world_and_ledger() -> None:
    store: dict[str, object] = {}
    res = _email_run(store)
    payload = isolated._payload(res, KeyboardInterrupt(), store)
    assert isolated._plain_dumps(payload) is not None
    assert payload["interrupted"] == ("KeyboardInterrupt", "KeyboardInterrupt")
    world, ledger = type(res.world)(), type(res.ledger)()
    isolated.restore_world(world, payload["world"])
    isolated.restore_ledger(ledger, payload["ledger"])
    assert world.records("emails") == res.world.records("emails") and world.keys == res.world.keys
    assert ledger.effects == res.ledger.effects and ledger.applied("send_email") == 1


@needs_fork
def test_without_namespaces_the_process_group_still_ends_them(pytester: pytest.Pytester) -> None:
    """The fallback (no unprivileged namespaces): one process group; what leaves it or the network is not covered."""
    token = uuid.uuid4().hex
    pytester.makepyfile(test_hostile=textwrap.dedent(HOSTILE.format(token=token)))
    pytester.makeconftest("from toolchaos._plumbing import children\nchildren._available = False\n")
    res = pytester.runpytest_subprocess("-p", "toolchaos", "--chaos", "--chaos-isolation=process", "-s",
                                        "-p", "no:randomly", "-p", "no:cacheprovider",
                                        "-k", "c_spin or system_sleep or forks or exits or segfault or canary",
                                        timeout=120)
    res.assert_outcomes(passed=6, deselected=10)
    assert not _alive(token), "a process an agent started outlived its run"


@needs_fork
def test_a_child_that_keeps_working_is_not_killed_for_being_slow(isolated_runs: object) -> None:
    """Stuck, not slow: each tool call is progress; the child dies only after a limit without any."""
    import threading as _threading

    def slow_but_working(task, model, tools):  # type: ignore[no-untyped-def]
        turn = model.complete([{"role": "user", "content": task}])
        for i in range(6):
            _threading.Event().wait(0.15)  # real time, in C: the child's watchdog cannot cut it
            tools.call("search", {"query": f"q{i}"}, call_id=turn.tool_calls[0].id if i == 0 else None)
        return "done"

    res = run(slow_but_working, **_stubborn(), ceiling=Ceiling(real_seconds=0.4, total_seconds=30.0))
    # 0.9 s of real time under a 0.4 s limit (and past the limit plus the kill grace), with a
    # tool call every 0.15 s: neither the child's watchdog nor the parent ends it.
    assert res.harness_stop is None and res.answer == "done", res.summary()
    assert res.total_executions == 6


def _stopping(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """An agent that calls once, says so on a pipe and waits on another (blocked in C); and the run's child."""
    forked: list[children.Child] = []
    fork_call = children.fork_call

    def kept(*args: Any, **kwargs: Any) -> children.Child:
        forked.append(fork_call(*args, **kwargs))
        return forked[-1]

    monkeypatch.setattr(children, "fork_call", kept)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()

    def agent(task, model, tools):  # type: ignore[no-untyped-def]
        turn = model.complete([{"role": "user", "content": task}])
        tools.call("search", {"query": "q1"}, call_id=turn.tool_calls[0].id)
        os.write(ready_w, b"r")
        os.read(go_r, 1)  # until the test says go on
        tools.call("search", {"query": "q2"})
        return "done"

    class Driver:
        stopped_for = 0.0

        def stop(self, seconds: float | None) -> None:
            """Stop the child once it called (SIGSTOP to its process group); continue it after ``seconds``."""
            os.read(ready_r, 1)
            os.killpg(forked[0].pid, signal.SIGSTOP)
            if seconds is None:  # stopped for good
                return
            t0 = time.monotonic()
            time.sleep(seconds)  # real time: the kernel must see the child stopped
            self.stopped_for = time.monotonic() - t0
            os.killpg(forked[0].pid, signal.SIGCONT)
            os.write(go_w, b"g")

    return agent, Driver()


@needs_fork
def test_a_child_stopped_past_its_no_progress_limit_is_not_ended_as_stuck(
        isolated_runs: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGSTOP (a debugger, job control): stopped time is no chance to run, for the parent and the child's watchdog."""
    agent, driver = _stopping(monkeypatch)
    stopper = threading.Thread(target=driver.stop, args=(2.5,), daemon=True)
    stopper.start()
    res = run(agent, **_stubborn(), ceiling=Ceiling(real_seconds=1.0, total_seconds=60.0))
    stopper.join(30)
    assert driver.stopped_for >= 2.5 > 1.0 + isolated.KILL_GRACE  # past the limit, and the parent's kill grace
    assert res.harness_stop is None and res.answer == "done", res.summary()
    assert res.total_executions == 2


@needs_fork
def test_a_blocked_child_is_ended_by_its_own_watchdog_which_says_which_limit(isolated_runs: object) -> None:
    def blocked(task, model, tools):  # type: ignore[no-untyped-def]
        threading.Event().wait()  # no CPU used, a CPU free: stuck, and ended at the limit

    res = run(blocked, **_stubborn(), ceiling=Ceiling(real_seconds=0.3, total_seconds=60.0))
    assert (res.isolation, res.terminal_state) == ("process", "WATCHDOG"), res.summary()
    assert res.watchdog == {"limit": "no_progress", "seconds": 0.3}  # sent back by the child
    assert res.error == ("the agent made no progress (no model request, tool call or event) for 0.3s while it could "
                         "run, its no-progress limit")


@needs_fork
def test_a_child_stopped_for_good_is_ended_by_its_total_limit(
        isolated_runs: object, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, driver = _stopping(monkeypatch)
    stopper = threading.Thread(target=driver.stop, args=(None,), daemon=True)
    stopper.start()
    t0 = time.monotonic()
    res = run(agent, **_stubborn(), ceiling=Ceiling(real_seconds=1.0, total_seconds=2.0))
    took = time.monotonic() - t0
    stopper.join(30)
    assert (res.terminal_state, res.watchdog) == ("WATCHDOG", {"limit": "total", "seconds": 2.0}), res.summary()
    assert res.error == ("the run went on for 2s of real time in all without reaching a ceiling, its total limit: it did "
                         "not stop, and its process was killed")
    assert 2.0 <= took < 2.0 + isolated.KILL_GRACE + 8.0 and res.total_executions == 1


# --- one fork: clone(2) into the namespaces, where the process has one thread ----------------

ONE_FORK = '''
import select, threading
from toolchaos import Ceiling, policies, run
from toolchaos._engine import session_defaults
from toolchaos._plumbing import children
from toolchaos.certification import run_scenario, suite
from toolchaos.fake_tools import catalogue

clones = []
real_clone = children._clone_call
children._clone_call = lambda *a, **k: (clones.append(1), real_clone(*a, **k))[1]
scenarios = suite()
here = [[r.trace.jsonl() for r in run_scenario(s, "builtin:guarded").runs] for s in scenarios]
session_defaults(isolation="process")
there = [[r.trace.jsonl() for r in run_scenario(s, "builtin:guarded").runs] for s in scenarios]
print("RUNS", sum(map(len, there)), "CLONES", len(clones), "SAME", here == there)

def blocked(task, model, tools):
    turn = model.complete([{"role": "user", "content": "t"}])
    tools.call("search", {"query": "q"}, call_id=turn.tool_calls[0].id)
    select.select([], [], [], 30)

r = run(blocked, task="t", tools=[catalogue.get("search")], ceiling=Ceiling(real_seconds=0.3),
        policy=policies.stubborn("search", {"query": "q"}, until="never"))
print("BLOCKED", r.terminal_state, "|", r.error)

stop = threading.Event()
threading.Thread(target=stop.wait).start()  # a second thread: two forks
before = len(clones)
r = run(blocked, task="t", tools=[catalogue.get("search")], ceiling=Ceiling(real_seconds=0.3),
        policy=policies.stubborn("search", {"query": "q"}, until="never"))
stop.set()
print("THREADED", r.terminal_state, "CLONES", len(clones) - before)
'''


@needs_ns
@pytest.mark.skipif(not ONE_FORK_HERE, reason="one fork is taken on glibc x86-64 only")
def test_a_process_with_one_thread_forks_once_and_nothing_changes(tmp_path: Path) -> None:
    """In a fresh interpreter (this one may run other threads, an xdist worker's): every isolated run is one
    clone(2), the traces are byte-identical to in-process runs, the child's watchdog signals its own main thread
    (glibc's cached thread id is the child's: with the parent's, a call blocked in C would run on until the
    parent's kill), and with a second thread alive the run forks twice instead."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", ONE_FORK], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path).stdout
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line.split(" ", 1)[0].isupper())
    runs, _, clones, _, same = lines["RUNS"].split()
    assert runs == clones and int(runs) > 40 and same == "True", out
    assert lines["BLOCKED"] == "WATCHDOG | the agent made no progress (no model request, tool call or event) " \
                               "for 0.3s while it could run, its no-progress limit", out
    assert lines["THREADED"] == "WATCHDOG CLONES 0", out


@needs_ns
def test_a_clone_the_kernel_refuses_falls_back_to_two_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(flags: int, tid_address: int) -> int:
        raise PermissionError(1, "clone: Operation not permitted")

    monkeypatch.setattr(children, "_one_fork", True)
    monkeypatch.setattr(children, "_one_fork_tid", lambda: 0 if children._one_fork else None)
    monkeypatch.setattr(children, "_clone", refused)
    forked = children.fork_call(lambda fd: os.write(fd, str(os.getpid()).encode()), seal_network=True)
    assert forked.wait(timeout=10) == 0 and forked.stdout == b"1"  # PID 1 all the same, of the keeper's namespace
    assert children._one_fork is False


@needs_fork
def test_an_isolated_agents_keyboard_interrupt_fails_its_run_and_the_next_test_runs(
        pytester: pytest.Pytester) -> None:
    # The agent raises KeyboardInterrupt, or sends its own process SIGINT: a failed run, not the
    # end of the session (a real Ctrl-C at the terminal still stops it: test_isolation_session.py).
    pytester.makepyfile("""
        import os, signal, time
        import pytest

        def raises(task, model, tools):
            raise KeyboardInterrupt

        def sigint(task, model, tools):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)

        @pytest.mark.parametrize("agent", [raises, sigint])
        def test_interrupts(chaos, agent):
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]), agent=agent)
            assert (r.terminal_state, r.harness_stop, r.isolation) == ("CRASHED", "interrupted", "process")
            assert "the session goes on" in r.error

        def test_after(chaos):
            assert True
    """)
    res = pytester.runpytest("-p", "toolchaos", "--chaos", "--chaos-isolation=process", "-p", "no:randomly")
    res.assert_outcomes(passed=3)
    assert res.ret == 0
