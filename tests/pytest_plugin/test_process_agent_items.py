"""A process agent under pytest: a scenario's ``agent:`` mapping, and ``--chaos-agent=cmd:...``."""

from __future__ import annotations

import json
import sys

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

SCENARIO = """
id: proc-timeout
title: a Python agent in its own process, on a tool that always times out
task: Retry until you have the total of invoice inv_1.
agent: {preset: python, env: {AGENT_MAX_TURNS: "3"}}
tools:
  fetch_invoice: {faults: {timeout: {after: 30}}}
policy: {stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}}
ceiling: {real_seconds: 60}
expect:
  - bounded: {executions: BOUND}
  - terminal_state: [FAILED]
"""

AGENT = """
import sys
print("args", sys.argv[1:])
sys.exit(3)
"""


def test_a_scenario_runs_its_process_agent_and_a_failure_shows_how_the_process_ended(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nchaos_allow_imports = true\n")
    pytester.makefile(".chaos.yaml", ok=SCENARIO.replace("BOUND", "3"),
                      tight=SCENARIO.replace("BOUND", "2").replace("proc-timeout", "proc-tight"))
    res = pytester.runpytest("--chaos", "-p", "toolchaos", "-p", "no:randomly")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*invariant bounded.executions broke*", "*process * exited with code 0*"])


def test_the_command_line_names_a_command_as_the_agent(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent=AGENT)
    pytester.makefile(".chaos.yaml", s=SCENARIO.replace("BOUND", "3").replace(
        'agent: {preset: python, env: {AGENT_MAX_TURNS: "3"}}\n', ""))
    res = pytester.runpytest("--chaos", "-p", "toolchaos", f"--chaos-agent=cmd:{sys.executable} agent.py",
                             "--chaos-artifacts=out")
    res.assert_outcomes(passed=1)  # it ended FAILED, by itself, within the bound: what the scenario asks
    saved = json.loads((pytester.path / "out" / "proc-timeout.process.json").read_text())
    assert saved["exit_code"] == 3 and saved["ended_by"] == "agent"
    assert saved["stdout"] == "args ['Retry until you have the total of invoice inv_1.']\n"
    assert (pytester.path / "out" / "proc-timeout.trace.jsonl").is_file()


ENV_SCENARIO = """
id: proc-env
title: a process agent prints what of the caller's environment it got
task: Say hello.
agent: {command: [PYTHON, agent.py]}
tools: {search: {}}
policy: {scripted: [{final: hi}]}
ceiling: {real_seconds: 30}
expect: [{terminal_state: [FAILED]}]
"""
PRINT_SECRETS = """
import os
print({k: os.environ.get(k) for k in ("TOOLCHAOS_TEST_SECRET", "GITHUB_TOKEN")})
"""


def test_chaos_pass_env_and_its_ini_option_give_a_process_agent_the_variables_named(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCHAOS_TEST_SECRET", "s3cret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not_a_real_token")
    pytester.makepyfile(agent=PRINT_SECRETS)
    pytester.makefile(".chaos.yaml", s=ENV_SCENARIO.replace("PYTHON", json.dumps(sys.executable)))

    def printed(*args: str, ini: str = "") -> str:
        pytester.makeini(f"[pytest]\nchaos_allow_imports = true\n{ini}")
        res = pytester.runpytest("--chaos", "-p", "toolchaos", "--chaos-artifacts=out", *args)
        res.assert_outcomes(passed=1)
        return str(json.loads((pytester.path / "out" / "proc-env.process.json").read_text())["stdout"]).strip()

    assert printed() == "{'TOOLCHAOS_TEST_SECRET': None, 'GITHUB_TOKEN': None}"
    assert printed("--chaos-pass-env=TOOLCHAOS_TEST_SECRET") == "{'TOOLCHAOS_TEST_SECRET': 's3cret', 'GITHUB_TOKEN': None}"
    both = "{'TOOLCHAOS_TEST_SECRET': 's3cret', 'GITHUB_TOKEN': 'ghp_not_a_real_token'}"
    assert printed("--chaos-pass-env=TOOLCHAOS_TEST_SECRET,GITHUB_TOKEN") == both
    assert printed("--chaos-pass-env", "GITHUB_TOKEN", ini="chaos_pass_env = TOOLCHAOS_TEST_SECRET\n") == both
    assert printed() == "{'TOOLCHAOS_TEST_SECRET': None, 'GITHUB_TOKEN': None}"  # the session's names put back
    res = pytester.runpytest("--chaos", "-p", "toolchaos", "--chaos-pass-env=GITHUB_TOKEN=x")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--chaos-pass-env: 'GITHUB_TOKEN=x' is not an environment variable name*"])


ONE_TURN_AGENT = """
import json, os, urllib.request
body = {"model": "m", "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}]}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
                             headers={"content-type": "application/json", "authorization": "Bearer x"})
urllib.request.urlopen(req, timeout=30).read()
print("done")
"""


def test_under_chaos_certify_a_process_agent_runs_the_applicable_set_and_the_rest_is_skipped_as_na(
        pytester: pytest.Pytester) -> None:
    """``--chaos-agent=cmd:...`` against two bundled scenarios a process agent cannot be judged on and one it
    can: the two are skipped, saying why, and reported as N/A; the certificate counts the one that applied."""
    # one model request (it takes part), then it exits: no tool called, nothing harmed
    pytester.makepyfile(agent=ONE_TURN_AGENT)
    res = pytester.runpytest("-p", "toolchaos", "--chaos-certify", f"--chaos-agent=cmd:{sys.executable} agent.py",
                             "-k", "budget-wall-clock or side-concurrent-same-key or loop-empty-result",
                             "--chaos-report=out", "-rs", "-p", "no:randomly")
    res.assert_outcomes(passed=1, skipped=2)
    res.stdout.fnmatch_lines([
        "*toolchaos certification*",
        "N/A (2 scenarios, not run: each needs what the agent's kind lacks):",
        "  budget-wall-clock: needs virtual_time*",
        "  side-concurrent-same-key: needs two_workers*",
        "CERTIFIED for 1 of 1 applicable scenarios (N/A: 2): level reached all, required all",
        "*short test summary info*",
        "SKIPPED * N/A to cmd:* (kind process): needs virtual_time, which a process agent lacks*",
        "SKIPPED * N/A to cmd:* (kind process): needs two_workers, which a process agent lacks*",
    ])
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert {s["id"]: s["verdict"] for s in data["scenarios"]} == {
        "budget-wall-clock": "n/a", "loop-empty-result": "pass", "side-concurrent-same-key": "n/a"}
    assert data["certified"] and data["totals"]["applicable"] == 1
