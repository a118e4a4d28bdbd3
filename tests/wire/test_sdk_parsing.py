"""Every response and stream the wire serves is consumed by the real SDK clients.

Each case runs one SDK call style (non-streamed, streamed, the SDK's stream helper,
stateful) in a loop through ``wire.run``: the policy asks for two tool calls in one turn,
then answers. The SDK must parse both calls (ids, names, arguments assembled from
deltas), the tools must run twice, and the final text must come through intact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra: pip install toolchaos[openai]")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra: pip install toolchaos[anthropic]")

from toolchaos import policies, wire  # noqa: E402
from toolchaos.fake_tools import catalogue  # noqa: E402

from . import sdk_loops  # noqa: E402

FINAL = "Invoice inv_1 totals 10 EUR; inv_2 totals 20 EUR. Done — ünïcode kept."
ARGS = [{"invoice_id": "inv_1"}, {"invoice_id": "inv_2 \"quoted\""}]


def _policy() -> Any:
    return policies.scripted([{"calls": [{"call": "fetch_invoice", "args": a} for a in ARGS]}, {"final": FINAL}])


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, Any]]:
    # One client of each kind for the module: building SDK clients is the slow part. Closed after it: a client
    # still open when the interpreter exits is closed by its __del__ after httpx is gone, which prints an error.
    made = {"openai": openai.OpenAI(api_key="sk-test", max_retries=0),
            "anthropic": anthropic.Anthropic(api_key="sk-test", max_retries=0)}
    yield made
    for client in made.values():
        client.close()


def _check(result: Any, seen: list[Any]) -> None:
    assert result.harness_stop is None, result.error
    assert result.answer == FINAL
    assert result.terminal_state == "COMPLETED"
    assert [args for _, _, args in seen] == ARGS
    assert [name for _, name, _ in seen] == ["fetch_invoice", "fetch_invoice"]
    assert len({cid for cid, _, _ in seen}) == 2
    assert result.executions == {"fetch_invoice": 2}
    assert result.model_requests == 2 and result.turns == 2
    # the policy saw both results the agent fed back, matched to the calls it made
    tool_events = result.trace.tool_events
    assert [e["call_id"] for e in tool_events] == [cid for cid, _, _ in seen]
    assert result.usage[1].input_tokens > result.usage[0].input_tokens  # usage grows with the conversation


@pytest.mark.parametrize("mode", ["create", "stream", "helper"])
def test_chat_completions(clients: dict[str, Any], mode: str) -> None:
    seen: list[Any] = []
    result = wire.run(lambda task, env: sdk_loops.chat_loop(clients["openai"], mode, env, seen), task="Totals?",
                      tools=[catalogue.get("fetch_invoice")], policy=_policy(), apis=["openai"])
    _check(result, seen)
    assert {r.stream for r in result.requests} == {mode != "create"}


@pytest.mark.parametrize("mode", ["create", "stream", "helper", "stateful"])
def test_responses(clients: dict[str, Any], mode: str) -> None:
    seen: list[Any] = []
    result = wire.run(lambda task, env: sdk_loops.responses_loop(clients["openai"], mode, env, seen), task="Totals?",
                      tools=[catalogue.get("fetch_invoice")], policy=_policy(), apis=["openai"])
    _check(result, seen)
    if mode == "stateful":
        second = result.requests[1].body
        assert second["previous_response_id"] and all(i["type"] == "function_call_output" for i in second["input"])


@pytest.mark.parametrize("mode", ["create", "stream", "helper", "thread"])
def test_anthropic_messages(clients: dict[str, Any], mode: str) -> None:
    seen: list[Any] = []
    result = wire.run(lambda task, env: sdk_loops.messages_loop(clients["anthropic"], mode, env, seen), task="Totals?",
                      tools=[catalogue.get("fetch_invoice")], policy=_policy(), apis=["anthropic"])
    _check(result, seen)
    if mode == "thread":
        second = result.requests[1].body
        assert second["thread"]["type"] == "continue" and len(second["messages"]) == 1
        assert "tools" not in second and "system" not in second


@pytest.mark.parametrize("api,mode", [("openai.chat", "create"), ("openai.chat", "helper"),
                                      ("openai.responses", "create"), ("openai.responses", "helper"),
                                      ("anthropic", "create"), ("anthropic", "helper")])
def test_async_clients(api: str, mode: str) -> None:
    seen: list[Any] = []

    async def agent(task: str, env: Any) -> Any:
        if api == "anthropic":
            return await sdk_loops.amessages_loop(anthropic.AsyncAnthropic(max_retries=0), mode, env, seen)
        client = openai.AsyncOpenAI(max_retries=0)
        loop = sdk_loops.achat_loop if api == "openai.chat" else sdk_loops.aresponses_loop
        return await loop(client, mode, env, seen)

    result = wire.run(agent, task="Totals?", tools=[catalogue.get("fetch_invoice")], policy=_policy())
    _check(result, seen)


def test_text_only_streams_and_usage_chunk(clients: dict[str, Any]) -> None:
    def agent(task: str, env: Any) -> str:
        chunks = list(clients["openai"].chat.completions.create(
            model="m", messages=[{"role": "user", "content": task}], stream=True, stream_options={"include_usage": True}))
        assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
        assert chunks[-2].choices[0].finish_reason == "stop"
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    result = wire.run(agent, task="Say hi", tools=[], policy=policies.scripted([{"final": "Hello there, world."}]))
    assert result.answer == "Hello there, world." and result.terminal_state == "COMPLETED"


def test_the_policy_sees_what_the_agent_fed_back(clients: dict[str, Any]) -> None:
    """An agent that hides the tool's error: the policy reads what was sent, not the ground truth."""
    views: list[Any] = []

    def policy(view: Any) -> Any:
        views.append(view.feedback)
        from toolchaos import Decision

        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"}) if view.step == 1 else Decision.final("ok")

    def agent(task: str, env: Any) -> Any:
        client = clients["openai"]
        msgs: list[dict[str, Any]] = [{"role": "user", "content": task}]
        msg = client.chat.completions.create(model="m", messages=msgs, tools=env.openai_tools).choices[0].message
        call = msg.tool_calls[0]
        env.call(call.function.name, {"invoice_id": "inv_1"}, call_id=call.id)  # times out; the agent hides it
        msgs += [msg.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "An error occurred. Please try again."}]
        return client.chat.completions.create(model="m", messages=msgs).choices[0].message.content

    from toolchaos.fake_tools import faults

    result = wire.run(agent, task="Total?", tools=[catalogue.get("fetch_invoice", faults=faults.timeout())], policy=policy)
    assert result.answer == "ok"
    (fb,) = views[1]
    assert fb.kind == "error" and fb.retryable is True and fb.content == "An error occurred. Please try again."
    assert fb.tool == "fetch_invoice" and fb.arguments == {"invoice_id": "inv_1"}


def test_asyncio_run_inside_is_allowed() -> None:
    async def agent(task: str, env: Any) -> str:
        await asyncio.sleep(30)  # virtual
        return "slept"

    result = wire.run(agent, task="t", tools=[], policy=policies.scripted([]))
    assert result.answer == "slept" and result.virtual_seconds == pytest.approx(30)
