"""The neutral conversation every log format is read into: sessions of model turns and their tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolchaos._internal.model import Decision
from toolchaos.fake_tools import canonical, digest, normalise

# A call's result when the log never recorded one (``None`` is a result: a tool that answered null).
NO_RESULT: Any = object()


@dataclass
class RecordedCall:
    """One tool call as the log records it, with its answer when the log has one."""

    id: str | None
    tool: str
    args: dict[str, Any]
    result: Any = NO_RESULT  # what the tool answered (content), NO_RESULT when unknown
    is_error: bool | None = None
    t: float | None = None  # seconds (epoch or since the run began), when the log has times
    executed: bool = True  # False for a call the runtime refused
    outcome: Mapping[str, Any] | None = None  # toolchaos traces: the tool event (outcome, class, code, ...)

    @property
    def has_result(self) -> bool:
        return self.result is not NO_RESULT

    @property
    def fp(self) -> str:
        """The call's fingerprint, as the harness computes it (name + normalised arguments)."""
        if self.outcome is not None and isinstance(self.outcome.get("fp"), str):
            return str(self.outcome["fp"])
        return digest(self.tool + "\x00" + canonical(normalise(self.args)))


@dataclass
class RecordedTurn:
    """One model turn: the calls it asked for, or its final text."""

    calls: list[RecordedCall] = field(default_factory=list)
    text: str | None = None
    t: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    estimated: bool = False  # tokens estimated from the conversation's length (the log has no usage)

    def decision(self) -> Decision:
        if self.calls:
            return Decision.many([(c.tool, dict(c.args)) for c in self.calls])
        return Decision.final(self.text or "")


@dataclass
class Conversation:
    """One session of a log: its model turns, in order."""

    session: str
    format: str
    turns: list[RecordedTurn] = field(default_factory=list)
    source: str = "<log>"

    def decisions(self) -> list[Decision]:
        return [t.decision() for t in self.turns]

    @property
    def calls(self) -> list[RecordedCall]:
        return [c for t in self.turns for c in t.calls]

    def tool_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.calls:
            seen.setdefault(c.tool, None)
        return list(seen)
