"""``--chaos-artifacts=DIR``: each run's trace as DIR/<test-id>.trace.jsonl, byte-identical across sessions."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TEST = """
def test_one(chaos):
    chaos.run(task="t", tools=[chaos.tool("search", [{"probability": 0.5, "outcome": "timeout"}])],
              policy=chaos.policies.paraphrase("search", {"query": "a b"}, max_turns=6))
    chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
"""


def test_traces_are_written_per_test_and_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_art=TEST)
    pytester.runpytest("--chaos", "--chaos-artifacts=out").assert_outcomes(passed=1)
    out = pytester.path / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["test_art.py__test_one-2.trace.jsonl", "test_art.py__test_one.trace.jsonl"]
    first = (out / names[1]).read_bytes()
    pytester.runpytest("--chaos", "--chaos-artifacts=out2", "-p", "no:randomly").assert_outcomes(passed=1)
    assert (pytester.path / "out2" / names[1]).read_bytes() == first


def test_no_artifacts_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_art=TEST)
    pytester.runpytest("--chaos").assert_outcomes(passed=1)
    assert not list(pytester.path.rglob("*.trace.jsonl"))
