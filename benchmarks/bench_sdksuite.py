"""A heavy suite under xdist: SDK agents over the wire, serial versus ``pytest -n 2``.

    python benchmarks/run.py --only sdksuite

The suite is 100 tests (40 with ``--quick``), each one ``toolchaos.wire.run`` of an
unmodified SDK agent loop: the ``openai`` Chat Completions client or the ``anthropic``
Messages client (alternating), the model answered by a scripted policy over the wire, the
tool calls executed through the run's fake tools, 10 to 40 turns: tens to hundreds of
milliseconds of work per test, where ``-n`` should pay (the 1,000 tiny scenarios of ``bench_scale`` are
dominated by pytest's start-up instead).

Figures: ``xdist_speedup_2_sdk`` (serial wall / ``-n 2`` wall, each a whole pytest process
under ``--chaos``, start-up and collection included, bytecode cache warm, one run after
the other), ``xdist_speedup_2_sdk_test_phase`` (the same over the test phase only), the
wall times, and ``sdk_suite_load_1m``: the machine's one-minute load average when the
measure ended (a 2-core machine busy with other work cannot show a 2x speed-up).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TOOL = "fetch_invoice"

SUITE = """
import pytest
from bench_sdksuite import sdk_scenario

@pytest.mark.parametrize("i", range({tests}))
def test_sdk_agent(i):
    sdk_scenario(i)
"""


def _openai_agent(task: str, env: Any) -> str:
    import openai

    client, msgs = openai.OpenAI(), [{"role": "user", "content": task}]
    while True:
        msg = client.chat.completions.create(model="m", messages=msgs, tools=env.openai_tools).choices[0].message
        if not msg.tool_calls:
            return str(msg.content)
        msgs.append({"role": "assistant", "content": msg.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in msg.tool_calls]})
        for c in msg.tool_calls:
            out = env.call(c.function.name, json.loads(c.function.arguments), call_id=c.id)
            msgs.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(out, default=str)})


def _anthropic_agent(task: str, env: Any) -> str:
    import anthropic

    client, msgs = anthropic.Anthropic(), [{"role": "user", "content": task}]
    while True:
        content = client.messages.create(model="c", max_tokens=256, messages=msgs, tools=env.anthropic_tools).content
        uses = [b for b in content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in content if b.type == "text")
        msgs.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in content]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": json.dumps(env.call(b.name, b.input, call_id=b.id),
                                                                                default=str)} for b in uses]})


def sdk_scenario(i: int) -> None:
    """Test ``i`` of the suite: an SDK agent for ``10 + i % 31`` turns, asserted like a user's test."""
    from toolchaos import Decision, wire
    from toolchaos.fake_tools import catalogue

    turns = 10 + i % 31

    def policy(view: Any) -> Decision:
        if view.step < turns:
            return Decision.call(TOOL, {"invoice_id": f"inv_{view.step % 3 + 1}"})
        return Decision.final("The total is 671.50 EUR.")

    agent = _openai_agent if i % 2 == 0 else _anthropic_agent
    result = wire.run(agent, task="What is the total of invoice inv_1?", tools=[catalogue.get(TOOL)], policy=policy,
                      seed=i)
    assert result.answer == "The total is 671.50 EUR.", result.error
    assert len(result.requests) == turns


def measure(quick: bool) -> dict[str, float]:
    try:
        import anthropic  # noqa: F401
        import openai  # noqa: F401
        import xdist  # noqa: F401
    except ImportError:
        return {}
    from bench_scale import serial_vs_n2

    tests = 40 if quick else 100
    times = serial_vs_n2("test_sdk_suite.py", SUITE.replace("{tests}", str(tests)))
    serial, parallel = times["serial_s"], times["parallel_s"]
    serial_tests, parallel_tests = times["serial_tests_s"], times["parallel_tests_s"]
    return {"xdist_speedup_2_sdk": round(serial / parallel, 3),
            "xdist_speedup_2_sdk_test_phase": round(serial_tests / parallel_tests, 3),
            "xdist_sdk_serial_wall_s": round(serial, 2), "xdist_sdk_n2_wall_s": round(parallel, 2),
            "xdist_sdk_serial_tests_s": round(serial_tests, 2), "xdist_sdk_n2_tests_s": round(parallel_tests, 2),
            "sdk_suite_tests": tests, "sdk_suite_load_1m": round(os.getloadavg()[0], 2)}


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), sort_keys=True))
