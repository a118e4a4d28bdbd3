"""``--chaos-fuzz=N`` and a scenario's ``fuzz:`` block: the scenario's schedules are fuzzed after its run."""

from __future__ import annotations

import pytest
from chaos_samples import PAY_SCENARIO

pytest_plugins = ["pytester"]

SCENARIO = PAY_SCENARIO


def test_chaos_fuzz_finds_what_the_fixed_schedule_misses(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", pay=SCENARIO)
    pytester.runpytest("--chaos", "--chaos-agent=builtin:naive").assert_outcomes(passed=1)
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive", "--chaos-fuzz=60")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*idempotent*"])


def test_chaos_fuzz_holds_for_the_guarded_agent(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", pay=SCENARIO)
    pytester.runpytest("--chaos", "--chaos-fuzz=30").assert_outcomes(passed=1)
