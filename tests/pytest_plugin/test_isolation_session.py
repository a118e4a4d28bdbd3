"""Under `pytest --chaos`: misbehaving agents fail their own test, the session goes on, every trace is saved."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

AGENTS = '''
import os, signal, socket, threading
import pytest
from toolchaos import Ceiling

CEILING = Ceiling(real_seconds=0.5)
TOOLS = lambda chaos: [chaos.tool("search")]


def spin(task, model, tools):
    model.complete([{"role": "user", "content": task}])
    while True:
        pass


def blocked(task, model, tools):
    tools.call("search", {"query": "q"})
    a, _b = socket.socketpair()
    a.recv(1)


def leaves_threads(task, model, tools):
    def worker():
        while True:
            try:
                tools.call("search", {"query": "q"})
            except Exception:
                pass
    for _ in range(2):
        threading.Thread(target=worker, daemon=True).start()
    return "bye"


def exits(task, model, tools):
    tools.call("search", {"query": "q"})
    raise SystemExit(3)


def hammers(task, model, tools):
    for _ in range(10_000_000):
        try:
            tools.call("search", {"query": "q"})
        except Exception:
            pass


def network(task, model, tools):
    socket.create_connection(("example.com", 443))


@pytest.mark.chaos(ceiling=CEILING)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("agent", [spin, blocked, leaves_threads, exits, hammers, network])
def test_misbehaves(chaos, agent):
    r = chaos.run(agent=agent, task="t", tools=TOOLS(chaos),
                  policy=chaos.policies.stubborn("search", {"query": "q"}, until="never"))
    assert r.harness_stop is None, r.error


def test_after_them_all_a_healthy_run(chaos):
    r = chaos.run(task="t", tools=TOOLS(chaos),
                  policy=chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}]))
    assert r.terminal_state == "COMPLETED"
'''


def test_each_misbehaving_agent_fails_alone_and_leaves_its_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad=AGENTS)
    result = pytester.runpytest_subprocess("--chaos", "--chaos-artifacts=out", "-p", "no:cacheprovider",
                                           timeout=120)
    result.assert_outcomes(failed=6, passed=1)
    stops = {}
    for p in (pytester.path / "out").iterdir():
        end = json.loads(p.read_text().splitlines()[-1])
        stops[p.name.split(".trace")[0].rsplit("-", 1)[0].split("_")[-1]] = end["harness_stop"]  # less the id's hash
    expected = {"spin": {"watchdog"}, "blocked": {"watchdog"}, "threads": {"threads", "ceiling"},
                "exits": {"crash"}, "hammers": {"ceiling"}, "network": {"network"}, "run": {None}}
    assert set(stops) == set(expected) and all(stops[k] in expected[k] for k in stops), stops


CTRL_C = '''
import os, signal

def test_interrupted(chaos):
    def agent(task, model, tools):
        tools.call("search", {"query": "q"})
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, delivered while the agent runs
        while True:
            pass
    chaos.run(agent=agent, task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))

def test_never_reached(chaos):
    pass
'''


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_the_session_after_writing_the_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_int=CTRL_C)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--chaos", "--chaos-artifacts=out", "-p", "no:cacheprovider",
                           "-q"], cwd=pytester.path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, proc.stdout + proc.stderr
    assert "test_never_reached" not in proc.stdout.split("short test summary")[-1] or "1 passed" not in proc.stdout
    (trace,) = (pytester.path / "out").iterdir()
    kinds = [json.loads(x)["kind"] for x in trace.read_text().splitlines()]
    assert kinds == ["tool", "end"]
    assert json.loads(trace.read_text().splitlines()[-1])["harness_stop"] == "interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # this session's handler is untouched
