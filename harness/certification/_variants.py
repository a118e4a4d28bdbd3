"""The reference agent and its variants: what the ablation matrix runs, and how a verdict names them.

``GuardedAgent(FLAG=False)`` is the reference runtime with one guard switched off (an
ablation); ``naive`` has no guard at all; ``eager`` stops on any second identical call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import GuardedAgent, naive

ABLATIONS: dict[str, str] = {
    "normalise_args": "no argument normalisation",
    "detect_cycles": "no cycle detection",
    "check_progress": "no progress check",
    "idempotency": "no idempotency ledger",
    "honour_retry_after": "no Retry-After",
    "classify_errors": "no error classes",
    "budgets": "no budgets",
    "stop_report": "no stop report",
}

AGENT_VARIANTS: dict[str, Callable[..., Any]] = {
    "guarded": GuardedAgent(),
    "naive": naive,
    **{f"-{flag}": GuardedAgent(None, **{flag: False}) for flag in ABLATIONS},
    "eager": GuardedAgent(eager=True),
}


def agent_label(agent: Any) -> str:
    """How a verdict names an agent: its reference, its variant label, else its name."""
    if isinstance(agent, str):
        return agent
    for label, variant in AGENT_VARIANTS.items():
        if agent is variant:
            return label
    return str(getattr(agent, "__qualname__", None) or getattr(agent, "__name__", None) or type(agent).__name__)
