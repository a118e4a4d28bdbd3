"""``--chaos``: chaos tests are skipped without it, with a reason that says how to run them."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TEST = """
import pytest
from toolchaos import invariants as inv

@pytest.mark.chaos
def test_marked(chaos):
    r = chaos.run(task="t", tools=[chaos.tool("fetch_invoice", chaos.faults.timeout(after=30))],
                  policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "i"}))
    r.check(inv.bounded(executions=3))

def test_fixture_only(chaos):
    assert chaos.agent == "builtin:guarded"

def test_plain():
    assert True
"""


def test_without_chaos_chaos_tests_skip_with_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    res = pytester.runpytest("-rs")
    res.assert_outcomes(passed=1, skipped=2)
    res.stdout.fnmatch_lines(["*chaos test: run it with `pytest --chaos`*"])


def test_with_chaos_they_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    pytester.runpytest("--chaos").assert_outcomes(passed=3)


def test_options_are_grouped_in_help(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--help")
    res.stdout.fnmatch_lines(["*chaos tests for agent tool loops*", "*--chaos *", "*--chaos-agent=REF*",
                              "*--chaos-seed=N*", "*--chaos-artifacts=DIR*"])
