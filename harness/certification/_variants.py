"""The reference agent and its variants: what the ablation matrix runs, and how a verdict names them.

``GuardedAgent(FLAG=False)`` is the reference runtime with one guard switched off (an
ablation); ``naive`` has no guard at all; ``eager`` stops on any second identical call.
``PORTS`` are published guard designs ported as built-in agents from the documented
contract alone, and a production-style runtime written the same way
(docs/independent-runtimes.md): the matrix runs them too, so the suite is judged against
runtimes other than the one it was written with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchaos._agents import BUILTIN, GuardedAgent, naive
from toolchaos._engine import AgentUnderTest

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

PORTS: dict[str, str] = {
    "loopguard": "the LoopGuard design: same call 2 per progress window, A-B-A stop, no progress 3",
    "doomloop": "the doom-loop ladder: observe at 2, block at 3, stop at 6",
    "gemini": "gemini-cli: 5 identical calls in a row, feedback, then halt",
    "breaker": "a loop breaker: 3 of the same among the last 5 calls",
    "production": ("a careful production-style runtime written from the documents alone: error classes, backoff "
                   "honouring every Retry-After form, an operation ledger with lookups, budgets, progress-aware "
                   "cycles"),
    "sdk-retries": ("a runtime whose transport retries each request at the official SDKs' default (3 attempts, "
                    "backoff from 0.5 s, Retry-After honoured) under sound decisions: a third identical request "
                    "refused, no progress 3, side effects deduplicated by idempotency key"),
}
# The sound designs among the ports: every loop scenario must leave them room (they pass them all).
# sdk-retries joined once the bounds counted its transport retries apart from the model's re-asks.
SOUND_PORTS = ("loopguard", "production", "sdk-retries")

AGENT_VARIANTS: dict[str, Callable[..., Any]] = {
    "guarded": GuardedAgent(),
    "naive": naive,
    **{f"-{flag}": GuardedAgent(None, **{flag: False}) for flag in ABLATIONS},
    "eager": GuardedAgent(eager=True),
    **{name: BUILTIN[name] for name in PORTS},
}


def agent_label(agent: Any) -> str:
    """How a verdict names an agent: its reference, its variant label, else its name."""
    if isinstance(agent, str):
        return agent
    if isinstance(agent, AgentUnderTest):
        return agent.label
    for label, variant in AGENT_VARIANTS.items():
        if agent is variant:
            return label
    return str(getattr(agent, "__qualname__", None) or getattr(agent, "__name__", None) or type(agent).__name__)
