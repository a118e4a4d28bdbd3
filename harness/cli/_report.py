"""``toolchaos report merge DIR...``: the reports of a suite's shards, run in separate CI jobs, merged into one.

Each DIR is the report directory one shard wrote (``pytest --chaos-shard=I/N --chaos-report=DIR``,
``toolchaos certify --shard I/N --report DIR``). The merged report (report.json, report.md,
report.html, junit.xml, traces) and its verdict are the unsharded run's, apart from the timings.
Shards of different suite versions, agents or seeds, a shard missing or given twice, are refused
with the cause and exit status 2. The exit status is then the certificate's, as for ``certify``.
"""

from __future__ import annotations

import argparse
import sys

from toolchaos.reports import certificate, could_not_call, diff_lines, merge_reports, not_applicable_lines, read_report

HELP = "merge the certification reports of a suite's shards (separate CI jobs) into one report and verdict"
EXAMPLES = """\
  toolchaos report merge shard-1/ shard-2/ shard-3/ --out chaos-report/
  toolchaos report merge shards/*/ --out chaos-report/ --baseline last-release/ --fail-on-regression"""

ACTIONS = ("merge",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="merge: join the shards' reports into one")
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="the report directory of every shard (each holds report.json and traces/)")
    parser.add_argument("--out", metavar="DIR", default="chaos-report",
                        help="where to write the merged report (default chaos-report)")
    parser.add_argument("--baseline", metavar="OLD",
                        help="compare the merged report with an earlier one (a report.json or its directory); "
                             "without it, the shards' own comparisons with their baseline are joined")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a scenario that passed in the baseline does not pass now")


def run(args: argparse.Namespace) -> int:
    paths = merge_reports(args.dirs, args.out, baseline=args.baseline)
    report = read_report(paths["json"])
    t = report["totals"]
    print(f"merged {len(args.dirs)} shards: {t['passed']}/{t['scenarios']} scenarios passed", file=sys.stderr)
    print(f"report: {paths['html']} (also report.md, report.json, junit.xml)", file=sys.stderr)
    if report["baseline"] is not None:
        print("since the baseline:", *[x for x in diff_lines(report["baseline"])[2:] if not x.startswith("CHANGED")],
              sep="\n  ", file=sys.stderr)
    problem = could_not_call(report["scenarios"])
    if problem is not None:
        print(f"COULD NOT CERTIFY: {problem}", file=sys.stderr)
        return 2
    for line in not_applicable_lines(report["scenarios"]):  # named before the certificate, as certify does
        print(line, file=sys.stderr)
    ok = bool(report["certified"])
    required = report.get("required_pass_k")  # --require-pass-k K,P of the shards: the gate is report.json's
    pass_k = None if required is None else (int(required["k"]), float(required["p"]))
    print(certificate(report["scenarios"], report["required_level"], pass_k, ok), file=sys.stderr)
    if args.fail_on_regression and report["baseline"] is not None and report["baseline"]["regressions"]:
        print(f"REGRESSED: {len(report['baseline']['regressions'])} scenario(s) passed in the baseline and do not now",
              file=sys.stderr)
        return 1
    return 0 if ok else 1
