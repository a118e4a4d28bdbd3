"""A process agent's environment: none of the caller's beyond an allowlist and the names passed to it.

Each test plants secrets in this process's environment, runs a real child (a Python script on
``sys.executable``) that prints its whole environment, and reads what arrived.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import toolchaos
from toolchaos import Ceiling, policies
from toolchaos._agents import Endpoints, common_env
from toolchaos._engine import session_defaults
from toolchaos._plumbing.environ import ALLOWED, ALLOWED_PREFIXES
from toolchaos.cli import main
from toolchaos.fake_tools import catalogue
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

TASK = "Say hello."
PRINT_ENV = "import json, os; print('ENV ' + json.dumps(dict(os.environ)))"
SECRETS = {"TOOLCHAOS_TEST_SECRET": "s3cret", "GITHUB_TOKEN": "ghp_not_a_real_token", "OPENAI_API_KEY": "sk-real"}


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The caller's secrets, and allowlisted variables with values of our own."""
    allowed = {"LANG": "C.UTF-8", "LC_MESSAGES": "C", "TMPDIR": str(tmp_path)}
    for name, value in {**SECRETS, **allowed}.items():
        monkeypatch.setenv(name, value)
    return allowed


def _env_of(stdout: str) -> dict[str, str]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("ENV "))
    return dict(json.loads(line[4:]))


def _run(agent: ProcessAgent, **settings: object) -> dict[str, str]:
    res = run(agent, task=TASK, tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hi"}]),
              ceiling=Ceiling(real_seconds=30), **settings)
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    return _env_of(res.process.stdout)


def _harness_names() -> set[str]:
    ep = Endpoints("http://x/v1", "http://x", "http://x", "http://x/mcp", Path("home"))
    return {*common_env(ep, TASK), "NODE_PATH"}


def test_the_agent_gets_none_of_the_callers_variables_beyond_the_allowlist(planted: dict[str, str]) -> None:
    env = _run(ProcessAgent((sys.executable, "-c", PRINT_ENV)))
    assert "TOOLCHAOS_TEST_SECRET" not in env and "GITHUB_TOKEN" not in env
    assert "s3cret" not in json.dumps(env) and env["OPENAI_API_KEY"] != "sk-real"  # the harness's fake key
    leaked = {k for k in os.environ if k in env and k not in _harness_names()
              and k not in ALLOWED and not k.startswith(ALLOWED_PREFIXES)}
    assert not leaked, f"the caller's {sorted(leaked)} reached the agent"
    assert {k: env[k] for k in planted} == planted and env["PATH"] == os.environ["PATH"]
    assert env["HOME"] != os.environ.get("HOME") and "toolchaos-agent-" in env["HOME"]


def test_names_passed_by_the_agent_the_run_or_the_session_reach_it(planted: dict[str, str]) -> None:
    agent = ProcessAgent((sys.executable, "-c", PRINT_ENV), pass_env=("TOOLCHAOS_TEST_SECRET",))
    env = _run(agent)
    assert env["TOOLCHAOS_TEST_SECRET"] == "s3cret" and "GITHUB_TOKEN" not in env
    env = _run(ProcessAgent((sys.executable, "-c", PRINT_ENV)), pass_env=["GITHUB_TOKEN"])
    assert env["GITHUB_TOKEN"] == "ghp_not_a_real_token" and "TOOLCHAOS_TEST_SECRET" not in env
    restore = session_defaults(pass_env=["TOOLCHAOS_TEST_SECRET"])
    try:
        env = _run(ProcessAgent((sys.executable, "-c", PRINT_ENV)), pass_env=["GITHUB_TOKEN"])
    finally:
        restore()
    assert env["TOOLCHAOS_TEST_SECRET"] == "s3cret" and env["GITHUB_TOKEN"] == "ghp_not_a_real_token"


def test_a_passed_variable_never_overrides_the_harness_and_the_agents_own_env_does(planted: dict[str, str]) -> None:
    agent = ProcessAgent((sys.executable, "-c", PRINT_ENV), env={"GITHUB_TOKEN": "from-env", "HOME": "/elsewhere"},
                         pass_env=("OPENAI_API_KEY", "GITHUB_TOKEN"))
    env = _run(agent)
    assert env["OPENAI_API_KEY"] == "sk-toolchaos-not-a-real-key"  # the run's server, never the real API
    assert env["GITHUB_TOKEN"] == "from-env" and env["HOME"] == "/elsewhere"  # env: is the user's last word


def _scenario(folder: Path, agent: str | None) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "agent.py").write_text(PRINT_ENV + "\n")
    path = folder / "env.chaos.yaml"
    path.write_text(f"""
id: agent-env
title: a process agent prints its environment
task: {TASK}
{f"agent: {agent}" if agent else ""}
tools: {{search: {{}}}}
policy: {{scripted: [{{final: hi}}]}}
ceiling: {{real_seconds: 30}}
expect: [{{terminal_state: [FAILED]}}]  # it exits without asking its model: no final answer
""")
    return path


def _printed(out: Path) -> dict[str, str]:
    return _env_of(json.loads((out / "agent-env.process.json").read_text())["stdout"])


def test_the_command_line_and_a_scenario_pass_names(planted: dict[str, str], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    command = f"{{command: [{json.dumps(sys.executable)}, agent.py]"
    plain = _scenario(tmp_path, command + "}")
    args = ["run", str(plain), "--allow-imports", "--artifacts", str(tmp_path / "out")]
    assert main(args) == 0
    assert "TOOLCHAOS_TEST_SECRET" not in _printed(tmp_path / "out")
    assert main([*args, "--pass-env", "TOOLCHAOS_TEST_SECRET,LANG", "--pass-env", "GITHUB_TOKEN"]) == 0
    env = _printed(tmp_path / "out")
    assert env["TOOLCHAOS_TEST_SECRET"] == "s3cret" and env["GITHUB_TOKEN"] == "ghp_not_a_real_token"
    assert main(args) == 0 and "GITHUB_TOKEN" not in _printed(tmp_path / "out")  # the session's names put back
    # certify takes it too (a suite of one scenario)
    suite = _scenario(tmp_path / "suite", None).parent
    assert main(["certify", "--suite", str(suite), "--agent", f"cmd:{sys.executable} {suite / 'agent.py'}",
                 "--artifacts", str(tmp_path / "cert"), "--pass-env", "GITHUB_TOKEN"]) == 0
    assert _printed(tmp_path / "cert")["GITHUB_TOKEN"] == "ghp_not_a_real_token"
    # the scenario's own agent names what it gets
    own = _scenario(tmp_path, command + ", pass_env: [TOOLCHAOS_TEST_SECRET]}")
    assert main(["run", str(own), "--allow-imports", "--artifacts", str(tmp_path / "own")]) == 0
    env = _printed(tmp_path / "own")
    assert env["TOOLCHAOS_TEST_SECRET"] == "s3cret" and "GITHUB_TOKEN" not in env
    capsys.readouterr()
    assert main([*args, "--pass-env", "GITHUB_TOKEN=ghp"]) == 2
    assert "--pass-env: 'GITHUB_TOKEN=ghp' is not an environment variable name" in capsys.readouterr().err


def test_replay_passes_names_too(planted: dict[str, str], tmp_path: Path) -> None:
    policy = policies.scripted([{"call": "search", "args": {"query": "x"}}, {"final": "found"}])
    toolchaos.run("builtin:guarded", task=TASK, tools=[catalogue.get("search")], policy=policy,
                  artifacts=tmp_path / "rec", name="rec")
    (tmp_path / "agent.py").write_text(PRINT_ENV + "\n")
    main(["replay", str(tmp_path / "rec" / "rec.trace.jsonl"), "--agent", f"cmd:{sys.executable} {tmp_path / 'agent.py'}",
          "--artifacts", str(tmp_path / "out"), "--pass-env", "GITHUB_TOKEN"])
    saved = next((tmp_path / "out").glob("*.process.json"))
    env = _env_of(json.loads(saved.read_text())["stdout"])
    assert env["GITHUB_TOKEN"] == "ghp_not_a_real_token" and "TOOLCHAOS_TEST_SECRET" not in env
