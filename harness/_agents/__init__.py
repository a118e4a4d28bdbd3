"""Agents under test: the built-in reference agents, agent kinds and resolution of references."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents._kinds import ENV_MARK, KINDS, env_parameter, import_ref, invoke, recognise
from toolchaos._agents._needs import NEEDS, Need, missing, not_applicable
from toolchaos._agents._presets import PRESETS, Endpoints, Launch, Preset, common_env, common_files
from toolchaos._agents._process import CMD_PREFIX, PRESET_PREFIX, PROCESS, TASK_MODES, ProcessAgent, is_process_ref
from toolchaos._agents._process import from_data as process_agent
from toolchaos._agents._process import from_ref as process_ref
from toolchaos._agents._production import production
from toolchaos._agents._registry import (
    IN_PROCESS,
    SDK,
    AgentKind,
    AgentUnderTest,
    Capabilities,
    accepted,
    binds,
    kinds,
    label,
    of_type,
    own_form,
    register_kind,
    split,
)
from toolchaos._agents._registry import resolve as _resolve
from toolchaos._agents._sdk_retries import sdk_retries
from toolchaos._agents.breaker import breaker
from toolchaos._agents.doomloop import doomloop
from toolchaos._agents.gemini import gemini
from toolchaos._agents.guarded import GuardConfig, GuardedAgent, guarded
from toolchaos._agents.loopguard import loopguard
from toolchaos._agents.naive import naive
from toolchaos.errors import AgentRefError, did_you_mean

BUILTIN: dict[str, Callable[..., Any]] = {"naive": naive, "guarded": guarded, "loopguard": loopguard,
                                          "doomloop": doomloop, "gemini": gemini, "breaker": breaker,
                                          "production": production, "sdk-retries": sdk_retries}


def resolve(agent: Any, kind: str | None = None) -> AgentUnderTest:
    """``agent`` (a reference, an object, or already an ``AgentUnderTest``) with the run of its kind.

    ``kind`` names the kind when the reference does not; by default it is recognised from the
    object (``toolchaos.kinds``). Every way in resolves an agent here.
    """
    return _resolve(agent, kind, load=load_target)


def resolve_agent(ref: Any, kind: str = IN_PROCESS) -> Callable[..., Any]:
    """The callable of an in-process (or, for the wire, ``sdk``) agent: a reference or a callable.

    References: ``builtin:NAME``, ``package.module:attr``, ``KIND:package.module:attr``. A
    reference naming another kind, or an object recognised by its type as another kind (a
    framework's agent), is an error that says what runs it: ``resolve`` runs every kind. Any
    other object is returned as it is: one that cannot be called fails at the call, where the
    run ends ERROR saying so (``invoke``).
    """
    own = own_form(ref) if isinstance(ref, str) else None
    if own is not None:
        raise AgentRefError(f"agent {ref} is a {own.name} agent (a command run as a child process): run it with "
                            f"toolchaos.run, which runs every kind (toolchaos certify --agent and pytest --chaos-agent "
                            f"do too)")
    if isinstance(ref, str):
        named, target = split(ref)
        if named is not None and named != kind:
            raise AgentRefError(_elsewhere(ref, named, kind))
        obj = load_target(target)
    else:
        obj = ref
    found = kinds_of_type(obj)
    if found is not None and found != kind:
        raise AgentRefError(_elsewhere(label(ref), found, kind))
    return obj  # type: ignore[no-any-return]


def kinds_of_type(obj: Any) -> str | None:
    """The kind that recognises ``obj`` by its type (a framework's agent, a process agent), if any."""
    for k in kinds().values():
        if k.by_type and k.recognise is not None and k.recognise(obj):
            return k.name
    return None


def load_target(target: str) -> Any:
    """The object ``builtin:NAME`` or ``package.module:attr`` names."""
    module, _, attr = target.partition(":")
    if module != "builtin":
        return import_ref(target)
    if attr not in BUILTIN:
        raise AgentRefError(f"no built-in agent {attr!r}{did_you_mean(attr, BUILTIN, several=True, prefix='builtin:')}"
                            f" (built-in: {', '.join('builtin:' + n for n in BUILTIN)})")
    return BUILTIN[attr]


def _elsewhere(ref: str, found: str, wanted: str) -> str:
    return (f"agent {ref} is of kind {found} ({KINDS[found]}), not {wanted}: run it with toolchaos.run, which runs "
            f"every kind (toolchaos certify --agent and pytest --chaos-agent do too)")


__all__ = ["BUILTIN", "CMD_PREFIX", "ENV_MARK", "IN_PROCESS", "KINDS", "NEEDS", "PRESETS", "PRESET_PREFIX", "PROCESS",
           "SDK", "TASK_MODES", "AgentKind", "AgentRefError", "AgentUnderTest", "Capabilities", "Endpoints", "GuardConfig",
           "GuardedAgent", "Launch", "Need", "Preset", "ProcessAgent", "accepted", "binds", "common_env", "common_files",
           "env_parameter", "guarded", "import_ref", "invoke", "is_process_ref", "kinds", "kinds_of_type", "label",
           "load_target", "missing", "naive", "not_applicable", "of_type", "process_agent", "process_ref", "recognise",
           "register_kind", "resolve", "resolve_agent", "split"]
