"""``--chaos-agent`` and the ``chaos_agent`` ini option choose the agent under test."""

from __future__ import annotations

import pytest
from toolchaos.certification import suite_root

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


def test_a_misspelled_attribute_gets_a_did_you_mean(pytester: pytest.Pytester) -> None:
    from chaos_samples import PAY_SCENARIO

    pytester.makepyfile(my_agent_mod=AGENT)
    pytester.makefile(".chaos.yaml", pay=PAY_SCENARIO)
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "--chaos-agent=my_agent_mod:my_agnet")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["chaos scenario pay: agent reference 'my_agent_mod:my_agnet': 'my_agent_mod' has no "
                              "attribute 'my_agnet'; did you mean 'my_agent'?"])


SDK_AGENT = """
import json

def sdk_agent(task, env):  # an SDK loop: its model answered over HTTP by the harness
    client = env.openai()
    messages = [{"role": "user", "content": task}]
    for _ in range(5):
        message = client.chat.completions.create(model="m", messages=messages,
                                                 tools=env.openai_tools).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            result = env.call(call.function.name, json.loads(call.function.arguments), call_id=call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
"""

SDK_TEST = """
def test_agent(chaos):
    r = chaos.run(task="t", tools=[chaos.tool("fetch_invoice")],
                  policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), expect=[])
    print("KIND", chaos.agent.kind, r.terminal_state, r.model_requests, r.answer)
"""


def test_an_sdk_agent_runs_through_the_wire(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(sdk_mod=SDK_AGENT, test_a=SDK_TEST)
    scenario = suite_root() / "certification" / "legit-transient-503.chaos.yaml"
    pytester.makefile(".chaos.yaml", transient=scenario.read_text(encoding="utf-8"))
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "--chaos-agent=sdk_mod:sdk_agent", "-s")
    res.stdout.fnmatch_lines(["*KIND sdk COMPLETED 2 Here is the result of fetch_invoice.*"])
    res.assert_outcomes(passed=2)  # the chaos test and the scenario, both through the wire


def test_the_fixture_resolves_a_reference_once_a_session(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving imports the reference and reads its signature (~0.2 ms): once, not once per test."""
    from toolchaos.pytest_plugin import _lazy  # the plugin reads it through its door

    calls: list[object] = []
    real = _lazy.agent_under_test

    def counting(agent: object, kind: str | None = None) -> object:
        calls.append(agent)
        return real(agent, kind)

    monkeypatch.setattr(_lazy, "agent_under_test", counting)
    pytester.makepyfile(my_agent_mod=AGENT, test_a=TEST.replace("def test_agent(chaos):", """
import pytest

@pytest.mark.parametrize("i", range(3))
def test_agent(chaos, i):"""), test_b="""
import pytest

@pytest.mark.chaos(agent="builtin:naive")
def test_naive(chaos):
    assert chaos.agent == "builtin:naive"
""")
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "-s", "-p", "no:randomly")
    res.assert_outcomes(passed=4)
    assert res.stdout.str().count("AGENT builtin:guarded Done.") == 3
    assert sorted(map(str, calls)) == ["builtin:guarded", "builtin:naive"]
