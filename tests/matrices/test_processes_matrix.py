"""The process-agent matrix: one real cell (a Node agent), an agent left out saying why, the page written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
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
