"""Importing real agent logs: decisions to replay, calls to analyse, errors that name the record and field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from toolchaos import Decision, invariants, policies, run
from toolchaos.fake_tools import faults as F
from toolchaos.logs import (
    FORMATS,
    LogFormatError,
    detect,
    fault_of,
    load,
    parse,
    replay_tools,
    select,
)

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INVOICE = Decision.call("fetch_invoice", {"invoice_id": "inv_1"})


def write(tmp_path: Path, name: str, data: Any) -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


# --- each format --------------------------------------------------------------------------------


def test_openai_chat_messages_become_turns_with_their_results() -> None:
    (conv,) = load(LOGS / "openai_chat.json")
    assert conv.format == "openai-chat"
    assert conv.decisions()[:6] == [INVOICE] * 6
    assert conv.decisions()[6] == Decision.final("I could not get the total: the billing service keeps timing out.")
    first = conv.calls[0]
    assert first.id == "call_0" and "timed out" in first.result
    assert [t.tokens_in for t in conv.turns] == sorted(t.tokens_in for t in conv.turns)  # estimated, growing
    assert conv.turns[0].estimated


def test_openai_responses_items_group_function_calls_into_turns() -> None:
    (conv,) = load(LOGS / "openai_responses.json")
    assert conv.format == "openai-responses"
    pay = Decision.call("charge_payment", {"customer_id": "c1", "amount": 10.0})
    assert conv.decisions() == [pay, pay, Decision.final("Charged 10 EUR (ch_1).")]
    assert "unavailable" in conv.calls[0].result


def test_anthropic_tool_use_and_tool_result_blocks() -> None:
    (conv,) = load(LOGS / "anthropic.json")
    assert conv.format == "anthropic"
    names = [d.calls[0][0] for d in conv.decisions()[:-1]]
    assert names == ["search", "read_document"] * 4
    read = conv.calls[1]
    assert read.is_error is True and read.result == "document doc_9 not found"


def test_otel_spans_with_chat_and_tool_spans() -> None:
    (conv,) = load(LOGS / "otel_spans.json")
    assert conv.format == "otel" and conv.session == "conv_42"  # gen_ai.conversation.id
    assert conv.decisions() == [INVOICE] * 12
    assert [t.tokens_in for t in conv.turns][:3] == [131, 391, 651]  # gen_ai.usage.input_tokens
    call = conv.calls[0]
    assert call.is_error and call.t == pytest.approx(1767225600.002)


def test_otel_flat_spans_as_json_lines_without_chat_spans() -> None:
    (conv,) = load(LOGS / "otel_spans.jsonl")
    assert [c.args["query"] for c in conv.calls] == ["refund policy", "shipping times", "warranty"]
    assert len(conv.turns) == 3  # one turn per sequential tool span


def test_toolchaos_traces_keep_outcomes_and_sessions(tmp_path: Path) -> None:
    from toolchaos import policies
    from toolchaos.strategies import plan

    tools = plan(["charge_payment"], {"charge_payment": [F.timeout(30, applied=True)]})
    result = run("builtin:naive", task="t", tools=tools, policy=policies.stubborn("charge_payment", {"customer_id": "c",
                                                                                                  "amount": 1.0}))
    path = result.trace.write(tmp_path / "run.trace.jsonl")
    (conv,) = load(path)
    assert conv.format == "toolchaos" and conv.session == result.run_id
    assert conv.decisions()[:2] == [Decision.call("charge_payment", {"customer_id": "c", "amount": 1.0})] * 2
    assert conv.calls[0].outcome is not None and conv.calls[0].outcome["outcome"] == "timeout"
    assert fault_of(conv.calls[0], 0) == F.timeout(30, applied=True)  # the ledger count moved: it had applied


def test_gzip_and_json_lines_of_messages(tmp_path: Path) -> None:
    msgs = json.loads((LOGS / "openai_chat.json").read_text())["messages"]
    p = tmp_path / "chat.jsonl.gz"
    with gzip.open(p, "wt") as fh:
        for m in msgs:
            fh.write(json.dumps(m) + "\n")
    (conv,) = load(p)
    assert conv.format == "openai-chat" and len(conv.turns) == 7


def test_json_lines_of_documents_are_one_session_each(tmp_path: Path) -> None:
    doc = json.loads((LOGS / "anthropic.json").read_text())
    p = write(tmp_path, "many.jsonl", json.dumps({**doc, "metadata": {"conversation_id": "a"}}) + "\n"
              + json.dumps({**doc, "metadata": {"conversation_id": "b"}}) + "\n")
    convs = load(p)
    assert [c.session for c in convs] == ["a", "b"]
    assert select(convs, "b").session == "b"
    with pytest.raises(LogFormatError, match="no session 'c'"):
        select(convs, "c")


def test_detection_of_every_format() -> None:
    assert detect([{"role": "user", "content": "hi"}]) == "openai-chat"
    assert detect({"output": [{"type": "function_call"}]}) == "openai-responses"
    assert detect([{"role": "assistant", "content": [{"type": "tool_use"}]}]) == "anthropic"
    assert detect({"resourceSpans": []}) == "otel"
    assert detect({"run": "r", "seq": 1, "kind": "model"}) == "toolchaos"
    with pytest.raises(LogFormatError, match="cannot tell the log format"):
        detect({"hello": 1})
    assert set(FORMATS) == {"toolchaos", "openai-chat", "openai-responses", "anthropic", "otel"}


# --- errors name the record and the field ---------------------------------------------------------


@pytest.mark.parametrize(("data", "fmt", "pattern"), [
    ({"messages": [{"role": "user", "content": "x"},
                   {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{bad"}}]}]},
     "auto", r"document: messages\[1\]\.tool_calls\[0\]\.function\.arguments: openai-chat: not valid JSON"),
    ({"messages": [{"content": "x"}]}, "openai-chat", r"messages\[0\]\.role: openai-chat: missing"),
    ({"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]}, "openai-chat",
     r"messages\[0\]\.tool_call_id: openai-chat: answers the call id 'nope'"),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "auto",
     r"input\[0\]\.call_id: openai-responses: missing"),
    ([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}], "auto",
     r"messages\[0\]\.content\[0\]\.name: anthropic: expected a non-empty string"),
    ([{"role": "robot", "content": "x"}], "anthropic", r"messages\[0\]\.role: anthropic: expected 'user' or"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "1", "attributes": []}]}]}]}, "auto",
     r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.traceId: otel: missing"),
])
def test_a_broken_log_names_the_record_and_the_field(tmp_path: Path, data: Any, fmt: str, pattern: str) -> None:
    p = write(tmp_path, "log.json", data)
    with pytest.raises(LogFormatError, match=pattern):
        load(p, fmt)


def test_json_lines_errors_name_the_line(tmp_path: Path) -> None:
    good = json.dumps({"role": "user", "content": "x"})
    p = write(tmp_path, "log.jsonl", f"{good}\n{good}\n{{not json\n")
    with pytest.raises(LogFormatError, match=r"log.jsonl: line 3: not valid JSON"):
        load(p)
    bad = write(tmp_path, "bad.jsonl", json.dumps({"messages": [{"role": "user"}]}) + "\n"
                + json.dumps({"messages": [{"role": "assistant", "tool_calls": [{"id": 1}]}]}) + "\n")
    with pytest.raises(LogFormatError, match=r"line 2: messages\[0\]\.tool_calls\[0\]\.function"):
        load(bad, "openai-chat")
    trace = write(tmp_path, "t.jsonl", json.dumps({"run": "r", "seq": 1, "kind": "model"}) + "\n" +
                  json.dumps({"seq": 2, "kind": "tool", "run": 3}) + "\n")
    with pytest.raises(LogFormatError, match=r"line 2: run: toolchaos: missing"):
        load(trace)


def test_empty_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(LogFormatError, match="the file is empty"):
        load(write(tmp_path, "e.json", "  \n"))
    with pytest.raises(LogFormatError, match="unknown format 'slack'"):
        load(LOGS / "anthropic.json", "slack")
    with pytest.raises(LogFormatError, match=r"not valid JSON \(.* at line 2"):
        load(write(tmp_path, "doc.json", '{"messages":\n [oops]}'))


# --- replay ------------------------------------------------------------------------------------------


def test_recorded_policy_from_an_imported_log_replays_against_the_fixed_agent() -> None:
    policy = policies.recorded(LOGS / "openai_chat.json")
    assert policy.turns[:6] == [INVOICE] * 6
    (conv,) = load(LOGS / "openai_chat.json")
    tools = replay_tools(conv)
    assert [t.name for t in tools] == ["fetch_invoice"]
    assert tools[0].schedule.rules[0].outcome == F.timeout(30)  # "timed out" prose read back as a timeout
    fixed = run("builtin:guarded", task="Get the total", tools=tools, policy=policy)
    fixed.check(invariants.bounded(executions=3), invariants.terminated())
    naive = run("builtin:naive", task="Get the total", tools=tools, policy=policies.recorded(LOGS / "openai_chat.json"))
    assert naive.total_executions == 6  # the pre-fix loop, as recorded


def test_fault_of_reads_results_like_a_model_would() -> None:
    from toolchaos.logs import RecordedCall

    def f(result: Any, err: bool | None = None) -> Any:
        return fault_of(RecordedCall("c", "t", {}, result, err))

    assert f({"error": {"code": "unavailable", "retryable": True}}) == F.transient(503)
    assert f("429 rate limit, retry later") == F.transient(429)
    assert f("document doc_9 not found", True) == F.fatal("not_found")
    assert f("permission denied") == F.fatal("permission_denied")
    assert f("") == F.empty()
    assert f('{"broken": ') == F.malformed("invalid_json")
    assert f({"status": "processing"}) == F.pending(polls=None)
    assert f('{"total": 12}') == F.ok({"total": 12})
    assert fault_of(RecordedCall("c", "t", {})) == F.timeout(30)  # never answered: a lost response


def test_unknown_tools_become_permissive_tools_and_may_be_side_effects() -> None:
    (conv,) = parse([{"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "post_tweet",
                                                                                    "arguments": '{"text": "hi"}'}}]},
                     {"role": "tool", "tool_call_id": "1", "content": "posted"}])
    (tool,) = replay_tools(conv, ["post_tweet"])
    assert tool.name == "post_tweet" and tool.side_effect and tool.validate({"text": "hi"}) is None
