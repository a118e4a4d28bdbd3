"""``pytest --chaos-report=DIR --chaos-require=LEVEL`` (toolchaos.pytest_plugin._report).

A scenario item's verdict becomes its entry; here plain test functions hand theirs over with
``record_verdict(item, verdict)``, so these tests do not depend on the YAML scenario loader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Registered by toolchaos.pytest_plugin once it lists the module; harmless twice. Hypothesis's pytest plugin costs
# seconds per in-process session and these tests do not use it.
PLUGIN = ("-p", "toolchaos.pytest_plugin._report", "-p", "no:hypothesispytest", "-p", "no:benchmark")

SCENARIOS = '''
import pytest
from toolchaos.fake_tools import catalogue, faults
from toolchaos import invariants as inv, policies, run
from toolchaos.pytest_plugin._report import record_verdict
from toolchaos.certification._verdict import ScenarioVerdict


def scenario(request, sid, severity, agent):
    expect = [inv.bounded(executions=3)]
    r = run(agent, task="t", tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i"}), name=sid)
    v = ScenarioVerdict(sid, sid, "loops", severity, r, r.violations(*expect), expect, agent=agent)
    record_verdict(request.node, v)
    if not v.passed:
        pytest.fail(v.violations[0].headline(), pytrace=False)


def test_critical(request):
    scenario(request, "loops.critical", "critical", "builtin:guarded")


def test_minor(request):
    scenario(request, "loops.minor", "minor", "builtin:naive")
'''

PLAIN_FAILURE = '''
def test_not_a_scenario():
    assert 1 == 2
'''


def _report(pytester: pytest.Pytester) -> dict[str, object]:
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    assert isinstance(data, dict)
    return data


def test_report_is_written_and_failures_fail_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-report=out", "--chaos-seed=0")
    res.assert_outcomes(passed=1, failed=1)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*toolchaos certification*",
                              "NOT CERTIFIED: 1 of 2 applicable scenarios passed (all applicable); level reached major, "
                              "required all",
                              "report: out*report.html (also report.md, report.json, junit.xml)"])
    data = _report(pytester)
    assert [s["id"] for s in data["scenarios"]] == ["loops.critical", "loops.minor"]  # type: ignore[index]
    assert data["agent"] == {"ref": "builtin:guarded", "version": None, "commit": None}  # type: ignore[index]
    assert (data["level"], data["certified"], data["suite"]["name"]) == ("major", False, "custom")  # type: ignore[index]
    for name in ("report.md", "report.html", "junit.xml", "traces/loops.minor.trace.jsonl"):
        assert (pytester.path / "out" / name).exists()


def test_require_a_level_reached_passes_despite_minor_failures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-report=out", "--chaos-require=major")
    res.assert_outcomes(passed=1, failed=1)
    assert res.ret == pytest.ExitCode.OK
    res.stdout.fnmatch_lines(["CERTIFIED for 1 of 2 applicable scenarios (all applicable): level reached major, "
                              "required major",
                              "failures below level major do not fail the run (--chaos-require=major)"])
    data = _report(pytester)
    assert (data["required_level"], data["certified"]) == ("major", True)


def test_require_a_level_not_reached_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-require=all")  # no report directory: the gate alone
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert not (pytester.path / "out").exists()


def test_require_never_hides_a_failure_that_is_not_a_scenario(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS, test_plain=PLAIN_FAILURE)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-require=critical")
    res.assert_outcomes(passed=1, failed=2)
    assert res.ret == pytest.ExitCode.TESTS_FAILED


def test_require_with_no_scenario_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-require=critical", "--chaos-report=out")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["no chaos scenario ran (run with --chaos); nothing is certified"])
    assert _report(pytester)["totals"] == {"scenarios": 0, "applicable": 0, "passed": 0, "failed": 0, "errors": 0,
                                           "not_applicable": 0}


def test_unknown_level_is_a_usage_error(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest(*PLUGIN, "--chaos-require=majr")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--chaos-require: unknown level 'majr'; did you mean 'major'?*"])


def test_without_the_options_nothing_changes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert "toolchaos certification" not in res.stdout.str()


def test_reports_cross_xdist_workers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    # Only the plugins this needs: three fresh processes importing every installed plugin take long.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    res = pytester.runpytest_subprocess("-p", "xdist", "-p", "toolchaos", *PLUGIN, "-n", "2", "--chaos",
                                        "--chaos-report=out", "--chaos-require=major", "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.OK, res.stdout.str()
    data = _report(pytester)
    assert [s["id"] for s in data["scenarios"]] == ["loops.critical", "loops.minor"]  # type: ignore[index]
    assert Path(pytester.path / "out" / "traces" / "loops.critical.trace.jsonl").exists()


def test_step_summary_from_pytest(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(test_scenarios=SCENARIOS)
    pytester.runpytest(*PLUGIN, "--chaos", "--chaos-report=out")
    assert summary.read_text() == (pytester.path / "out" / "report.md").read_text()


def test_a_baseline_and_the_agent_version(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-report=old", "--chaos-seed=0")
    old = json.loads((pytester.path / "old" / "report.json").read_text())
    old["scenarios"][1]["verdict"] = "pass"  # as if the minor scenario had passed in the last release
    (pytester.path / "old" / "report.json").write_text(json.dumps(old))
    pytester.makeini("[pytest]\nchaos_price_model = gpt-4o-mini\n")
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-report=out", "--chaos-baseline=old",
                             "--agent-version=1.4.0")
    # the figures moved too: the cost is priced as another model now
    res.stdout.fnmatch_lines(["since the baseline: 1 regression, 0 fixes, 0 added, 0 removed, 2 with changed figures",
                              "  REGRESSION loops.minor (minor): pass -> fail: bounded.executions"])
    data = _report(pytester)
    assert data["agent"]["version"] == "1.4.0"  # type: ignore[index]
    assert data["cost"]["model"] == "gpt-4o-mini"  # type: ignore[index]
    assert [m["id"] for m in data["baseline"]["regressions"]] == ["loops.minor"]  # type: ignore[index]
    assert (pytester.path / "out" / "report.md").read_text().count("### Since the baseline") == 1


def test_a_baseline_that_is_no_report_is_said(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scenarios=SCENARIOS)
    res = pytester.runpytest(*PLUGIN, "--chaos", "--chaos-baseline=nowhere")
    assert res.ret == pytest.ExitCode.INTERNAL_ERROR
    res.stdout.fnmatch_lines(["*could not write the report: no report at nowhere (give a report.json or the "
                              "directory holding one)"])
