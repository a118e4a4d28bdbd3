"""A careful production-style runtime from the documents alone: error classes, Retry-After, a ledger, budgets.

Not a port of one published guard but what a team running agents against real APIs would ship:
error classes with a path each (``_classes``), backoff that honours every Retry-After form
(``_retry_after``, ``_retry``), operation keys and a ledger of side effects with a lookup of prior
state before any resend (``_ledger``), budgets on turns, executions, a deadline and tokens
(``_budget``), loop detection that respects progress (``_loops``) and a stop report with every
documented field (``_runtime``). Its constants are its own; docs/independent-runtimes.md lists
them and its verdicts.
"""

from __future__ import annotations

from typing import Any

from toolchaos._agents._production._runtime import Production
from toolchaos._internal.types import AgentResult


def production(task: str, model: Any, tools: Any) -> AgentResult:
    """Run one task as the production-style runtime."""
    return Production(model, tools).run(task)


__all__ = ["Production", "production"]
