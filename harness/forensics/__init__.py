"""Loop forensics over traces and agent logs: repeats, cycles, stalls, intervals, token growth.

    from toolchaos.forensics import analyze, render_table
    print(render_table(analyze(["incident.jsonl"]).reports))
"""

from toolchaos.forensics._analyze import (
    MAX_PERIOD,
    MAX_TRACKED,
    Analysis,
    Cycle,
    Repeated,
    Session,
    SessionReport,
    Thresholds,
    Tokens,
    analyze,
    as_json,
    judge,
    render_table,
    sniff,
)

__all__ = [
    "MAX_PERIOD", "MAX_TRACKED", "Analysis", "Cycle", "Repeated", "Session", "SessionReport", "Thresholds",
    "Tokens", "analyze", "as_json", "judge", "render_table", "sniff",
]
