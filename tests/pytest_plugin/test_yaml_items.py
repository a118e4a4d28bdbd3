"""Scenario files under pytest: collection, item names, failures, collection errors, --chaos-certify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos.certification import suite

SCENARIO = """\
id: timeout-loop
title: The invoice tool times out
category: loops
severity: critical
tags: [timeout]
task: Retry until you have the total.
tools:
  fetch_invoice:
    faults: {timeout: {after: 30}}
policy:
  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}
expect:
  - bounded: {executions: 3}
  - terminal_state: [STOPPED_LOOP_GUARD]
"""


@pytest.fixture
def loop(pytester: pytest.Pytester) -> Path:
    return pytester.makefile(".chaos.yaml", loop=SCENARIO)


HINT = "toolchaos: {} ({}) not collected: run them with `pytest --chaos`"


def test_scenario_files_are_ignored_without_chaos(pytester: pytest.Pytester, loop: Path) -> None:
    res = pytester.runpytest()
    assert res.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    res.stdout.fnmatch_lines([HINT.format("1 chaos scenario file", "[*].chaos.yaml")])


def test_the_hint_counts_the_files_the_session_was_given(pytester: pytest.Pytester, loop: Path) -> None:
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "a.chaos.yaml").write_text(SCENARIO)
    (pytester.path / "scenarios" / "b.chaos.yaml").write_text(SCENARIO.replace("timeout-loop", "other"))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    res = pytester.runpytest()  # everything: the hint too, beside the tests that ran
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines([HINT.format("3 chaos scenario files", "[*].chaos.yaml")])
    res = pytester.runpytest("scenarios")
    res.stdout.fnmatch_lines([HINT.format("2 chaos scenario files", "[*].chaos.yaml")])
    res = pytester.runpytest("scenarios/a.chaos.yaml")  # pytest: "not found" (no collector without --chaos)
    res.stdout.fnmatch_lines([HINT.format("1 chaos scenario file", "[*].chaos.yaml")])
    res = pytester.runpytest("test_plain.py")  # the scenario files beside it were not asked for
    res.assert_outcomes(passed=1)
    assert "not collected" not in res.stdout.str()


def test_no_hint_with_chaos_or_without_scenario_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    res = pytester.runpytest()
    res.assert_outcomes(passed=1)
    assert "toolchaos:" not in res.stdout.str()
    pytester.makefile(".chaos.yaml", loop=SCENARIO)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(passed=2)
    assert "toolchaos:" not in res.stdout.str()


def test_the_hint_follows_the_ini_pattern(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scn.yaml", other=SCENARIO)
    pytester.makeini("[pytest]\nchaos_scenario_pattern = *.scn.yaml\n")
    res = pytester.runpytest()
    assert res.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    res.stdout.fnmatch_lines([HINT.format("1 chaos scenario file", "[*].scn.yaml")])


def test_one_item_per_scenario_named_by_its_id(pytester: pytest.Pytester, loop: Path) -> None:
    res = pytester.runpytest("--chaos", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["loop.chaos.yaml::timeout-loop"])
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(passed=1)


def test_variants_are_parametrised_items(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=SCENARIO + "variants:\n  - id: empty\n    tools:\n"
                                                     "      fetch_invoice: {faults: empty}\n  - id: seed-3\n    seed: 3\n")
    res = pytester.runpytest("--chaos", "-v")
    res.stdout.fnmatch_lines(["*loop.chaos.yaml::timeout-loop?empty? PASSED*",
                              "*loop.chaos.yaml::timeout-loop?seed-3? PASSED*"])
    res.assert_outcomes(passed=2)


def test_a_failure_shows_the_invariant_its_yaml_and_the_trace(pytester: pytest.Pytester, loop: Path) -> None:
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    res.stdout.fnmatch_lines([
        "invariant bounded.executions broke at step 4 (trace event #8)",
        "  expected: at most 3 tool executions",
        "  actual:   40 tool executions",
        "  expectation (loop.chaos.yaml:13):",
        "    bounded: {executions: 3}",
        "also broke:",
        "*terminal_state*expected one of STOPPED_LOOP_GUARD; actual: FAILED (line 14)",
        "chaos scenario timeout-loop against builtin:naive (loops, critical): The invoice tool times out",
        "trace around event #8:",
        ">> 8 *fetch_invoice*RETRYABLE/timeout*",
        "trace file: *toolchaos-traces*timeout-loop.trace.jsonl",
        "reproduce: toolchaos run loop.chaos.yaml -k timeout-loop --agent builtin:naive --seed 0",
    ])
    assert "Traceback" not in out and "_certify.py" not in out and "_yaml_items.py" not in out
    traces = list(pytester.path.glob(".pytest_cache/**/timeout-loop.trace.jsonl"))
    assert len(traces) == 1 and len(traces[0].read_text().splitlines()) == 81


def test_on_ci_the_short_summary_is_the_failures_first_line(pytester: pytest.Pytester, loop: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")  # pytest prints a failure report that is a plain string whole there
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive")
    lines = res.stdout.lines
    end = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    assert lines[end + 1:end + 3] == [
        "FAILED loop.chaos.yaml::timeout-loop - invariant bounded.executions broke at step 4 (trace event #8)",
        lines[-1]], lines[end:]
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive", "--tb=line")
    res.stdout.fnmatch_lines(["loop.chaos.yaml:1: invariant bounded.executions broke at step 4 (trace event #8)"])
    assert "trace around event" not in res.stdout.str()


def test_artifacts_directory_gets_the_trace(pytester: pytest.Pytester, loop: Path) -> None:
    res = pytester.runpytest("--chaos", "--chaos-artifacts=out", "--chaos-seed=7")
    res.assert_outcomes(passed=1)
    events = [json.loads(line) for line in (pytester.path / "out" / "timeout-loop.trace.jsonl").read_text().splitlines()]
    assert events[0]["run"] == "timeout-loop#7" and events[-1]["state"] == "STOPPED_LOOP_GUARD"


def test_a_bad_file_is_a_located_collection_error_without_traceback(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", bad=SCENARIO.replace("title:", "titel:"))
    res = pytester.runpytest("--chaos")
    assert res.ret == pytest.ExitCode.INTERRUPTED
    res.stdout.fnmatch_lines([
        "*ERROR collecting bad.chaos.yaml*",
        "invalid chaos scenario",
        "bad.chaos.yaml:2:1: unknown key 'titel' in the scenario; did you mean 'title'?*",
        " > 2 | titel: The invoice tool times out",
        "     | ^^^^^",
    ])
    out = res.stdout.str()
    assert "Traceback" not in out and "scenario/_" not in out and "raise " not in out


def test_scenario_agent_and_precedence(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=SCENARIO + "agent: builtin:naive\n")
    pytester.makeini("[pytest]\nchaos_agent = builtin:guarded\n")
    pytester.runpytest("--chaos").assert_outcomes(failed=1)  # the scenario's own agent beats the ini option
    pytester.runpytest("--chaos", "--chaos-agent=builtin:guarded").assert_outcomes(passed=1)  # the command line wins


def test_the_file_pattern_is_an_ini_option(pytester: pytest.Pytester, loop: Path) -> None:
    pytester.makefile(".scn.yaml", other=SCENARIO.replace("timeout-loop", "other-loop"))
    pytester.makeini("[pytest]\nchaos_scenario_pattern = *.scn.yaml\n")
    res = pytester.runpytest("--chaos", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["other.scn.yaml::other-loop"])
    assert "timeout-loop" not in res.stdout.str()


def test_python_references_need_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=SCENARIO + "agent: toolchaos._agents:naive\n")
    res = pytester.runpytest("--chaos")
    assert res.ret == pytest.ExitCode.INTERRUPTED
    res.stdout.fnmatch_lines(["loop.chaos.yaml:15:8: agent 'toolchaos._agents:naive' names Python code;*"
                              "chaos_allow_imports = true*"])
    pytester.makeini("[pytest]\nchaos_allow_imports = true\n")
    pytester.runpytest("--chaos").assert_outcomes(failed=1)  # it ran the naive agent


def test_keywords_select_by_category_severity_and_tags(pytester: pytest.Pytester, loop: Path) -> None:
    pytester.runpytest("--chaos", "-k", "loops and critical and timeout").assert_outcomes(passed=1)
    res = pytester.runpytest("--chaos", "-k", "legit")
    assert res.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_certify_runs_the_bundled_suite_from_any_directory(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--chaos-certify", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["toolchaos_scenarios/certification/loop-exact-repeat-timeout.chaos.yaml::"
                              "loop-exact-repeat-timeout"])
    res = pytester.runpytest("--chaos", "--chaos-certify", "-q")
    res.assert_outcomes(passed=len(suite()))


def test_certify_against_the_naive_agent_fails_loops(pytester: pytest.Pytester, loop: Path) -> None:
    res = pytester.runpytest("--chaos-certify", "--chaos-agent=builtin:naive", "-k", "loop-exact or legit-transient")
    res.assert_outcomes(failed=1, passed=1)
    res.stdout.fnmatch_lines(["FAILED toolchaos_scenarios/certification/loop-exact-repeat-timeout.chaos.yaml::*"])


def test_certify_under_xdist(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # only what this needs: fresh processes are slow
    res = pytester.runpytest_subprocess("-p", "xdist", "-p", "toolchaos", "-n", "2", "--chaos-certify",
                                        "-p", "no:cacheprovider", "-q")
    res.assert_outcomes(passed=len(suite()))


def test_the_agent_reference_is_resolved_once_per_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    import importlib

    # The plugin reads it through its door on first use (a plain session never loads it): patch the door in
    # sys.modules, the one the plugin will find (an inner session's import may have left another on the package).
    door = importlib.import_module("toolchaos.pytest_plugin._lazy")

    resolved: list[str] = []
    real = door.agent_under_test

    def counting(ref: str) -> object:
        resolved.append(ref)
        return real(ref)

    monkeypatch.setattr(door, "agent_under_test", counting)
    variants = "variants:\n  - id: a\n  - id: b\n  - id: c\n    agent: builtin:naive\n"
    pytester.makefile(".chaos.yaml", loop=SCENARIO + variants)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(passed=2, failed=1)  # the naive agent's variant fails: each item ran its own agent
    assert sorted(resolved) == ["builtin:guarded", "builtin:naive"]


BROKEN_HARNESS = """
from toolchaos.pytest_plugin import _lazy  # the plugin reads the runner through its door

_original = _lazy.run_scenario


def _broken(*args, **kwargs):
    raise RuntimeError("the harness broke")


def pytest_runtest_setup(item):
    _lazy.run_scenario = _broken


def pytest_runtest_teardown(item):
    _lazy.run_scenario = _original
"""


def test_an_unexpected_error_shows_its_traceback_from_the_item_down(pytester: pytest.Pytester, loop: Path) -> None:
    pytester.makeconftest(BROKEN_HARNESS)
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*def runtest(self) -> None:*", "E       RuntimeError: the harness broke"])
    failure = res.stdout.str().split("= FAILURES =", 1)[1].split("\n=", 1)[0]  # up to the next section
    assert "RuntimeError: the harness broke" in failure
    assert "pluggy" not in failure and "_pytest" not in failure and "from_call" not in failure, failure
