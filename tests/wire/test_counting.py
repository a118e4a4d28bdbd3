"""The harness's counts equal what the SDK agent really did, counted independently."""

from __future__ import annotations

import json
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra: pip install toolchaos[openai]")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra: pip install toolchaos[anthropic]")
httpx2 = pytest.importorskip("httpx2")

from toolchaos import policies, wire  # noqa: E402
from toolchaos.fake_tools import catalogue, faults  # noqa: E402


def _stubborn_timeout() -> tuple[Any, Any]:
    return (catalogue.get("fetch_invoice", faults=faults.timeout(after=30)),
            policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}, until="never"))


def test_openai_naive_loop_counts_match() -> None:
    sent: list[str] = []  # every HTTP request the SDK sent, seen by the SDK's own http client
    executed: list[dict[str, Any]] = []

    def agent(task: str, env: Any) -> str | None:
        http = httpx2.Client(event_hooks={"request": [lambda request: sent.append(str(request.url))]})
        client = openai.OpenAI(http_client=http)
        msgs: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(12):
            msg = client.chat.completions.create(model="m", messages=msgs, tools=env.openai_tools).choices[0].message
            msgs.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                return msg.content
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments)
                executed.append(args)
                out = env.call(call.function.name, args, call_id=call.id)
                msgs.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(out)})
        return None

    tool, policy = _stubborn_timeout()
    result = wire.run(agent, task="Get the total", tools=[tool], policy=policy, api_faults={3: "429", 7: "503"})
    assert result.terminal_state == "FAILED"  # ran out of steps: returned, but the task was not done
    assert result.total_executions == len(executed) == 12
    assert result.model_requests == len(sent) == 12 + 2  # two faulted requests the SDK retried
    assert result.turns == 12 and len(result.trace.of_kind("api")) == 2
    assert result.virtual_seconds >= 12 * 30


def test_anthropic_tool_runner_counts_match() -> None:
    """The SDK's own tool runner (threads on by default, no default iteration cap)."""
    sent: list[Any] = []
    calls: list[str] = []

    def agent(task: str, env: Any) -> str:
        from anthropic import beta_tool

        @beta_tool
        def fetch_invoice(invoice_id: str) -> str:
            """Fetch an invoice."""
            calls.append(invoice_id)
            return json.dumps(env.call("fetch_invoice", {"invoice_id": invoice_id}))

        http = httpx2.Client(event_hooks={"request": [lambda request: sent.append(json.loads(request.content))]})
        client = anthropic.Anthropic(http_client=http)
        runner = client.beta.messages.tool_runner(model="c", max_tokens=100, tools=[fetch_invoice], max_iterations=9,
                                                  messages=[{"role": "user", "content": task}])
        last = None
        for message in runner:
            last = message
        return "".join(b.text for b in last.content if b.type == "text") if last else ""

    tool, policy = _stubborn_timeout()
    result = wire.run(agent, task="Get the total", tools=[tool], policy=policy)
    assert result.terminal_state == "FAILED"  # max_iterations ended it without raising: not completed
    assert result.total_executions == len(calls) == 9
    assert result.model_requests == len(sent) == 9
    # after the first turn the runner continues a server-held thread, sending only the tool results
    assert sent[0]["thread"] == {"type": "create"}
    assert all(s["thread"]["type"] == "continue" and len(s["messages"]) == 1 for s in sent[1:])


def test_unbounded_tool_runner_hits_the_hard_ceiling() -> None:
    from toolchaos import Ceiling

    def agent(task: str, env: Any) -> None:
        from anthropic import beta_tool

        @beta_tool
        def fetch_invoice(invoice_id: str) -> str:
            """Fetch an invoice."""
            return json.dumps(env.call("fetch_invoice", {"invoice_id": invoice_id}))

        runner = anthropic.Anthropic().beta.messages.tool_runner(
            model="c", max_tokens=100, tools=[fetch_invoice], messages=[{"role": "user", "content": task}])
        for _ in runner:
            pass

    tool, policy = _stubborn_timeout()
    result = wire.run(agent, task="t", tools=[tool], policy=policy, ceiling=Ceiling(max_model_turns=30))
    assert result.terminal_state == "HARD_CEILING" and result.harness_stop == "ceiling"
    assert result.turns == 30 and result.total_executions == 30
