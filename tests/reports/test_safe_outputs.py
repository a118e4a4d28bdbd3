"""Agent-supplied text in every output: escaped in report.md, well-formed junit.xml, no escape sequences on terminals."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from toolchaos import AgentResult, invariants, policies, run
from toolchaos.certification._grade import grade_run
from toolchaos.certification._verdict import ScenarioVerdict
from toolchaos.errors import printable
from toolchaos.fake_tools import fake_tool
from toolchaos.reports import write_reports
from toolchaos.reports._markdown import cell, code, fenced

HOSTILE = "<img src=x onerror=alert(1)></details> *bold* [link](http://x) | pipe ```fence``` \x1b[31mred\x1b[0m \x00nul"
TOOL = "t\x00<b>x</b>|*y*\x1b]0;title\x07"


def hostile_verdict() -> ScenarioVerdict:
    tool = fake_tool(TOOL, "d", {"type": "object", "properties": {}})

    def agent(task, model, tools):
        tools.call(TOOL, {})
        tools.refuse(TOOL, {"a": HOSTILE}, guard=HOSTILE, reason=HOSTILE + "\udcff")
        return AgentResult("COMPLETED", HOSTILE, {"guard": HOSTILE, "reason": HOSTILE})

    result = run(agent, task="t", tools=[tool], policy=policies.scripted([{"call": TOOL, "args": {}}]), name="h")
    expect = [invariants.bounded(executions=0), invariants.no_execution_after_refusal()]
    return ScenarioVerdict("hostile", HOSTILE, "loops", "critical", result, result.violations(*expect), expect,
                           agent=HOSTILE, content_hash="sha256:x", whys=[HOSTILE, None], grade=grade_run(None, result))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_reports([hostile_verdict()], {"agent": HOSTILE}, tmp_path_factory.mktemp("r"), step_summary=False)


def test_report_md_passes_no_raw_html_or_markdown_from_the_agent(written: dict[str, Path]) -> None:
    md = written["md"].read_text(encoding="utf-8")
    assert "\x1b" not in md and "\x00" not in md
    outside_code = re.sub(r"^(`{3,})text\n.*?^\1$", "", md, flags=re.S | re.M)  # fenced blocks show text literally
    outside_code = re.sub(r"`[^`\n]*`", "", outside_code)  # so do code spans (no backtick of the agent's closes one)
    assert "<img" not in outside_code and "</details> *" not in outside_code
    assert outside_code.count("<details>") == outside_code.count("</details>") == 2  # the report's own blocks
    assert "&lt;img src=x onerror=alert(1)&gt;&lt;/details&gt; \\*bold\\* \\[link\\](http://x) \\| pipe" in md
    for line in md.splitlines():  # no agent text closes the trace's fence early
        assert not line.startswith("```fence")


def test_markdown_helpers_hold_for_plain_text() -> None:
    assert cell("Exact repeat on a timing-out tool (legit)") == "Exact repeat on a timing-out tool (legit)"
    assert code("fetch_invoice") == "`fetch_invoice`"
    assert fenced("a\n```\nb")[0] == "````text"


def test_junit_xml_is_well_formed_whatever_the_agent_wrote(written: dict[str, Path]) -> None:
    root = ET.parse(written["junit"]).getroot()  # parses: NUL and control characters are escaped
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert any(name.startswith("executions.t\\x00<b>x</b>") for name in props)
    failure = next(root.iter("failure"))
    assert "\\x00nul" in (failure.text or "") and "\x1b" not in (failure.text or "")


def test_report_json_keeps_a_lone_surrogate_escaped_and_stays_valid(written: dict[str, Path]) -> None:
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    trace = [json.loads(x) for x in (written["traces"] / data["scenarios"][0]["trace"].split("/", 1)[1])
             .read_text(encoding="utf-8").splitlines()]
    assert any(e.get("reason") == HOSTILE + "\udcff" for e in trace)


def test_printable_strips_escape_sequences_and_keeps_the_text() -> None:
    assert printable("plain text\n\twith tabs") == "plain text\n\twith tabs"
    assert printable("\x1b[2J\x1b[31mred\x1b[0m\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x07\x00") == "redlink \\x07\\x00"
    assert printable("lone \udcff") == "lone \\udcff"


def test_terminal_output_of_toolchaos_run_v_has_no_escape_sequences(tmp_path: Path, capsys) -> None:
    from toolchaos.cli import main

    agent = tmp_path / "hostile_agent.py"
    agent.write_text("from toolchaos import AgentResult\n"
                     "def agent(task, model, tools):\n"
                     "    model.complete([{'role': 'user', 'content': task}])\n"
                     "    return AgentResult('STOPPED_LOOP_GUARD', '\\x1b[2Jgone', "
                     "{'guard': '\\x1b[31mred', 'reason': '\\x1b]0;pwned\\x07'})\n")
    scenario = tmp_path / "s.chaos.yaml"
    scenario.write_text("id: s\ntitle: t\ntask: Get it.\ntools: {search: {}}\n"
                        "policy: {stubborn: {tool: search, args: {query: q}, until: never}}\n"
                        "expect: [{terminal_state: COMPLETED}]\n")
    os.environ["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        main(["run", str(scenario), "--agent", "hostile_agent:agent", "-v", "--allow-imports"])
    finally:
        sys.path.remove(str(tmp_path))
    out = capsys.readouterr()
    assert "red" in out.out and "\x1b" not in out.out + out.err


def test_a_link_planted_where_a_trace_goes_fails_that_scenario_and_the_certification_completes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An agent that can read the harness's command line knows where later traces go, and plants
    # links there: the harness writes through none of them, and only the scenarios whose evidence
    # was refused fail; every other scenario is judged and reported as it ran.
    from toolchaos.cli import main

    art, rep, target = tmp_path / "art", tmp_path / "rep", tmp_path / "target"
    (rep / "traces").mkdir(parents=True)
    art.mkdir()
    (art / "loop-exact-repeat-timeout.trace.jsonl").symlink_to(target)
    (rep / "traces" / "loop-ignores-refusals.trace.jsonl").symlink_to(target)
    code = main(["certify", "--agent", "builtin:guarded", "--isolation", "none", "--artifacts", str(art),
                 "--report", str(rep), "-k", "loop-*"])
    assert code == 1 and not target.exists()
    assert "NOT CERTIFIED" in capsys.readouterr().err
    report = json.loads((rep / "report.json").read_text())
    failed = {s["id"]: s for s in report["scenarios"] if s["verdict"] != "pass"}
    assert set(failed) == {"loop-exact-repeat-timeout", "loop-ignores-refusals"}
    assert all(s["first_broken"] == "artifacts" for s in failed.values())
    assert failed["loop-ignores-refusals"]["trace"] is None and "symbolic link" in failed["loop-ignores-refusals"][
        "trace_refused"]
    written = {p.name for p in (rep / "traces").iterdir() if not p.is_symlink()}
    assert len(written) == len(report["scenarios"]) - 1  # every other scenario's trace is there
