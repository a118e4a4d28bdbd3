"""Request bodies read per conversation: the same values as ``json.loads``, only the new part parsed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from toolchaos.wire import _formats as fmt
from toolchaos.wire._conversation import Conversations


def _body(n: int, **extra: Any) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Total?"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "fetch", "arguments": '{"id":"inv_1"}'}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
    return {"model": "m", "messages": msgs, **extra}


def _read(conv: Conversations, body: Any, **dumps: Any) -> Any:
    raw = json.dumps(body, **dumps).encode()
    got = conv.read("chat", raw)
    assert got == json.loads(raw) and list(got) == list(json.loads(raw))  # same values, same key order
    return got


def test_a_growing_conversation_is_read_once_and_converted_once() -> None:
    conv = Conversations()
    for n in range(6):
        body = _read(conv, _body(n, stream=False, tools=[{"type": "function"}]))
        assert conv.messages(body, fmt.chat_message_in) == fmt.chat_messages(body)
    assert conv.reads == {"full": 1, "continued": 5}
    calls: list[Any] = []

    def counting(m: Any) -> list[dict[str, Any]]:
        calls.append(m)
        return fmt.chat_message_in(m)

    body = _read(conv, _body(6, stream=False, tools=[{"type": "function"}]))
    assert conv.messages(body, counting) == fmt.chat_messages(body)
    assert [m["role"] for m in calls] == ["assistant", "tool"]  # only the two new messages


@pytest.mark.parametrize("edit", ["content", "truncate", "insert", "keys_before"])
def test_an_edited_or_truncated_history_is_read_again_in_full(edit: str) -> None:
    conv = Conversations()
    for n in range(4):
        _read(conv, _body(n))
    body = _body(4)
    if edit == "content":
        body["messages"][3]["content"] = "trimmed"
    elif edit == "truncate":
        del body["messages"][2:6]
    elif edit == "insert":
        body["messages"].insert(1, {"role": "user", "content": "an extra note"})
    else:
        body = {"temperature": 0.5, **body}
    got = _read(conv, body)
    assert conv.reads["full"] == 2
    assert conv.messages(got, fmt.chat_message_in) == fmt.chat_messages(body)
    again = _read(conv, {**body, "messages": body["messages"] + [{"role": "user", "content": "next"}]})
    assert conv.reads["continued"] == 4  # the edited history is a conversation of its own from there on
    assert conv.messages(again, fmt.chat_message_in)[-1] == {"role": "user", "content": "next"}


def test_interleaved_conversations_each_continue() -> None:
    conv = Conversations()
    for n in range(3):
        for who in ("a", "b"):
            body = _body(n)
            body["messages"][1]["content"] = who
            got = _read(conv, body)
            assert conv.messages(got, fmt.chat_message_in)[1]["content"] == who
    assert conv.reads == {"full": 2, "continued": 4}


@pytest.mark.parametrize("raw", [
    b'{"messages": [{"a": 1}], "model": "m"}  ',  # whitespace the SDKs do not send
    b'\xef\xbb\xbf{"messages": [{"a": 1}]}',  # a UTF-8 byte-order mark
    '{"messages": [{"a": "é"}]}'.encode("utf-16"),
    b'{"messages": [{"a": 1}], "messages": [{"b": 2}]}',  # a repeated key: the last one wins
    b'{"messages": [1, {"a": 1}, 2]}', b'{"messages": []}', b'{"messages": "text"}', b'[1, 2]', b'"text"',
    b'{}', b'{"a": NaN, "messages": [{"x": Infinity}]}',
])
def test_bodies_of_any_layout_read_as_json_loads_reads_them(raw: bytes) -> None:
    conv = Conversations()
    for _ in range(2):
        got = conv.read("chat", raw)
        assert repr(got) == repr(json.loads(raw))


@pytest.mark.parametrize("raw", [b'{"messages": [{"a": 1}],}', b'{"messages": [{"a": 1}]} x', b'{"messages": [{"a"',
                                 b'', b'{"messages": [{"a": 1},]}'])
def test_bad_json_fails_as_json_loads_fails(raw: bytes) -> None:
    conv = Conversations()
    conv.read("chat", b'{"messages": [{"a": 1}]}')
    with pytest.raises(ValueError):
        json.loads(raw)
    with pytest.raises(ValueError):
        conv.read("chat", raw)


def test_a_continuation_that_is_not_json_fails_and_the_conversation_still_continues() -> None:
    conv = Conversations()
    conv.read("chat", b'{"messages": [{"a": 1}], "model": "m"}')
    with pytest.raises(ValueError):
        conv.read("chat", b'{"messages": [{"a": 1}, {"b": ], "model": "m"}')
    assert conv.read("chat", b'{"messages": [{"a": 1}, {"b": 2}], "model": "m"}')["messages"] == [{"a": 1}, {"b": 2}]
    assert conv.reads["continued"] == 1


def test_a_number_after_the_known_prefix_is_not_taken_for_a_continuation() -> None:
    conv = Conversations()
    conv.read("chat", b'{"messages": [{"a": 1}, 5]}')
    assert conv.read("chat", b'{"messages": [{"a": 1}, 55]}')["messages"] == [{"a": 1}, 55]
    conv.read("chat", b'{"messages": [{"a": 1}, {"b": 1}]}')
    conv.read("chat", b'{"messages": [{"a": 1}, {"b": 1}, 7]}')
    assert conv.read("chat", b'{"messages": [{"a": 1}, {"b": 1}, 77]}')["messages"][-1] == 77


def test_anthropic_messages_convert_one_by_one_as_a_whole() -> None:
    conv = Conversations()
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Total?"}]
    for i in range(3):
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": "checking"},
                                                      {"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x",
                                                  "is_error": i == 1}, {"type": "text", "text": "go on"}]})
        body = conv.read("anthropic", json.dumps({"max_tokens": 9, "messages": msgs, "system": "s"}).encode())
        assert conv.messages(body, fmt.anthropic_message_in) == fmt.anthropic_messages(body)
    assert conv.reads["continued"] == 2


def test_over_the_wire_the_policy_reads_an_edited_history_as_sent() -> None:
    openai = pytest.importorskip("openai")
    from toolchaos import Ceiling, Decision, wire
    from toolchaos.fake_tools import catalogue

    seen: list[list[Any]] = []

    def policy(view: Any) -> Decision:
        seen.append([m.get("content") for m in view.messages])
        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"})

    def agent(task: str, env: Any) -> str:
        client, msgs = openai.OpenAI(), [{"role": "user", "content": task}]
        for turn in range(4):
            tc = client.chat.completions.create(model="m", messages=msgs).choices[0].message.tool_calls[0]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": tc.id, "type": "function", "function": {"name": "fetch_invoice", "arguments": "{}"}}]})
            msgs.append({"role": "tool", "tool_call_id": tc.id, "content": f"result {turn}"})
            if turn == 2:
                msgs[2]["content"] = "trimmed"  # the agent trims an old tool result
        return "done"

    result = wire.run(agent, task="Total?", tools=[catalogue.get("fetch_invoice")], policy=policy,
                      ceiling=Ceiling(max_model_turns=10))
    assert result.answer == "done", result.error
    assert seen[2] == ["Total?", None, "result 0", None, "result 1"]
    assert seen[3] == ["Total?", None, "trimmed", None, "result 1", None, "result 2"]
    assert [r.body["messages"][2].get("content") for r in result.requests[1:]] == ["result 0", "result 0", "trimmed"]


def test_handed_messages_say_how_many_are_last_times_objects() -> None:
    conv = Conversations()
    lead = [{"role": "system", "content": "s"}]
    got = _read(conv, _body(0))
    first, unchanged, source = conv.handed(got, fmt.chat_message_in, lead)
    assert unchanged == 0 and source is not None and first == lead + fmt.chat_messages(got)
    got = _read(conv, _body(1))
    second, unchanged, again = conv.handed(got, fmt.chat_message_in, [{"role": "system", "content": "s"}])
    assert again is source and unchanged == len(first) and all(a is b for a, b in zip(first, second))
    assert second == lead + fmt.chat_messages(got)
    got = _read(conv, _body(2))
    third, unchanged, _ = conv.handed(got, fmt.chat_message_in, [{"role": "system", "content": "changed"}])
    assert unchanged == 0 and third[0]["content"] == "changed" and third[1:] == fmt.chat_messages(got)
    assert conv.handed(json.loads(json.dumps(_body(3))), fmt.chat_message_in)[1:] == (0, None)  # not the body read last


def test_a_continuation_with_non_ascii_text_and_spaces_keeps_its_byte_offsets() -> None:
    conv = Conversations()
    body = _body(1)
    for i in range(4):
        body["messages"].append({"role": "user", "content": f"é€ {i} 😀"})
        _read(conv, body)
        _read(conv, body, ensure_ascii=False, indent=1)
    assert conv.reads == {"full": 2, "continued": 6}
