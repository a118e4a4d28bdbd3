"""``chaos.wire(...)``: a respx-style context manager for SDK agents, with the test's seed and artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = '''
import time

import pytest
from openai import OpenAI
from toolchaos import invariants as inv


def my_agent(task):  # an ordinary SDK loop: the client built with no arguments
    client = OpenAI()
    messages = [{"role": "user", "content": task}]
    for _ in range(10):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        msg = reply.choices[0].message
        if not msg.tool_calls:
            return msg.content
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            time.sleep(5)  # the block's sleeps are the run's virtual time
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "{}"})
    return None


TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


@pytest.mark.chaos
def test_the_block_is_the_agent(chaos):
    script = chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}])
    with chaos.wire(tools=[chaos.tool("search")], policy=script) as env:
        answer = my_agent("Find it")
    assert answer == "done"
    r = env.result
    assert r.terminal_state == "COMPLETED" and r.model_requests == 2 and r.virtual_seconds == 5
    assert chaos.results == [r]
    r.check(inv.bounded(executions=3))


@pytest.mark.chaos
def test_a_looping_agent_fails_its_invariant(chaos):
    loop = chaos.policies.stubborn("search", {"query": "q"})
    with chaos.wire(tools=[chaos.tool("search")], policy=loop) as env:
        my_agent("Find it")
    env.result.check(inv.bounded(turns=3))
'''


def test_chaos_wire_runs_the_block_as_the_agent_and_writes_artifacts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sdk=TESTS)
    res = pytester.runpytest("--chaos", "--chaos-artifacts=out", "-p", "no:randomly")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*invariant bounded.turns broke*"])
    written = sorted(p.name for p in Path(pytester.path, "out").glob("*.trace.jsonl"))
    assert len(written) == 2 and written[0].startswith("test_sdk.py__test_a_looping_agent_fails_its_invariant")
    assert written[1].startswith("test_sdk.py__test_the_block_is_the_agent")


def test_without_chaos_a_wire_test_is_skipped_like_any_chaos_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sdk=TESTS)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(skipped=2)
