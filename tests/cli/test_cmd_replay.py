"""``toolchaos replay``: the recorded call sequence against an agent must end within a bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INCIDENT = str(ROOT / "scenarios" / "examples" / "05-incident.trace.jsonl")


def test_the_fixed_agent_ends_within_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", INCIDENT, "--agent", "builtin:guarded"]) == 0
    out = capsys.readouterr().out
    assert "40 recorded executions" in out and "PASS: ended within the bound (executions <= 3)" in out


def test_the_pre_fix_agent_breaks_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", INCIDENT, "--agent", "builtin:naive"]) == 1
    out = capsys.readouterr().out
    assert "invariant bounded.executions broke" in out


@pytest.mark.parametrize("log", ["openai_chat.json", "openai_responses.json", "anthropic.json", "otel_spans.json",
                                 "otel_spans.jsonl"])
def test_every_imported_format_replays(log: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(LOGS / log), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] and data["executions"] <= 3 and data["recorded_turns"] >= 1


def test_json_artifacts_and_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(LOGS / "otel_spans.json"), "--agent", "builtin:naive", "--json",
                 "--artifacts", str(tmp_path), "--max-executions", "5", "--max-turns", "6"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["executions"] == 12 and not data["passed"] and data["bound"] == {"executions": 5, "turns": 6}
    assert Path(data["trace"]).exists()


def test_replay_as_a_scenario_loads_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolchaos.certification import run_scenario
    from toolchaos.scenario import load_file

    for log in ("openai_chat.json", "anthropic.json"):
        assert main(["replay", str(LOGS / log), "--scenario"]) == 0
        path = tmp_path / f"{log}.chaos.yaml"
        path.write_text(capsys.readouterr().out)
        (scenario,) = load_file(path)
        assert run_scenario(scenario, "builtin:guarded").passed
        assert not run_scenario(scenario, "builtin:naive").passed


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["replay", INCIDENT, "--agent", "nope"]) == 2
    assert main(["replay", str(LOGS / "otel_spans.json"), "--session", "conv_9"]) == 2
    assert "no session 'conv_9'" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert main(["replay", str(empty)]) == 2
    assert "no model turns" in capsys.readouterr().err


def test_a_replay_of_a_toolchaos_trace_is_named_after_its_run_not_its_seed() -> None:
    from toolchaos.cli._replay import _session_name

    assert _session_name("lost-charge#0") == "lost-charge"  # not replay-lost-charge#0#0
    assert _session_name("sess#abc") == "sess#abc" and _session_name("#3") == "#3"
