"""The public API surface: every public module's ``__all__``, written out.

A name that moves between modules, or is dropped from a facade, fails here instead of silently
disappearing for users; a name added on purpose is added here too. Each name must also resolve.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC: dict[str, list[str]] = {
    "toolchaos": [
        "AgentResult", "Budgets", "Ceiling", "Chaos", "Decision", "GuardConfig", "GuardedAgent", "HARNESS_STATES",
        "HardCeiling", "InvariantViolation", "LeftoverStopped", "ModelClient", "ModelTurn", "NetworkBlocked",
        "REPORT_FIELDS", "REPORT_SYNONYMS", "RunClosed", "RunResult", "RunSpec", "ScenarioError", "SqliteLedger",
        "SqliteStore",
        "TERMINAL_STATES", "ToolCall", "Toolbox", "Trace", "Usage", "WatchdogExpired", "__version__", "certify",
        "invariants", "load_scenarios", "policies", "resolve_agent", "run", "run_scenario", "tool_message",
    ],
    "toolchaos.events": [
        "AgentResult", "ApiEvent", "AskedCall", "Budgets", "CallEvent", "Ceiling", "Decision", "EndEvent", "Event",
        "HARNESS_STATES", "LateEvent", "ModelEvent", "ModelTurn", "REPORT_FIELDS", "RefusalEvent", "Shown",
        "SideEvent", "SkippedEvent", "TERMINAL_STATES", "ToolCall", "ToolEvent", "Trace", "Usage", "tool_message",
    ],
    "toolchaos.fake_tools": [
        "DefinitionError", "Effect", "EffectLedger", "FakeTool", "FaultSchedule", "ManualClock", "Outcome",
        "OutcomeClass", "RULE_KEYS", "Reads", "Rule", "ToolConnectionReset", "ToolError", "ToolInvalidArgument",
        "ToolNotFound", "ToolPermissionDenied", "ToolSet", "ToolState", "ToolTimeout", "UnknownTool", "World",
        "Writes", "canonical", "catalogue", "digest", "fake_tool", "faults", "fingerprint", "normalise", "registry",
        "retry", "rule", "schedule",
    ],
    "toolchaos.fake_tools.faults": [
        "CallInfo", "FAULTS", "Fault", "as_fault", "contradictory", "empty", "fatal", "malformed", "ok", "oversized",
        "paginated", "pending", "slow", "stale", "timeout", "transient",
    ],
    "toolchaos.fake_tools.retry": [
        "ANTHROPIC", "EPOCH", "FORMS", "OPENAI", "SECONDS", "duration", "headers", "wait",
    ],
    "toolchaos.fake_tools.catalogue": [
        "NAMES", "describe", "get",
    ],
    "toolchaos.invariants": [
        "FinishedRun", "INVARIANTS", "Invariant", "InvariantError", "InvariantViolation", "Violation", "bounded",
        "completed", "coverage_text", "fault_coverage", "faults_fired", "goal", "idempotent", "max_side_effects",
        "no_execution_after_refusal", "no_unchanged_resend", "poll_interval_honoured", "retry_after_honoured",
        "stop_report", "terminal_state", "terminated", "world_state",
    ],
    "toolchaos.policies": [
        "Decision", "Feedback", "ModelView", "POLICIES", "Policy", "PolicyError", "alternate", "cassette", "explore",
        "ignores_refusals", "jitter", "obedient", "openai_chat", "paginate", "paraphrase", "poll_until", "recorded",
        "scripted", "stubborn",
    ],
    "toolchaos.strategies": [
        "ALL_KINDS", "DEFAULT_KINDS", "DEFAULT_POLICY_KINDS", "FaultPlan", "SpecPolicy", "build_policy",
        "describe_fault", "example_args", "fault_data", "fault_schedules", "fault_table", "outcomes", "plan",
        "policies", "policy_specs", "rule_data", "tool_data",
    ],
    "toolchaos.wire": [
        "API_FAULTS", "ApiFault", "ApiFaultError", "ApiFaults", "DualHTTPCoreMocker", "Env", "FAKE_API_KEY",
        "HttpTool", "PatchError", "Request", "UnmatchedRequest", "Wire", "WireRunResult", "WireTool", "as_api_fault",
        "http_tool", "install", "malformed", "overloaded", "rate_limited", "run", "server_error", "session",
        "stream_cut", "takes_env", "timeout", "unavailable", "uninstall",
    ],
    "toolchaos.fuzzing": [
        "FuzzFailed", "FuzzFailure", "FuzzReport", "FuzzSpec", "FuzzTarget", "fuzz", "fuzz_scenario", "fuzz_target",
        "must_hold", "scenario_target",
    ],
    "toolchaos.logs": [
        "Conversation", "FORMATS", "LogFormat", "LogFormatError", "REGISTRY", "RecordedCall", "RecordedTurn",
        "conversation", "detect", "fault_of", "load", "open_text", "parse", "read_records", "replay_tools", "select",
    ],
    "toolchaos.forensics": [
        "Analysis", "Cycle", "MAX_PERIOD", "MAX_TRACKED", "Repeated", "Session", "SessionReport", "Thresholds",
        "Tokens", "analyze", "as_json", "judge", "render_table", "sniff",
    ],
    "toolchaos.scenario": [
        "CATEGORIES", "Expectation", "MAX_TRIALS", "Restart", "SCENARIO_PATTERN", "SCHEMA_URL", "SEVERITIES", "Scenario",
        "ScenarioError", "Useful", "expand_trials", "find_files", "json_schema", "load_file", "load_text", "load_yaml",
    ],
    "toolchaos.certification": [
        "ABLATIONS", "AGENT_VARIANTS", "Grade", "PORTS", "SOUND_PORTS", "SUITE_VERSION", "ScenarioVerdict", "Verdict",
        "agent_label", "certify", "check_invariant", "combine", "judge", "render_failure",
        "run_scenario", "scenario_spec", "suite", "suite_files", "suite_root",
    ],
    "toolchaos.reports": [
        "DEFAULT_LEVEL", "LEVELS", "LEVEL_ORDER", "PRICED_AS", "PRICES", "PRICES_DATED", "PriceTable", "ReportError",
        "RunMeta", "SCHEMA", "SCHEMA_VERSION", "add_report_arguments", "append_step_summary", "build_report",
        "certified", "check_level", "could_not_call", "diff_lines", "diff_reports", "exit_code", "finish_command",
        "git_commit", "level_reached", "load_report", "merge_reports", "pass_at_k", "pass_hat_k", "price_table",
        "read_report", "scenario_entry", "trial_stats", "verdict_status", "wilson", "write_entries", "write_reports",
    ],
    "toolchaos.adapters": [
        "FRAMEWORKS", "agent_under_test", "ending", "require",
    ],
    "toolchaos.process": [
        "PRESETS", "ProcessAgent", "ProcessOutcome", "ProcessRunResult", "launch", "run",
    ],
    "toolchaos.matrices": [
        "Matrix", "NAIVE_MUST_FAIL", "ablation_matrix",
    ],
    "toolchaos.matrices.processes": [
        "Row", "main", "markdown", "matrix", "not_applicable_table", "requests", "run_cell", "stopped_by",
    ],
    "toolchaos.errors": [
        "AgentCallError", "AgentFailure", "AgentRefError", "ApiFaultError", "CassetteDiverged", "CassetteError",
        "CommandError", "DefinitionError", "FuzzFailed",
        "FuzzSpecError", "HardCeiling", "HarnessStop", "InvariantError", "InvariantViolation", "LeftoverStopped",
        "LogFormatError", "NetworkBlocked", "PatchError", "PolicyCrashed", "PolicyError", "ReportError", "RunClosed",
        "ScenarioError", "ScenarioFailed", "ToolConnectionReset", "ToolError", "ToolInvalidArgument", "ToolNotFound",
        "ToolPermissionDenied", "ToolTimeout", "ToolchaosError", "UnknownTool", "UnmatchedRequest", "UserError",
        "WatchdogExpired", "did_you_mean", "render_violations", "trace_file_line",
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_the_public_names_are_the_written_ones_and_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == PUBLIC[module]  # a duplicate in __all__ fails here too
    assert [name for name in mod.__all__ if not hasattr(mod, name)] == []


def test_the_written_lists_are_sorted() -> None:
    assert all(names == sorted(set(names)) for names in PUBLIC.values())
