"""What the plugin needs once chaos work begins, imported here at module level: the engine, the agents,
virtual time, the reports and the ``chaos`` fixture's object.

Read through ``_lazy`` (``_lazy.session_defaults``, ...), never imported by the plugin's other modules:
a session that runs no chaos test loads none of it (see ``_lazy``).
"""

from toolchaos._agents import IN_PROCESS, label
from toolchaos._engine import (
    default_for_certification,
    safe_name,
    session_defaults,
    session_real_seconds,
    session_total_seconds,
)
from toolchaos._internal.files import open_new
from toolchaos._plumbing import clock
from toolchaos.adapters import agent_under_test
from toolchaos.invariants import Violation
from toolchaos.pytest_plugin._chaos import PytestChaos
from toolchaos.reports import (
    RunMeta,
    applicable,
    build_report,
    certificate,
    certified,
    check_level,
    could_not_call,
    diff_lines,
    gated,
    level_reached,
    not_applicable_lines,
    now,
    parse_pass_k,
    pass_k_shortfalls,
    required_severities,
    scenario_entry,
    write_entries,
)

__all__ = [
    "IN_PROCESS", "PytestChaos", "RunMeta", "Violation", "agent_under_test", "applicable", "build_report", "certificate",
    "certified", "check_level", "clock", "could_not_call", "default_for_certification", "diff_lines", "gated", "label",
    "level_reached", "not_applicable_lines", "now", "open_new", "parse_pass_k", "pass_k_shortfalls",
    "required_severities", "safe_name", "scenario_entry",
    "session_defaults", "session_real_seconds", "session_total_seconds", "write_entries",
]
