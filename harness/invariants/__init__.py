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
    poll_interval_honoured,
    retry_after_honoured,
    stop_report,
    terminal_state,
    terminated,
    world_state,
)
from toolchaos.invariants._coverage import coverage_text, fault_coverage

# isort: split
# What other packages of toolchaos (the engine, the scenario loader, certification, the fuzzer, reports) need
# beyond the public names: importable from this facade, not part of the API (not in __all__).
from toolchaos.invariants._builtin import DEFAULT as DEFAULT
from toolchaos.invariants._builtin import FaultsFired as FaultsFired
from toolchaos.invariants._builtin import Goal as Goal
from toolchaos.invariants._builtin import StopReport as StopReport
from toolchaos.invariants._builtin import TerminalState as TerminalState
from toolchaos.invariants._builtin import actual_text as actual_text
from toolchaos.invariants._builtin import check_all as check_all
from toolchaos.invariants._builtin import expected_text as expected_text
from toolchaos.invariants._builtin import raise_for as raise_for
from toolchaos.invariants._builtin import with_terminated as with_terminated

__all__ = [
    "INVARIANTS", "FinishedRun", "Invariant", "InvariantError", "InvariantViolation", "Violation", "bounded",
    "completed", "coverage_text", "fault_coverage", "faults_fired", "goal", "idempotent", "max_side_effects",
    "no_execution_after_refusal", "no_unchanged_resend", "poll_interval_honoured", "retry_after_honoured",
    "stop_report", "terminal_state", "terminated", "world_state",
]
