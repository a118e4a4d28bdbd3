"""Process agents as data: how a reference, a mapping or Python names one, and the errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolchaos._agents import (
    PRESETS,
    Endpoints,
    ProcessAgent,
    common_env,
    is_process_ref,
    process_agent,
    process_ref,
    resolve_agent,
    split,
)
from toolchaos.errors import AgentRefError


def test_a_command_reference_is_split_like_a_shell_line() -> None:
    agent = process_ref("cmd:node 'my agent.mjs' --fast")
    assert agent.command == ("node", "my agent.mjs", "--fast") and agent.task == "arg" and agent.preset is None
    assert agent.label == "cmd:node 'my agent.mjs' --fast"
    assert process_ref("preset:codex") == ProcessAgent(preset="codex")
    assert is_process_ref("cmd:x") and is_process_ref("preset:codex") and not is_process_ref("builtin:guarded")


@pytest.mark.parametrize(("ref", "words"), [
    ("cmd:", "needs a command line"), ("cmd:node 'open", "No closing quotation"),
    ("preset:codx", "did you mean 'codex'"),
])
def test_a_bad_reference_says_what_is_wrong(ref: str, words: str) -> None:
    with pytest.raises(AgentRefError, match=words):
        process_ref(ref)


@pytest.mark.parametrize(("data", "field", "words"), [
    ({}, "agent.command", "needs a command"),
    ({"command": ["node"], "task": "file"}, "agent.task", "expected one of arg, stdin"),
    ({"command": ["node"], "env": {"A": 1}}, "agent.env", "must be text"),
    ({"command": ["node"], "shell": True}, "agent.shell", "unknown key 'shell'"),
    ({"command": 3}, "agent.command", "a list of strings"),
    ({"preset": "claude"}, "agent.preset", "did you mean 'claude-code'"),
])
def test_bad_data_is_an_error_naming_the_field(data: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(AgentRefError, match=words) as exc:
        process_agent(data)
    assert exc.value.field == field


def test_a_mapping_takes_a_command_as_a_list_or_one_line_and_a_folder_for_cwd(tmp_path: Path) -> None:
    agent = process_agent({"command": "python agent.py -v", "env": {"A": "1"}, "task": "stdin", "cwd": "sub"})
    assert agent.command == ("python", "agent.py", "-v") and agent.env == {"A": "1"} and agent.task == "stdin"
    assert agent.in_folder(tmp_path).cwd == str(tmp_path / "sub")
    assert process_agent({"preset": "node-openai"}).in_folder(tmp_path).cwd == str(tmp_path)


def test_a_process_agent_is_not_an_in_process_one_and_the_kind_prefix_points_to_its_form() -> None:
    with pytest.raises(AgentRefError, match="is a process agent"):
        resolve_agent("cmd:node agent.mjs")
    with pytest.raises(AgentRefError, match="is a process agent"):
        resolve_agent(ProcessAgent(("node",)))
    with pytest.raises(AgentRefError, match="'cmd:COMMAND LINE' or 'preset:NAME'"):
        split("process:pkg.mod:attr")


def test_every_agent_gets_every_sdk_pointed_at_the_server_and_a_home_of_its_own(tmp_path: Path) -> None:
    ep = Endpoints("http://127.0.0.1:9/v1", "http://127.0.0.1:9", "http://127.0.0.1:9", "http://127.0.0.1:9/mcp",
                   tmp_path)
    env = common_env(ep, "the task")
    assert env["OPENAI_BASE_URL"] == ep.openai and env["ANTHROPIC_BASE_URL"] == ep.anthropic
    assert env["GOOGLE_GEMINI_BASE_URL"] == ep.gemini and env["TOOLCHAOS_MCP_URL"] == ep.mcp
    assert env["HOME"] == str(tmp_path) and env["TOOLCHAOS_TASK"] == "the task"


def test_each_preset_writes_its_config_under_the_temporary_home(tmp_path: Path) -> None:
    ep = Endpoints("http://127.0.0.1:9/v1", "http://127.0.0.1:9", "http://127.0.0.1:9", "http://127.0.0.1:9/mcp",
                   tmp_path)
    for preset in PRESETS.values():
        launch = preset.build(ep)
        assert preset.checked and preset.package and preset.program
        for path in launch.files:
            assert tmp_path in path.parents, (preset.name, path)
    codex = PRESETS["codex"].build(ep)
    assert 'base_url = "http://127.0.0.1:9/v1"' in next(iter(codex.files.values()))
    assert 'wire_api = "responses"' in next(iter(codex.files.values()))
    claude = PRESETS["claude-code"].build(ep)
    assert claude.task_flag == ("-p",) and "mcp__chaos" in claude.args
    assert all(Path(a).is_file() for a in PRESETS["node-openai"].build(ep).args)
