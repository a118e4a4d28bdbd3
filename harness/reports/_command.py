"""Reports in a command (``toolchaos certify`` / ``run``): the options, worded once, and the command's end.

    def add_arguments(parser):
        add_report_arguments(parser)          # --report DIR, --require LEVEL

    def run(args):
        ...
        return finish_command(args, verdicts, {"agent": args.agent, "started": started})
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from toolchaos.reports._levels import LEVEL_ORDER, LEVELS, certified, could_not_call, level_reached
from toolchaos.reports._meta import RunMeta, now
from toolchaos.reports._write import write_reports

if TYPE_CHECKING:
    from toolchaos.certification._verdict import ScenarioVerdict


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--report DIR`` and ``--require LEVEL``, worded the same in every command."""
    parser.add_argument("--report", metavar="DIR",
                        help="write the certification report (report.json, report.md, report.html, junit.xml, "
                             "traces) to DIR; report.md is also appended to $GITHUB_STEP_SUMMARY when set")
    parser.add_argument("--require", metavar="LEVEL", choices=LEVEL_ORDER,
                        help="the level the exit status requires: "
                             + "; ".join(f"{k}: {v.split(':')[0]}" for k, v in LEVELS.items())
                             + " (default: every scenario passes)")


def finish_command(args: argparse.Namespace, verdicts: Sequence[ScenarioVerdict],
                   meta: RunMeta | Mapping[str, Any], out: TextIO | None = None) -> int:
    """End of ``toolchaos certify`` / ``run``: write the report if asked, say the level, return the exit code.

    An agent the harness could not call at all is no level: "COULD NOT CERTIFY" and its
    message, exit status 2 (as for any bad input).

    ``meta.require`` is taken from ``args.require`` when that is given.
    """
    m = RunMeta.of(meta)
    require = getattr(args, "require", None)
    if require:
        m.require = require
    if m.ended is None:
        m.ended = now()
    stream = out if out is not None else sys.stderr
    report_dir = getattr(args, "report", None)
    if report_dir:
        paths = write_reports(verdicts, m, report_dir)
        print(f"report: {paths['html']} (also report.md, report.json, junit.xml)", file=stream)
    problem = could_not_call(verdicts)
    if problem is not None:  # the agent never ran: no level to speak of, and a usage error's exit status
        print(f"COULD NOT CERTIFY: {problem}", file=stream)
        return 2
    level = m.require
    ok = certified(verdicts, level)
    word = "CERTIFIED" if ok else "NOT CERTIFIED"
    print(f"{word}: level reached {level_reached(verdicts)}, required {level}", file=stream)
    return 0 if ok else 1
