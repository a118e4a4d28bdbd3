"""Agents that misbehave never take the session down: each ends as a failed run, in time, with its trace."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from toolchaos import Ceiling, NetworkBlocked, RunClosed, policies, run
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import isolation as _isolation
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos.fake_tools import catalogue

LIMIT = 0.4  # the real-time limit of these runs, seconds
SLACK = 8.0  # the machine is shared: generous bounds, still far below "hangs"


def tools():
    return [catalogue.get("search")]


def go(agent, tmp_path=None, name="run", **ceiling):
    t0 = _clock.real_monotonic()
    r = run(agent, task="t", tools=tools(), policy=policies.stubborn("search", {"query": "q"}, until="never"),
            ceiling=Ceiling(**{"real_seconds": LIMIT, **ceiling}), artifacts=tmp_path, name=name)
    return r, _clock.real_monotonic() - t0


def a_healthy_run_still_works():
    r = run("builtin:guarded", task="t", tools=tools(),
            policy=policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}]))
    assert r.terminal_state == "COMPLETED" and r.harness_stop is None
    assert not _isolation.active() and _watchdog.remaining() is None


def saved_kinds(tmp_path, name):
    lines = (tmp_path / f"{name}.trace.jsonl").read_text().splitlines()
    return [json.loads(x)["kind"] for x in lines]


# --- agents that never return -----------------------------------------------------------


def test_a_pure_python_loop_is_stopped_by_the_watchdog(tmp_path):
    def spins(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        n = 0
        while True:
            n += 1

    r, took = go(spins, tmp_path, "spin")
    assert (r.terminal_state, r.harness_stop) == ("WATCHDOG", "watchdog") and took < LIMIT + SLACK
    assert saved_kinds(tmp_path, "spin") == ["model", "skipped", "end"]
    a_healthy_run_still_works()


@pytest.mark.parametrize("how", ["recv", "socketpair", "accept", "event", "join", "queue"])
def test_an_agent_blocked_in_c_is_stopped(how, tmp_path):
    """Blocking calls do not run bytecode, so an asynchronous exception alone would wait forever."""
    import queue

    def blocks(task, model, tools):
        tools.call("search", {"query": "before blocking"})
        if how == "recv":  # a loopback server that never answers
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen()
            c = socket.create_connection(srv.getsockname())
            c.recv(10)
        elif how == "socketpair":
            a, _b = socket.socketpair()
            a.recv(10)
        elif how == "accept":
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen()
            srv.accept()
        elif how == "event":
            threading.Event().wait()
        elif how == "join":
            t = threading.Thread(target=threading.Event().wait, daemon=True)
            t.start()
            t.join()
        else:
            queue.Queue().get()

    r, took = go(blocks, tmp_path, how)
    assert (r.terminal_state, r.harness_stop) == ("WATCHDOG", "watchdog"), r.error
    assert took < LIMIT + SLACK
    assert saved_kinds(tmp_path, how) == ["tool", "end"]
    a_healthy_run_still_works()


def test_a_loopback_socket_gets_a_timeout_bounded_by_the_deadline():
    seen = {}

    def agent(task, model, tools):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        c = socket.socket()
        c.connect(srv.getsockname())
        seen["timeout"] = c.gettimeout()
        c2 = socket.socket()
        c2.settimeout(0.01)
        c2.connect(srv.getsockname())
        seen["shorter kept"] = c2.gettimeout()
        for s in (srv, c, c2):
            s.close()
        return "ok"

    run(agent, task="t", tools=tools(), policy=policies.scripted([]), ceiling=Ceiling(real_seconds=30))
    assert 0 < seen["timeout"] <= 30 + _isolation.MARGIN and seen["shorter kept"] == 0.01


def test_a_worker_thread_blocked_on_recv_is_released_by_its_socket_timeout():
    """The watchdog's signal reaches only the main thread; other threads rely on the socket timeout."""
    done = threading.Event()

    def agent(task, model, tools):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()

        def worker():
            c = socket.create_connection(srv.getsockname())
            try:
                c.recv(10)
            except OSError:
                done.set()

        t = threading.Thread(target=worker, daemon=True)
        t.start()
        t.join()
        return "joined"

    r, took = go(agent)
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    assert done.wait(LIMIT + SLACK)  # the worker did not stay blocked


# --- agents that crash ------------------------------------------------------------------


class Custom(BaseException):
    pass


@pytest.mark.parametrize("exc", [SystemExit(0), SystemExit("bye"), GeneratorExit(), Custom("mine"),
                                 MemoryError(), RecursionError()])
def test_base_exceptions_end_the_run_as_a_crash_with_the_trace(exc, tmp_path):
    def crashes(task, model, tools):
        tools.call("search", {"query": "q"})
        raise exc

    r, _ = go(crashes, tmp_path, "crash")
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "crash")
    assert type(exc).__name__ in (r.error or "")
    assert saved_kinds(tmp_path, "crash") == ["tool", "end"]
    a_healthy_run_still_works()


def test_ten_million_calls_end_at_the_ceiling():
    def hammer(task, model, tools):
        for _ in range(10_000_000):
            try:
                tools.call("search", {"query": "q"})
            except Exception:
                pass

    r, took = go(hammer, real_seconds=30)
    assert (r.terminal_state, r.total_executions) == ("HARD_CEILING", 1000) and took < SLACK


def test_ten_million_calls_under_a_huge_ceiling_end_at_the_watchdog():
    def hammer(task, model, tools):
        for _ in range(10_000_000):
            tools.call("search", {"query": "q"})

    # every call is progress: the watchdog's total limit (3 times the no-progress limit) ends it, saying so
    r, took = go(hammer, max_tool_calls=20_000_000, real_seconds=0.2)
    assert r.terminal_state == "WATCHDOG" and took < 0.6 + SLACK and "0.6s of real time in all" in (r.error or "")
    assert r.watchdog == {"limit": "total", "seconds": 0.6}
    assert 0 < r.total_executions < 10_000_000 and r.trace.events[-1]["kind"] == "end"


def test_an_agent_swallowing_the_ceiling_still_ends():
    def swallows(task, model, tools):
        while True:
            try:
                tools.call("search", {"query": "q"})
            except BaseException:
                pass

    r, took = go(swallows)
    assert r.terminal_state in ("HARD_CEILING", "WATCHDOG") and took < LIMIT + SLACK
    assert r.total_executions == 1000



def test_a_loop_that_swallows_every_exception_is_ended_at_its_jump_and_the_events_stop():
    # Where an asynchronous exception lands is the interpreter's choice; from 3.12 on it lands
    # inside the call nearly every time and the loop swallows it. The watchdog then raises at the
    # loop's backward jump (sys.monitoring), and lets go of the interpreter's events after the run.
    import sys

    firings: list[int] = []
    real = _watchdog._interrupt

    def counted(w):
        firings.append(w.token)
        real(w)

    def busy():
        return sum(range(50))

    def swallows(task, model, tools):
        while True:
            try:
                busy()
            except BaseException:
                pass

    _watchdog._interrupt = counted
    try:
        r, took = go(swallows)
    finally:
        _watchdog._interrupt = real
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    assert len(firings) <= _watchdog._JUMP_AFTER + 2, len(firings)  # not hundreds
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        assert all(monitoring.get_tool(t) != "toolchaos-watchdog" for t in range(6))
        assert _watchdog._jump_tool is None and not _watchdog._at_jump
    a_healthy_run_still_works()

# --- threads ------------------------------------------------------------------------------


def test_threads_that_keep_calling_after_the_agent_returned_fail_the_run_and_are_stopped(tmp_path):
    gate = threading.Event()
    stopped = []

    def agent(task, model, tools):
        def worker():
            gate.wait()
            try:
                while True:
                    try:
                        tools.call("search", {"query": "again"})
                    except Exception:
                        pass
            except BaseException as exc:  # the harness ends a thread that ignores RunClosed
                stopped.append(type(exc).__name__)

        for _ in range(3):
            threading.Thread(target=worker, daemon=True).start()
        gate.set()  # they start calling; the agent returns while they go on
        return "done"

    r, took = go(agent, tmp_path, "threads")
    assert r.harness_stop in ("threads", "ceiling"), r.summary()
    assert r.terminal_state in ("CRASHED", "HARD_CEILING") and took < SLACK
    deadline = time.monotonic() + SLACK
    while len(stopped) < 3 and time.monotonic() < deadline:
        _clock.real_sleep(0.01)
    assert set(stopped) <= {"HardCeiling", "LeftoverStopped"} and len(stopped) == 3
    assert saved_kinds(tmp_path, "threads")[-1] == "end"
    late = [e for e in r.trace.events if e["kind"] == "late"]
    assert len(late) <= 20 and all(not e["executed"] for e in late)
    assert r.ledger.executions("search") == 0  # search has no side effects; nothing late reached a tool
    a_healthy_run_still_works()


def test_late_calls_never_execute_and_nothing_is_written_after_end():
    kept = {}

    def agent(task, model, tools):
        kept["tools"] = tools
        tools.call("search", {"query": "in time"})
        return "bye"

    r = run(agent, task="t", tools=tools(), policy=policies.scripted([]))
    n = len(r.trace)
    for _ in range(5):
        with pytest.raises(RunClosed):
            kept["tools"].call("search", {"query": "late"})
        with pytest.raises(RunClosed):
            kept["tools"].refuse("search", {"query": "late"}, guard="g", reason="late")
    assert r.total_executions == 1 and len(r.trace) == n and r.trace.events[-1]["kind"] == "end"


def test_an_idle_thread_left_running_is_not_a_failure():
    stop = threading.Event()

    def agent(task, model, tools):
        threading.Thread(target=stop.wait, daemon=True).start()  # e.g. an idle pool worker
        return "ok"

    try:
        r, _ = go(agent)
        assert r.harness_stop is None
    finally:
        stop.set()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_ceiling_hit_in_a_worker_thread_ends_the_run():
    def agent(task, model, tools):
        def worker():
            for _ in range(2000):
                tools.call("search", {"query": "q"})

        t = threading.Thread(target=worker)
        t.start()
        t.join()  # the worker died of HardCeiling; the agent carries on as if nothing happened
        return "fine"

    r, _ = go(agent, real_seconds=30)
    assert (r.terminal_state, r.harness_stop, r.total_executions) == ("HARD_CEILING", "ceiling", 1000)


# --- the network ------------------------------------------------------------------------


def test_connects_outside_loopback_are_refused_with_the_address(tmp_path):
    def agent(task, model, tools):
        s = socket.socket()
        s.connect(("93.184.216.34", 443))

    r, _ = go(agent, tmp_path, "net")
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "network")
    assert "93.184.216.34:443" in r.error and "loopback" in r.error
    assert json.loads((tmp_path / "net.trace.jsonl").read_text().splitlines()[-1])["harness_stop"] == "network"


@pytest.mark.parametrize("how", ["connect_ex", "create_connection", "getaddrinfo", "ipv6", "udp", "urllib"])
def test_every_way_out_is_refused(how):
    def agent(task, model, tools):
        if how == "connect_ex":
            socket.socket().connect_ex(("10.1.2.3", 80))
        elif how == "create_connection":
            socket.create_connection(("example.com", 443), timeout=1)
        elif how == "getaddrinfo":
            socket.getaddrinfo("example.com", 443)
        elif how == "ipv6":
            socket.socket(socket.AF_INET6).connect(("2606:2800:220:1::", 443))
        elif how == "udp":
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).connect(("8.8.8.8", 53))
        else:
            import urllib.request

            urllib.request.urlopen("http://example.com/", timeout=1)

    r, _ = go(agent)
    assert r.harness_stop == "network", r.error


def test_a_swallowed_or_threaded_attempt_still_fails_the_run():
    def swallowing(task, model, tools):
        try:
            socket.create_connection(("example.com", 80))
        except BaseException:
            pass
        return "nothing happened"

    def threaded(task, model, tools):
        def worker():
            try:
                socket.socket().connect(("1.1.1.1", 80))
            except BaseException:
                pass

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        return "nothing happened"

    for agent in (swallowing, threaded):
        r, _ = go(agent)
        assert (r.terminal_state, r.harness_stop) == ("CRASHED", "network")


def test_loopback_is_allowed_and_the_guard_is_off_outside_runs():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve():
        conn, _ = srv.accept()
        conn.sendall(conn.recv(5).upper())
        conn.close()

    threading.Thread(target=serve, daemon=True).start()

    def agent(task, model, tools):
        for host in ("localhost", "127.0.0.1"):
            try:
                c = socket.create_connection((host, port), timeout=5)
                break
            except ConnectionRefusedError:  # localhost may resolve to ::1 first
                continue
        c.sendall(b"hello")
        answer = c.recv(5)
        c.close()
        return answer.decode()

    r = run(agent, task="t", tools=tools(), policy=policies.scripted([]))
    assert r.answer == "HELLO" and r.harness_stop is None
    srv.close()
    assert not _isolation.active()
    with pytest.raises(OSError):  # outside a run: the real connect (a closed port), not NetworkBlocked
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_network_blocked_is_a_harness_stop_an_agent_cannot_swallow_by_accident():
    assert issubclass(NetworkBlocked, BaseException) and not issubclass(NetworkBlocked, Exception)
    assert _isolation._local_host("::ffff:127.0.0.1") and _isolation._local_host("api.localhost")
    assert not _isolation._local_host("example.com") and not _isolation._local_host("10.0.0.1")


PROFILED = """
import cProfile, faulthandler
faulthandler.dump_traceback_later(60, exit=True)
from toolchaos.fake_tools import catalogue
from toolchaos import Ceiling, policies, run

def spin(task, model, tools):
    while True:
        pass

run(lambda t, m, tl: "x", task="t", tools=[catalogue.get("search")], policy=policies.scripted([]))
run(spin, task="t", tools=[catalogue.get("search")], policy=policies.scripted([]), ceiling=Ceiling(real_seconds=0.2))
profiler = cProfile.Profile()
profiler.enable()
total = sum(i for i in range(1000))
run(lambda t, m, tl: "x", task="t", tools=[catalogue.get("search")], policy=policies.scripted([]))
profiler.disable()
print("profiled", total)
"""


def test_profilers_and_tracers_still_work_after_runs(tmp_path):
    """A run must leave no "asynchronous exception pending" flag behind: cProfile, coverage and
    debuggers would spin forever on it (CPython 3.11 keeps the flag after SetAsyncExc(id, NULL))."""
    import subprocess
    import sys

    script = tmp_path / "profiled.py"
    script.write_text(PROFILED)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "profiled 499500", out.stderr[-2000:]


def test_a_recording_opens_the_network_to_its_own_thread_only() -> None:
    import threading

    from toolchaos._plumbing import isolation

    mark = isolation.begin()
    try:
        assert isolation._guarded()
        seen: list[bool] = []
        with isolation.allow_network():
            assert not isolation._guarded()  # the live model's call, asked for by --chaos-record
            worker = threading.Thread(target=lambda: seen.append(isolation._guarded()))
            worker.start()
            worker.join()
        assert seen == [True]  # another thread of the run stays behind the guard
        assert isolation._guarded()
    finally:
        isolation.end(mark)


def test_a_call_id_whose_str_spins_ends_the_run_at_the_limit_not_the_trace_writer(tmp_path):
    # The agent hands tools.call an object as call_id: it is copied to text during the call, where
    # the watchdog reaches it, never later by the trace's writer, where nothing would.
    class Spins:
        def __str__(self):
            while True:
                pass

    def agent(task, model, tools):
        tools.call("search", {"query": "q"}, call_id=Spins())

    r, took = go(agent, tmp_path)
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    assert (tmp_path / "run.trace.jsonl").exists()

    def numbered(task, model, tools):  # a plain number stays a number in the trace
        tools.call("search", {"query": "q"}, call_id=7)
        return "done"

    r, _ = go(numbered)
    assert [e["call_id"] for e in r.trace.events if e["kind"] == "tool"] == [7]
