"""toolchaos: chaos tests for the tool loops of AI agents.

The library works without pytest::

    from toolchaos.fake_tools import catalogue, faults
    from toolchaos import run, policies, invariants

    result = run("builtin:guarded", task="Get the invoice total",
                 tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                 policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    result.check(invariants.bounded(executions=3), invariants.terminal_state("STOPPED_LOOP_GUARD"))
"""

from typing import Any

from toolchaos import invariants, policies
from toolchaos._agents import GuardConfig, GuardedAgent, resolve_agent
from toolchaos._engine import ModelClient, RunResult, Toolbox, run
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.model import Decision, ModelTurn, ToolCall, Usage, tool_message
from toolchaos._internal.store import SqliteLedger, SqliteStore
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import HARNESS_STATES, REPORT_FIELDS, REPORT_SYNONYMS, TERMINAL_STATES, AgentResult
from toolchaos._internal.version import VERSION as __version__
from toolchaos._session import Chaos
from toolchaos.errors import (
    HardCeiling,
    InvariantViolation,
    LeftoverStopped,
    NetworkBlocked,
    RunClosed,
    ScenarioError,
    WatchdogExpired,
)

# Scenario files pull in pydantic and PyYAML: loaded on first use, so `import toolchaos`
# (and every plain pytest run, through the plugin) does not pay for them.
_SCENARIO_API = {"load_scenarios": "scenario", "run_scenario": "certification",
                 "certify": "certification"}


def __getattr__(name: str) -> Any:
    module = _SCENARIO_API.get(name)
    if module is None:
        raise AttributeError(f"module 'toolchaos' has no attribute {name!r}")
    from importlib import import_module

    mod = import_module(f".{module}", __name__)
    return getattr(mod, "load_file" if name == "load_scenarios" else name)

__all__ = [
    "HARNESS_STATES", "REPORT_FIELDS", "REPORT_SYNONYMS", "TERMINAL_STATES", "AgentResult", "Budgets", "Ceiling",
    "Chaos", "Decision", "GuardConfig", "GuardedAgent", "HardCeiling", "InvariantViolation", "LeftoverStopped",
    "ModelClient", "ModelTurn", "NetworkBlocked", "RunClosed", "RunResult", "ScenarioError", "SqliteLedger",
    "SqliteStore", "ToolCall", "Toolbox", "Trace", "Usage", "WatchdogExpired", "__version__", "certify", "invariants",
    "load_scenarios", "policies", "resolve_agent", "run", "run_scenario", "tool_message",
]
