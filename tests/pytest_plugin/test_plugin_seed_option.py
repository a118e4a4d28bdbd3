"""``--chaos-seed``: every run of the session takes the seed."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_seed_reaches_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_seed(chaos):
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
            print("SEED", r.seed, r.run_id)
    """)
    pytester.runpytest("--chaos", "--chaos-seed=42", "-s").stdout.fnmatch_lines(["*SEED 42 *#42*"])
    pytester.runpytest("--chaos", "-s").stdout.fnmatch_lines(["*SEED 0 *#0*"])
