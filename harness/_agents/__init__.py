"""Agents under test: the built-in reference agents and resolution of ``module:attr`` references."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from toolchaos._agents.breaker import breaker
from toolchaos._agents.doomloop import doomloop
from toolchaos._agents.gemini import gemini
from toolchaos._agents.guarded import GuardConfig, GuardedAgent, guarded
from toolchaos._agents.loopguard import loopguard
from toolchaos._agents.naive import naive
from toolchaos.errors import AgentRefError, did_you_mean

BUILTIN: dict[str, Callable[..., Any]] = {"naive": naive, "guarded": guarded, "loopguard": loopguard,
                                          "doomloop": doomloop, "gemini": gemini, "breaker": breaker}


def resolve_agent(ref: Any) -> Callable[..., Any]:
    """A callable from ``builtin:NAME``, ``package.module:attr`` or a callable."""
    if callable(ref):
        return ref  # type: ignore[no-any-return]
    if not isinstance(ref, str) or ":" not in ref:
        raise AgentRefError(f"agent reference {ref!r}: expected 'builtin:NAME' or 'package.module:attr'")
    module, _, attr = ref.partition(":")
    if module == "builtin":
        if attr not in BUILTIN:
            raise AgentRefError(f"no built-in agent {attr!r}{did_you_mean(attr, BUILTIN)}; "
                                f"built-in: {', '.join('builtin:' + n for n in BUILTIN)}")
        return BUILTIN[attr]
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise AgentRefError(f"agent reference {ref!r}: cannot import {module!r} ({exc})") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AgentRefError(f"agent reference {ref!r}: {module!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise AgentRefError(f"agent reference {ref!r} is not callable")
    return obj  # type: ignore[no-any-return]


__all__ = ["BUILTIN", "AgentRefError", "GuardConfig", "GuardedAgent", "guarded", "naive", "resolve_agent"]
