"""A scenario's ``agent:`` as a process agent: its mapping checked with located errors, its cwd from the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolchaos._agents import ProcessAgent
from toolchaos.errors import ScenarioError
from toolchaos.scenario import load_text

BASE = """id: proc
title: a process agent
task: Fetch invoice inv_1.
tools: {fetch_invoice: {faults: {timeout: {after: 30}}}}
policy: {stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}}
expect: [terminated]
"""


def _load(agent: str, tmp_path: Path, allow: bool = True) -> object:
    return load_text(BASE + agent + "\n", tmp_path / "s.chaos.yaml", allow_imports=allow)[0].agent  # type: ignore[attr-defined]


def test_a_mapping_becomes_a_process_agent_run_from_the_scenario_folder(tmp_path: Path) -> None:
    agent = _load("agent: {command: [node, agent.mjs], env: {A: x}, task: stdin, cwd: sub}", tmp_path)
    assert agent == ProcessAgent(("node", "agent.mjs"), {"A": "x"}, str(tmp_path / "sub"), "stdin")
    assert _load('agent: "cmd:python agent.py"', tmp_path) == ProcessAgent(("python", "agent.py"), cwd=str(tmp_path))
    assert _load("agent: {preset: codex}", tmp_path) == ProcessAgent(preset="codex", cwd=str(tmp_path))
    assert _load("agent: {preset: codex, pass_env: [NPM_TOKEN, HF_TOKEN]}", tmp_path) == ProcessAgent(
        preset="codex", cwd=str(tmp_path), pass_env=("NPM_TOKEN", "HF_TOKEN"))


@pytest.mark.parametrize(("agent", "words", "col"), [
    ("agent: {comand: [x]}", "unknown key 'comand' in agent; did you mean 'command'?", 9),
    ("agent: {preset: codx}", "agent.preset: no preset 'codx'; did you mean 'codex'?", 17),
    ("agent: {command: x, task: bogus}", "agent.task: expected one of arg, stdin; got 'bogus'", 27),
    ("agent: {command: x, env: {A: 1}}", "agent.env.A: expected text", 30),
    ("agent: {cwd: sub}", "needs a command", 8),
    ("agent: {command: x, pass_env: [A=1]}", "agent.pass_env: 'A=1' is not an environment variable name", 31),
    ("agent: {command: x, pass_env: A}", "agent.pass_env: expected a list", 31),
    ("agent: 3", "expected a reference (text) or a process agent", 8),
])
def test_a_bad_process_agent_is_a_located_error(agent: str, words: str, col: int, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as exc:
        _load(agent, tmp_path)
    assert words in str(exc.value)
    assert f"s.chaos.yaml:7:{col}:" in str(exc.value)


def test_a_process_agent_needs_imports_allowed_like_python_code(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"a process agent runs a command; .*chaos_allow_imports"):
        _load("agent: {command: [node, agent.mjs]}", tmp_path, allow=False)
    with pytest.raises(ScenarioError, match="a process agent runs a command"):
        _load('agent: "cmd:node agent.mjs"', tmp_path, allow=False)
