"""The in-process mode, mended: whatever an agent does to the harness, ``run`` returns, in time, with its trace.

Each hostile kind has a test where the guard fires, and each file ends with a healthy run that
shows normal runs are unaffected (and the watchdog is not left armed).
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import signal
import sys
import threading

import pytest
from toolchaos import AgentResult, Budgets, Ceiling, invariants, policies, run
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import isolation as _isolation
from toolchaos._plumbing import watchdog as _watchdog
from toolchaos.errors import WatchdogExpired
from toolchaos.fake_tools import catalogue

LIMIT = 0.4  # the real-time limit of these runs, seconds
SLACK = 8.0  # the machine is shared: generous bounds, still far below "hangs"


def tools():
    return [catalogue.get("search")]


def stubborn():
    return policies.stubborn("search", {"query": "q"}, until="never")


def go(agent, tmp_path=None, name="run", policy=None, **ceiling):
    t0 = _clock.real_monotonic()
    r = run(agent, task="t", tools=tools(), policy=policy or stubborn(),
            ceiling=Ceiling(**{"real_seconds": LIMIT, **ceiling}), artifacts=tmp_path, name=name)
    return r, _clock.real_monotonic() - t0


def healthy():
    r = run("builtin:guarded", task="t", tools=tools(),
            policy=policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}]))
    assert r.terminal_state == "COMPLETED" and r.harness_stop is None and not r.warnings
    assert not _isolation.active() and _watchdog.remaining() is None and not _watchdog._watches
    assert gc.isenabled()


def spin():
    while True:
        pass


class SpinningStr:
    def __str__(self):
        spin()
        return ""

    __repr__ = __str__


class SpinningDict(dict):
    def get(self, key, default=None):
        spin()


# --- agent objects read after the agent returned ------------------------------------------


@pytest.mark.parametrize("returned", ["str", "dict", "answer"])
def test_a_returned_object_that_spins_when_read_ends_the_run_in_time(returned, tmp_path):
    def agent(task, model, tools):
        tools.call("search", {"query": "q"})
        if returned == "str":
            return SpinningStr()
        if returned == "dict":
            return SpinningDict(state="COMPLETED")
        return AgentResult("COMPLETED", SpinningStr())

    r, took = go(agent, tmp_path, "spins")
    assert r.harness_stop == "result" and "could not be read in time" in (r.error or "") and took < LIMIT + SLACK
    assert json.loads((tmp_path / "spins.trace.jsonl").read_text().splitlines()[-1])["kind"] == "end"
    healthy()


def test_a_refusal_given_an_object_that_spins_ends_by_the_watchdog():
    def agent(task, model, tools):
        tools.refuse("search", {"query": "q"}, guard=SpinningStr(), reason="r")

    r, took = go(agent)
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    healthy()


def test_str_subclasses_are_copied_without_calling_their_methods():
    class Loud(str):
        def __str__(self):
            raise AssertionError("called")

    def agent(task, model, tools):
        tools.refuse(Loud("search"), {"query": "q"}, guard=Loud("g"), reason=Loud("why"))
        return AgentResult(Loud("STOPPED_LOOP_GUARD"), Loud("a"), {"guard": Loud("g"), "n": [1, 2.5, None]})

    r, _ = go(agent)
    assert r.terminal_state == "STOPPED_LOOP_GUARD" and type(r.terminal_state) is str
    assert r.stop_report == {"guard": "g", "n": [1, 2.5, None]} and type(r.stop_report["guard"]) is str
    refusal = r.trace.of_kind("refusal")[0]
    assert type(refusal["guard"]) is str and type(refusal["reason"]) is str and type(refusal["tool"]) is str


def test_a_report_that_is_not_a_mapping_is_a_failed_run_with_a_clear_message():
    r, _ = go(lambda task, model, tools: AgentResult("COMPLETED", "a", ["x"]))  # type: ignore[arg-type]
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "result")
    assert "stop report is a list, not a mapping" in (r.error or "")
    r, _ = go(lambda task, model, tools: {"state": "COMPLETED", "report": "nope"})
    assert r.harness_stop == "result"
    healthy()


def test_a_lone_surrogate_is_escaped_in_the_trace_never_lost(tmp_path):
    reason = "bad \udcff text"

    def agent(task, model, tools):
        tools.refuse("search", {"query": "q"}, guard="g", reason=reason)
        return AgentResult("STOPPED_LOOP_GUARD", "x\ud800", {"guard": "g", "reason": reason})

    r, _ = go(agent, tmp_path, "surrogate")
    lines = (tmp_path / "surrogate.trace.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(x) for x in lines]
    assert events[0]["reason"] == reason and events[-1]["kind"] == "end" and events[-1]["reason"] == reason
    assert r.answer == "x\ud800"


# --- the watchdog's exception never escapes run, and never stays armed ---------------------


def test_a_firing_inside_the_engines_cleanup_is_absorbed(monkeypatch):
    real = _watchdog.disarm
    calls = []

    def late_firing(token):
        calls.append(token)
        if len(calls) == 1:
            raise WatchdogExpired()  # as a firing delivered at the first bytecode of disarm()
        return real(token)

    monkeypatch.setattr(_watchdog, "disarm", late_firing)
    r, _ = go(lambda task, model, tools: "ok", policy=policies.scripted([]))
    assert r.harness_stop is None and len(calls) == 2
    monkeypatch.undo()
    healthy()


def test_a_deep_recursion_that_spins_ends_and_run_returns(tmp_path):
    def agent(task, model, tools):
        tools.call("search", {"query": "q"})
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(400_000)
        try:
            def down(n):
                if n:
                    return down(n - 1)
                spin()
            down(200_000)
        finally:
            sys.setrecursionlimit(old)

    r, took = go(agent, tmp_path, "deep")
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    assert (tmp_path / "deep.trace.jsonl").exists()
    healthy()


def test_an_agent_swallowing_every_firing_while_holding_a_large_structure_still_ends():
    def agent(task, model, tools):
        held = [[] for _ in range(300_000)]  # freeing it takes longer than the re-firing interval
        while True:
            try:
                spin()
            except BaseException:
                if len(held) < 0:
                    break
                return AgentResult("FAILED", str(len(held)))

    r, took = go(agent)
    assert r.terminal_state in ("FAILED", "WATCHDOG") and took < LIMIT + SLACK
    healthy()


def test_a_nested_run_does_not_disarm_the_outer_one():
    def agent(task, model, tools):
        inner = run("builtin:guarded", task="inner", tools=[catalogue.get("search")],
                    policy=policies.scripted([{"final": "done"}]))
        assert inner.terminal_state == "COMPLETED"
        assert _watchdog._watches  # the outer run is still watched
        spin()

    r, took = go(agent)
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    healthy()


# --- refusals and calls after the end -------------------------------------------------------


def test_refusals_have_a_ceiling():
    def agent(task, model, tools):
        for _ in range(10_000_000):
            tools.refuse("search", {"query": "q"}, guard="g", reason="r")

    r, took = go(agent, real_seconds=30)
    assert (r.terminal_state, r.harness_stop) == ("HARD_CEILING", "ceiling") and "refusals" in (r.error or "")
    assert len(r.trace.of_kind("refusal")) == Ceiling().max_refusals and took < SLACK


def test_a_leftover_thread_refusing_after_the_end_writes_nothing():
    kept = {}

    def agent(task, model, tools):
        kept["tools"] = tools
        return "bye"

    r, _ = go(agent, policy=policies.scripted([]))
    n = len(r.trace)
    stopped = []

    def leftover():
        try:
            while True:
                try:
                    kept["tools"].refuse("search", {}, guard="g", reason="late")
                except Exception:
                    pass
        except BaseException as exc:
            stopped.append(type(exc).__name__)

    t = threading.Thread(target=leftover, daemon=True)
    t.start()
    t.join(SLACK)
    assert stopped == ["LeftoverStopped"] and len(r.trace) == n


# --- SIGUSR2 tampering, leftover non-daemon threads -----------------------------------------

needs_signal = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask") or _watchdog._SIGNAL is None,
                                  reason="needs POSIX signals")


@needs_signal
@pytest.mark.parametrize("how", ["ignore", "replace", "mask"])
def test_sigusr2_tampering_is_detected_reported_and_undone(how):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the watchdog's signal serves the main thread")

    def agent(task, model, tools):
        if how == "ignore":
            signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        elif how == "replace":
            signal.signal(signal.SIGUSR2, lambda *a: None)
        else:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
        return "ok"

    r, _ = go(agent, policy=policies.scripted([]))
    if _watchdog._signal_state != 1:
        pytest.skip("SIGUSR2 belongs to someone else in this process")
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "tampered") and "SIGUSR2" in (r.error or "")
    assert signal.getsignal(signal.SIGUSR2) is _watchdog._on_signal
    assert signal.SIGUSR2 not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    healthy()


@contextlib.contextmanager
def _left_thread(name):
    """A run whose agent returns leaving a non-daemon thread blocked: (result, thread); released after."""
    release = threading.Event()
    started = []

    def agent(task, model, tools):
        t = threading.Thread(target=release.wait, name=name, daemon=False)
        t.start()
        started.append(t)
        return "ok"

    try:
        r, _ = go(agent, policy=policies.scripted([]))
        yield r, started[0]
    finally:
        release.set()
        if started:
            started[0].join(SLACK)
    healthy()


def test_a_leftover_non_daemon_thread_is_reported_and_does_not_hold_the_exit():
    with _left_thread("stays") as (r, t):
        assert r.harness_stop is None and any("non-daemon threads running: stays" in w for w in r.warnings)
        assert t.is_alive() and t.daemon  # the exit no longer waits for it: the subprocess test below


# --- stuck, not slow --------------------------------------------------------------------------


def slow_policy(delay, inner):
    class Slow:
        name = "slow"

        def decide(self, view):
            _clock.real_sleep(delay)  # real time: a loaded machine
            return inner.decide(view)

    return Slow()


def test_a_run_that_keeps_making_progress_ends_at_its_ceiling_not_by_the_watchdog():
    # 12 turns of 0.1 s each: longer in all than the 0.4 s no-progress limit, never that long without progress
    # (and shorter than the total limit this test sets: the default, 3 times 0.4 s, would end it)
    r, took = go("builtin:naive", policy=slow_policy(0.1, stubborn()), max_model_turns=12, total_seconds=60.0)
    assert r.terminal_state == "HARD_CEILING" and r.turns == 12, r.error
    assert took > LIMIT


def test_an_agent_that_stops_making_progress_ends_by_the_watchdog_saying_so():
    def agent(task, model, tools):
        for _ in range(6):
            _clock.real_sleep(0.1)
            tools.call("search", {"query": "q"})
        spin()

    r, took = go(agent, total_seconds=60.0)  # a total far off: on a loaded machine a spin counts only its CPU share
    assert r.terminal_state == "WATCHDOG" and took < 0.6 + LIMIT + SLACK
    assert r.error.startswith("the agent made no progress (no model request, tool call or event) for 0.4s while it "
                              "could run, its no-progress limit")
    assert r.watchdog == {"limit": "no_progress", "seconds": 0.4} and r.total_executions == 6


def test_a_run_that_trickles_progress_forever_ends_at_its_total_limit():
    def agent(task, model, tools):
        while True:
            _clock.real_sleep(0.05)
            tools.refuse("search", {"query": "q"}, guard="g", reason="r")

    r, took = go(agent, real_seconds=0.15)
    assert r.terminal_state == "WATCHDOG" and r.error == (
        "the run went on for 0.45s of real time in all without reaching a ceiling, its total limit, 3 times the "
        "no-progress limit of 0.15s")
    assert r.watchdog == {"limit": "total", "seconds": 0.45}
    assert 0.45 <= took < 0.45 + SLACK
    r, took = go(agent, real_seconds=0.15, total_seconds=0.6)
    assert r.error == "the run went on for 0.6s of real time in all without reaching a ceiling, its total limit"
    assert 0.6 <= took < 0.6 + SLACK
    healthy()


def _hostile_meta(how, hooks=("__instancecheck__", "__subclasscheck__", "__eq__", "__hash__", "__repr__",
                              "__getattribute__")):
    """A metaclass whose hooks all do ``how`` (spin or raise): its classes' instances reach the engine.

    ``isinstance(x, Mapping)`` hashes ``type(x)`` (the ABC cache), a traceback reads the exception
    class's ``__qualname__``, a message its ``__name__``: each runs one of these.
    """
    return type("Hostile", (type,), {name: (lambda *a, **k: how()) for name in hooks})


def _boom():
    raise RuntimeError("from the metaclass")


@pytest.mark.parametrize("how", [spin, _boom], ids=["spins", "raises"])
@pytest.mark.parametrize("returns", ["answer", "report", "raised", "state"])
def test_an_object_whose_metaclass_spins_or_raises_ends_the_run_and_nothing_escapes(how, returns):
    """A returned object (as the answer, in the report, as the state) or a raised exception whose type's
    metaclass spins or raises in __instancecheck__, __eq__, __repr__ or __getattribute__: the run ends, failed
    or by the watchdog, within the limit; nothing raises out of run and the next run is healthy."""
    meta = _hostile_meta(how)
    odd = meta("Odd", (), {})
    odd_report = meta("OddReport", (dict,), {})
    odd_error = meta("OddError", (Exception,), {})

    def agent(task, model, tools):
        if returns == "raised":
            raise odd_error("x")
        if returns == "report":
            return AgentResult("COMPLETED", report=odd_report(guard="g"))
        if returns == "state":
            return AgentResult(odd(), answer="a")
        return odd()

    r, took = go(agent, policy=policies.scripted([{"final": "ok"}]))
    assert took < LIMIT + SLACK
    assert r.terminal_state in ("CRASHED", "WATCHDOG", "FAILED"), r.summary()
    assert isinstance(r.error or "", str) and isinstance(r.terminal_state, str)
    if how is _boom and returns in ("report", "state"):
        assert r.harness_stop == "result", r.error
    healthy()


@pytest.mark.parametrize("how", [spin, _boom], ids=["spins", "raises"])
def test_an_exception_whose_class_attributes_spin_or_raise_is_reported_by_its_type_name(how):
    """Only ``__getattribute__`` hostile: the traceback (``__qualname__``) and the fallback (``__name__``)
    both read the class; the type's own name slot does not run the metaclass."""
    odd_error = _hostile_meta(how, hooks=("__getattribute__",))("OddError", (Exception,), {})

    def agent(task, model, tools):
        raise odd_error("x")

    r, took = go(agent, policy=policies.scripted([{"final": "ok"}]))
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "crash") and took < LIMIT + SLACK
    assert r.error.startswith("OddError (its "), r.error
    healthy()


def test_the_type_of_a_hostile_object_is_named_without_its_metaclass():
    from toolchaos._engine.plain import type_name

    assert type_name(_hostile_meta(_boom)("Odd", (), {})()) == "Odd" and type_name(3) == "int"


def test_a_state_that_is_not_a_string_fails_the_run_clearly():
    r, _ = go(lambda task, model, tools: AgentResult(object(), answer="a"), policy=policies.scripted([{"final": "ok"}]))
    assert (r.terminal_state, r.harness_stop) == ("CRASHED", "result")
    assert r.error == "the agent's terminal state is an object, not a string (COMPLETED, FAILED, NEEDS_HUMAN, ...)"


def test_a_parked_watchdog_has_no_thread_and_the_next_run_starts_one():
    """park() (before an isolated run forks: one thread forks once) stops the thread only when no run is armed."""
    healthy()  # a run in process started the thread
    assert _watchdog._thread is not None
    assert _watchdog.park() and _watchdog._thread is None
    assert not any(t.name == "toolchaos-watchdog" for t in threading.enumerate())
    r, _ = go(lambda task, model, tools: spin())  # the next run restarts it, and it fires
    assert r.terminal_state == "WATCHDOG", r.error
    seen = []

    def parks_while_armed(task, model, tools):
        seen.append(_watchdog.park())  # a run is armed (this one): the thread stays
        spin()

    r, _ = go(parks_while_armed)
    assert seen == [False] and r.terminal_state == "WATCHDOG", r.error
    healthy()


def test_the_watchdog_never_fires_inside_a_gc_callback():
    seen = []
    unraisable = []

    def callback(phase, info):  # as hypothesis's: Python code run by every collection (here, most of the time)
        try:
            for _ in range(5_000):
                pass
        except BaseException as exc:
            seen.append(type(exc).__name__)
            raise

    def agent(task, model, tools):
        while True:
            cycle = []
            cycle.append(cycle)  # garbage only a collection frees: collections all the time

    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(u.exc_type.__name__)
    gc.callbacks.append(callback)
    try:
        for _ in range(3):
            r, _ = go(agent, real_seconds=0.1)
            assert r.terminal_state == "WATCHDOG"
    finally:
        gc.callbacks.remove(callback)
        sys.unraisablehook = old_hook
    assert seen == [] and unraisable == []
    healthy()


def test_the_watchdogs_gc_callbacks_are_there_only_while_a_run_is_armed():
    """Between runs none of ours: a Python gc callback is where a signal's exception lands and is lost (an xdist
    worker slow to shut down sends itself SIGINT: "Exception ignored in: _on_gc_stop ... KeyboardInterrupt")."""
    inside = []

    def agent(task, model, tools):
        inside.append((_watchdog._on_gc_start in gc.callbacks, _watchdog._on_gc_stop in gc.callbacks))
        return "done"

    go(agent, policy=policies.scripted([{"final": "ok"}]))
    assert inside == [(True, True)]
    assert _watchdog._on_gc_start not in gc.callbacks and _watchdog._on_gc_stop not in gc.callbacks
    healthy()
    assert _watchdog._on_gc_stop not in gc.callbacks


# --- NaN and infinity are no bound --------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda v: Ceiling(real_seconds=v), lambda v: Ceiling(thread_grace=v), lambda v: Budgets(max_seconds=v),
    lambda v: invariants.bounded(virtual_seconds=v), lambda v: invariants.bounded(per_tool={"search": v}),
])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_as_bounds(make, value):
    with pytest.raises(ValueError, match="must be a finite number"):
        make(value)
    make(1.5)  # a finite one is fine


def test_the_watchdog_lands_only_at_safe_points():
    from toolchaos._engine import runner

    me = threading.get_ident()
    seen = {}

    def engine_cleanup():  # stands for the engine's handling of a run's end
        seen["holding"] = _watchdog._may_land(me)

    def agent_code():
        seen["agent"] = _watchdog._may_land(me)

    def reading_agent_objects():
        engine_cleanup()  # an engine helper called while the agent's objects are read: still holding
        agent_code()

    _watchdog.safe_points(interruptible=[reading_agent_objects], holding=[engine_cleanup])
    reading_agent_objects()
    assert seen == {"holding": False, "agent": True}
    assert runner._call.__code__ in _watchdog._holding and runner._read_result.__code__ in _watchdog._interruptible


def test_the_process_exits_with_a_non_daemon_thread_left_blocked(tmp_path):
    import subprocess

    script = tmp_path / "leaves_a_thread.py"
    script.write_text(
        "import threading\n"
        "from toolchaos import policies, run\n"
        "from toolchaos.fake_tools import catalogue\n"
        "def agent(task, model, tools):\n"
        "    threading.Thread(target=threading.Event().wait, name='forever', daemon=False).start()\n"
        "    return 'ok'\n"
        "r = run(agent, task='t', tools=[catalogue.get('search')], policy=policies.scripted([]))\n"
        "print(r.warnings[0])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "non-daemon threads running: forever" in done.stdout
    assert "the process will not wait for them at exit" in done.stdout


def test_a_python_with_no_known_exit_mechanism_says_so_in_the_warnings(monkeypatch):
    # Neither the <= 3.12 shutdown locks nor the >= 3.13 thread shutdown: the run says the
    # exit may wait, it does not claim otherwise.
    from toolchaos._plumbing import exits

    monkeypatch.setattr(exits, "_drop_shutdown_lock", lambda t: False)
    monkeypatch.setattr(exits, "_skip_in_thread_shutdown", lambda: False)
    with _left_thread("held") as (r, _):
        (warning,) = [w for w in r.warnings if "held" in w]
        assert "no known way to keep the process from waiting" in warning and "daemon=True" in warning


def test_the_exit_still_waits_for_the_threads_the_agent_did_not_leave(tmp_path):
    # The mechanism lets the process exit without the agent's leftover thread only: a thread the
    # program itself started non-daemon is still waited for (its output is there).
    import subprocess

    script = tmp_path / "waits_for_its_own.py"
    script.write_text(
        "import threading, time\n"
        "from toolchaos import policies, run\n"
        "from toolchaos.fake_tools import catalogue\n"
        "def agent(task, model, tools):\n"
        "    threading.Thread(target=threading.Event().wait, name='forever', daemon=False).start()\n"
        "    return 'ok'\n"
        "run(agent, task='t', tools=[catalogue.get('search')], policy=policies.scripted([]))\n"
        "def own():\n"
        "    time.sleep(0.3)\n"
        "    print('own thread done', flush=True)\n"
        "threading.Thread(target=own, daemon=False).start()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "own thread done" in done.stdout


def test_an_async_agent_swallowing_everything_does_not_spin_when_collected_later():
    import asyncio

    async def agent(task, model, tools):
        while True:
            try:
                await asyncio.sleep(1)
            except BaseException:  # its cancellation, the watchdog, and GeneratorExit when closed
                continue

    r, took = go(agent)
    assert r.terminal_state == "WATCHDOG" and took < LIMIT + SLACK
    del r
    t0 = _clock.real_monotonic()
    gc.collect()  # the suspended coroutine is kept, never closed: nothing spins here
    assert _clock.real_monotonic() - t0 < SLACK
    healthy()


def test_plain_copies_exact_builtins_and_subclasses_alike():
    """Exact builtins take a short path; the copy is the one the general path makes of their subclasses."""
    from toolchaos._engine.plain import MAX_TEXT, plain

    class S(str):
        def __str__(self):
            raise AssertionError("agent code ran")

    class D(dict):
        def items(self):
            raise AssertionError("agent code ran")

    class N(int):
        pass

    value = {"a": [1, 2.5, True, None, "x", (3, "y")], "n": {"deep": float("nan")}}
    odd = D(a=[N(1), 2.5, True, None, S("x"), (N(3), S("y"))], n=D(deep=float("nan")))
    want = {"a": [1, 2.5, True, None, "x", [3, "y"]], "n": {"deep": "nan"}}
    assert plain(value) == plain(odd) == want
    assert all(type(x) in (int, float, bool, type(None), str, list) for x in plain(odd)["a"])
    long = "z" * (MAX_TEXT + 3)
    assert plain(long) == plain(S(long)) == "z" * MAX_TEXT + "... (3 more characters)"
    assert plain({long: 1}) == {"z" * MAX_TEXT + "... (3 more characters)": 1}


def test_plain_bounds_the_items_and_the_depth_it_copies():
    """A huge or deep result is cut with a marker where the bound is reached, not copied whole."""
    from toolchaos._engine.plain import MAX_DEPTH, MAX_ITEMS, plain

    many = plain(list(range(MAX_ITEMS + 5)))
    assert len(many) == MAX_ITEMS + 1 and many[:3] == [0, 1, 2] and many[-1] == "..."
    wide = plain({f"k{i}": i for i in range(MAX_ITEMS + 5)})
    assert len(wide) == MAX_ITEMS + 1 and wide["..."] == "(truncated)" and f"k{MAX_ITEMS}" not in wide
    # one budget for the whole value: a second big list gets what the first one left
    both = plain([list(range(MAX_ITEMS - 10)), list(range(100))])
    assert len(both[0]) == MAX_ITEMS - 10 and len(both[1]) == 9 and both[1][-1] == "..."
    deep: list = []
    cur = deep
    for _ in range(MAX_DEPTH + 5):
        cur.append([])
        cur = cur[0]
    copied, depth = plain(deep), 0
    while isinstance(copied, list):
        copied, depth = copied[0], depth + 1
    assert (copied, depth) == ("...", MAX_DEPTH)
    assert plain(small := {"a": [1, {"b": "c"}]}) == small  # below every bound: a copy of it all
