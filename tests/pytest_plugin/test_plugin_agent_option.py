"""``--chaos-agent`` and the ``chaos_agent`` ini option choose the agent under test."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

AGENT = """
def my_agent(task, model, tools):
    turn = model.complete([{"role": "user", "content": task}])
    return "mine"
"""

TEST = """
def test_agent(chaos):
    r = chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
    print("AGENT", chaos.agent, r.answer)
"""


def test_default_is_the_guarded_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    pytester.runpytest("--chaos", "-s").stdout.fnmatch_lines(["*AGENT builtin:guarded Done.*"])


def test_command_line_agent(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_agent_mod=AGENT, test_a=TEST)
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "--chaos-agent=my_agent_mod:my_agent", "-s")
    res.stdout.fnmatch_lines(["*AGENT my_agent_mod:my_agent mine*"])


def test_ini_agent_and_command_line_wins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_agent_mod=AGENT, test_a=TEST)
    pytester.makeini("[pytest]\nchaos_agent = my_agent_mod:my_agent\n")
    pytester.syspathinsert()
    pytester.runpytest("--chaos", "-s").stdout.fnmatch_lines(["*AGENT my_agent_mod:my_agent mine*"])
    pytester.runpytest("--chaos", "-s", "--chaos-agent=builtin:naive").stdout.fnmatch_lines(
        ["*AGENT builtin:naive*"])


def test_a_bad_reference_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    res = pytester.runpytest("--chaos", "--chaos-agent=nowhere_xyz:agent")
    res.stdout.fnmatch_lines(["*cannot import 'nowhere_xyz'*"])
