"""What the adapters share: the optional-import guard and the mapping of run endings.

How a framework run ends is read from what happened, not only from exceptions:

- a framework limit that raises (``MaxTurnsExceeded``, ``UsageLimitExceeded``,
  ``GraphRecursionError``) is ``STOPPED_LOOP_GUARD``, the report naming the limit: the
  runtime's step cap stopped the loop (the last fuse; invariants judge whether it fired
  soon enough, and the report is only as complete as the framework makes it);
- a run that returned an answer is handed to the engine as that answer: COMPLETED only
  when the model's last turn really was a final answer and no call it asked for was left
  unhandled; a limit that ends a run *without* raising (an ``exit_behavior="end"``
  middleware, a tool runner's ``max_iterations``) therefore ends FAILED, not COMPLETED;
- any other framework error is FAILED, with the error as the reason;
- the harness's own stops (ceiling, watchdog) pass through: a framework whose default
  limit is effectively unbounded ends at the harness ceiling as HARD_CEILING.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from toolchaos._internal.types import AgentResult

FRAMEWORKS: dict[str, tuple[str, str]] = {
    # name: (module to import, pip extra)
    "openai-agents": ("agents", "openai-agents"),
    "pydantic-ai": ("pydantic_ai", "pydantic-ai"),
    "langgraph": ("langgraph", "langgraph"),
}


def require(framework: str) -> Any:
    """Import a framework, or raise ImportError naming the extra that installs it."""
    module, extra = FRAMEWORKS[framework]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{framework} is not installed: pip install 'CLONE[{extra}]' (CLONE: the path of your "
                          f"toolchaos clone; the README's 'Use it in your project') ({exc})") from exc


def ending(*, answer: Any = None, limit: str | None = None, error: BaseException | None = None) -> Any:
    """What an adapter returns to the engine for a framework run that ended this way."""
    if limit is not None:
        reason = f"{type(error).__name__}: {error}" if error is not None else limit
        return AgentResult("STOPPED_LOOP_GUARD", None, {"state": "STOPPED_LOOP_GUARD", "guard": limit,
                                                        "reason": reason})
    if error is not None:
        return AgentResult("FAILED", None, {"state": "FAILED", "reason": f"{type(error).__name__}: {error}"})
    return None if answer is None else str(answer)


def tool_result_text(value: Any) -> str:
    """A tool's Python result as the text a framework hands the model."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False)
