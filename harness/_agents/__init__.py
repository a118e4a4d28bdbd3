"""Agents under test: the built-in reference agents, agent kinds and resolution of references."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents._kinds import (
    ACCEPTED,
    FRAMEWORKS,
    IN_PROCESS,
    KINDS,
    SDK,
    framework_of,
    import_ref,
    invoke,
    label,
    recognise,
    split,
)
from toolchaos._agents._presets import PRESETS, Endpoints, Launch, Preset, common_env, common_files
from toolchaos._agents._process import PROCESS, TASK_MODES, ProcessAgent, is_process_ref
from toolchaos._agents._process import from_data as process_agent
from toolchaos._agents._process import from_ref as process_ref
from toolchaos._agents._production import production
from toolchaos._agents.breaker import breaker
from toolchaos._agents.doomloop import doomloop
from toolchaos._agents.gemini import gemini
from toolchaos._agents.guarded import GuardConfig, GuardedAgent, guarded
from toolchaos._agents.loopguard import loopguard
from toolchaos._agents.naive import naive
from toolchaos.errors import AgentRefError, did_you_mean

BUILTIN: dict[str, Callable[..., Any]] = {"naive": naive, "guarded": guarded, "loopguard": loopguard,
                                          "doomloop": doomloop, "gemini": gemini, "breaker": breaker,
                                          "production": production}


def resolve_agent(ref: Any, kind: str = IN_PROCESS) -> Callable[..., Any]:
    """The callable of an in-process (or, for the wire, ``sdk``) agent: a reference or a callable.

    References: ``builtin:NAME``, ``package.module:attr``, ``KIND:package.module:attr``. A
    reference naming another kind, or an object of another kind (a framework's agent), is an
    error that says what runs it: ``toolchaos.adapters.agent_under_test`` runs every kind. Any
    other object is returned as it is: one that cannot be called fails at the call, where the
    run ends ERROR saying so (``invoke``).
    """
    if isinstance(ref, ProcessAgent) or (isinstance(ref, str) and is_process_ref(ref)):
        raise AgentRefError(f"agent {ref} is a process agent (a command run as a child process): run it with "
                            f"toolchaos.adapters.agent_under_test (toolchaos certify --agent and pytest "
                            f"--chaos-agent run every kind)")
    obj = _load(ref, kind) if isinstance(ref, str) else ref
    found = framework_of(obj)
    if found is not None:
        raise AgentRefError(_elsewhere(label(ref), found, kind))
    return obj  # type: ignore[no-any-return]


def _load(ref: str, kind: str) -> Any:
    named, target = split(ref)
    if named is not None and named != kind:
        raise AgentRefError(_elsewhere(ref, named, kind))
    module, _, attr = target.partition(":")
    if module != "builtin":
        return import_ref(target)
    if attr not in BUILTIN:
        raise AgentRefError(f"no built-in agent {attr!r}{did_you_mean(attr, BUILTIN, several=True, prefix='builtin:')}"
                            f" (built-in: {', '.join('builtin:' + n for n in BUILTIN)})")
    return BUILTIN[attr]


def _elsewhere(ref: str, found: str, wanted: str) -> str:
    runner = "toolchaos.wire.run" if found == SDK else "toolchaos.adapters.agent_under_test"
    return (f"agent {ref} is of kind {found} ({KINDS[found]}), not {wanted}: run it with {runner} "
            f"(toolchaos certify --agent and pytest --chaos-agent run every kind)")


__all__ = ["ACCEPTED", "BUILTIN", "FRAMEWORKS", "IN_PROCESS", "KINDS", "PRESETS", "PROCESS", "SDK", "TASK_MODES",
           "AgentRefError", "Endpoints", "GuardConfig", "GuardedAgent", "Launch", "Preset", "ProcessAgent",
           "common_env", "common_files", "framework_of", "guarded", "import_ref", "invoke", "is_process_ref", "label",
           "naive", "process_agent", "process_ref", "recognise", "resolve_agent", "split"]
