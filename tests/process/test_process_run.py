"""Process agents run for real: a served run, a contained child, its exit and output kept, and its end.

Each test starts a real child process (a few real seconds at most); the model and the tools
are the run's (``toolchaos.serve``), the child is ``toolchaos._plumbing.children``'s.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pytest
from toolchaos import Ceiling, policies
from toolchaos import run as toolchaos_run
from toolchaos._plumbing import children
from toolchaos.adapters import agent_under_test
from toolchaos.fake_tools import catalogue, faults
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

TASK = "Retry until you have the total of invoice inv_1."


def _tools() -> list[object]:
    return [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]


def _policy() -> object:
    return policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})


def _counts(stdout: str) -> dict[str, object]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("TOOLCHAOS_COUNTS "))
    return dict(json.loads(line.partition(" ")[2]))


def _python(code: str, **kw: object) -> ProcessAgent:
    return ProcessAgent((sys.executable, "-c", code), **kw)  # type: ignore[arg-type]


def test_a_python_agent_in_a_subprocess_is_certified_through_serve_and_mcp() -> None:
    res = run(ProcessAgent(preset="python", env={"AGENT_MAX_TURNS": "4"}), task=TASK, tools=_tools(),
              policy=_policy(), ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0 and res.process.ended_by == "agent"
    counts = _counts(res.process.stdout)
    # what the agent's own code counted is what the harness recorded
    assert counts["tool_calls"] == res.total_executions == 4
    assert counts["model_requests"] == res.model_requests == res.turns == 4
    assert counts["stopped"] == "turn_limit" and res.terminal_state == "FAILED"  # no final answer at its limit
    assert res.ledger is not None and res.executions == {"fetch_invoice": 4}


def test_the_task_reaches_the_agent_as_its_argument_or_on_stdin_and_the_harness_env_points_at_the_server() -> None:
    code = ("import os, sys; print(repr(sys.argv[1:])); print(repr(sys.stdin.read()));"
            "print(os.environ['OPENAI_BASE_URL'], os.environ['TOOLCHAOS_MCP_URL'], os.environ['HOME'],"
            " os.environ['MINE'])")
    for mode in ("arg", "stdin"):
        res = run(_python(code, task=mode, env={"MINE": "mine"}), task=TASK, tools=_tools(), policy=_policy(),
                  ceiling=Ceiling(real_seconds=30))
        assert res.process is not None
        out = res.process.stdout.splitlines()
        assert (out[0], out[1]) == ((repr([TASK]), "''") if mode == "arg" else ("[]", repr(TASK)))
        base, mcp, home, mine = out[2].split()
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1") and mcp.endswith("/mcp")
        assert "toolchaos-agent-" in home and mine == "mine"
        assert not Path(home).exists()  # the temporary home is removed after the run


def test_a_non_zero_exit_is_a_failed_run_with_its_code_and_output_kept(tmp_path: Path) -> None:
    res = run(_python("import sys; print('out'); sys.exit('boom')"), task=TASK, tools=_tools(), policy=_policy(),
              ceiling=Ceiling(real_seconds=30), name="exits", artifacts=tmp_path)
    assert res.terminal_state == "FAILED" and res.process is not None
    assert res.process.exit_code == 1 and res.process.stderr.strip() == "boom" and res.process.stdout == "out\n"
    assert "exited with code 1" in res.process.summary() and res.process.tail() == "boom"
    saved = json.loads((tmp_path / "exits.process.json").read_text())
    assert saved["exit_code"] == 1 and saved["stderr"].strip() == "boom"
    assert (tmp_path / "exits.trace.jsonl").is_file()


def test_a_command_that_cannot_start_is_a_failed_run_saying_why() -> None:
    res = run(ProcessAgent(("/nonexistent/agent-binary",)), task=TASK, tools=_tools(), policy=_policy(),
              ceiling=Ceiling(real_seconds=30))
    assert res.terminal_state == "FAILED" and res.process is not None and res.process.exit_code == 127
    assert "agent-binary" in (res.answer or "")


@pytest.mark.parametrize("behaviour", [
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass",  # ignores SIGTERM and spins
    "os.fork(); os.fork()\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(0.01)",  # forks
    "if os.fork() == 0:\n    os.setsid()\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "    while True: time.sleep(0.01)\nwhile True: time.sleep(0.01)",  # a child leaves the process group
])
def test_a_child_that_ignores_sigterm_forks_or_spins_is_ended_at_the_watchdog(behaviour: str, tmp_path: Path) -> None:
    code = "import os, signal, time\n" + behaviour
    t0 = time.monotonic()
    res = run(_python(code), task=TASK, tools=_tools(), policy=_policy(), ceiling=Ceiling(real_seconds=1.0),
              name="stuck", artifacts=tmp_path)
    took = time.monotonic() - t0
    assert res.terminal_state == "WATCHDOG" and res.process is not None
    assert res.process.ended_by == "harness" and "WATCHDOG" in res.process.why
    assert took < 1.0 + 2.0 + 0.5 + 3.0  # the limit, the exit grace, the kill grace and start-up
    assert (tmp_path / "stuck.trace.jsonl").is_file() and (tmp_path / "stuck.process.json").is_file()
    if children.sealing_available():  # nothing it started outlives it
        assert res.process.sealed
    # the session goes on: the next run works
    again = run(_python("print('fine')"), task=TASK, tools=_tools(), policy=_policy(),
                ceiling=Ceiling(real_seconds=30))
    assert again.process is not None and again.process.stdout == "fine\n"


@pytest.mark.skipif(not children.sealing_available(), reason="no user/network namespaces on this platform")
def test_a_sealed_agent_reaches_nothing_else_on_the_machine() -> None:
    outside = socket.socket()
    outside.bind(("127.0.0.1", 0))
    outside.listen(1)
    port = outside.getsockname()[1]
    code = ("import socket\n"
            "try:\n    socket.create_connection(('127.0.0.1', PORT), timeout=2); print('reached')\n"
            "except OSError:\n    print('refused')\n").replace("PORT", str(port))
    try:
        res = run(_python(code), task=TASK, tools=_tools(), policy=_policy(), ceiling=Ceiling(real_seconds=30))
    finally:
        outside.close()
    assert res.process is not None and res.process.sealed
    assert res.process.stdout == "refused\n", res.process.stderr  # the machine's other ports are not there


def test_toolchaos_run_takes_a_command_reference_and_a_process_agent() -> None:
    aut = agent_under_test(f"cmd:{sys.executable} -c 'print(1)'")
    assert aut.kind == "process" and aut.label.startswith("cmd:")
    res = toolchaos_run(aut, task=TASK, tools=_tools(), policy=_policy(), ceiling=Ceiling(real_seconds=30))
    assert res.terminal_state == "FAILED"  # it exited without the model answering
    with pytest.raises(Exception, match="names the kind process, not sdk"):
        agent_under_test("preset:python", kind="sdk")
    with pytest.raises(Exception, match="an effect ledger to continue"):
        toolchaos_run(aut, task=TASK, tools=_tools(), policy=_policy(), ledger=object())  # type: ignore[arg-type]


def test_toolchaos_run_runs_a_scenarios_own_process_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolchaos.cli import main

    (tmp_path / "agent.py").write_text("print('hello from the agent')\n")
    (tmp_path / "s.chaos.yaml").write_text(f"""
id: own-process
title: the scenario's own process agent
task: {TASK}
agent: {{command: [{json.dumps(sys.executable)}, agent.py]}}
tools: {{fetch_invoice: {{faults: {{timeout: {{after: 30}}}}}}}}
policy: {{stubborn: {{tool: fetch_invoice, args: {{invoice_id: inv_1}}}}}}
ceiling: {{real_seconds: 30}}
expect: [{{terminal_state: [COMPLETED]}}]
""")
    assert main(["run", str(tmp_path / "s.chaos.yaml"), "--allow-imports", "--artifacts", str(tmp_path / "out"),
                 "-v"]) == 1
    out = capsys.readouterr().out
    assert "terminal_state" in out and "exited with code 0" in out and "hello from the agent" in out
    assert json.loads((tmp_path / "out" / "own-process.process.json").read_text())["exit_code"] == 0
