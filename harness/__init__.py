"""toolchaos: chaos tests for the tool loops of AI agents.

The library works without pytest::

    from toolchaos.fake_tools import catalogue, faults
    from toolchaos import run, policies, invariants

    result = run("builtin:guarded", task="Get the invoice total",
                 tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                 policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    result.check(invariants.bounded(executions=3), invariants.terminal_state("STOPPED_LOOP_GUARD"))
"""

from typing import TYPE_CHECKING, Any

# Every name is loaded on first use (PEP 562): the pytest plugin, which pytest loads in every session of a
# venv where toolchaos is installed, imports submodules of this package, and Python runs this file first; a
# session that runs no chaos test must not pay for the engine, the agents, freezegun, pydantic or PyYAML.
_LAZY = {
    "invariants": ("invariants", None), "policies": ("policies", None),
    "GuardConfig": ("_agents", None), "GuardedAgent": ("_agents", None), "resolve_agent": ("_agents", None),
    "ModelClient": ("_engine", None), "RunResult": ("_engine", None), "RunSpec": ("_engine", None),
    "Toolbox": ("_engine", None),
    "run": ("_engine", None), "Budgets": ("_internal.limits", None), "Ceiling": ("_internal.limits", None),
    "Decision": ("_internal.model", None), "ModelTurn": ("_internal.model", None),
    "ToolCall": ("_internal.model", None), "Usage": ("_internal.model", None),
    "tool_message": ("_internal.model", None), "SqliteLedger": ("_internal.store", None),
    "SqliteStore": ("_internal.store", None), "Trace": ("_internal.trace", None),
    "HARNESS_STATES": ("_internal.types", None), "REPORT_FIELDS": ("_internal.types", None),
    "REPORT_SYNONYMS": ("_internal.types", None), "TERMINAL_STATES": ("_internal.types", None),
    "AgentResult": ("_internal.types", None), "__version__": ("_internal.version", "VERSION"),
    "Chaos": ("_session", None), "HardCeiling": ("errors", None), "InvariantViolation": ("errors", None),
    "LeftoverStopped": ("errors", None), "NetworkBlocked": ("errors", None), "RunClosed": ("errors", None),
    "ScenarioError": ("errors", None), "WatchdogExpired": ("errors", None),
    "load_scenarios": ("scenario", "load_file"), "run_scenario": ("certification", None),
    "certify": ("certification", None),
}

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from toolchaos import invariants, policies
    from toolchaos._agents import GuardConfig, GuardedAgent, resolve_agent
    from toolchaos._engine import ModelClient, RunResult, RunSpec, Toolbox, run
    from toolchaos._internal.limits import Budgets, Ceiling
    from toolchaos._internal.model import Decision, ModelTurn, ToolCall, Usage, tool_message
    from toolchaos._internal.store import SqliteLedger, SqliteStore
    from toolchaos._internal.trace import Trace
    from toolchaos._internal.types import HARNESS_STATES, REPORT_FIELDS, REPORT_SYNONYMS, TERMINAL_STATES, AgentResult
    from toolchaos._internal.version import VERSION as __version__
    from toolchaos._session import Chaos
    from toolchaos.certification import certify, run_scenario
    from toolchaos.errors import (
        HardCeiling,
        InvariantViolation,
        LeftoverStopped,
        NetworkBlocked,
        RunClosed,
        ScenarioError,
        WatchdogExpired,
    )
    from toolchaos.scenario import load_file as load_scenarios


def __getattr__(name: str) -> Any:
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'toolchaos' has no attribute {name!r}")
    from importlib import import_module

    module, attr = entry
    mod = import_module(f".{module}", __name__)
    value = mod if module == name else getattr(mod, attr or name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

__all__ = [
    "HARNESS_STATES", "REPORT_FIELDS", "REPORT_SYNONYMS", "TERMINAL_STATES", "AgentResult", "Budgets", "Ceiling",
    "Chaos", "Decision", "GuardConfig", "GuardedAgent", "HardCeiling", "InvariantViolation", "LeftoverStopped",
    "ModelClient", "ModelTurn", "NetworkBlocked", "RunClosed", "RunResult", "RunSpec", "ScenarioError", "SqliteLedger",
    "SqliteStore", "ToolCall", "Toolbox", "Trace", "Usage", "WatchdogExpired", "__version__", "certify", "invariants",
    "load_scenarios", "policies", "resolve_agent", "run", "run_scenario", "tool_message",
]
