"""Node agents on openai, @anthropic-ai/sdk, the OpenAI Agents JS SDK and the Vercel AI SDK, through serve and MCP.

The agents are the example agents of the presets (``node-openai``, ``node-anthropic``, ``openai-agents-js``,
``vercel-ai``); their
packages are the pinned ones in ``.ci/node`` (``npm ci --prefix .ci/node``, which ``.ci/run``
runs). What each agent's own code counted (it prints one line) must be what the harness saw.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from toolchaos import Ceiling, policies
from toolchaos.fake_tools import catalogue, faults
from toolchaos.matrices import processes as matrix
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

NODE_DIR = Path(__file__).resolve().parents[2] / ".ci" / "node"
pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (.ci/run uses the machine's)"),
    pytest.mark.skipif(not (NODE_DIR / "node_modules").is_dir(),
                       reason="the pinned Node packages are not installed: run `npm ci --prefix .ci/node`"),
]


def _counts(stdout: str) -> dict[str, object]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("TOOLCHAOS_COUNTS "))
    return dict(json.loads(line.partition(" ")[2]))


@pytest.mark.parametrize("preset", ["node-openai", "node-anthropic"])
def test_a_node_agent_loops_on_a_tool_that_always_times_out_and_the_counts_match(preset: str) -> None:
    res = run(ProcessAgent(preset=preset, cwd=str(NODE_DIR), env={"AGENT_MAX_TURNS": "5"}),
              task="Retry until you have the total of invoice inv_1.",
              tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
              policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    counts = _counts(res.process.stdout)
    assert counts["tool_calls"] == res.total_executions == 5
    assert counts["tool_errors"] == 5  # each timeout reached it as an MCP tool error
    assert counts["model_requests"] == res.model_requests == res.turns == 5
    assert counts["stopped"] == "turn_limit" and res.terminal_state == "FAILED"


@pytest.mark.parametrize("preset", ["node-openai", "node-anthropic"])
def test_a_node_agent_sends_one_email_and_answers(preset: str) -> None:
    policy = policies.scripted([{"call": "send_email", "args": {"to": "ann@example.com", "subject": "Hi",
                                                                "body": "Hello"}}, {"final": "Sent."}])
    res = run(ProcessAgent(preset=preset, cwd=str(NODE_DIR)), task="Send Ann a hello.",
              tools=[catalogue.get("send_email")], policy=policy, ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    counts = _counts(res.process.stdout)
    assert counts == {"model_requests": 2, "tool_calls": 1, "tool_errors": 0, "turns": 2, "stopped": "final"}
    assert res.terminal_state == "COMPLETED" and res.ledger.applied("send_email") == 1


def test_an_openai_agents_js_agent_stops_at_its_own_max_turns_and_the_counts_match() -> None:
    res = run(ProcessAgent(preset="openai-agents-js", cwd=str(NODE_DIR)),
              task="Retry until you have the total of invoice inv_1.",
              tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
              policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    counts = _counts(res.process.stdout)
    assert counts["stopped"] == "turn_limit"  # the SDK's MaxTurnsExceededError at its default of 10
    assert counts["tool_calls"] == res.total_executions == 10
    assert counts["model_requests"] == res.model_requests == res.turns == 10
    assert {r.api for r in res.requests} == {"openai.responses"}  # its default model: the Responses API


def test_a_vercel_ai_agent_stops_at_its_step_limit_and_the_counts_match() -> None:
    agent = ProcessAgent(preset="vercel-ai", cwd=str(NODE_DIR), env={"AGENT_MAX_TURNS": "5"})
    res = run(agent,
              task="Retry until you have the total of invoice inv_1.",
              tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
              policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    counts = _counts(res.process.stdout)
    assert counts["stopped"] == "turn_limit"  # generateText returns, no error, at stopWhen: stepCountIs(5)
    assert counts["tool_calls"] == res.total_executions == 5
    assert counts["tool_errors"] == 5  # each timeout reached it as an MCP tool error
    assert counts["model_requests"] == res.model_requests == res.turns == 5
    assert {r.api for r in res.requests} == {"openai.responses"}  # openai(model): the Responses API
    assert res.terminal_state == "FAILED"
    # What the matrix says of it: the version in node_modules, and its own step limit as what stopped it.
    assert matrix.version("vercel-ai", agent, NODE_DIR) == "ai 6.0.326"
    assert matrix.stopped_by("vercel-ai", res).startswith("its step limit")


def test_a_vercel_ai_agent_sends_one_email_and_answers() -> None:
    policy = policies.scripted([{"call": "send_email", "args": {"to": "ann@example.com", "subject": "Hi",
                                                                "body": "Hello"}}, {"final": "Sent."}])
    res = run(ProcessAgent(preset="vercel-ai", cwd=str(NODE_DIR)), task="Send Ann a hello.",
              tools=[catalogue.get("send_email")], policy=policy, ceiling=Ceiling(real_seconds=60))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    counts = _counts(res.process.stdout)
    assert counts == {"model_requests": 2, "tool_calls": 1, "tool_errors": 0, "turns": 2, "stopped": "final"}
    assert res.terminal_state == "COMPLETED" and res.ledger.applied("send_email") == 1
