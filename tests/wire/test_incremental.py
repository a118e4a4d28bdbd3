"""The wire's incremental path (bodies read per conversation, history vouched for to the token meter)
gives the same run as reading every request in full: the same trace, byte for byte, the same answers,
and the same messages in front of the policy, whatever the agent does to its history."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from toolchaos import Ceiling, Decision, wire
from toolchaos.fake_tools import catalogue
from toolchaos.wire import _server
from toolchaos.wire._conversation import Conversations

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

Agent = Callable[[str, Any], str]
RESULT = '{"invoice_id":"inv_1","total":"671.50","currency":"EUR","status":"open"}'
# The agents declare their tool, as a real API needs before it answers with a call to it
PARAMS = {"type": "object", "properties": {"invoice_id": {"type": "string"}}}
OPENAI_TOOLS = [{"type": "function", "function": {"name": "fetch_invoice", "parameters": PARAMS}}]
ANTHROPIC_TOOLS = [{"name": "fetch_invoice", "input_schema": PARAMS}]


def _openai_turn(client: Any, msgs: list[dict[str, Any]]) -> None:
    tc = client.chat.completions.create(model="m", messages=msgs, tools=OPENAI_TOOLS).choices[0].message.tool_calls[0]
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": tc.id, "type": "function", "function": {"name": tc.function.name, "arguments": tc.function.arguments}}]})
    msgs.append({"role": "tool", "tool_call_id": tc.id, "content": RESULT})


def _anthropic_turn(client: Any, msgs: list[dict[str, Any]], system: str = "Be brief.") -> None:
    use = client.messages.create(model="c", max_tokens=64, messages=msgs, system=system,
                                 tools=ANTHROPIC_TOOLS).content[-1]
    msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": use.id, "name": use.name,
                                                   "input": use.input}]})
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": RESULT}]})


def _run(agent: Agent, policy: Callable[[Any], Decision] | None = None, **options: Any) -> Any:
    views: list[str] = []

    def recording(view: Any) -> Decision:
        views.append(json.dumps([view.messages, [(f.call_id, f.kind) for f in view.feedback]], sort_keys=True))
        return policy(view) if policy is not None else Decision.call("fetch_invoice", {"invoice_id": "inv_1"})

    result = wire.run(agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")], policy=recording,
                      ceiling=Ceiling(max_model_turns=60), seed=7, **options)
    assert result.error is None and result.answer == "done", result.error
    return result, views


def _both(agent: Agent, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, list[str], dict[str, int]]:
    """The run incrementally, then with every request read and converted in full; they must agree."""
    made: list[Conversations] = []

    def counted(*args: Any, **kwargs: Any) -> Conversations:
        made.append(Conversations(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(_server, "Conversations", counted)
    fast, fast_views = _run(agent, **options)
    reads = dict(made[-1].reads)
    monkeypatch.setattr(_server, "Conversations", functools.partial(counted, keep=0))  # remembers nothing
    full, full_views = _run(agent, **options)
    assert made[-1].reads["continued"] == 0
    assert fast.trace.jsonl() == full.trace.jsonl()
    assert fast_views == full_views
    assert [r.body for r in fast.requests] == [r.body for r in full.requests]
    return fast, fast_views, reads


def test_an_edited_and_truncated_history(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent(task: str, env: Any) -> str:
        client, msgs = openai.OpenAI(), [{"role": "system", "content": "Be brief."}, {"role": "user", "content": task}]
        for turn in range(8):
            _openai_turn(client, msgs)
            if turn == 2:
                msgs[3]["content"] = "trimmed"  # an old tool result shortened in place
            if turn == 5:
                del msgs[2:6]  # the oldest exchanges dropped
        return "done"

    _, views, reads = _both(agent, monkeypatch)
    assert reads["full"] == 3 and reads["continued"] == 5  # the two edits start conversations of their own
    assert json.loads(views[3])[0][3]["content"] == "trimmed"
    assert len(json.loads(views[6])[0]) == len(json.loads(views[5])[0]) - 2


def test_two_conversations_on_two_threads_in_lock_step(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent(task: str, env: Any) -> str:
        turns = [threading.Event() for _ in range(12)]

        def conversation(first: int, make: Callable[[], Any], step: Callable[..., None], opening: str) -> None:
            client, msgs = make(), [{"role": "user", "content": opening}]
            for i in range(first, len(turns), 2):  # its turns alternate with the other thread's
                if i:
                    turns[i - 1].wait()
                step(client, msgs)
                turns[i].set()

        threads = [threading.Thread(target=conversation, args=(0, openai.OpenAI, _openai_turn, task)),
                   threading.Thread(target=conversation, args=(1, openai.OpenAI, _openai_turn, "Another one?"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return "done"

    _, views, reads = _both(agent, monkeypatch)
    assert reads == {"full": 2, "continued": 10}
    assert [json.loads(v)[0][0]["content"] for v in views[:4]] == ["Total of inv_1?", "Another one?"] * 2


def test_a_retried_identical_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent(task: str, env: Any) -> str:
        client, msgs = openai.OpenAI(max_retries=2), [{"role": "user", "content": task}]
        for turn in range(6):
            _openai_turn(client, msgs)
            if turn == 3:  # the agent sends the same body again, and drops the second answer
                client.chat.completions.create(model="m", messages=msgs, tools=OPENAI_TOOLS)
        return "done"

    result, views, reads = _both(agent, monkeypatch, api_faults={3: {"429": 2}})  # the SDK retries request 3 after 2 s
    assert result.faulted_requests and result.model_requests == 8
    assert views[4] == views[5]  # the same request twice: the same messages
    assert reads["full"] == 1


def test_anthropic_with_a_system_prompt_and_a_policy_that_edits_its_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent(task: str, env: Any) -> str:
        client, msgs = anthropic.Anthropic(), [{"role": "user", "content": task}]
        for turn in range(6):
            _anthropic_turn(client, msgs, "Be brief." if turn < 4 else "Be briefer.")  # the system prompt changes
        return "done"

    def vandal(view: Any) -> Decision:
        for m in view.messages:  # a policy that scribbles on what it is shown: never seen next turn
            m["content"] = "scribbled"
            m.pop("role")
        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"})

    monkeypatch.setattr(_server, "Conversations", Conversations)
    _, views = _run(agent, policy=vandal)
    assert all('"scribbled"' not in v for v in views)
    assert json.loads(views[5])[0][0] == {"role": "system", "content": "Be briefer."}
    _both(agent, monkeypatch)
