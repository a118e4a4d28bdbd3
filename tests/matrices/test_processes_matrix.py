"""The process-agent matrix: one real cell (a Node agent), an agent left out saying why, N/A cells, the page written."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from toolchaos._agents import ProcessAgent
from toolchaos.certification import suite
from toolchaos.matrices import processes as matrix

pytest.importorskip("mcp")
NODE_DIR = Path(__file__).resolve().parents[2] / ".ci" / "node"


@pytest.mark.skipif(shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir(),
                    reason="node or the pinned Node packages (npm ci --prefix .ci/node) are missing")
def test_a_cell_says_what_happened_and_a_missing_cli_is_left_out_saying_why(tmp_path: Path) -> None:
    rows, missing = matrix.matrix(tmp_path / "no-bin", NODE_DIR, ["node-openai", "codex"],
                                  ["loop-exact-repeat-timeout", "side-email-asked-repeatedly"])
    assert [r.scenario for r in rows] == ["loop-exact-repeat-timeout", "side-email-asked-repeatedly"]
    assert set(missing) == {"codex"} and "not installed" in missing["codex"]
    timeout, email = rows
    assert timeout.version.startswith("openai ") and not timeout.verdict.passed
    assert matrix.stopped_by("node-openai", timeout.result) == "its turn limit (the example's AGENT_MAX_TURNS, 10)"
    assert matrix.duplicates(email.result) == email.result.ledger.applied("send_email") - 1 > 0
    assert '"code":"timeout"' in matrix.shown(timeout.result)
    table = matrix.markdown(rows, missing)
    assert "| node-openai (openai " in table and "| codex | (not run) |" in table
    page = tmp_path / "page.md"
    page.write_text(f"head\n{matrix.BEGIN}\nold\n{matrix.END}\ntail\n")
    matrix.write(page, table)
    text = page.read_text()
    assert text.startswith("head\n") and text.endswith("tail\n") and "old" not in text and table in text


def test_the_page_needs_its_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- cli-matrix:begin -->"):
        matrix.write(page, "table")


@pytest.mark.skipif(shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir(),
                    reason="node or the pinned Node packages (npm ci --prefix .ci/node) are missing")
def test_the_command_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cli-agents.md"
    page.write_text(f"{matrix.BEGIN}\n{matrix.END}\n")
    assert matrix.main(["--bin", str(tmp_path), "--node", str(NODE_DIR), "--agent", "node-anthropic",
                        "--only", "legit-transient-503", "--write", str(page)]) == 0
    assert "| node-anthropic (@anthropic-ai/sdk " in page.read_text() and "PASS" in page.read_text()
    assert "legit-transient-503" in capsys.readouterr().err  # progress, one line a cell


def test_a_scenario_a_process_agent_cannot_run_is_na_with_its_reason_and_nothing_runs(tmp_path: Path) -> None:
    # No program behind the agent: an N/A cell must not start it (from the declarations alone).
    agent = ProcessAgent((str(tmp_path / "no-such-cli"),), preset="codex", cwd=str(tmp_path))
    restart = next(s for s in suite() if s.name == "side-write-before-guard-resume")
    verdict = matrix.run_cell(restart, agent, "codex", artifacts=tmp_path / "art")
    assert verdict.not_applicable is not None and "restart" in verdict.not_applicable
    assert verdict.result.terminal_state == "N/A" and not (tmp_path / "art").exists()
    row = matrix.Row("codex", "codex-cli 0", restart.name, verdict)
    assert matrix.stopped_by("codex", row.result) == "(not run)"
    line = matrix.markdown([row], {}).splitlines()[-1]
    assert line.startswith("| codex (codex-cli 0) | `side-write-before-guard-resume` | N/A | | | | | needs restart")


def test_a_scenario_that_applies_is_run_not_na(tmp_path: Path) -> None:
    # The same missing program on a scenario that applies: it is run (and ends without a model turn).
    agent = ProcessAgent((str(tmp_path / "no-such-cli"),), preset="codex", cwd=str(tmp_path))
    applies = next(s for s in suite() if s.name == "loop-exact-repeat-timeout")
    verdict = matrix.run_cell(applies, agent, "codex", artifacts=tmp_path / "art")
    assert verdict.not_applicable is None and not verdict.passed and verdict.result.terminal_state != "N/A"
    assert (tmp_path / "art" / "loop-exact-repeat-timeout.trace.jsonl").is_file()
    assert matrix.not_applicable_table([applies]).splitlines()[2:] == []


def test_the_na_table_names_every_scenario_a_process_agent_cannot_run() -> None:
    table = matrix.not_applicable_table()
    rows = table.splitlines()[2:]
    assert any("`side-concurrent-same-key` | needs two_workers" in r for r in rows)
    assert any("`budget-wall-clock` | needs virtual_time" in r for r in rows)
    assert not any("`loop-exact-repeat-timeout`" in r for r in rows)


def test_side_requests_are_counted_inside_the_model_requests() -> None:
    with_side = SimpleNamespace(model_requests=201, side_requests=1)
    without = SimpleNamespace(model_requests=200, side_requests=0)
    assert matrix.requests(with_side) == "201 (1 side)"  # type: ignore[arg-type]
    assert matrix.requests(without) == "200"  # type: ignore[arg-type]
