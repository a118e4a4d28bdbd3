"""Two reports compared (``toolchaos diff``, ``--baseline``): regressions, fixes, changed figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from toolchaos.cli import main
from toolchaos.errors import ReportError
from toolchaos.reports import diff_reports, load_report, read_report, write_reports

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The bundled suite's reports of builtin:naive, builtin:guarded, and builtin:guarded again."""
    from toolchaos.certification import certify, suite

    scenarios = suite()
    out = {}
    for name, agent in (("naive", "builtin:naive"), ("guarded", "builtin:guarded"), ("again", "builtin:guarded")):
        out[name] = tmp_path_factory.mktemp(name)
        write_reports(certify(agent, scenarios), {"agent": agent, "suite": "certification"}, out[name],
                      step_summary=False)
    return out


def test_naive_to_guarded_lists_every_scenario_the_guards_fix(reports: dict[str, Path]) -> None:
    naive, guarded = load_report(reports["naive"]), load_report(reports["guarded"] / "report.json")
    d = diff_reports(naive, guarded)
    failing = {s["id"] for s in naive["scenarios"] if s["verdict"] != "pass"}
    assert guarded["totals"]["passed"] == guarded["totals"]["scenarios"]
    assert {m["id"] for m in d["fixes"]} == failing and len(failing) >= 24  # the 24, the suite has grown
    assert d["regressions"] == [] and d["added"] == [] and d["removed"] == []
    fixed = {m["id"]: m for m in d["fixes"]}
    assert fixed["loop-exact-repeat-timeout"]["first_broken"] == "bounded.executions"  # what broke before
    moved = {c["id"]: c["figures"] for c in d["changed"]}
    assert moved["loop-exact-repeat-timeout"]["executions"][0] > moved["loop-exact-repeat-timeout"]["executions"][1]


def test_the_command_prints_the_fixes_and_exits_0(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    assert main(["diff", str(reports["naive"]), str(reports["guarded"]), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    fixes = [line for line in out.splitlines() if line.startswith("FIXED")]
    assert len(fixes) == load_report(reports["naive"])["totals"]["failed"]
    assert "0 regressions, " in out and f"{len(fixes)} fixes" in out


def test_the_same_agent_twice_lists_nothing(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(reports["guarded"]), str(reports["again"]), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "0 regressions, 0 fixes, 0 added, 0 removed, 0 with changed figures" in out
    assert not [line for line in out.splitlines() if line.split(" ")[0] in ("REGRESSION", "FIXED", "CHANGED")]


def test_a_regression_fails_only_when_asked(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(reports["guarded"]), str(reports["naive"])]) == 0
    assert main(["diff", str(reports["guarded"]), str(reports["naive"]), "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION loop-exact-repeat-timeout (critical): pass -> fail: bounded.executions" in out
    assert main(["diff", str(reports["guarded"]), str(reports["naive"]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["regressions"]) == load_report(reports["naive"])["totals"]["failed"]
    assert main(["diff", str(reports["guarded"]), str(reports["naive"]), "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("### Since the baseline")


def test_not_a_report_is_one_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text('{"schema": "other"}')
    with pytest.raises(ReportError, match=r"x\.json: not a toolchaos report"):
        load_report(tmp_path / "x.json")
    assert main(["diff", str(tmp_path / "x.json"), str(tmp_path / "missing")]) == 2
    assert "not a toolchaos report" in capsys.readouterr().err
    (tmp_path / "old.json").write_text('{"schema": "toolchaos.report", "schema_version": 1}')
    with pytest.raises(ReportError, match="schema version 1; a diff reads versions 2, 3"):
        load_report(tmp_path / "old.json")


def _keys(obj: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            out |= _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _keys(v)
    return out


def test_a_report_with_a_baseline_shows_it_first(reports: dict[str, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchaos.certification import certify, suite

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    scenarios = [s for s in suite() if s.name.startswith("loop-")]
    write_reports(certify("builtin:naive", scenarios), {"agent": "builtin:naive", "baseline": str(reports["guarded"])},
                  tmp_path / "out")
    data = read_report(tmp_path / "out" / "report.json")
    base = data["baseline"]
    assert base["old"]["agent"] == "builtin:guarded" and len(base["regressions"]) == len(scenarios)
    assert len(base["removed"]) == len(suite()) - len(scenarios)
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    missing = sorted(k for k in _keys(base) if f"`{k}`" not in doc and k not in ("figures",))
    assert not missing, f"baseline fields missing from docs/report-schema.md: {missing}"
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.index("### Since the baseline") < md.index("| Agent |")
    assert f"**{len(scenarios)} regressions**, 0 fixes" in md
    assert "| ❌ regression | `loop-exact-repeat-timeout` | pass | fail | `bounded.executions` |" in md
    assert "### Since the baseline" in summary.read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.index('id="baseline"') < html.index('id="summary"')
    assert f'data-regressions="{len(scenarios)}"' in html


def test_certify_compares_with_a_baseline_and_can_fail_on_a_regression(
        reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["certify", "--agent", "builtin:naive", "-k", "loop-exact-*", "--baseline", str(reports["guarded"])]
    assert main([*args, "--require", "critical"]) == 1  # not certified anyway
    err = capsys.readouterr().err
    assert "since the baseline:" in err and "REGRESSION loop-exact-repeat-timeout" in err
    args = ["certify", "--agent", "builtin:guarded", "-k", "loop-exact-*", "--baseline", str(reports["naive"]),
            "--fail-on-regression"]
    assert main(args) == 0
    assert "FIXED      loop-exact-repeat-timeout" in capsys.readouterr().err
