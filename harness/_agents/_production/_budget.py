"""Budgets: model turns, tool executions, a wall-clock deadline and tokens, checked before spending.

A budget is checked before the thing it limits: before a model turn (turns, tokens, the deadline),
before an execution (executions, the deadline) and before a wait (a wait that would end past the
deadline is not started). A limit in ``tools.budgets`` wins over the runtime's own default.

Tokens are known only after a turn, so the next prompt is estimated before it is sent: about four
characters a token over the compact JSON of the conversation, with a safety margin, plus a reserve
for the answer (the longest answer seen so far, at least ``OUTPUT_RESERVE``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_TURNS = 30
DEFAULT_DEADLINE = 900.0  # virtual seconds: a quarter of an hour for one task
DEFAULT_MAX_TOKENS = 150_000
TOKEN_MARGIN = 1.15  # the estimate is a character count, not the provider's tokenizer
OUTPUT_RESERVE = 96


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """About four characters a token over the compact JSON of every message, plus a little per message."""
    chars = sum(len(json.dumps(m, separators=(",", ":"), default=str, ensure_ascii=False)) for m in messages)
    return 8 + math.ceil((chars + len(messages)) / 4)


@dataclass
class Budget:
    """What the run may still spend, and what it has spent."""

    started: float
    max_turns: int = DEFAULT_MAX_TURNS
    max_executions: int | None = None
    deadline_seconds: float = DEFAULT_DEADLINE
    max_tokens: int = DEFAULT_MAX_TOKENS
    turns: int = 0
    executions: int = 0
    tokens: int = 0
    longest_answer: int = 0

    @classmethod
    def from_limits(cls, budgets: Any, now: float) -> Budget:
        def pick(name: str, default: Any) -> Any:
            value = getattr(budgets, name, None)
            return default if value is None else value

        return cls(started=now, max_turns=pick("max_steps", DEFAULT_MAX_TURNS),
                   max_executions=pick("max_executions", None),
                   deadline_seconds=float(pick("max_seconds", DEFAULT_DEADLINE)),
                   max_tokens=pick("max_tokens", DEFAULT_MAX_TOKENS))

    @property
    def deadline(self) -> float:
        return self.started + self.deadline_seconds

    def before_turn(self, messages: list[dict[str, Any]], now: float) -> tuple[str, str] | None:
        """Why the next model turn must not be asked (guard, reason), or None."""
        if self.turns >= self.max_turns:
            return "budget.turns", f"{self.max_turns} model turns used"
        if now >= self.deadline:
            return "budget.deadline", f"the {self.deadline_seconds:g}s deadline has passed"
        need = math.ceil(estimate_prompt_tokens(messages) * TOKEN_MARGIN) + max(self.longest_answer, OUTPUT_RESERVE)
        if self.tokens + need > self.max_tokens:
            return ("budget.tokens", f"the next turn needs about {need} tokens; {self.tokens} of "
                    f"{self.max_tokens} are spent")
        return None

    def spent_turn(self, input_tokens: int, output_tokens: int) -> None:
        self.turns += 1
        self.tokens += input_tokens + output_tokens
        self.longest_answer = max(self.longest_answer, output_tokens)

    def before_execution(self, now: float) -> tuple[str, str] | None:
        if self.max_executions is not None and self.executions >= self.max_executions:
            return "budget.executions", f"{self.max_executions} tool executions used"
        if now >= self.deadline:
            return "budget.deadline", f"the {self.deadline_seconds:g}s deadline has passed"
        return None

    def allows_wait(self, now: float, seconds: float) -> bool:
        """May the run wait this long? Not when the wait itself would end at or past the deadline."""
        return now + seconds < self.deadline
