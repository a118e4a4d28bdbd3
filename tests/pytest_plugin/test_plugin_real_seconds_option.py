"""``--chaos-real-seconds`` and ``--chaos-total-seconds`` (ini ``chaos_real_seconds``, ``chaos_total_seconds``):
the session's watchdog limits, no progress and total.

Precedence, most specific first: a scenario's or test's own ``real_seconds`` (``total_seconds``) >
the command line > the ini file > the built-in default (5 s; 60 s for ``toolchaos.wire`` SDK
agents; the total: 3 times the no-progress limit). The agent here waits blocked and never calls
the model or a tool, so only the watchdog can end it: each run lasts exactly its limit, which
keeps the limits small.
"""

from __future__ import annotations

from typing import Any

import pytest
from chaos_samples import SPIN_AGENTS, SPIN_NO_OWN_LIMIT, SPIN_OWN_LIMIT, SPIN_SCENARIO
from toolchaos import (
    Ceiling,
    policies,
    wire,  # noqa: F401  (imported before any inner session, see below)
)
from toolchaos import _engine as limits  # the session's defaults of every RunSpec
from toolchaos.fake_tools import catalogue

pytest_plugins = ["pytester"]

SPIN, SCENARIO, OWN_LIMIT, NO_OWN_LIMIT = SPIN_AGENTS, SPIN_SCENARIO, SPIN_OWN_LIMIT, SPIN_NO_OWN_LIMIT

FROM_OPTION = ("*the watchdog ended it: the agent made no progress (no model request, tool call or event) "
               "for {:g}s while it could run, its no-progress limit (set by {})*")


@pytest.fixture
def spin(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(spin_mod=SPIN)
    pytester.syspathinsert()
    return pytester


def test_the_option_ends_a_spinning_scenario_at_the_limit(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", spin=SCENARIO)
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-real-seconds=0.5")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([FROM_OPTION.format(0.5, "--chaos-real-seconds"), "run spin (seed 0): WATCHDOG;*"])
    took = res.reprec.matchreport("spin", when="call").duration  # type: ignore[attr-defined]
    assert 0.45 <= took < 2.5, f"the scenario ran {took:.2f}s under a 0.5s limit (the built-in default is 5s)"
    assert limits.session_real_seconds() is None, "the inner session's limit leaked into this one"


def test_the_ini_value(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", spin=SCENARIO)
    spin.makeini("[pytest]\nchaos_real_seconds = 0.2\n")
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([FROM_OPTION.format(0.2, "ini option chaos_real_seconds")])


def test_the_command_line_beats_the_ini_value(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", spin=SCENARIO)
    spin.makeini("[pytest]\nchaos_real_seconds = 0.1\n")
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-real-seconds=0.2")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([FROM_OPTION.format(0.2, "--chaos-real-seconds")])


def test_a_scenarios_own_real_seconds_beats_the_option(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", own=OWN_LIMIT, other=NO_OWN_LIMIT)
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-real-seconds=0.2", "-p", "no:randomly")
    res.assert_outcomes(failed=2)
    # A ceiling block that sets only max_tool_calls leaves the real-time limit to the session.
    res.stdout.fnmatch_lines(["*chaos scenario no-own-limit*", FROM_OPTION.format(0.2, "--chaos-real-seconds"),
                              "*chaos scenario own-limit*",
                              "*the watchdog ended it: the agent made no progress (no model request, tool "
                              "call or event) for 0.1s while it could run, its no-progress limit"])


TOTAL = ("*the watchdog ended it: the run went on for {:g}s of real time in all without reaching a ceiling, its "
         "total limit (set by {})*")


def test_the_total_limit_from_the_option_and_the_ini_file(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", spin=SCENARIO)
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-real-seconds=30",
                         "--chaos-total-seconds=0.3")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([TOTAL.format(0.3, "--chaos-total-seconds")])
    assert limits.session_total_seconds() is None, "the inner session's limit leaked into this one"
    spin.makeini("[pytest]\nchaos_total_seconds = 0.2\n")
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-real-seconds=30")
    res.stdout.fnmatch_lines([TOTAL.format(0.2, "ini option chaos_total_seconds")])


def test_a_scenarios_own_total_seconds_beats_the_option(spin: pytest.Pytester) -> None:
    spin.makefile(".chaos.yaml", own=OWN_LIMIT.replace("real_seconds: 0.1", "real_seconds: 30, total_seconds: 0.1"))
    res = spin.runpytest("--chaos", "--chaos-agent=spin_mod:spin", "--chaos-total-seconds=20")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*the watchdog ended it: the run went on for 0.1s of real time in all without reaching "
                              "a ceiling, its total limit"])


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_a_bad_total_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    res = pytester.runpytest("--chaos", f"--chaos-total-seconds={value}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"ERROR: --chaos-total-seconds: expected a positive number of seconds (the total "
                              f"real-time limit of each chaos run), got {value!r}"])


def test_the_chaos_fixture_and_the_marker(spin: pytest.Pytester) -> None:
    spin.makepyfile(test_spin="""
        import pytest
        from toolchaos import Ceiling
        from spin_mod import spin

        def go(chaos):
            r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]), agent=spin)
            print("RESULT", r.terminal_state, r.error)

        def test_fixture(chaos):
            go(chaos)

        @pytest.mark.chaos(ceiling=Ceiling(max_tool_calls=50))
        def test_ceiling_without_real_seconds(chaos):
            go(chaos)

        @pytest.mark.chaos(ceiling=Ceiling(real_seconds=0.1))
        def test_marker_real_seconds(chaos):
            go(chaos)
    """)
    res = spin.runpytest("--chaos", "--chaos-real-seconds=0.2", "-s", "-v", "-p", "no:randomly")
    res.assert_outcomes(passed=3)
    limit = "RESULT WATCHDOG the agent made no progress (no model request, tool call or event) for"
    res.stdout.fnmatch_lines([f"*{limit} 0.2s while it could run, its no-progress limit (set by --chaos-real-seconds)*",
                              f"*{limit} 0.2s while it could run, its no-progress limit (set by --chaos-real-seconds)*",
                              f"*{limit} 0.1s while it could run, its no-progress limit"])


def test_sdk_agents_follow_the_option(spin: pytest.Pytester) -> None:
    spin.makepyfile(test_sdk="""
        from toolchaos.fake_tools import catalogue
        from toolchaos import policies, wire
        from spin_mod import spin_sdk

        def test_sdk():
            r = wire.run(spin_sdk, task="t", tools=[catalogue.get("search")], policy=policies.scripted([]))
            print("RESULT", r.terminal_state, r.error)
    """)
    res = spin.runpytest("--chaos-real-seconds=0.2", "-s")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["*RESULT WATCHDOG the agent made no progress (no model request, tool call or event) "
                              "for 0.2s while it could run, its no-progress limit (set by *"])


def test_sdk_agents_keep_their_longer_default_without_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchaos.wire import _run

    seen: list[Any] = []

    class _Stop(Exception):
        pass

    def engine_run(agent: Any, spec: Any) -> Any:
        seen.append(spec)
        raise _Stop

    monkeypatch.setattr(_run, "engine_run", engine_run)
    go = {"task": "t", "tools": [catalogue.get("search")], "policy": policies.scripted([])}
    with pytest.raises(_Stop):
        _run.run(lambda task: None, **go)
    with pytest.raises(_Stop):  # a ceiling that sets other limits only keeps the SDK default too
        _run.run(lambda task: None, ceiling=Ceiling(max_tool_calls=50), **go)
    restore = limits.session_defaults(real_seconds=0.3, source="--chaos-real-seconds")
    try:
        with pytest.raises(_Stop):
            _run.run(lambda task: None, **go)
    finally:
        restore()
    with pytest.raises(_Stop):  # a ceiling's own limit wins over the SDK default
        _run.run(lambda task: None, ceiling=Ceiling(real_seconds=2.0), **go)
    assert seen[0].watchdog_limit() == (_run.SDK_REAL_SECONDS, "")
    assert seen[1].ceiling == Ceiling(max_tool_calls=50) and seen[1].watchdog_limit() == (_run.SDK_REAL_SECONDS, "")
    assert seen[2].watchdog_limit() == (0.3, "--chaos-real-seconds")  # the session's, said where it came from
    assert seen[3].watchdog_limit() == (2.0, "")

class _Stop(Exception):
    pass


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", ""])
def test_a_bad_command_line_value_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    res = pytester.runpytest("--chaos", f"--chaos-real-seconds={value}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"ERROR: --chaos-real-seconds: expected a positive number of seconds*got {value!r}"])


@pytest.mark.parametrize("value", ["0", "-2.5", "five"])
def test_a_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    pytester.makeini(f"[pytest]\nchaos_real_seconds = {value}\n")
    res = pytester.runpytest()
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"ERROR: ini option chaos_real_seconds: expected a positive number*got {value!r}"])


def test_help_says_what_it_does_and_the_default(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--help")
    text = " ".join(res.stdout.str().split())
    assert "--chaos-real-seconds=SECONDS no-progress limit of each chaos run" in text
    assert "else 5 seconds; 60 for toolchaos.wire SDK agents" in text
    assert "chaos_real_seconds (string): no-progress limit in seconds of each chaos run" in text
    assert "--chaos-total-seconds=SECONDS total limit of each chaos run" in text
    assert "chaos_total_seconds (string): total real-time limit in seconds of each chaos run" in text
    assert "real-time limit of each" not in text  # the no-progress limit is not one
