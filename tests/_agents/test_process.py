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
    ({"command": ["node"], "pass_env": ["TOKEN=abc"]}, "agent.pass_env", "'TOKEN=abc' is not an environment variable"),
    ({"command": ["node"], "pass_env": 3}, "agent.pass_env", "expected a list of environment variable names"),
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
    passing = process_agent({"command": "node a.mjs", "pass_env": ["NPM_TOKEN", "NPM_TOKEN", "HF_TOKEN"]})
    assert passing.pass_env == ("NPM_TOKEN", "HF_TOKEN") and passing.in_folder(tmp_path).pass_env == passing.pass_env


def test_a_process_agent_is_not_an_in_process_one_and_the_kind_prefix_points_to_its_form() -> None:
    with pytest.raises(AgentRefError, match="is a process agent"):
        resolve_agent("cmd:node agent.mjs")
    with pytest.raises(AgentRefError, match="is of kind process"):
        resolve_agent(ProcessAgent(("node",)))
    with pytest.raises(AgentRefError, match="a process agent is named cmd:COMMAND LINE or preset:NAME"):
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


def _installed_by(requirements: list[str]) -> set[str]:
    """The distributions ``pip install`` of these requirements brings, from the installed metadata (names normalised)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(req.name).requires or []
        except metadata.PackageNotFoundError:  # a requirement for another platform
            continue
        todo += [dep for dep in map(Requirement, requires) if dep.marker is None or dep.marker.evaluate({"extra": ""})]
    return seen


def test_the_serve_extra_installs_what_the_python_presets_script_imports() -> None:
    """`pip install 'toolchaos[serve]'` is what process agents need; the `python` preset runs a script
    that imports openai and mcp, so the extra must bring both (and what they import through)."""
    import ast
    import sys
    from importlib import metadata

    from packaging.utils import canonicalize_name
    from toolchaos._agents._presets import script

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    serve = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["serve"]
    tree = ast.parse(Path(script("python_agent.py")).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    third_party = sorted(m for m in imported if m not in sys.stdlib_module_names and m != "__future__")
    assert {"openai", "mcp"} <= set(third_party)
    installed, owners = _installed_by(serve), metadata.packages_distributions()
    missing = [m for m in third_party if not {canonicalize_name(d) for d in owners.get(m, [])} & installed]
    assert not missing, f"the python preset's script imports {missing}, which toolchaos[serve] does not install"
