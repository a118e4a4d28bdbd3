"""Invariants over a finished run: ``result.check(invariants.bounded(executions=3), ...)``.

``INVARIANTS`` is the registry of built-in invariants (``toolchaos.fake_tools.registry``).
"""

from toolchaos.errors import InvariantError, InvariantViolation
from toolchaos.invariants._builtin import (
    INVARIANTS,
    FinishedRun,
    Invariant,
    Violation,
    bounded,
    completed,
    faults_fired,
    goal,
    idempotent,
    max_side_effects,
    no_execution_after_refusal,
    no_unchanged_resend,
    retry_after_honoured,
    stop_report,
    terminal_state,
    terminated,
    world_state,
)
from toolchaos.invariants._coverage import coverage_text, fault_coverage

__all__ = [
    "INVARIANTS", "FinishedRun", "Invariant", "InvariantError", "InvariantViolation", "Violation", "bounded",
    "completed", "coverage_text", "fault_coverage", "faults_fired", "goal", "idempotent", "max_side_effects",
    "no_execution_after_refusal",
    "no_unchanged_resend", "retry_after_honoured", "stop_report", "terminal_state", "terminated", "world_state",
]
