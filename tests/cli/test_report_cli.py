"""The report options of commands (``toolchaos certify``/``run``): --report DIR, --require LEVEL."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
import report_samples as sup
from toolchaos.reports import add_report_arguments, exit_code, finish_command, read_report


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="toolchaos certify")
    add_report_arguments(parser)
    return parser.parse_args(argv)


def test_options() -> None:
    args = parse("--report", "out", "--require", "major")
    assert (args.report, args.require) == ("out", "major")
    assert (parse().report, parse().require) == (None, None)
    with pytest.raises(SystemExit):
        parse("--require", "everything")


def test_exit_code_follows_the_level() -> None:
    mixed = [sup.timeout_repeat("builtin:guarded"), sup.passing_minor("builtin:guarded")]
    mixed[1].violations = [sup.timeout_repeat("builtin:naive").violations[0]]  # the minor one failed
    assert exit_code(mixed) == 1  # default: every scenario
    assert exit_code(mixed, "major") == 0 and exit_code(mixed, "critical") == 0
    assert exit_code([], "critical") == 1


def test_finish_writes_the_report_and_returns_the_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    verdicts = sup.suite("builtin:naive")
    out = io.StringIO()
    code = finish_command(parse("--report", str(tmp_path / "r"), "--require", "critical"), verdicts,
                          {"agent": "builtin:naive", "started": "2026-01-01T00:00:00Z"}, out)
    assert code == 1
    assert out.getvalue().splitlines() == [
        f"report: {tmp_path / 'r' / 'report.html'} (also report.md, report.json, junit.xml)",
        "NOT CERTIFIED: 2 of 4 applicable scenarios passed (all applicable); level reached none, required critical"]
    data = read_report(tmp_path / "r" / "report.json")
    assert (data["required_level"], data["certified"], data["started"]) == ("critical", False,
                                                                            "2026-01-01T00:00:00Z")
    out = io.StringIO()
    assert finish_command(parse(), sup.suite("builtin:guarded"), {"agent": "builtin:guarded"}, out) == 0
    assert out.getvalue() == ("CERTIFIED for 4 of 4 applicable scenarios (all applicable): level reached all, "
                              "required all\n")


def test_a_regression_fails_a_certified_run_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchaos.reports import write_reports

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    write_reports([sup.passing_minor("builtin:guarded")], {"agent": "builtin:guarded"}, tmp_path / "old",
                  step_summary=False)
    now = [sup.passing_minor("builtin:guarded")]
    now[0].violations = [sup.timeout_repeat("builtin:naive").violations[0]]  # the minor scenario fails now
    out = io.StringIO()
    args = ("--require", "critical", "--baseline", str(tmp_path / "old"))
    assert finish_command(parse(*args), now, {"agent": "builtin:guarded"}, out) == 0  # certified at critical
    assert "REGRESSION legit.transient_503 (minor): pass -> fail: bounded.executions" in out.getvalue()
    out = io.StringIO()
    assert finish_command(parse(*args, "--fail-on-regression"), now, {"agent": "builtin:guarded"}, out) == 1
    assert out.getvalue().rstrip().endswith("REGRESSED: 1 scenario(s) passed in the baseline and do not now")
