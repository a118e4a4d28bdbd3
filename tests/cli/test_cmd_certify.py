"""``toolchaos certify``: the bundled suite against an agent, and the ablation matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toolchaos
from toolchaos.certification import suite
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_agent_is_certified(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify"]) == 0
    out, err = capsys.readouterr()
    assert out.count("PASS  ") == len(suite()) and "FAIL" not in out
    assert f"builtin:guarded: {len(suite())}/{len(suite())} scenarios passed" in err
    assert "CERTIFIED: level reached all, required all" in err


def test_the_naive_agent_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--agent", "builtin:naive", "-k", "loop-*", "--json"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(not r["passed"] and r["agent"] == "builtin:naive" for r in rows)
    assert all(r["id"].startswith("loop-") for r in rows)


def test_verbose_failures_and_another_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--suite", str(ROOT / "scenarios" / "examples"), "--agent", "builtin:naive",
                 "-k", "example-first*", "-v"]) == 1
    out = capsys.readouterr().out
    assert "invariant bounded.executions broke" in out and "reproduce: toolchaos run" in out


def test_the_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "matrix.md"
    # a part of the suite cannot prove itself: no legit scenario catches the ablations
    assert main(["certify", "--matrix", "-k", "legit-*", "--output", str(out_file)]) == 1
    text = capsys.readouterr().out
    assert "legit-transient-503" in text and "PROBLEM: ablation -budgets (no budgets): no scenario catches it" in text
    md = out_file.read_text()
    assert md.startswith("# Certification matrix") and "| `legit-transient-503` | legit | critical | ok |" in md


def test_a_report_and_a_required_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the naive agent survives only the legitimate-repetition scenarios: level "none"
    assert main(["certify", "--agent", "builtin:naive", "--report", str(tmp_path), "--require", "critical"]) == 1
    err = capsys.readouterr().err
    assert "NOT CERTIFIED: level reached none, required critical" in err and "report.html" in err
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["suite"]["name"] == "certification" and data["suite"]["version"] == toolchaos.__version__
    assert len(data["scenarios"]) == len(suite()) and "builtin:naive" in json.dumps(data["agent"])
    assert main(["certify", "-k", "legit-*", "--agent", "builtin:naive", "--require", "major"]) == 0


def test_user_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--output", "x.md"]) == 2
    assert "--output goes with --matrix" in capsys.readouterr().err
    assert main(["certify", "-k", "nothing-matches"]) == 2
    assert main(["certify", "--agent", "no_such_module:agent"]) == 2
    assert "cannot import" in capsys.readouterr().err
