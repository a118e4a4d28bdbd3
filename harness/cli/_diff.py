"""``toolchaos diff OLD NEW``: two certification reports compared, for a release decision.

Each side is a report.json or the directory holding one. It prints the regressions (passed
before, not now), the fixes, the scenarios added and removed, and per scenario the figures that
moved (executions, side effects, tokens, estimated cost). ``--fail-on-regression`` makes a
regression the exit status (1); ``--markdown`` prints the Markdown that report.md shows.
"""

from __future__ import annotations

import argparse
import json

from toolchaos.reports import baseline_section, diff_lines, diff_reports, load_report

HELP = "compare two certification reports: regressions, fixes, changed figures per scenario"
EXAMPLES = """\
  toolchaos diff last-release/ chaos-report/                     # report directories
  toolchaos diff old/report.json new/report.json --fail-on-regression
  toolchaos diff old/ new/ --json                                 # the comparison as JSON
  toolchaos diff old/ new/ --markdown >> "$GITHUB_STEP_SUMMARY\""""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the baseline: a report.json or a report directory")
    parser.add_argument("new", metavar="NEW", help="the report to compare with it")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a scenario that passed in OLD does not pass in NEW (else the exit is 0)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the comparison as JSON (report.json's baseline)")
    shown.add_argument("--markdown", action="store_true", help="print it as Markdown (as report.md shows it)")


def run(args: argparse.Namespace) -> int:
    d = diff_reports(load_report(args.old), load_report(args.new))
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
    elif args.markdown:
        print("\n".join(baseline_section(d)))
    else:
        print("\n".join(diff_lines(d)))
    return 1 if args.fail_on_regression and d["regressions"] else 0
