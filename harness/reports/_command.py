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

from toolchaos.reports._core import build_report, scenario_entry
from toolchaos.reports._diff import diff_lines
from toolchaos.reports._levels import (
    LEVEL_ORDER,
    LEVELS,
    certificate,
    could_not_call,
    level_reached,
    not_applicable_lines,
)
from toolchaos.reports._meta import RunMeta, now
from toolchaos.reports._trials import gated, parse_pass_k, pass_k_shortfalls
from toolchaos.reports._write import write_reports

if TYPE_CHECKING:
    from toolchaos.certification import ScenarioVerdict


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--report DIR``, ``--require LEVEL`` and what a report says beyond the verdicts (the agent's
    version, the baseline, the prices), worded the same in every command."""
    parser.add_argument("--report", metavar="DIR",
                        help="write the certification report (report.json, report.md, report.html, junit.xml, "
                             "traces) to DIR; report.md is also appended to $GITHUB_STEP_SUMMARY when set")
    parser.add_argument("--require", metavar="LEVEL", choices=LEVEL_ORDER,
                        help="the level the exit status requires: "
                             + "; ".join(f"{k}: {v.split(':')[0]}" for k, v in LEVELS.items())
                             + " (default: every scenario passes)")
    parser.add_argument("--require-pass-k", metavar="K,P",
                        help="certify only if every critical scenario's pass^K (the chance that K of its trials all "
                             "pass) is at least P, e.g. 3,0.9; run the scenarios with at least K trials (--trials)")
    parser.add_argument("--agent-version", metavar="VERSION",
                        help="the agent's version, shown in the report beside the harness's and the suite's "
                             "(default: its distribution's installed version; the git commit of its working tree "
                             "is shown when there is one)")
    parser.add_argument("--baseline", metavar="OLD",
                        help="compare with an earlier report (a report.json or its directory): regressions, fixes "
                             "and changed figures, printed and shown first in the report")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="with --baseline: exit 1 when a scenario that passed in the baseline does not pass now")
    parser.add_argument("--prices", metavar="FILE",
                        help="a prices file (YAML or JSON: model, dated, prices: {MODEL: {input, output}} in USD per "
                             "million tokens) for the report's estimated cost; see docs/report-schema.md")
    parser.add_argument("--price-model", metavar="NAME", help="the model the tokens are priced as (default: the "
                                                                "prices file's model, else gpt-4o)")


def finish_command(args: argparse.Namespace, verdicts: Sequence[ScenarioVerdict],
                   meta: RunMeta | Mapping[str, Any], out: TextIO | None = None) -> int:
    """End of ``toolchaos certify`` / ``run``: write the report if asked, say the level, return the exit code.

    The certificate (the last line) counts the scenarios that applied to the agent's kind
    (``CERTIFIED for N of M applicable scenarios``); those that did not are named above it, by reason.

    An agent the harness could not call at all is no level: "COULD NOT CERTIFY" and its
    message, exit status 2 (as for any bad input).

    ``meta.require`` is taken from ``args.require`` when that is given.
    """
    m = RunMeta.of(meta)
    require = getattr(args, "require", None)
    if require:
        m.require = require
    if getattr(args, "require_pass_k", None):
        m.require_pass_k = parse_pass_k(args.require_pass_k, "--require-pass-k")
    short: list[str] = []
    if m.require_pass_k is not None and not m.shard:  # K above a critical scenario's trials: said before any file
        short = pass_k_shortfalls(verdicts, m.require_pass_k)
    for name in ("agent_version", "baseline", "prices", "price_model"):  # the command line over the caller's meta
        if getattr(args, name, None):
            setattr(m, name, getattr(args, name))
    if m.ended is None:
        m.ended = now()
    stream = out if out is not None else sys.stderr
    report_dir = getattr(args, "report", None)
    if report_dir:
        paths = write_reports(verdicts, m, report_dir)
        print(f"report: {paths['html']} (also report.md, report.json, junit.xml)", file=stream)
    regressed = _baseline(m, verdicts, stream)
    problem = could_not_call(verdicts)
    if problem is not None:  # the agent never ran: no level to speak of, and a usage error's exit status
        print(f"COULD NOT CERTIFY: {problem}", file=stream)
        return 2
    level = m.require
    ok = gated(verdicts, level, m.require_pass_k, partial=bool(m.shard)) or (bool(m.shard) and not verdicts)
    for line in not_applicable_lines(verdicts):  # named before the certificate, which stays the last line
        print(line, file=stream)
    if m.shard:  # a part of the suite: its level is no certificate, the merged report's is
        print(f"SHARD {m.shard['index']}/{m.shard['total']} {'PASSED' if ok else 'FAILED'}: level reached "
              f"{level_reached(verdicts)}, required {level}", file=stream)
        print("the certificate is the merged report's: toolchaos report merge SHARD_DIR... --out DIR", file=stream)
    else:  # CERTIFIED for N of M applicable scenarios: ...
        for line in short:  # what --require-pass-k found short, above the certificate
            print(f"PASS^K SHORT: {line}", file=stream)
        print(certificate(verdicts, level, m.require_pass_k, ok), file=stream)
    if regressed and getattr(args, "fail_on_regression", False):
        print(f"REGRESSED: {regressed} scenario(s) passed in the baseline and do not now", file=stream)
        return 1
    return 0 if ok else 1


def _baseline(m: RunMeta, verdicts: Sequence[ScenarioVerdict], stream: TextIO) -> int:
    """Print the comparison with the baseline, if there is one; how many scenarios regressed."""
    if not m.baseline:
        return 0
    report, _ = build_report([scenario_entry(v) for v in verdicts], m)
    d = report["baseline"]
    lines = [line for line in diff_lines(d)[2:] if not line.startswith("CHANGED")]  # the figures: in the report
    print("since the baseline:", *lines, sep="\n  ", file=stream)
    return len(d["regressions"])
