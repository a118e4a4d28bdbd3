"""Ready-made recipes for known clients: ``agent: {preset: codex}`` and the others.

A preset turns the run's endpoints (the local model-API server's base URLs, its MCP URL and a
temporary home directory) into a command line, environment variables and generated config
files, the way that client reads them. ``checked`` is the package version each recipe was
checked with (docs/cli-agents.md has what each one did there). Every preset runs its client at
its default settings: only what is needed to run headless against the local server is set
(base URL, fake key, MCP server, permission to run the MCP server's tools without asking).

The environment every process agent gets, preset or not (``common_env``), points every SDK's
usual variables at the server, so an agent written with the stock clients needs no change.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

FAKE_KEY = "sk-toolchaos-not-a-real-key"
MODEL = "toolchaos-model"  # the model name the recipes ask for; the policy answers any name
MCP_NAME = "chaos"  # the name under which the recipes register the harness's MCP server


@dataclass(frozen=True)
class Endpoints:
    """Where a process agent finds the harness's server for its run."""

    openai: str  # OpenAI base URL, with /v1
    anthropic: str  # Anthropic base URL, without /v1
    gemini: str  # Gemini base URL, without /v1beta
    mcp: str  # the MCP server's streamable HTTP URL
    home: Path  # a temporary directory, the child's HOME: nothing touches the real one


@dataclass(frozen=True)
class Launch:
    """What a preset adds: arguments before and after the task, variables, files to write."""

    args: tuple[str, ...]  # the preset's arguments, after the program
    env: dict[str, str] = field(default_factory=dict)
    files: dict[Path, str] = field(default_factory=dict)
    task_flag: tuple[str, ...] = ()  # arguments just before the task (``-p`` for Claude Code)


@dataclass(frozen=True)
class Preset:
    name: str
    program: tuple[str, ...]  # the default program (on PATH), replaced by the agent's ``command``
    package: str  # what to install, pinned to the version checked
    checked: str  # the client's version the recipe was checked with
    summary: str
    build: Callable[[Endpoints], Launch]


def common_env(ep: Endpoints, task: str) -> dict[str, str]:
    """Variables every process agent gets: each SDK's base URL and key, the MCP URL, the task, a fresh HOME."""
    home = str(ep.home)
    return {
        "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_CACHE_HOME": f"{home}/.cache", "XDG_STATE_HOME": f"{home}/.local/state",
        "OPENAI_BASE_URL": ep.openai, "OPENAI_API_KEY": FAKE_KEY,
        "ANTHROPIC_BASE_URL": ep.anthropic, "ANTHROPIC_API_KEY": FAKE_KEY,
        "GOOGLE_GEMINI_BASE_URL": ep.gemini, "GEMINI_API_KEY": FAKE_KEY,
        "TOOLCHAOS_OPENAI_BASE_URL": ep.openai, "TOOLCHAOS_ANTHROPIC_BASE_URL": ep.anthropic,
        "TOOLCHAOS_GEMINI_BASE_URL": ep.gemini, "TOOLCHAOS_MCP_URL": ep.mcp, "TOOLCHAOS_MODEL": MODEL,
        "TOOLCHAOS_MCP_CONFIG": str(ep.home / "mcp.json"), "TOOLCHAOS_TASK": task,
        # no update checks, telemetry or other calls home from the clients that honour these
        "DO_NOT_TRACK": "1", "NO_UPDATE_NOTIFIER": "1", "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    }


def common_files(ep: Endpoints) -> dict[Path, str]:
    """``$TOOLCHAOS_MCP_CONFIG``: the MCP server in the ``mcpServers`` form most clients read."""
    return {ep.home / "mcp.json": _json({"mcpServers": {MCP_NAME: {"type": "http", "url": ep.mcp}}})}


def _json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def _codex(ep: Endpoints) -> Launch:
    # A custom model provider on the Responses API; CODEX_HOME holds the generated config.
    toml = "\n".join([
        f'model = "{MODEL}"', 'model_provider = "toolchaos"', "",
        "[model_providers.toolchaos]", 'name = "toolchaos"', f'base_url = "{ep.openai}"',
        'env_key = "TOOLCHAOS_API_KEY"', 'wire_api = "responses"', "",
        f"[mcp_servers.{MCP_NAME}]", f'url = "{ep.mcp}"', 'default_tools_approval_mode = "approve"', "",
    ])
    home = ep.home / ".codex"
    return Launch(("exec", "--skip-git-repo-check", "--json"), {"CODEX_HOME": str(home), "TOOLCHAOS_API_KEY": FAKE_KEY},
                  {home / "config.toml": toml})


def _claude_code(ep: Endpoints) -> Launch:
    config = ep.home / ".claude"
    mcp = ep.home / "claude-mcp.json"
    # ENABLE_TOOL_SEARCH=false: the MCP tools declared to the model up front. By default Claude Code
    # defers them behind its ToolSearch tool, which a model double does not call first.
    env = {"CLAUDE_CONFIG_DIR": str(config), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "ENABLE_TOOL_SEARCH": "false"}
    args = ("--output-format", "json", "--mcp-config", str(mcp), "--strict-mcp-config",
            "--allowedTools", f"mcp__{MCP_NAME}")  # headless: the MCP server's tools run without asking
    return Launch(args, env, {mcp: _json({"mcpServers": {MCP_NAME: {"type": "http", "url": ep.mcp}}})},
                  task_flag=("-p",))


def _gemini_cli(ep: Endpoints) -> Launch:
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                "mcpServers": {MCP_NAME: {"httpUrl": ep.mcp, "trust": True}},
                "general": {"disableAutoUpdate": True}, "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False}}
    # GEMINI_MODEL: a model named, as with -m. In its default "auto" mode gemini-cli first asks a
    # classifier model to route the request (a JSON answer to its own schema), which a model double
    # does not give; nothing else of its loop, its loop detector included, changes.
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "1", "GEMINI_MODEL": "gemini-2.5-flash"}
    return Launch(("--output-format", "json"), env, {ep.home / ".gemini" / "settings.json": _json(settings)},
                  task_flag=("-p",))


def _opencode(ep: Endpoints) -> Launch:
    config = {"$schema": "https://opencode.ai/config.json", "model": f"toolchaos/{MODEL}",
              "provider": {"toolchaos": {"npm": "@ai-sdk/openai-compatible", "name": "toolchaos",
                                         "options": {"baseURL": ep.openai, "apiKey": FAKE_KEY},
                                         "models": {MODEL: {"name": MODEL}}}},
              "mcp": {MCP_NAME: {"type": "remote", "url": ep.mcp, "enabled": True}},
              "autoupdate": False, "share": "disabled"}
    path = ep.home / "opencode.json"
    return Launch(("run",), {"OPENCODE_CONFIG": str(path), "OPENCODE_DISABLE_AUTOUPDATE": "1"},
                  {path: _json(config)})


def script(name: str) -> str:
    """The path of an example agent shipped with the package (``toolchaos/_agents/scripts/``)."""
    return str(resources.files("toolchaos._agents") / "scripts" / name)


def _node(name: str) -> Callable[[Endpoints], Launch]:
    def build(ep: Endpoints) -> Launch:
        return Launch((script(name),))

    return build


def _python(ep: Endpoints) -> Launch:
    return Launch((script("python_agent.py"),))


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("codex", ("codex",), "@openai/codex@0.171.0", "0.171.0",
           "Codex CLI, `codex exec`: a custom model provider on the Responses API, the MCP server in config.toml",
           _codex),
    Preset("claude-code", ("claude",), "@anthropic-ai/claude-code@2.1.332", "2.1.332",
           "Claude Code, `claude -p`: ANTHROPIC_BASE_URL, --mcp-config, the MCP server's tools allowed", _claude_code),
    Preset("gemini-cli", ("gemini",), "@google/gemini-cli@0.61.0", "0.61.0",
           "gemini-cli, `gemini -p`: API-key auth, GOOGLE_GEMINI_BASE_URL, the MCP server trusted in settings.json",
           _gemini_cli),
    Preset("opencode", ("opencode",), "opencode-ai@1.18.33", "1.18.33",
           "OpenCode, `opencode run`: an OpenAI-compatible provider and a remote MCP server in OPENCODE_CONFIG",
           _opencode),
    Preset("node-openai", ("node",), "openai@7.59.0 @modelcontextprotocol/sdk@1.32.2", "7.59.0",
           "a Node agent loop on the openai package (Chat Completions), its tools from the MCP server",
           _node("openai_agent.cjs")),
    Preset("node-anthropic", ("node",), "@anthropic-ai/sdk@1.15.0 @modelcontextprotocol/sdk@1.32.2", "1.15.0",
           "a Node agent loop on @anthropic-ai/sdk (Messages), its tools from the MCP server",
           _node("anthropic_agent.cjs")),
    Preset("openai-agents-js", ("node",), "@openai/agents@0.20.0 openai@7.59.0", "0.20.0",
           "a Node agent on the OpenAI Agents JS SDK at its defaults (Runner, MCPServerStreamableHttp, max turns 10)",
           _node("openai_agents_agent.cjs")),
    Preset("vercel-ai", ("node",), "ai@6.0.326 @ai-sdk/openai@3.0.141 @modelcontextprotocol/sdk@1.32.2", "6.0.326",
           "a Node agent on the Vercel AI SDK (generateText, stopWhen: stepCountIs(10), @ai-sdk/openai on the "
           "Responses API), its tools from the MCP server",
           _node("vercel_ai_agent.cjs")),
    Preset("python", (sys.executable,), "openai mcp (PyPI; both in toolchaos[serve])", "openai 3, mcp 2",
           "a Python agent loop in a subprocess on the openai package, its tools from the MCP server", _python),
)}

