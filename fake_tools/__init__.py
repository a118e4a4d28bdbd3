"""Deterministic fake tools for agent chaos tests: faults, schedules, effect ledger.

Works on its own, without the harness or pytest::

    from fake_tools import ToolSet, catalogue, faults

    pay = catalogue.get("charge_payment", faults=[faults.timeout(after=30, applied=True)])
    tools = ToolSet([pay], seed=1)
    tools.call("charge_payment", customer_id="c1", amount=12.5)   # -> error payload
    tools.ledger.applied("charge_payment")                         # -> 1: it did happen
"""

from . import catalogue, faults
from ._errors import (
    DefinitionError,
    ToolConnectionReset,
    ToolError,
    ToolInvalidArgument,
    ToolNotFound,
    ToolPermissionDenied,
    ToolTimeout,
)
from ._fingerprint import canonical, fingerprint, normalise
from ._ledger import Effect, EffectLedger
from ._outcomes import Outcome, OutcomeClass
from ._schedule import FaultSchedule, Rule, rule, schedule
from ._tool import FakeTool, ManualClock, ToolSet, ToolState, UnknownTool, fake_tool

__all__ = [
    "DefinitionError", "Effect", "EffectLedger", "FakeTool", "FaultSchedule", "ManualClock", "Outcome",
    "OutcomeClass", "Rule", "ToolConnectionReset", "ToolError", "ToolInvalidArgument", "ToolNotFound",
    "ToolPermissionDenied", "ToolSet", "ToolState", "ToolTimeout", "UnknownTool", "canonical", "catalogue", "fake_tool",
    "faults", "fingerprint", "normalise", "rule", "schedule",
]
