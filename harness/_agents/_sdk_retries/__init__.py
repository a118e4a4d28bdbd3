"""A runtime whose transport retries each tool request at the official SDKs' default, with sound decisions on top.

Written from the SDKs' documented behaviour and this project's documents, not from the
reference agent: the HTTP layer of the OpenAI and Anthropic Python SDKs sends a request up to 3
times (2 retries, exponential backoff from 0.5 s with jitter, capped at 8 s, honouring
``Retry-After`` and ``retry-after-ms``) under one call id, with no model turn in between
(``_transport``). On top, the decisions a careful agent loop makes about the model's requests
(``_decisions``): the model's third identical request without progress is refused, so is a
request resent unchanged after a final error, and 3 answers in a row with nothing new stop the
run; side effects are deduplicated by idempotency key, and a write whose answer was lost is
looked up before anything is resent (``_ledger``); budgets, and a stop report with every
documented field (``_runtime``).

Its executions count the transport's retries and the model's re-asks alike: a timeout asked
for twice costs 6 executions. docs/independent-runtimes.md lists its verdicts.
"""

from __future__ import annotations

from typing import Any

from toolchaos._agents._sdk_retries._runtime import SdkRetries
from toolchaos._internal.types import AgentResult


def sdk_retries(task: str, model: Any, tools: Any) -> AgentResult:
    """Run one task with SDK-default transport retries under sound decisions."""
    return SdkRetries(model, tools).run(task)


__all__ = ["SdkRetries", "sdk_retries"]
