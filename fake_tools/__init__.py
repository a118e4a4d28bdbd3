"""Deterministic fake tools for agent chaos tests: faults, schedules, effect ledger.

Works on its own, without the harness or pytest::

    from toolchaos.fake_tools import ToolSet, catalogue, faults

    pay = catalogue.get("charge_payment", faults=[faults.timeout(after=30, applied=True)])
    tools = ToolSet([pay], seed=1)
    tools.call("charge_payment", customer_id="c1", amount=12.5)   # -> error payload
    tools.ledger.applied("charge_payment")                         # -> 1: it did happen
    tools.world.records("charges")                                 # -> the charge, for a lookup to find
"""

from toolchaos.errors import (
    DefinitionError,
    ToolConnectionReset,
    ToolError,
    ToolInvalidArgument,
    ToolNotFound,
    ToolPermissionDenied,
    ToolTimeout,
    UnknownTool,
)
from toolchaos.fake_tools import catalogue, faults, registry, retry
from toolchaos.fake_tools._fingerprint import canonical, digest, fingerprint, normalise
from toolchaos.fake_tools._ledger import Effect, EffectLedger
from toolchaos.fake_tools._outcomes import Outcome, OutcomeClass
from toolchaos.fake_tools._schedule import RULE_KEYS, FaultSchedule, Rule, rule, schedule
from toolchaos.fake_tools._tool import FakeTool, ManualClock, ToolSet, ToolState, fake_tool
from toolchaos.fake_tools._world import Reads, World, Writes

__all__ = [
    "RULE_KEYS", "DefinitionError", "Effect", "EffectLedger", "FakeTool", "FaultSchedule", "ManualClock", "Outcome",
    "OutcomeClass", "Reads", "Rule", "ToolConnectionReset", "ToolError", "ToolInvalidArgument", "ToolNotFound",
    "ToolPermissionDenied", "ToolSet", "ToolState", "ToolTimeout", "UnknownTool", "World", "Writes", "canonical",
    "catalogue", "digest", "fake_tool", "faults", "fingerprint", "normalise", "registry", "retry", "rule",
    "schedule",
]
