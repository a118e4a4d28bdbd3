"""What a finished run left: ``RunResult`` (state, answer, stop report, trace, ledger, world, usage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolchaos._internal.model import Usage
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import report_value
from toolchaos.fake_tools import EffectLedger, FakeTool, World
from toolchaos.invariants import check_all, coverage_text, fault_coverage, raise_for, with_terminated


@dataclass
class RunResult:
    """Everything a finished run left: state, answer, stop report, trace, ledger, world, usage."""

    run_id: str
    seed: int
    task: str
    terminal_state: str
    answer: str | None
    stop_report: dict[str, Any] | None
    trace: Trace
    ledger: EffectLedger
    usage: list[Usage]
    harness_stop: str | None = None  # crash | ceiling | watchdog, when the harness ended the run
    error: str | None = None
    virtual_seconds: float = 0.0
    tools: dict[str, FakeTool] = field(default_factory=dict)
    world: World = field(default_factory=World)  # the collections the tools wrote, as the run left them
    rules_fired: dict[str, tuple[int, ...]] = field(default_factory=dict)  # per tool, the fault rules that fired
    rule_hits: dict[str, dict[int, int]] = field(default_factory=dict)  # per tool, rule index -> calls it answered
    warnings: list[str] = field(default_factory=list)  # what the run left behind that did not fail it (threads)
    # How the run executed: "process" (in a contained child) or "none" (in this process), and, when the
    # session asked for process isolation but the run stayed here, why (toolchaos._engine.isolated.placement).
    isolation: str = "none"
    isolation_reason: str | None = None
    agent_kind: str = "in-process"  # the kind of agent that ran (toolchaos.kinds)
    # When the watchdog ended the run: which limit ("no_progress" or "total"), its seconds and who set it.
    watchdog: dict[str, Any] | None = None

    @property
    def failed_to_run(self) -> bool:
        return self.harness_stop is not None

    @property
    def executions(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.trace.tool_events:
            out[e["tool"]] = out.get(e["tool"], 0) + 1
        return out

    @property
    def total_executions(self) -> int:
        return sum(self.executions.values())

    @property
    def turns(self) -> int:
        return len(self.usage)

    @property
    def tokens(self) -> int:
        return sum(u.total for u in self.usage)

    @property
    def side_requests(self) -> int:
        """Side requests the wire answered itself (titles, loop checks): not model turns, not in ``usage``."""
        return sum(1 for e in self.trace.events if e["kind"] == "side")

    @property
    def guard(self) -> str | None:
        guard = report_value(self.stop_report, "guard")
        return None if guard is None else str(guard)

    def violations(self, *invariants: Any) -> list[Any]:
        return check_all(self, invariants)

    def check(self, *invariants: Any, terminated: bool = True) -> RunResult:
        """Raise ``InvariantViolation`` for the first broken invariant (listing the others).

        ``terminated`` is checked with them, as every scenario checks it: a run the harness ended
        (a crash, its ceiling, the watchdog, an agent it could not call) does not pass by default.
        ``terminated=False`` opts out, for a test that expects such an end; so does an invariant that
        expects one (``terminal_state("CRASHED")``). With no invariant, the defaults
        (``terminated``, ``no_execution_after_refusal``).
        """
        __tracebackhide__ = True
        raise_for(self, check_all(self, with_terminated(invariants) if terminated else invariants))
        return self

    @property
    def name(self) -> str:
        """The run's name as given (``run_id`` without the ``#seed`` the engine appends)."""
        suffix = f"#{self.seed}"
        return self.run_id[:-len(suffix)] if self.run_id.endswith(suffix) else self.run_id

    def coverage_lines(self) -> list[str]:
        """The run's fault coverage, as a failure prints it: the faults each tool met, the rules that fired."""
        return coverage_text(fault_coverage(self))

    def summary(self) -> str:
        ex = ", ".join(f"{k}={v}" for k, v in sorted(self.executions.items())) or "none"
        return (f"run {self.name} (seed {self.seed}): {self.terminal_state}"
                f"{f' (guard: {self.guard})' if self.guard else ''}; executions: {ex}; "
                f"model turns: {self.turns}; effects: {self.ledger.applied()}; "
                f"virtual time: {self.virtual_seconds:g}s")
