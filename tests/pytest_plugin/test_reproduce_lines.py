"""Every printed reproduce line is a command that runs as printed (and fails the same way)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCENARIO = """\
id: timeout-loop
title: The invoice tool times out
category: loops
severity: critical
task: Retry until you have the total.
agent: builtin:naive
tools:
  fetch_invoice:
    faults: {timeout: {after: 30}}
policy:
  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}
expect:
  - bounded: {executions: 3}
"""

PY_TEST = """
import pytest
from toolchaos import invariants as inv

@pytest.mark.chaos(agent="builtin:naive", seed=4)
def test_loops(chaos):
    chaos.run(task="t", tools=[chaos.tool("fetch_invoice", chaos.faults.timeout(after=30))],
              policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "i"}), expect=[inv.bounded(executions=3)])
"""


def _reproduce(text: str) -> list[str]:
    found = re.findall(r"reproduce: (.+)", text)
    assert found, text[-2000:]
    return shlex.split(found[0])


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env["PYTEST_ADDOPTS"] = "-p no:randomly -p no:cacheprovider"
    exe = {"pytest": [sys.executable, "-m", "pytest"], "toolchaos": [sys.executable, "-m", "toolchaos"]}[cmd[0]]
    return subprocess.run([*exe, *cmd[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_python_tests_reproduce_line_is_a_pytest_command(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_loop=PY_TEST)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(failed=1)
    cmd = _reproduce(res.stdout.str())
    assert cmd == ["pytest", "test_loop.py::test_loops", "--chaos", "--chaos-seed", "4"]
    again = _run(cmd, pytester.path)
    assert again.returncode == 1 and "1 failed" in again.stdout and "bounded.executions broke" in again.stdout


def test_a_scenarios_reproduce_line_runs_the_scenario_again(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=SCENARIO)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(failed=1)
    cmd = _reproduce(res.stdout.str())
    assert cmd[:4] == ["toolchaos", "run", "loop.chaos.yaml", "-k"]
    again = _run(cmd, pytester.path)
    assert again.returncode == 1 and "FAIL  timeout-loop" in again.stdout + again.stderr, again.stdout + again.stderr
