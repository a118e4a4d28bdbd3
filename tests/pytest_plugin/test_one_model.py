"""One model for chaos tests: `-m chaos`, one agent precedence, the verdict line, `--chaos-require` and pytest's tally."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

LOOP = """\
id: timeout-loop
title: The invoice tool times out
category: loops
severity: {severity}
task: Retry until you have the total.
{agent}tools:
  fetch_invoice:
    faults: {{timeout: {{after: 30}}}}
policy:
  stubborn: {{tool: fetch_invoice, args: {{invoice_id: inv_1}}}}
expect:
  - bounded: {{executions: 3}}
"""

MARKED = """
import pytest

@pytest.mark.chaos(agent="builtin:naive")
def test_marked(chaos):
    r = chaos.run(task="t", tools=[chaos.tool("fetch_invoice", chaos.faults.timeout(after=30))],
                  policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "i"}))
    print("AGENT", chaos.agent)
    assert r.executions["fetch_invoice"] <= 3

def test_plain():
    pass
"""


def test_dash_m_chaos_selects_scenario_items_and_marker_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=LOOP.format(severity="critical", agent=""))
    pytester.makepyfile(test_marked=MARKED)
    res = pytester.runpytest("--chaos", "-m", "chaos", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["loop.chaos.yaml::timeout-loop", "test_marked.py::test_marked"])
    assert "test_plain" not in res.stdout.str()


def test_the_command_line_agent_wins_over_the_marker_and_the_scenario(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", loop=LOOP.format(severity="critical", agent="agent: builtin:naive\n"))
    pytester.makepyfile(test_marked=MARKED)
    pytester.runpytest("--chaos").assert_outcomes(passed=1, failed=2)  # naive from the marker and the scenario
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:guarded", "-s")
    res.assert_outcomes(passed=3)
    res.stdout.fnmatch_lines(["*AGENT builtin:guarded*"])


def test_certify_prints_the_verdict_line_without_a_report_directory(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--chaos-certify", "-k", "budget-steps or loop-exact-repeat", "-q")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*toolchaos certification*", "CERTIFIED for 2 of 2 applicable scenarios (all applicable): "
                                                        "level reached all, required all"])


def test_require_a_failure_below_the_level_is_an_xfail_and_the_run_passes(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", minor=LOOP.format(severity="minor", agent="agent: builtin:naive\n"))
    res = pytester.runpytest("--chaos", "--chaos-require=major", "-rx")
    res.assert_outcomes(xfailed=1)
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*minor scenario failed, below the required level major*"])
    res = pytester.runpytest("--chaos", "--chaos-require=all")
    res.assert_outcomes(failed=1)
    assert res.ret == 1


def test_an_advisory_failure_is_an_xfail_at_every_level(pytester: pytest.Pytester) -> None:
    advisory = "advisory\nseverity_why: asks more than sound runtimes do"
    pytester.makefile(".chaos.yaml", advice=LOOP.format(severity=advisory, agent="agent: builtin:naive\n"),
                      sound=LOOP.format(severity="critical", agent="agent: builtin:guarded\n").replace("timeout-loop",
                                                                                                      "sound-loop"))
    for args in ((), ("--chaos-require=all",)):
        res = pytester.runpytest("--chaos", *args, "-rx")
        res.assert_outcomes(passed=1, xfailed=1)
        assert res.ret == 0
        res.stdout.fnmatch_lines(["*advisory scenario failed, required by no level: timeout-loop*"])
    res.stdout.fnmatch_lines(["CERTIFIED for 1 of 2 applicable scenarios*; advisory: 1 of 1 failed (required by no level)"])


def test_a_certification_node_id_runs_again_as_printed(pytester: pytest.Pytester) -> None:
    node = "toolchaos_scenarios/certification/budget-steps.chaos.yaml::budget-steps"
    res = pytester.runpytest(node, "-v")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines([f"{node} PASSED*"])


def test_a_test_that_uses_the_fixture_is_a_chaos_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_wire="def test_uses_the_fixture(chaos):\n    pass\n\ndef test_plain():\n    pass\n")
    res = pytester.runpytest("--chaos", "-m", "chaos", "--collect-only", "-q")
    res.stdout.fnmatch_lines(["test_wire.py::test_uses_the_fixture"])
    assert "test_plain" not in res.stdout.str()
    pytester.runpytest().assert_outcomes(passed=1, skipped=1)


REPORTED = '''
import pytest
from toolchaos import invariants as inv


@pytest.mark.chaos(agent="builtin:naive")
def test_marker_fails(chaos):
    chaos.run(task="t", tools=[chaos.tool("fetch_invoice", chaos.faults.timeout(after=30))],
              policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "i"}), expect=[inv.bounded(executions=3)])


def test_wire_passes(chaos):
    import httpx

    with chaos.wire(tools=[chaos.tool("search")], policy=chaos.policies.scripted([{"final": "ok"}])) as env:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(env.openai_base_url + "/chat/completions", json=body, headers={"authorization": "Bearer x"})
        env.answer = reply.json()["choices"][0]["message"]["content"]
    assert env.result.terminal_state == "COMPLETED"
'''


def test_marker_and_wire_tests_are_in_the_report_and_the_verdict_line(pytester: pytest.Pytester) -> None:
    import json

    pytester.makepyfile(test_reported=REPORTED)
    res = pytester.runpytest("--chaos", "--chaos-report=out")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["NOT CERTIFIED: 1 of 2 applicable scenarios passed (all applicable); level reached none, "
                              "required all"])
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    rows = {s["id"]: (s["verdict"], s["category"]) for s in data["scenarios"]}
    assert rows == {"test_reported.py::test_marker_fails": ("fail", "test"),
                    "test_reported.py::test_wire_passes": ("pass", "test")}


PRECEDENCE = '''
import pytest


@pytest.mark.chaos(agent="builtin:naive")
def test_marker(chaos):
    print("AGENT marker", chaos.agent)


@pytest.mark.chaos(agent="sdk_mod:sdk_agent")
def test_sdk_marker(chaos):
    print("AGENT sdk", chaos.agent, getattr(chaos.agent, "kind", "in-process"))


def test_unmarked(chaos):
    print("AGENT unmarked", chaos.agent)
'''

SDK_MOD = "def sdk_agent(task, env):\n    return 'ok'\n"


def test_one_precedence_for_marker_scenario_and_sdk_agents(pytester: pytest.Pytester) -> None:
    """Command line, then the test's or the scenario's own agent, then ini: the same for every kind of chaos test."""
    pytester.makepyfile(test_precedence=PRECEDENCE, sdk_mod=SDK_MOD)
    pytester.makefile(".chaos.yaml", loop=LOOP.format(severity="critical", agent="agent: builtin:naive\n"))
    pytester.makeini("[pytest]\nchaos_agent = builtin:loopguard\n")
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "-s", "-p", "no:randomly")
    res.stdout.fnmatch_lines(["*AGENT marker builtin:naive*", "*AGENT sdk sdk_mod:sdk_agent sdk*",
                              "*AGENT unmarked builtin:loopguard*"])
    res.assert_outcomes(passed=3, failed=1)  # the scenario's own naive agent beats the ini's: it loops
    res = pytester.runpytest("--chaos", "-s", "-p", "no:randomly", "--chaos-agent=builtin:guarded")
    res.stdout.fnmatch_lines(["*AGENT marker builtin:guarded*", "*AGENT sdk builtin:guarded in-process*",
                              "*AGENT unmarked builtin:guarded*"])
    res.assert_outcomes(passed=4)  # the command line beats the scenario's agent too
