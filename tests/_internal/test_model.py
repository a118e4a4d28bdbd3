"""How a model reads tool results (``interpret``) and the conversation (``read_feedback``)."""

from __future__ import annotations

import pytest
from toolchaos._internal.model import TokenMeter, estimate_tokens, interpret, read_feedback


@pytest.mark.parametrize("content,kind,retryable", [
    ({"total": 3}, "ok", None),
    ("The total is 3 EUR.", "ok", None),
    ([], "empty", None),
    ({"results": []}, "empty", None),
    ("", "empty", None),
    (None, "empty", None),
    ('{"total": 3, "cur', "malformed", None),
    ({"error": {"code": "timeout", "retryable": True}}, "error", True),
    ({"error": {"code": "permission_denied", "retryable": False}}, "error", False),
    ("Error: fetch_invoice: no response after 30s [RETRYABLE/timeout]. Please try again.", "error", True),
    ("Error: permission denied", "error", False),
    ({"refused": True, "guard": "exact_repeat", "reason": "x"}, "refused", False),
    ("Refused by the loop guard: exact repeat", "refused", False),
    ({"status": "processing", "poll": 1}, "pending", True),
    ('{"status": "done"}', "ok", None),
])
def test_interpret(content, kind, retryable):
    got = interpret(content)
    assert (got[0], got[1]) == (kind, retryable)


def test_read_feedback_matches_results_to_the_calls_and_notes_missing_ones():
    msgs = [
        {"role": "user", "content": "t"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "name": "search", "arguments": {"query": "q"}},
            {"id": "b", "name": "read_document", "arguments": {"doc_id": "d"}}]},
        {"role": "tool", "tool_call_id": "a", "content": {"results": [1]}},
    ]
    fb = read_feedback(msgs)
    assert [(f.call_id, f.tool, f.kind) for f in fb] == [("a", "search", "ok"), ("b", "read_document", "missing")]
    assert fb[0].arguments == {"query": "q"}
    assert read_feedback([{"role": "user", "content": "t"}]) == []


def test_token_estimate_grows_with_the_conversation():
    small = estimate_tokens([{"role": "user", "content": "x"}])
    big = estimate_tokens([{"role": "user", "content": "x" * 4000}])
    assert big - small == 1000


def test_token_meter_gives_the_estimate_of_the_whole_conversation_as_it_grows_and_changes():
    meter, msgs = TokenMeter(), []
    for i in range(30):
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": {"rows": ["é" * i, i / 3, None]}})
        assert meter.estimate(msgs) == estimate_tokens(msgs)
    msgs[4]["content"] = "trimmed"  # an agent that trims an old tool result in place
    assert meter.estimate(msgs) == estimate_tokens(msgs)
    msgs[7] = {"role": "user", "content": "replaced"}
    del msgs[12:]
    assert meter.estimate(msgs) == estimate_tokens(msgs)
    assert meter.estimate([]) == estimate_tokens([]) == 8
