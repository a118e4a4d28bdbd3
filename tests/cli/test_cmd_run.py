"""``toolchaos run``: scenario files against an agent, from the command line."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from toolchaos._engine import safe_name
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "scenarios" / "examples"
FIRST = EXAMPLES / "01-first-scenario.chaos.yaml"


def test_runs_a_directory_of_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES)]) == 0
    out, err = capsys.readouterr()
    assert "PASS  example-first-scenario  (loops, critical)" in out
    assert "PASS  example-variants[timeout]" in out
    assert "0 failed" in err


def test_a_failing_run_exits_1_and_explains_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(FIRST), "--agent", "builtin:naive", "-v"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  example-first-scenario" in out
    assert "invariant bounded.executions broke at step 4 (trace event #8)" in out
    assert "bounded: {executions: 3}" in out and "trace around event #8:" in out


def test_json_seed_keyword_and_artifacts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES), "-k", "example-variants*", "--json", "--seed", "3",
                 "--artifacts", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [f"example-variants[{v}]" for v in ("empty", "malformed", "timeout", "other-seed")]
    assert all(r["passed"] and r["terminal_state"] == "STOPPED_LOOP_GUARD" for r in rows)
    trace = tmp_path / f"{safe_name('example-variants[empty]')}.trace.jsonl"
    assert trace.exists() and json.loads(trace.read_text().splitlines()[0])["run"] == "example-variants[empty]#3"


def test_user_errors_are_one_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.chaos.yaml"
    bad.write_text(FIRST.read_text().replace("stubborn:", "stubbon:"))
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "unknown policy 'stubbon'; did you mean 'stubborn'?" in err and re.search(r"bad.chaos.yaml:\d+:3: ", err)
    assert "Traceback" not in err
    assert main(["run", str(FIRST), "--agent", "builtin:nope"]) == 2
    assert "no built-in agent 'nope'" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.chaos.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["run", str(tmp_path), "--pattern", "*.nothing"]) == 2
    assert "no scenario files" in capsys.readouterr().err
    assert main(["run", str(FIRST), "-k", "zzz"]) == 2
    assert "no scenario matches" in capsys.readouterr().err


def test_python_references_need_allow_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "custom.chaos.yaml"
    f.write_text(FIRST.read_text() + "agent: toolchaos._agents:naive\n")
    assert main(["run", str(f)]) == 2
    assert "--allow-imports" in capsys.readouterr().err
    assert main(["run", str(f), "--allow-imports"]) == 1  # it ran, with the naive agent, and failed


def test_a_report_of_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES), "--report", str(tmp_path)]) == 0
    assert "applicable scenarios (all applicable): level reached all" in capsys.readouterr().err
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["suite"]["name"] == "custom" and {s["id"] for s in data["scenarios"]} >= {"example-first-scenario"}


def test_an_sdk_agent_by_its_kind(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if any(importlib.util.find_spec(m) is None for m in ("agents", "pydantic_ai", "langgraph", "anthropic")):
        pytest.skip("tests.cli.agents_of_every_kind needs the frameworks: pip install 'toolchaos[all-frameworks]'")
    monkeypatch.syspath_prepend(str(ROOT))  # `tests.` importable
    scenario = ROOT / "scenarios" / "certification" / "legit-transient-503.chaos.yaml"
    assert main(["run", str(scenario), "--agent", "sdk:tests.cli.agents_of_every_kind:anthropic_loop", "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["passed"] and row["agent"] == "sdk:tests.cli.agents_of_every_kind:anthropic_loop"
    assert (row["terminal_state"], row["executions"]) == ("COMPLETED", 2)


# --- the last line: the run's verdict ---------------------------------------------------------------

CANNOT_BE_CALLED = """
def run(task, model, tools, extra):  # a signature no agent kind has
    return None
"""


def _last_line(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.rstrip("\n").splitlines()[-1]


def test_the_last_line_is_the_runs_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(FIRST)]) == 0
    assert _last_line(capsys) == "PASS: example-first-scenario: every expectation held (STOPPED_LOOP_GUARD)"
    assert main(["run", str(FIRST), "--agent", "builtin:naive"]) == 1
    assert _last_line(capsys) == "FAIL: example-first-scenario: bounded.executions broke at step 4, and 2 more"
    assert main(["run", str(EXAMPLES)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[-1] == f"PASS: all {out.count('PASS  ')} scenarios passed"
    assert main(["run", str(EXAMPLES), "--agent", "builtin:naive", "--json"]) == 1
    out, err = capsys.readouterr()
    assert all(line.startswith("{") for line in out.splitlines())  # --json: stdout stays JSON
    assert re.fullmatch(r"FAIL: \d+ of \d+ scenarios failed: example-first-scenario \(bounded\.executions broke at "
                        r"step 4, and 2 more\); .*", err.splitlines()[-1]), err


def test_an_agent_that_cannot_be_called_is_an_error_not_a_certification(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "uncallable_agent.py").write_text(CANNOT_BE_CALLED)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", str(FIRST), "--agent", "uncallable_agent:run"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("ERROR: example-first-scenario: could not call agent uncallable_agent:run: "
                                           "run() missing 1 required positional argument: 'extra'; an agent is ")
    assert "CERTIF" not in err  # a run is no certification: only --report or --require speak of a level
    assert main(["run", str(EXAMPLES), "-k", "example-variants*", "--agent", "uncallable_agent:run"]) == 2
    assert _last_line(capsys).startswith("ERROR: 4 of 4 scenarios could not run (example-variants[empty], "
                                         "example-variants[malformed], example-variants[timeout], ...): could not "
                                         "call agent uncallable_agent:run: ")
    assert main(["run", str(FIRST), "--agent", "uncallable_agent:run", "--report", str(tmp_path / "r")]) == 2
    assert "COULD NOT CERTIFY: could not call agent" in capsys.readouterr().err  # asked for a report: its verdict


def test_a_misspelled_agent_attribute_gets_a_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "typo_agent.py").write_text("def run(task, model, tools):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", str(FIRST), "--agent", "typo_agent:rnu"]) == 2
    assert ("agent reference 'typo_agent:rnu': 'typo_agent' has no attribute 'rnu'; did you mean 'run'?"
            in capsys.readouterr().err)


def test_k_takes_several_patterns_in_run_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES), "-k", "example-first*,timeout]", "-k", "example-inline-tools", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["id"] for r in rows) == ["example-first-scenario", "example-inline-tools", "example-variants[timeout]"]


def test_a_scenario_that_does_not_apply_to_the_agents_kind_is_na_not_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    wall = ROOT / "scenarios" / "certification" / "budget-wall-clock.chaos.yaml"
    assert main(["run", str(wall), "--agent", "cmd:/nonexistent/agent-program"]) == 0  # nothing failed
    out, err = capsys.readouterr()
    assert out.startswith("N/A  budget-wall-clock  (budgets, major)\n      needs virtual_time, which a process agent")
    assert err.splitlines()[-2:] == ["0 passed, 0 failed, 1 not applicable",
                                     "N/A: budget-wall-clock: not run: " + out.splitlines()[1].strip()]
    exits = f"cmd:{sys.executable} -c pass"  # a program that exits before its first model request
    assert main(["run", str(wall.parent), "-k", "budget-wall-clock,loop-empty-result", "--agent", exits, "--json"]) == 1
    rows = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (rows["budget-wall-clock"]["verdict"], rows["budget-wall-clock"]["terminal_state"]) == ("n/a", None)
    # it applies, and is judged: an agent that never took part stopped nothing (no end by itself counted as a stop)
    assert rows["loop-empty-result"]["verdict"] == "fail" and rows["loop-empty-result"]["not_applicable"] is None
    assert rows["loop-empty-result"]["terminal_state"] == "FAILED"
