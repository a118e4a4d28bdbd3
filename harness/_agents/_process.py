"""A process agent: any program, in any language, run as a child process under chaos.

``ProcessAgent(command=[...], env={...}, cwd=..., task="arg"|"stdin", preset=..., pass_env=[...])`` says how
to start it; running it is ``toolchaos.process``'s job (a local model-API and MCP server for the
run, the child in its own process group). This module only holds and checks the description, so
the scenario loader and the command line can read one without starting anything.

A reference names one as ``cmd:COMMAND LINE`` (split like a shell would, without running one)
or ``preset:NAME`` (a ready-made recipe, ``toolchaos._agents._presets``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from toolchaos._agents._presets import PRESETS
from toolchaos._plumbing.environ import check_names
from toolchaos.errors import AgentRefError, UserError, did_you_mean

PROCESS = "process"
CMD_PREFIX, PRESET_PREFIX = "cmd:", "preset:"
TASK_MODES = ("arg", "stdin")
_KEYS = ("command", "env", "cwd", "task", "preset", "pass_env")


@dataclass(frozen=True)
class ProcessAgent:
    """How to start an agent as a child process.

    ``command``: the program and its arguments (with a preset: the program to use in place of the
    preset's own, e.g. a path to ``codex``); ``env``: variables added to the child's environment
    (after the harness's, so they win); ``cwd``: its working directory (relative to the scenario
    file's folder in a scenario; default: that folder, or the current one from Python); ``task``:
    how the task reaches it, the last argument (``arg``) or its standard input (``stdin``);
    ``preset``: a ready-made recipe for a known client (``toolchaos._agents.PRESETS``);
    ``pass_env``: names of the caller's environment variables it gets as they are (it gets none
    of the caller's otherwise, beyond a short allowlist: ``toolchaos._plumbing.environ``).
    """

    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    task: str = "arg"
    preset: str | None = None
    pass_env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check(self)
        try:
            object.__setattr__(self, "pass_env", check_names(self.pass_env, "agent.pass_env"))
        except UserError as exc:
            raise AgentRefError(str(exc), field="agent.pass_env") from None

    @property
    def label(self) -> str:
        """How reports name it: the preset, else the command line."""
        if self.preset is not None:
            return f"{PRESET_PREFIX}{self.preset}"
        return CMD_PREFIX + shlex.join(self.command)

    def __str__(self) -> str:
        return self.label

    def in_folder(self, folder: Path) -> ProcessAgent:
        """The same agent, its ``cwd`` read relative to ``folder`` (a scenario file's)."""
        cwd = folder / self.cwd if self.cwd is not None else folder
        return replace(self, cwd=str(cwd))


def check(agent: ProcessAgent) -> None:
    """A clear error, naming the field, for a description that cannot start anything."""
    if not isinstance(agent.command, tuple) or not all(isinstance(a, str) for a in agent.command):
        raise AgentRefError("agent.command: expected a list of strings (the program and its arguments)",
                            field="agent.command")
    if agent.preset is None and (not agent.command or not agent.command[0]):
        raise AgentRefError("agent: a process agent needs a command (a list: the program and its arguments) "
                            f"or a preset ({', '.join(PRESETS)})", field="agent.command")
    if agent.preset is not None and agent.preset not in PRESETS:
        raise AgentRefError(f"agent.preset: no preset {agent.preset!r}{did_you_mean(agent.preset, PRESETS)}; "
                            f"presets: {', '.join(PRESETS)}", field="agent.preset")
    if agent.task not in TASK_MODES:
        raise AgentRefError(f"agent.task: {agent.task!r} is not a way to give the task; expected one of "
                            f"{', '.join(TASK_MODES)}", field="agent.task")
    bad = [k for k, v in agent.env.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise AgentRefError(f"agent.env: every variable and value must be text (not {bad[0]!r})", field="agent.env")


def from_data(data: Mapping[str, Any]) -> ProcessAgent:
    """A ``ProcessAgent`` from plain data (a scenario's ``agent:`` mapping, a Python dict)."""
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise AgentRefError(f"agent: unknown key {unknown[0]!r}{did_you_mean(str(unknown[0]), _KEYS)}; "
                            f"a process agent has {', '.join(_KEYS)}", field=f"agent.{unknown[0]}")
    command = data.get("command") or ()
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, Sequence):
        raise AgentRefError("agent.command: expected a list of strings (the program and its arguments)",
                            field="agent.command")
    cwd = data.get("cwd")
    return ProcessAgent(tuple(command), dict(data.get("env") or {}), None if cwd is None else str(cwd),
                        str(data.get("task", "arg")), data.get("preset"), data.get("pass_env") or ())


def is_process_ref(ref: str) -> bool:
    return ref.startswith((CMD_PREFIX, PRESET_PREFIX))


def from_ref(ref: str) -> ProcessAgent:
    """``cmd:node agent.mjs --flag`` or ``preset:codex`` as a ``ProcessAgent``."""
    if ref.startswith(PRESET_PREFIX):
        return ProcessAgent(preset=ref[len(PRESET_PREFIX):])
    try:
        words = shlex.split(ref[len(CMD_PREFIX):])
    except ValueError as exc:
        raise AgentRefError(f"agent reference {ref!r}: {exc}", field="agent") from None
    if not words:
        raise AgentRefError(f"agent reference {ref!r}: 'cmd:' needs a command line, e.g. 'cmd:node agent.mjs'",
                            field="agent")
    return ProcessAgent(tuple(words))
