"""The documented certification command under its default process isolation, in a project with every kind of chaos test.

``pytest --chaos --chaos-certify --chaos-agent=REF`` isolates runs by default on Linux. A
``chaos.wire`` test used to die there (its block ran in a forked copy of the process while the
test waited, then ``KeyError: 'env'``); it stays in process, and its report entry says so and why.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from chaos_samples import timeout_loop
from toolchaos.certification import suite
from toolchaos.wire._run import WIRE_SESSION

pytest_plugins = ["pytester"]

MARKER_AND_WIRE = '''
import pytest
from openai import OpenAI

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


@pytest.mark.chaos
def test_marker(chaos):
    script = chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}])
    r = chaos.run(task="Find it", tools=[chaos.tool("search")], policy=script)
    assert r.terminal_state == "COMPLETED"


@pytest.mark.chaos
def test_wire(chaos):
    script = chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}])
    with chaos.wire(tools=[chaos.tool("search")], policy=script) as env:
        client = OpenAI()  # built with no arguments, as an unmodified agent does
        messages = [{"role": "user", "content": "Find it"}]
        while True:
            msg = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
            if not msg.tool_calls:
                break
            messages.append(msg.model_dump(exclude_none=True))
            messages += [{"role": "tool", "tool_call_id": c.id, "content": "{}"} for c in msg.tool_calls]
    assert msg.content == "done"
    assert env.result is not None and env.result.terminal_state == "COMPLETED" and env.result.model_requests == 2
'''

SCENARIO = timeout_loop("mine-timeout-loop", "bounded: {executions: 3}")

LINUX_FORK = sys.platform.startswith("linux") and hasattr(os, "fork")


@pytest.mark.skipif(not LINUX_FORK, reason="--chaos-certify isolates by default on Linux only")
def test_the_documented_certify_command_runs_every_kind_of_chaos_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=MARKER_AND_WIRE)
    pytester.makefile(".chaos.yaml", mine=SCENARIO)
    res = pytester.runpytest("--chaos", "--chaos-certify", "--chaos-agent=builtin:guarded", "--chaos-report=out",
                             "-p", "no:cacheprovider")
    res.assert_outcomes(passed=len(suite()) + 3)  # the bundled suite, the marker test, the wire test, the scenario
    out = res.stdout.str()
    assert "KeyError" not in out and "INTERNALERROR" not in out
    res.stdout.fnmatch_lines(["*CERTIFIED for * applicable scenarios (all applicable): level reached all*"])
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    entries = {s["id"]: s for s in report["scenarios"]}
    assert len(entries) == len(suite()) + 3 and {"test_agent.py::test_marker", "mine-timeout-loop"} <= set(entries)
    # Every other run was isolated, as the session asked: the bundled suite's, the marker test's, the scenario file's.
    stayed = {i: s["isolation"] for i, s in entries.items() if s["isolation"] != {"mode": "process", "reason": None}}
    assert stayed == {"test_agent.py::test_wire": {"mode": "none", "reason": WIRE_SESSION}}
    html = (pytester.path / "out" / "report.html").read_text()
    assert f"Ran in process under process isolation: {WIRE_SESSION}" in html.replace("&#x27;", "'")
