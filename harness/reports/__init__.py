"""Certification reports: report.json (versioned), report.md, a self-contained report.html, junit.xml.

    from toolchaos.reports import RunMeta, write_reports
    write_reports(verdicts, RunMeta(agent="mypkg.agent:run"), "chaos-report/")
"""

from toolchaos.errors import ReportError
from toolchaos.reports._core import (
    DEFAULT_LEVEL,
    LEVELS,
    RunMeta,
    add_report_arguments,
    build_report,
    certified,
    check_level,
    exit_code,
    finish_command,
    level_reached,
    read_report,
    write_entries,
    write_reports,
)

__all__ = [
    "DEFAULT_LEVEL", "LEVELS", "ReportError", "RunMeta", "add_report_arguments", "build_report", "certified",
    "check_level", "exit_code", "finish_command", "level_reached", "read_report", "write_entries", "write_reports",
]
