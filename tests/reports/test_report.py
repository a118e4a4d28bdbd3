"""Certification reports: report.json (schema), report.md, report.html, junit.xml, levels, step summary."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import report_samples as sup
from toolchaos import invariants as inv
from toolchaos import policies
from toolchaos.fake_tools import catalogue, faults
from toolchaos.reports import (
    LEVEL_ORDER,
    SCHEMA,
    SCHEMA_VERSION,
    ReportError,
    RunMeta,
    append_step_summary,
    build_report,
    certified,
    level_reached,
    read_report,
    scenario_entry,
    write_reports,
)
from toolchaos.reports._markdown import render_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def naive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("naive")
    write_reports(sup.suite("builtin:naive"), sup.META, out, step_summary=False)
    return out


@pytest.fixture(scope="module")
def report(naive_dir: Path) -> dict[str, Any]:
    return read_report(naive_dir / "report.json")


# --- levels ------------------------------------------------------------------------------


def rows(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"severity": sev, "verdict": v} for sev, v in pairs]


@pytest.mark.parametrize(("items", "reached"), [
    (rows(("critical", "pass"), ("major", "pass"), ("minor", "pass")), "all"),
    (rows(("critical", "pass"), ("major", "pass"), ("minor", "fail")), "major"),
    (rows(("critical", "pass"), ("major", "fail"), ("minor", "pass")), "critical"),
    (rows(("critical", "fail"), ("major", "pass"), ("minor", "pass")), "none"),
    (rows(("critical", "error"), ("major", "pass")), "none"),
    (rows(("major", "pass"), ("minor", "fail")), "major"),  # no critical scenario: critical holds vacuously
    (rows(("critical", "pass"), ("odd", "fail")), "major"),  # an unknown severity only counts for "all"
    (rows(("critical", "pass"), ("minor", "pass"), ("advisory", "fail")), "all"),  # advisory: required by no level
    (rows(("advisory", "pass"),), "none"),  # only advisory ones tested: nothing a level counts
    ([], "none"),  # nothing tested: nothing certified
])
def test_level_reached_is_the_highest_level_whose_scenarios_all_pass(items: list[dict[str, str]],
                                                                     reached: str) -> None:
    assert level_reached(items) == reached
    for level in LEVEL_ORDER:
        expected = reached != "none" and LEVEL_ORDER.index(level) <= LEVEL_ORDER.index(reached)
        assert certified(items, level) is expected, level


def test_certified_takes_verdicts_too() -> None:
    good = sup.suite("builtin:guarded")
    assert certified(good, "all") and level_reached(good) == "all"
    bad = sup.suite("builtin:naive")
    assert not certified(bad, "critical") and level_reached(bad) == "none"
    # the critical ones pass, one major fails: the level is "critical"
    mixed = [sup.timeout_repeat("builtin:guarded"), sup.lost_payment("builtin:guarded"),
             sup.timeout_repeat("builtin:naive")]
    mixed[2].severity = "major"
    assert level_reached(mixed) == "critical"
    assert certified(mixed, "critical") and not certified(mixed, "major")


def test_a_false_completed_counts_as_major_not_at_its_scenarios_severity() -> None:
    goal = inv.goal(successes={"fetch_invoice": 1})
    claimed = sup.verdict("loops.false_claim", "A loop bounded, then a false COMPLETED", "loops", "critical",
                          "builtin:doomloop", [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                          policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), [inv.bounded(executions=3), goal])
    assert [v.invariant for v in claimed.violations] == ["goal"]
    assert (claimed.severity, claimed.failure_severity) == ("critical", "major")
    assert level_reached([claimed]) == "critical" and not certified([claimed], "major")
    entry, events = scenario_entry(claimed)
    assert entry["failure_severity"] == "major" and entry["invariants"][1]["violations"][0]["severity"] == "major"
    assert level_reached([entry]) == "critical"  # report entries (from xdist workers) judge alike
    runaway = sup.timeout_repeat("builtin:naive")
    assert runaway.failure_severity == "critical" and level_reached([claimed, runaway]) == "none"
    md = render_markdown(*build_report([(entry, events)], sup.META))
    assert "*loops, critical*, failing as **major**: a reporting failure (COMPLETED claimed, the goal not met)" in md


def test_unknown_level_is_one_clear_error() -> None:
    with pytest.raises(ReportError, match=r"unknown level 'majr'; did you mean 'major'\?.*critical, major, all"):
        certified([], "majr")
    with pytest.raises(ReportError, match="unknown level"):
        build_report([], {"require": "everything"})
    with pytest.raises(ReportError, match="unknown report metadata 'agnet'"):
        RunMeta.of({"agnet": "x"})


# --- report.json -------------------------------------------------------------------------


def test_writes_every_file_and_the_traces(naive_dir: Path) -> None:
    names = sorted(p.relative_to(naive_dir).as_posix() for p in naive_dir.rglob("*") if p.is_file())
    assert names == ["junit.xml", "report.html", "report.json", "report.md",
                     "traces/legit.paginate.trace.jsonl", "traces/legit.transient_503.trace.jsonl",
                     "traces/loops.timeout_repeat.trace.jsonl", "traces/side_effects.lost_payment.trace.jsonl"]


def test_write_reports_returns_the_paths(tmp_path: Path) -> None:
    paths = write_reports([sup.paginate("builtin:guarded")], {"agent": "builtin:guarded"}, tmp_path / "new" / "dir",
                          step_summary=False)
    assert set(paths) == {"json", "md", "html", "junit", "traces"}
    assert all(p.exists() for p in paths.values())


def test_report_json_header(report: dict[str, Any]) -> None:
    assert report["schema"] == SCHEMA and report["schema_version"] == SCHEMA_VERSION
    assert report["harness"]["name"] == "toolchaos" and report["harness"]["version"]
    # a built-in agent is part of the harness: toolchaos's version is not shown as the agent's
    assert report["agent"] == {"ref": "builtin:naive", "version": None, "commit": None}
    assert report["seed"] == 0
    assert report["suite"]["name"] == "demo" and report["suite"]["version"] == "1"
    assert report["suite"]["hash"].startswith("sha256:") and report["suite"]["scenarios"] == 4
    assert report["started"] == "2026-01-02T03:04:05Z" and report["ended"] == "2026-01-02T03:04:06Z"
    assert report["duration_seconds"] == 1.0
    assert (report["required_level"], report["level"], report["certified"]) == ("all", "none", False)
    assert report["levels"]["critical"] == {"reached": False, "scenarios": 2, "passed": 0,
                                            "meaning": report["levels"]["critical"]["meaning"]}
    assert report["totals"] == {"scenarios": 4, "applicable": 4, "passed": 2, "failed": 2, "errors": 0,
                                "not_applicable": 0}
    assert report["not_applicable"] == []
    cats = {c["category"]: c for c in report["categories"]}
    assert [c["category"] for c in report["categories"]] == ["loops", "side_effects", "legit"]
    assert cats["legit"]["passed"] == 2 and cats["legit"]["severity"] == {
        "major": {"scenarios": 1, "passed": 1}, "minor": {"scenarios": 1, "passed": 1}}


def test_report_json_scenarios_carry_the_evidence(report: dict[str, Any]) -> None:
    by = {s["id"]: s for s in report["scenarios"]}
    assert list(by) == sorted(by)  # sorted by id: the order does not depend on how they ran
    loop = by["loops.timeout_repeat"]
    assert (loop["category"], loop["severity"], loop["verdict"]) == ("loops", "critical", "fail")
    assert loop["content_hash"] == "sha256:loops.timeout_repeat"
    assert loop["terminal_state"] == "FAILED" and loop["guard"] is None
    assert loop["executions"] == {"fetch_invoice": 40}
    assert loop["figures"]["executions"] == 40 and loop["figures"]["model_turns"] == 40
    assert loop["trace"] == "traces/loops.timeout_repeat.trace.jsonl"
    inv = {i["name"]: i for i in loop["invariants"]}
    assert list(inv) == ["bounded", "terminal_state", "stop_report", "no_execution_after_refusal"]
    b = inv["bounded"]
    assert (b["passed"], b["expected"], b["actual"], b["step"], b["seq"]) == (
        False, "at most 3 tool executions", "40 tool executions", 4, 8)
    assert b["params"] == {"executions": 3} and b["violations"][0]["invariant"] == "bounded.executions"
    held = inv["no_execution_after_refusal"]
    assert held["passed"] and held["violations"] == [] and held["actual"] == "held"

    pay = by["side_effects.lost_payment"]
    assert pay["side_effects"] == {"charge_payment": {"executions": 2, "applied": 2, "replayed": 0, "unknown": 1,
                                                      "keys": {"op-1": 2}, "duplicates": ["op-1"]}}
    assert [(f["seq"], f["applied"], f["status"]) for f in pay["effects"]] == [(2, True, "unknown"), (4, True, "ok")]
    assert {i["name"]: i["actual"] for i in pay["invariants"]} == {"idempotent": "applied 2 times",
                                                                  "max_side_effects": "2 applied"}


def test_held_invariants_show_what_actually_happened() -> None:
    entry, _ = scenario_entry(sup.timeout_repeat("builtin:guarded"))
    actual = {i["name"]: (i["expected"], i["actual"]) for i in entry["invariants"]}
    # the reference retries the timeout twice within its turn: transport retries, counted apart from the request
    assert actual["bounded"] == ("at most 3 tool executions", "1 tool executions; 2 transport retries besides")
    assert actual["terminal_state"] == ("one of STOPPED_LOOP_GUARD, NEEDS_HUMAN", "STOPPED_LOOP_GUARD")
    assert entry["guard"] == "retry_budget" and entry["stop_report"]["guard"] == "retry_budget"
    assert entry["figures"]["refusals"] == 1
    pay, _ = scenario_entry(sup.lost_payment("builtin:guarded"))
    assert {i["name"]: i["actual"] for i in pay["invariants"]} == {"idempotent": "at most 1 per key",
                                                                  "max_side_effects": "1 applied"}


def test_a_scenario_whose_policy_crashed_is_an_error_not_a_failure() -> None:
    v = sup.paginate("builtin:guarded")  # a runner that caught the policy's exception reports it like this:
    v.result = dataclasses.replace(v.result, harness_stop="policy", terminal_state="CRASHED",
                                   error="Traceback (most recent call last):\nRuntimeError: bug in the test\n")
    entry, _ = scenario_entry(v)
    assert entry["verdict"] == "error" and entry["harness_stop"] == "policy"
    assert entry["error"] == "RuntimeError: bug in the test"
    report, _ = build_report([(entry, [])], {"agent": "a"})
    assert report["totals"]["errors"] == 1 and not report["certified"]


def test_a_scenario_the_watchdog_ended_says_which_limit_and_its_value() -> None:
    v = sup.paginate("builtin:guarded")
    assert scenario_entry(v)[0]["watchdog"] is None  # the agent ended it
    v.result = dataclasses.replace(v.result, harness_stop="watchdog", terminal_state="WATCHDOG",
                                   watchdog={"limit": "total", "seconds": 15.0},
                                   error="the run went on for 15s of real time in all without reaching a ceiling, "
                                         "its total limit, 3 times the no-progress limit of 5s")
    entry, _ = scenario_entry(v)
    assert entry["watchdog"] == {"limit": "total", "seconds": 15.0} and entry["harness_stop"] == "watchdog"
    assert json.loads(json.dumps(entry))["watchdog"] == entry["watchdog"]


def test_traces_are_written_beside_the_report(naive_dir: Path, report: dict[str, Any]) -> None:
    for s in report["scenarios"]:
        lines = (naive_dir / s["trace"]).read_text().splitlines()
        events = [json.loads(line) for line in lines]
        assert events[-1]["kind"] == "end" and events[-1]["state"] == s["terminal_state"]


def test_duplicate_ids_get_distinct_trace_files(tmp_path: Path) -> None:
    a, b = sup.paginate("builtin:guarded"), sup.paginate("builtin:naive")
    paths = write_reports([a, b], {}, tmp_path, step_summary=False)
    data = read_report(paths["json"])
    assert sorted(s["trace"] for s in data["scenarios"]) == ["traces/legit.paginate-2.trace.jsonl",
                                                             "traces/legit.paginate.trace.jsonl"]


def test_read_report_refuses_other_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"x": 1}')
    with pytest.raises(ReportError, match="not a toolchaos report"):
        read_report(tmp_path / "a.json")
    (tmp_path / "b.json").write_text(json.dumps({"schema": SCHEMA, "schema_version": 99}))
    with pytest.raises(ReportError, match="schema version 99"):
        read_report(tmp_path / "b.json")


def test_unwritable_report_directory_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ReportError, match="cannot create the report directory"):
        write_reports([], {}, tmp_path / "file" / "out", step_summary=False)


def _keys(obj: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix.endswith(("executions", "side_effects", "keys", "levels", "severity", "params", "stop_report",
                                ".tools", ".faults")):
                continue  # keyed by data (tool, operation key, level...), not schema fields
            out.add(k)
            out |= _keys(v, f"{prefix}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            out |= _keys(v, prefix)
    return out


def test_every_report_field_is_documented(report: dict[str, Any]) -> None:
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    documented = set(re.findall(r"`([a-z_]+)`", doc))
    missing = sorted(_keys(report) - documented)
    assert not missing, f"fields missing from docs/report-schema.md: {missing}"
    assert f"schema_version` | integer | `{SCHEMA_VERSION}`" in doc


# --- determinism -------------------------------------------------------------------------

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _normalised(out: Path) -> dict[str, str]:
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            text = STAMP.sub("<ts>", p.read_text(encoding="utf-8"))
            text = re.sub(r'"duration_seconds": [0-9.]+', '"duration_seconds": <d>', text)
            text = re.sub(r' time="[0-9.]+"', ' time="<d>"', text)
            files[p.relative_to(out).as_posix()] = text
    return files


def test_two_reports_of_the_same_agent_seed_and_suite_differ_only_in_timestamps(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write_reports(sup.suite("builtin:naive", seed=3), {**sup.META, "seed": 3}, one, step_summary=False)
    meta = {**sup.META, "seed": 3, "started": "2027-05-06T07:08:09Z", "ended": "2027-05-06T07:10:00Z"}
    write_reports(list(reversed(sup.suite("builtin:naive", seed=3))), meta, two, step_summary=False)
    a, b = _normalised(one), _normalised(two)
    assert list(a) == list(b)
    for name in a:
        assert a[name] == b[name], name
    raw_a, raw_b = (one / "report.json").read_text(), (two / "report.json").read_text()
    assert raw_a != raw_b  # the timestamps did differ
    for name in ("traces/loops.timeout_repeat.trace.jsonl",):
        assert (one / name).read_bytes() == (two / name).read_bytes()


def test_default_timestamps_are_utc_seconds(tmp_path: Path) -> None:
    write_reports([sup.paginate("builtin:guarded")], {"agent": "a"}, tmp_path, step_summary=False)
    data = read_report(tmp_path / "report.json")
    assert STAMP.fullmatch(data["started"]) and STAMP.fullmatch(data["ended"])


# --- report.md and the step summary ------------------------------------------------------


def test_markdown_summary(naive_dir: Path) -> None:
    md = (naive_dir / "report.md").read_text()
    assert md.startswith("## toolchaos certification: builtin:naive\n\n❌ **NOT CERTIFIED**: 2 of 4 applicable "
                         "scenarios passed (all applicable); required level **all**, reached **none**")
    assert "| Suite | demo 1, 4 scenarios, `sha256:" in md
    assert "| **critical** | every critical scenario passes" in md and "| 0/2 | ❌ |" in md
    assert "| loops | 1 | 0 | **1** | 0/1 | – | – |" in md
    assert "| legit | 2 | 2 | 0 | – | 1/1 | 1/1 |" in md
    assert "### Failures (2)" in md
    assert "#### ❌ `loops.timeout_repeat`: Exact repeat on a timing-out tool" in md
    assert "| ❌ `bounded.executions` | at most 3 tool executions | 40 tool executions | step 4, event #8 |" in md
    assert "Duplicate side effects: `charge_payment`: `op-1` applied 2 times" in md
    assert "<details><summary>Trace around event #8; full trace: `traces/loops.timeout_repeat.trace.jsonl`" in md
    assert ">> 8    4     90.0s   tool   fetch_invoice" in md
    assert "| `legit.paginate` | legit | major | ✅ pass |  | COMPLETED | 3 | 0 | 709 | $0.0023 | 0 s |" in md


def test_markdown_when_certified(tmp_path: Path) -> None:
    write_reports(sup.suite("builtin:guarded"), {**sup.META, "agent": "builtin:guarded"}, tmp_path,
                  step_summary=False)
    md = (tmp_path / "report.md").read_text()
    assert "✅ **CERTIFIED** for 4 of 4 applicable scenarios (all applicable), at level **all** (required: all)" in md
    assert "### Failures\n\nNone: every scenario passed." in md


def test_markdown_escapes_table_cells(tmp_path: Path) -> None:
    v = sup.paginate("builtin:naive")
    v.title = "pipes | and\nnewlines"
    v.category = "a|b"
    write_reports([v], {}, tmp_path, step_summary=False)
    md = (tmp_path / "report.md").read_text()
    assert "| a\\|b | 1 | 1 | 0 |" in md


def test_step_summary_is_appended_when_the_variable_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_reports([sup.timeout_repeat("builtin:naive")], sup.META, tmp_path / "r1")
    write_reports([sup.timeout_repeat("builtin:guarded")], {**sup.META, "agent": "builtin:guarded"}, tmp_path / "r2")
    text = summary.read_text()
    md1, md2 = (tmp_path / "r1" / "report.md").read_text(), (tmp_path / "r2" / "report.md").read_text()
    assert text == "# earlier step\n" + md1 + md2
    write_reports([sup.paginate("builtin:guarded")], {}, tmp_path / "r3", step_summary=False)
    assert summary.read_text() == text  # step_summary=False leaves it alone


def test_no_step_summary_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_step_summary("x") is None
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")
    assert append_step_summary("x") is None


def test_huge_step_summary_is_truncated_under_githubs_limit(tmp_path: Path) -> None:
    target = tmp_path / "s.md"
    append_step_summary("line\n" * 400_000, env={"GITHUB_STEP_SUMMARY": str(target)})
    text = target.read_text()
    assert len(text.encode()) < 1_000_000 and text.endswith("see report.md for the rest)*\n")


# --- junit.xml ---------------------------------------------------------------------------


def test_junit_has_one_testcase_per_scenario_with_figures(naive_dir: Path) -> None:
    root = ET.parse(naive_dir / "junit.xml").getroot()
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "2"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("timestamp") == "2026-01-02T03:04:05Z"
    props = {p.get("name"): p.get("value") for p in suite.iterfind("properties/property")}
    assert props["agent"] == "builtin:naive" and props["certified"] == "false" and props["level"] == "none"
    cases = {c.get("name"): c for c in suite.iterfind("testcase")}
    assert sorted(cases) == ["legit.paginate", "legit.transient_503", "loops.timeout_repeat",
                             "side_effects.lost_payment"]
    loop = cases["loops.timeout_repeat"]
    assert loop.get("classname") == "toolchaos.demo.loops"
    figures = {p.get("name"): p.get("value") for p in loop.iterfind("properties/property")}
    assert figures["severity"] == "critical" and figures["executions"] == "40"
    assert figures["executions.fetch_invoice"] == "40" and figures["terminal_state"] == "FAILED"
    failure = loop.find("failure")
    assert failure is not None and failure.get("type") == "bounded.executions"
    assert failure.get("message") == "bounded.executions: expected at most 3 tool executions; actual: 40 tool executions"
    assert "trace around event #8" in (failure.text or "")
    assert cases["legit.paginate"].find("failure") is None


# --- report.html (the browser check is in test_report_browser.py) ------------------------


def test_html_is_self_contained(naive_dir: Path) -> None:
    page = (naive_dir / "report.html").read_text()
    assert page.startswith("<!doctype html>")
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls  # the SVG namespace name, never fetched
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page)
    assert not re.search(r"\bsrc=", page)
    assert page.count('<svg class="timeline"') == 4


def test_html_timeline_marks(naive_dir: Path) -> None:
    page = (naive_dir / "report.html").read_text()
    art = page[page.index('data-id="side_effects.lost_payment"'):]
    art = art[:art.index("</article>")]
    assert art.count('class="ev ev-tool cls-RETRYABLE"') == 1 and art.count('class="ev ev-tool cls-SUCCESS"') == 1
    assert art.count('class="ev ev-effect"') == 1 and art.count('class="ev ev-effect dup"') == 1
    assert '<g class="break">' in art and "✕ idempotent, max_side_effects" in art
    assert art.count('class="ev ev-final"') == 1
    assert "(the caller could not know: timeout)" in art


def test_html_timeline_shows_refusals(tmp_path: Path) -> None:
    write_reports([sup.timeout_repeat("builtin:guarded")], {}, tmp_path, step_summary=False)
    page = (tmp_path / "report.html").read_text()
    assert page.count('class="ev ev-refusal"') == 1 and "REFUSED fetch_invoice" in page


def test_html_escapes_everything_from_the_run(tmp_path: Path) -> None:
    v = sup.verdict("x.<script>", "<script>alert(1)</script>", "loops", "minor", "builtin:naive",
                    [catalogue.get("search")], policies.scripted([{"call": "search", "args": {"query": "</svg><b>"}}]),
                    [])
    write_reports([v], {"agent": "<img src=x>"}, tmp_path, step_summary=False)
    page = (tmp_path / "report.html").read_text()
    assert "<script>alert" not in page and "<img src=x>" not in page and "</svg><b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_certification_suite_reports_twice_the_same(tmp_path: Path) -> None:
    certify = pytest.importorskip("toolchaos.certification")
    scenarios = certify.suite()[:6]
    if not scenarios:  # pragma: no cover
        pytest.skip("no bundled scenarios in this checkout")
    meta = {"agent": "builtin:naive", "suite": "certification"}
    write_reports(certify.certify("builtin:naive", scenarios), meta, tmp_path / "a", step_summary=False)
    write_reports(certify.certify("builtin:naive", scenarios), meta, tmp_path / "b", step_summary=False)
    assert _normalised(tmp_path / "a") == _normalised(tmp_path / "b")
    data = read_report(tmp_path / "a" / "report.json")
    for s in data["scenarios"]:
        assert s["file"].startswith("toolchaos_scenarios/certification/") and s["file"].endswith(".chaos.yaml")
        assert re.fullmatch(r"[0-9a-f]{64}|sha256:[0-9a-f]{64}", s["content_hash"]), s["content_hash"]


def test_a_replay_by_the_api_is_reported_apart_from_a_duplicate(tmp_path: Path) -> None:
    from toolchaos import invariants as inv

    lost = [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}]
    v = sup.verdict("side_effects.replayed", "A lost charge retried under its key", "side_effects", "critical",
                    "builtin:guarded", [catalogue.get("charge_payment", faults=lost)],
                    policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 5.0}),
                    [inv.idempotent(), inv.max_side_effects(1)])
    v.violations = [inv.Violation("max_side_effects", "at most 0", "1 applied")]  # failing, so its section shows
    entry, _ = scenario_entry(v)
    assert entry["side_effects"]["charge_payment"]["replayed"] == 1
    assert [(f["applied"], f["replayed"]) for f in entry["effects"]] == [(True, False), (False, True)]
    assert {i["name"]: i["actual"] for i in entry["invariants"]}["idempotent"] == (
        "at most 1 per key; 1 replayed by the API")
    write_reports([v], {}, tmp_path, step_summary=False)
    assert "Replayed by the API (not applied again): `charge_payment`: 1 time" in (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    assert 'class="ev ev-replay"' in html and "1 replayed by the API" in html
