"""What forensics reports per session, and the wording its verdicts and tables share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Repeated:
    fp: str
    count: int
    tool: str | None
    args: str | None

    def text(self) -> str:
        """The call as a reader knows it: the tool and its arguments."""
        return f"{self.tool or '?'}{' ' + self.args if self.args else ''}"


@dataclass
class Cycle:
    """The longest cycle run: ``calls`` calls going round ``steps`` in order.

    ``a`` and ``b`` (and their fingerprints) are the round's first two steps, as they were
    when only A-B alternations were detected; ``steps`` names every step (the tool, or the
    fingerprint when the log has no name) and ``steps_fp`` gives their fingerprints.
    """

    calls: int  # length of the longest run, in calls (two rounds of period 3 are 6 calls)
    a: str
    b: str
    a_fp: str
    b_fp: str
    period: int = 2
    steps: list[str] = field(default_factory=list)
    steps_fp: list[str] = field(default_factory=list)

    def text(self) -> str:
        """``A-B cycle a <-> b`` for period 2, ``cycle a -> b -> c (period 3)`` for longer rounds."""
        if self.period == 2 or not self.steps:
            return f"A-B cycle {self.a} <-> {self.b}"
        return f"cycle {' -> '.join(self.steps)} (period {self.period})"


@dataclass
class Tokens:
    first: int
    last: int
    turns: int
    per_turn: float
    ratio: float | None


@dataclass
class SessionReport:
    session: str
    format: str
    source: str
    calls: int
    refused: int
    polls: int
    turns: int
    unique: int
    approximate: bool
    repeat_rate: float
    top: list[Repeated]
    cycle: Cycle | None
    longest_no_progress: int
    interval_median: float | None
    interval_spread: float | None
    duration: float | None
    tokens: Tokens | None
    state: str | None
    guard: str | None
    verdict: str = "healthy"
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def seconds(value: float | None) -> str:
    """A duration at a readable scale: ``850us``, ``1.5ms``, ``30.0s``, ``2.5min``."""
    if value is None:
        return "n/a"
    if value < 1e-3:
        return f"{value * 1e6:.0f}us"
    if value < 1:
        return f"{value * 1e3:.1f}ms"
    if value < 120:
        return f"{value:.1f}s"
    return f"{value / 60:.1f}min"
