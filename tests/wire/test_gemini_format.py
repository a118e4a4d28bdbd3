"""The Gemini format read into neutral messages: calls and responses matched by id, or by name when
a client drops the ids; an error response stays an error; thoughts and the system instruction."""

from __future__ import annotations

from toolchaos._internal.model import ModelTurn, ToolCall, Usage
from toolchaos.wire import _formats as fmt


def test_function_responses_answer_their_calls_by_id_or_by_name() -> None:
    body = {"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "Checking."},
                                    {"functionCall": {"id": "c1", "name": "a", "args": {"x": 1}}},
                                    {"functionCall": {"name": "b", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {"error": {"code": "timeout"}}}},
                                   {"functionResponse": {"id": "c1", "name": "a", "response": {"output": "ok"}}}]}]}
    msgs = fmt.gemini_messages(body)
    assert msgs[0] == {"role": "system", "content": "Be brief."}
    assert msgs[2]["content"] == "Checking." and [c["id"] for c in msgs[2]["tool_calls"]] == ["c1", "b_3"]
    assert msgs[3] == {"role": "tool", "tool_call_id": "b_3", "content": {"error": {"code": "timeout"}}}
    assert msgs[4] == {"role": "tool", "tool_call_id": "c1", "content": "ok"}


def test_declarations_of_every_shape_become_neutral_specs() -> None:
    specs = fmt.tool_specs([{"functionDeclarations": [{"name": "a", "parametersJsonSchema": {"type": "object"}}]},
                            {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}])
    assert [(s["name"], s["parameters"]) for s in specs] == [("a", {"type": "object"}), ("b", {"type": "object"})]


def test_a_streamed_turn_ends_with_the_finish_reason_and_the_usage() -> None:
    turn = ModelTurn(1, None, (ToolCall("call_1_0", "a", {"x": 1}),), Usage(10, 5))
    chunks = fmt.gemini_chunks(turn, rid="r", model="g", sse_format=True)
    assert len(chunks) == 1 and b'"finishReason":"STOP"' in chunks[0] and b'"totalTokenCount":15' in chunks[0]
    array = b"".join(fmt.gemini_chunks(ModelTurn(2, "a longer final answer", (), Usage(1, 1)), rid="r", model="g",
                                       sse_format=False))
    assert array.startswith(b"[{") and array.endswith(b"}]") and array.count(b'"candidates"') == 3
