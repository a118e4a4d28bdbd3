"""Scenarios that do not apply to the agent's kind (N/A) in every report: counted apart, named with why.

The N/A verdicts are real: bundled scenarios needing what a process agent lacks, run against one
(nothing starts). Beside them, verdicts of in-process runs (tests/report_samples.py). A report
then counts the levels over the applicable scenarios only, says "CERTIFIED for N of M applicable
scenarios" and names the others with their reason in report.json, report.md, report.html and
junit.xml (skipped testcases); a comparison with a baseline counts no N/A as a regression.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import report_samples as sup
from toolchaos.certification import run_scenario, suite
from toolchaos.process import ProcessAgent
from toolchaos.reports import build_report, diff_reports, read_report, scenario_entry, write_reports

NA_IDS = ("budget-wall-clock", "side-concurrent-same-key")
AGENT = ProcessAgent(("/nonexistent/agent-program",))


def _na() -> list[Any]:
    return [run_scenario(s, AGENT) for s in suite() if s.name in NA_IDS]


def _write(tmp_path: Path, verdicts: list[Any]) -> dict[str, Any]:
    write_reports(verdicts, {**sup.META, "agent": "cmd:/nonexistent/agent-program"}, tmp_path, step_summary=False)
    return read_report(tmp_path / "report.json")


def test_report_json_counts_na_apart_and_says_why(tmp_path: Path) -> None:
    data = _write(tmp_path, [*sup.suite("builtin:naive"), *_na()])
    assert data["totals"] == {"scenarios": 6, "applicable": 4, "passed": 2, "failed": 2, "errors": 0,
                              "not_applicable": 2}
    assert [n["id"] for n in data["not_applicable"]] == list(NA_IDS)
    by = {s["id"]: s for s in data["scenarios"]}
    wall = by["budget-wall-clock"]
    assert (wall["verdict"], wall["terminal_state"], wall["trace"], wall["invariants"]) == ("n/a", None, None, [])
    assert wall["needs"] == ["virtual_time", "budgets"] and wall["first_broken"] is None and wall["failure_severity"] is None
    assert wall["not_applicable"]["kind"] == "process" and wall["not_applicable"]["lacking"] == ["virtual_time", "budgets"]
    assert wall["not_applicable"]["reason"].startswith("needs virtual_time, which a process agent lacks")
    assert by["side-concurrent-same-key"]["not_applicable"]["lacking"] == ["two_workers"]
    assert by["loops.timeout_repeat"]["not_applicable"] is None and by["loops.timeout_repeat"]["needs"] == []
    assert not (tmp_path / "traces" / "budget-wall-clock.trace.jsonl").exists()  # nothing ran: no trace
    # the levels count what applied: the N/A critical side-concurrent-same-key is not one of critical's scenarios
    assert data["levels"]["critical"]["scenarios"] == 2 and data["levels"]["all"]["scenarios"] == 4
    cats = {c["category"]: c for c in data["categories"]}
    assert cats["budgets"] == {"category": "budgets", "scenarios": 1, "passed": 0, "failed": 0, "errors": 0,
                               "not_applicable": 1, "severity": {}}
    assert wall["coverage"]["declared"] == 0 and wall["figures"]["executions"] == 0  # no rule of it went unfired
    assert not any(t.startswith(NA_IDS) for t in data["coverage"]["never_fired"])


def test_the_certificate_is_for_the_applicable_scenarios_and_names_the_others(tmp_path: Path) -> None:
    data = _write(tmp_path, [*sup.suite("builtin:guarded"), *_na()])
    assert data["certified"] and data["level"] == "all"
    md = (tmp_path / "report.md").read_text()
    assert "✅ **CERTIFIED** for 4 of 4 applicable scenarios (N/A: 2), at level **all** (required: all)" in md
    assert "| Result | 4 passed, 0 failed, 0 errors, 2 not applicable |" in md
    assert "### Not applicable (2)" in md and "None: every applicable scenario passed." in md
    assert "- `budget-wall-clock`: needs virtual_time, which a process agent lacks" in md
    assert "| `budget-wall-clock` | budgets | major | ➖ n/a |" in md
    html = (tmp_path / "report.html").read_text()
    assert "CERTIFIED for 4 of 4 applicable scenarios (N/A: 2), at level all" in html
    assert '<h2 id="not-applicable">Not applicable (2)</h2>' in html
    assert '<span class="badge na">N/A</span><code>budget-wall-clock</code>' in html
    assert "Not applicable, not run: needs two_workers, which a process agent lacks" in html
    suite_node = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite_node is not None and suite_node.get("skipped") == "2" and suite_node.get("tests") == "6"
    skipped = {case.get("name"): case.find("skipped") for case in suite_node.iter("testcase")}
    assert {name for name, node in skipped.items() if node is not None} == set(NA_IDS)
    message = skipped["budget-wall-clock"].get("message")  # type: ignore[union-attr]
    assert message is not None and message.startswith("N/A: needs virtual_time, which a process agent lacks")
    props = {p.get("name"): p.get("value") for p in suite_node.find("properties")}  # type: ignore[union-attr]
    assert (props["applicable"], props["not_applicable"]) == ("4", "2")


def test_only_na_scenarios_certify_nothing(tmp_path: Path) -> None:
    data = _write(tmp_path, _na())
    assert (data["certified"], data["level"], data["totals"]["applicable"]) == (False, "none", 0)
    assert "❌ **NOT CERTIFIED**: 0 of 0 applicable scenarios passed (N/A: 2)" in (tmp_path / "report.md").read_text()


def test_a_baseline_comparison_counts_no_na_as_a_regression_or_a_fix() -> None:
    passed = [sup.passing_minor("builtin:guarded")]
    old, _ = build_report([scenario_entry(v) for v in passed], sup.META)
    new_entries = [scenario_entry(v) for v in _na()]
    for entry, _ in new_entries:  # the same ids as before, now N/A (another kind of agent ran)
        entry["id"] = "legit.transient_503"
    new, _ = build_report(new_entries[:1], sup.META)
    d = diff_reports(old, new)
    assert (d["regressions"], d["fixes"], d["changed"]) == ([], [], [])
    back = diff_reports(new, old)
    assert (back["regressions"], back["fixes"]) == ([], [])
    assert json.dumps(d)  # plain data
