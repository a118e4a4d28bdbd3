"""What a scenario asks of an agent's kind: whether it applies at all, and how a kind is judged on it.

- **N/A**: a scenario needs things of the agent's kind (its ``needs:``: a stop report, virtual
  time, a restart, two workers); a kind says what its agents can do (``toolchaos.kinds.Capabilities``).
  A scenario needing something the kind lacks is not applicable (``not_applicable``): it is not
  run and it neither passes nor fails; the reason says what it needs and which kind lacks it.
  Read from the two declarations alone, before anything runs, never from how a run went.
- **Judged by harm**: a kind that cannot report a stop (a coding CLI ends by exiting, with its
  last answer) is judged on what it did. Where a scenario demands a stop state
  (STOPPED_LOOP_GUARD, NEEDS_HUMAN), a run the agent ended by itself counts as stopped; a stop
  report is not asked of it. Every invariant of harm (executions, bounds, duplicate effects,
  unchanged resends, Retry-After, budgets) applies unchanged: whether it stopped in time is
  theirs to judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from toolchaos._agents import AgentKind, Capabilities, kinds, not_applicable
from toolchaos._internal.types import TERMINAL_STATES
from toolchaos.invariants import Invariant, StopReport, TerminalState, Violation
from toolchaos.scenario import Expectation, Scenario

STOP_STATES = ("STOPPED_LOOP_GUARD", "NEEDS_HUMAN")  # the states a runtime reports with a stop report
NOT_RUN = "N/A"  # the terminal state of a scenario that did not apply: nothing ran


def capabilities(kind: str) -> Capabilities:
    """What agents of ``kind`` can do; a kind not registered here (a report read back) as the defaults."""
    found = kinds().get(kind)
    return found.capabilities if found is not None else Capabilities()


def not_applicable_to(scenario: Scenario, kind: AgentKind) -> str | None:
    """Why ``scenario`` does not apply to agents of ``kind`` (what it needs that the kind lacks); None: it applies."""
    return not_applicable(scenario.needs, kind)


def ended_by_itself(result: Any) -> bool:
    """The agent ended the run itself (it returned, exited or ended it), not the harness (ceiling, watchdog, crash),
    after taking part in it: a program that exits before its first model request (it could not start, it crashed
    at once) stopped nothing, so it is not counted as stopped."""
    return result.harness_stop is None and result.terminal_state in TERMINAL_STATES and result.turns > 0


class StoppedByItself(Invariant):
    """A stop state demanded of a kind that cannot report one: a run the agent ended by itself counts as stopped."""

    name = "terminal_state"

    def __init__(self, inner: Invariant, kind: str) -> None:
        self.inner, self.kind = inner, kind

    def params(self) -> dict[str, Any]:
        return {**self.inner.params(), "ended_by_itself": True}

    def check(self, result: Any) -> list[Violation]:
        broke = self.inner.check(result)
        if not broke or ended_by_itself(result):
            return []
        return [replace(v, expected=self.expected_text()) for v in broke]

    def expected_text(self) -> str:
        return (f"{self.inner.expected_text()}; or, as a {self.kind} agent cannot report a stop, "
                f"an end by itself (not the harness's)")

    def actual_text(self, result: Any) -> str:
        if not self.inner.check(result):
            return self.inner.actual_text(result)
        return f"{result.terminal_state}: ended by itself, counted as stopped"

    def to_data(self) -> Any:
        return self.inner.to_data()


class StopReportNotAsked(Invariant):
    """A stop report asked of a kind that cannot give one: not judged (the run's harm is)."""

    name = "stop_report"

    def __init__(self, inner: Invariant, kind: str) -> None:
        self.inner, self.kind = inner, kind

    def params(self) -> dict[str, Any]:
        return {**self.inner.params(), "not_asked": True}

    def check(self, result: Any) -> list[Violation]:
        return []

    def expected_text(self) -> str:
        return f"{self.inner.expected_text()}: not asked of a {self.kind} agent, which cannot report a stop"

    def actual_text(self, result: Any) -> str:
        return "not judged" + ("; it sent one (kept in the report)" if result.stop_report else "")

    def to_data(self) -> Any:
        return self.inner.to_data()


def as_judged(expect: Iterable[Expectation], kind: str) -> list[Expectation]:
    """The expectations as agents of ``kind`` are judged on them: by harm when the kind cannot report a stop."""
    out = list(expect)
    if capabilities(kind).reports_stop:
        return out
    return [replace(e, invariant=_for_kind(e.invariant, kind)) for e in out]


def _for_kind(invariant: Any, kind: str) -> Any:
    if isinstance(invariant, TerminalState) and set(invariant.states) & set(STOP_STATES):
        return StoppedByItself(invariant, kind)
    if isinstance(invariant, StopReport):
        return StopReportNotAsked(invariant, kind)
    return invariant
