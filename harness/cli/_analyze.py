"""``toolchaos analyze``: loop forensics over call logs (exit 1 when a session is looping)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from toolchaos.errors import CommandError, LogFormatError
from toolchaos.forensics import Analysis, SessionReport, Thresholds, as_json, render_table
from toolchaos.logs import FORMATS

HELP = "loop forensics over traces and agent logs: repeats, cycles (A-B to 4 steps), stalls, intervals, token growth"
EXAMPLES = """\
  toolchaos analyze runs/*.trace.jsonl                 # toolchaos traces (gzip too)
  toolchaos analyze prod-sample.jsonl.gz --json        # machine-readable; exit 1 when a session loops
  toolchaos analyze chat.json --format openai-chat     # OpenAI chat, openai-responses, anthropic, otel
  toolchaos analyze spans.json --loop-repeats 20 --loop-streak 20"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE", help="trace or log files (.gz is read too)")
    parser.add_argument("--format", default="auto", choices=["auto", *FORMATS],
                        help="log format (default: detected from the first record)")
    parser.add_argument("--json", action="store_true", help="one JSON object: files, events, sessions, summary")
    parser.add_argument("--top", type=int, default=5, metavar="N", help="most repeated fingerprints to list (5)")
    parser.add_argument("--session", action="append", default=[], metavar="ID",
                        help="report only this session (repeatable)")
    parser.add_argument("--loop-repeats", type=int, metavar="N",
                        help="calls of one fingerprint that can make a loop (default 10)")
    parser.add_argument("--loop-streak", type=int, metavar="N",
                        help="calls in a row without progress that make a loop (default 10)")
    parser.add_argument("--loop-cycle", type=int, metavar="N",
                        help="calls going round a cycle (A-B, or a round of 3 or 4 calls) that make a loop (default 8)")
    parser.add_argument("--fail-on", choices=["looping", "suspicious"], default="looping",
                        help="exit 1 when a session is judged this or worse (default looping)")


def run(args: argparse.Namespace) -> int:
    analysis = Analysis(_thresholds(args))
    for raw in args.paths:
        _add(analysis, raw, args.format)
    reports = _selected(analysis.reports(args.top), args.session)
    if args.json:
        print(json.dumps(as_json(reports, analysis.files, analysis.events), indent=2))
    else:
        print(render_table(reports) if reports else "no sessions in the files")
    bad = {"looping"} if args.fail_on == "looping" else {"looping", "suspicious"}
    return 1 if any(r.verdict in bad for r in reports) else 0


def _thresholds(args: argparse.Namespace) -> Thresholds:
    """The default rules with the loop thresholds given on the command line (checked, with --top)."""
    overrides = {k: v for k, v in (("loop_repeats", args.loop_repeats), ("loop_streak", args.loop_streak),
                                   ("loop_cycle", args.loop_cycle)) if v is not None}
    for key, value in overrides.items():
        if value < 1:
            raise CommandError(f"--{key.replace('_', '-')} must be at least 1, got {value}")
    if args.top < 0:
        raise CommandError(f"--top must be at least 0, got {args.top}")
    return Thresholds(**overrides)


def _add(analysis: Analysis, raw: str, format: str) -> None:
    path = Path(raw)
    shown = raw.replace("\x00", "\\0")
    if not path.exists() and not path.is_symlink():
        raise CommandError(f"no such file: {shown}")
    try:
        analysis.add_path(path, format)
    except LogFormatError as exc:
        raise CommandError(str(exc)) from None
    except UnicodeDecodeError:  # a binary file
        raise CommandError(f"{shown}: not a text log (not UTF-8); analyze reads "
                           f"JSON or JSON Lines, gzipped or not") from None
    except (OSError, EOFError) as exc:  # unreadable, a special file, a symlink loop, a truncated gzip file
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise CommandError(f"{shown}: cannot read ({why})") from None


def _selected(reports: list[SessionReport], sessions: list[str]) -> list[SessionReport]:
    """The reports of the sessions asked for (all when none was); a session no file has is an error."""
    if not sessions:
        return reports
    known = {r.session for r in reports}
    missing = [s for s in sessions if s not in known]
    if missing:
        raise CommandError(f"no session {missing[0]!r} in the files (sessions: {', '.join(sorted(known)[:10])})")
    return [r for r in reports if r.session in sessions]
