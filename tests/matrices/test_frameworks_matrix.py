"""The framework matrix runs certification scenarios through the wire, checked like in-process agents."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra: pip install 'toolchaos[pydantic-ai]'")

from toolchaos.certification import suite
from toolchaos.matrices import frameworks as matrix


def test_one_cell_and_the_markdown(tmp_path: Path) -> None:
    scenarios = [s for s in suite() if s.name in ("legit-transient-503", "loop-exact-repeat-timeout")]
    assert len(scenarios) == 2
    results = matrix.matrix(["pydantic-ai FunctionModel"], scenarios)
    legit = results["legit-transient-503"]["pydantic-ai FunctionModel"]
    loop = results["loop-exact-repeat-timeout"]["pydantic-ai FunctionModel"]
    assert legit.passed and legit.result.terminal_state == "COMPLETED"
    assert not loop.passed and loop.result.guard == "usage_limit"  # 50 requests: no loop guard by default
    table = matrix.markdown(results)
    assert "| `legit-transient-503` | PASS · COMPLETED · 2 ex · 0 fx |" in table
    assert "**1/2**" in table
    doc = tmp_path / "frameworks.md"
    doc.write_text(f"intro\n{matrix.BEGIN}\nold\n{matrix.END}\noutro\n", encoding="utf-8")
    matrix.write(doc, table)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text and table in text


def test_unknown_framework_is_named() -> None:
    with pytest.raises(ValueError, match="'crewai' is not installed or unknown"):
        matrix.matrix(["crewai"], [])
