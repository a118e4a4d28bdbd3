"""The worked examples of docs/scenarios.md's "The world behind the tools" load and judge as they say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from toolchaos.certification import run_scenario
from toolchaos.scenario import load_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def examples() -> list[str]:
    """The section's YAML blocks that are whole scenarios but for their id, title and task."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The world behind the tools", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    return [b for b in blocks if "expect:" in b]


def as_scenario(block: str, n: int) -> str:
    doc = yaml.safe_load(block)
    head = {"id": f"world-doc-{n}", "title": "a worked example", "task": doc.get("task", "Do the task.")}
    return yaml.safe_dump({**head, **doc}, sort_keys=False)


def test_the_section_has_its_four_worked_examples() -> None:
    assert len(examples()) == 4


@pytest.mark.parametrize("n", range(4))
def test_each_example_passes_the_reference_agent_and_fails_the_plain_loop(n: int) -> None:
    (scenario,) = load_text(as_scenario(examples()[n], n), f"world-doc-{n}.chaos.yaml")
    guarded = run_scenario(scenario, "builtin:guarded")
    assert guarded.passed, guarded.violations
    assert not run_scenario(scenario, "builtin:naive").passed
