"""Reading each API's request into the neutral format (no SDK needed)."""

from __future__ import annotations

import builtins
from typing import Any

from toolchaos._internal.model import read_feedback
from toolchaos._plumbing.watchdog import WatchdogExpired
from toolchaos.wire import Env, takes_env
from toolchaos.wire import _formats as fmt
from toolchaos.wire._run import env_argument, harness_stop_in, wants_env


def test_chat_messages() -> None:
    body = {"messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Total?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": {"code": "timeout", "retryable": true}}'},
    ]}
    msgs = fmt.chat_messages(body)
    assert msgs[0] == {"role": "system", "content": "Be brief."}
    assert msgs[2]["tool_calls"] == [{"id": "c1", "name": "f", "arguments": {"a": 1}},
                                     {"id": "c2", "name": "g", "arguments": {"_unparsed": "not json"}}]
    fb = {f.call_id: f for f in read_feedback(msgs)}
    assert fb["c1"].kind == "error" and fb["c1"].retryable is True
    assert fb["c2"].kind == "missing"  # asked, never answered: the policy sees that too


def test_responses_items_group_calls_into_one_turn() -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Go"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": '{"x": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "fine"}]},
    ]
    msgs = fmt.responses_items(items)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert msgs[1]["content"] == "Checking." and [c["id"] for c in msgs[1]["tool_calls"]] == ["c1", "c2"]
    assert msgs[3]["content"] == "fine"
    assert fmt.responses_items("just text") == [{"role": "user", "content": "just text"}]


def test_anthropic_blocks_and_is_error() -> None:
    body = {"messages": [
        {"role": "user", "content": "Total?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me see."},
                                          {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": [{"type": "text", "text": "boom"}]},
                                     {"type": "text", "text": "Please hurry."}]},
    ]}
    msgs = fmt.anthropic_messages(body)
    assert msgs[1] == {"role": "assistant", "content": "Let me see.",
                       "tool_calls": [{"id": "t1", "name": "f", "arguments": {"a": 1}}]}
    assert msgs[2] == {"role": "tool", "tool_call_id": "t1", "content": {"error": "boom"}}
    assert msgs[3] == {"role": "user", "content": "Please hurry."}
    (fb,) = read_feedback(msgs)
    assert fb.kind == "error"


def test_fragments_and_tool_specs() -> None:
    assert "".join(fmt.fragments('{"invoice_id": "inv_1"}')) == '{"invoice_id": "inv_1"}'
    assert len(fmt.fragments('{"invoice_id": "inv_1"}')) == 3
    assert fmt.fragments("") == []
    specs = fmt.tool_specs([{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                            {"type": "function", "name": "b", "parameters": {}},
                            {"name": "c", "input_schema": {"type": "object"}}])
    assert [s["name"] for s in specs] == ["a", "b", "c"] and specs[2]["parameters"] == {"type": "object"}


def test_agent_signatures_and_stops_in_groups() -> None:
    def one(task: str) -> None: ...
    def two(task: str, env: Any) -> None: ...
    def opt(task: str, steps: int = 3) -> None: ...
    def named(task: str, *, env: Any = None) -> None: ...  # a parameter merely named env: the agent's own
    def annotated(task: str, *, wire_env: Env) -> None: ...
    def setting(task: str, env: str = "prod") -> None: ...

    @takes_env
    def marked(task: str, *rest: Any) -> None: ...

    assert [wants_env(f) for f in (one, two, opt, named, annotated, setting, marked)] == [
        False, True, False, False, True, False, True]
    assert (env_argument(annotated), env_argument(marked), env_argument(two)) == ("wire_env", "", "")
    groups = getattr(builtins, "BaseExceptionGroup", None)
    if groups is None:  # Python 3.10
        return
    stop = WatchdogExpired()
    group = groups("tasks", [ValueError("x"), groups("inner", [stop])])
    assert harness_stop_in(group) is stop
    assert harness_stop_in(ValueError("x")) is None
