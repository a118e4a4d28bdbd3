"""``@pytest.mark.chaos(...)``: its arguments are ``toolchaos.Chaos``'s own."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_marker_arguments_reach_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.chaos(agent="builtin:naive", seed=7, budgets={"max_steps": 3})
        def test_it(chaos):
            assert (chaos.agent, chaos.seed, chaos.budgets) == ("builtin:naive", 7, {"max_steps": 3})
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
            assert r.seed == 7
    """)
    pytester.runpytest("--chaos").assert_outcomes(passed=1)


def test_the_marker_isolates_one_test_and_the_session_default_the_rest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import os, pytest

        def dies(task, model, tools):
            os._exit(3)

        def fine(task, model, tools):
            return "ok"

        @pytest.mark.chaos(agent=dies, isolation="process")
        def test_isolated(chaos):
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
            assert (r.terminal_state, r.isolation) == ("CRASHED", "process")

        @pytest.mark.chaos(agent=fine)
        def test_session_default(chaos):
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
            assert r.harness_stop is None and r.isolation == "none"

        @pytest.mark.chaos(isolation="elsewhere")
        def test_bad(chaos):
            pass
    """)
    res = pytester.runpytest("--chaos", "-p", "no:randomly")
    res.assert_outcomes(passed=2, errors=1)
    res.stdout.fnmatch_lines(["*test_bad*isolation must be one of none, process*"])


def test_bad_marker_arguments_fail_with_the_test_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.chaos(agent="builtin:nope")
        def test_bad_agent(chaos):
            pass

        @pytest.mark.chaos(sed=1)
        def test_typo(chaos):
            pass

        @pytest.mark.chaos("positional")
        def test_positional(chaos):
            pass
    """)
    res = pytester.runpytest("--chaos")
    res.stdout.fnmatch_lines(["*test_bad_agent*bad @pytest.mark.chaos arguments*no built-in agent 'nope'*"])
    res.stdout.fnmatch_lines(["*test_typo*unexpected keyword argument 'sed'*"])
    res.stdout.fnmatch_lines(["*test_positional*keyword arguments only*"])


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--markers")
    res.stdout.fnmatch_lines(["@pytest.mark.chaos(agent=None, seed=None, budgets=None, ceiling=None, isolation=None)*"
                              ])


def test_failure_message_shows_invariant_step_and_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from toolchaos import invariants as inv

        @pytest.mark.chaos(agent="builtin:naive")
        def test_loops(chaos):
            chaos.run(task="t", tools=[chaos.tool("fetch_invoice", "timeout")],
                      policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "i"}),
                      expect=[inv.bounded(executions=3)])
    """)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*invariant bounded.executions broke at step 4 (trace event #8)*",
                              "*>> 8*fetch_invoice*RETRYABLE/timeout*"])
    assert "_engine" not in res.stdout.str()  # the harness's own frames are hidden
