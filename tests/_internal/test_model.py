"""How a model reads tool results (``interpret``) and the conversation (``read_feedback``)."""

from __future__ import annotations

import json

import pytest
from toolchaos._internal.model import Handled, TokenMeter, estimate_tokens, interpret, read_feedback


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
    (json.dumps('{"id": "broken", "total": '), "malformed", None),  # a json.dumps()'d malformed payload
    (json.dumps({"error": {"code": "timeout", "retryable": True}}), "error", True),
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


def _turn(*results: tuple[str, object]) -> list[dict[str, object]]:
    calls = [{"id": cid, "name": "fetch_invoice", "arguments": {"invoice_id": "inv_1"}} for cid, _ in results]
    return [{"role": "user", "content": "t"}, {"role": "assistant", "content": None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": cid, "content": c} for cid, c in results if c is not None)]


@pytest.mark.parametrize("content", [
    "Potential loop detected: fetch_invoice was called 5 times in a row. Try something different.",
    "Tool call limit exceeded. Do not call fetch_invoice again.",
    json.dumps({"refused": True, "guard": "exact_repeat", "reason": "same call"}),
    None,  # the runtime sent nothing back for it
])
def test_a_call_the_harness_did_not_execute_reads_as_refused_whatever_the_runtime_wrote(content):
    for handled, code in ((Handled.of("refusal", "loop_detected"), "loop_detected"),
                          (Handled.of("skipped"), "not_executed")):
        fb = read_feedback(_turn(("c1", content)), {"c1": handled})[0]
        assert (fb.kind, fb.code, fb.executed, fb.retryable) == ("refused", code, False, False)


def test_a_call_not_executed_but_answered_with_data_reads_as_that_data():
    # a ledger that does not repeat an effect answers with the recorded result
    recorded = {"charged": True, "id": "ch_1"}
    for content in (recorded, json.dumps(recorded)):
        fb = read_feedback(_turn(("c1", content)), {"c1": Handled.of("refusal", "idempotency")})[0]
        assert (fb.kind, fb.executed) == ("ok", False)
    broken = read_feedback(_turn(("c1", '{"id": "broken", ')), {"c1": Handled.of("refusal", "idempotency")})[0]
    assert (broken.kind, broken.executed) == ("malformed", False)  # the recorded payload, broken as it was


def test_an_executed_call_is_read_from_its_content_without_refusal_words():
    fb = read_feedback(_turn(("c1", "Refused by the bank: card declined, try again later")),
                       {"c1": Handled.of("tool")})[0]
    assert (fb.kind, fb.retryable, fb.executed) == ("error", True, True)


def test_a_call_without_a_record_is_read_from_its_words():
    fb = read_feedback(_turn(("c1", "Refused by the loop guard: exact repeat")), {"other": Handled.of("tool")})[0]
    assert (fb.kind, fb.executed) == ("refused", None)


def test_token_estimate_grows_with_the_conversation():
    small = estimate_tokens([{"role": "user", "content": "x"}])
    big = estimate_tokens([{"role": "user", "content": "x" * 4000}])
    assert big - small == 1000


def test_token_meter_gives_the_estimate_of_the_whole_conversation_as_it_grows_and_changes():
    meter, msgs = TokenMeter(), []
    for i in range(30):
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": {"rows": ["é" * i, i / 3, None]}})
        assert meter.estimate(msgs) == estimate_tokens(msgs)
    msgs[25]["content"] = "trimmed"  # a recent tool result trimmed in place: one of the last 8 seen
    assert meter.estimate(msgs) == estimate_tokens(msgs)
    msgs[0]["content"] = "rewritten"  # the first message (a system prompt) edited in place
    assert meter.estimate(msgs) == estimate_tokens(msgs)
    msgs[4]["content"] = "trimmed"  # an old one in place: handed as a new list, it is measured again
    assert meter.estimate(list(msgs)) == estimate_tokens(msgs)
    msgs[7] = {"role": "user", "content": "replaced"}
    del msgs[12:]
    assert meter.estimate(msgs) == estimate_tokens(msgs)
    assert meter.estimate([]) == estimate_tokens([]) == 8


def test_token_meter_read_gives_copies_that_follow_the_messages():
    meter = TokenMeter()
    msgs = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    first = meter.read(msgs)
    assert first == msgs and all(a is not b for a, b in zip(first, msgs))
    copies = list(first)
    msgs.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    second = meter.read(msgs)
    assert second is first  # the same list, grown: not copied every turn
    assert second[:5] == copies and all(a is b for a, b in zip(copies, second))  # unchanged: not copied again
    edited = second[2]
    edited["content"] = "edited by the reader"  # a caller that edits its copy gets a fresh one next turn
    msgs[0]["content"] = "trimmed"  # the owner edits its first message in place
    third = meter.read(msgs)
    assert third == msgs and third[2] is not edited
    assert meter.estimate(third) == estimate_tokens(msgs)
    assert meter.read(msgs[:2]) == msgs[:2] and meter.estimate(msgs[:2]) == estimate_tokens(msgs[:2])


def test_token_meter_skips_what_its_caller_vouches_for_and_still_replaces_edited_copies():
    meter, source = TokenMeter(), object()
    msgs = [{"role": "user", "content": f"m{i}"} for i in range(4)]
    copies = list(meter.read(msgs, 0, source))
    msgs.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    second = meter.read(msgs, 4, source)  # vouched: the first four are last time's objects, unedited
    assert second == msgs and all(a is b for a, b in zip(copies, second))
    assert meter.estimate(second) == estimate_tokens(msgs)
    edited = second[1], second[3]
    second[1]["content"] = "edited by the policy"
    second[3].pop("role")
    third = meter.read(msgs, 5, source)
    assert third == msgs and third[1] is not edited[0] and third[3] is not edited[1] and third[0] is copies[0]
    assert meter.estimate(third) == estimate_tokens(msgs)
    import copy
    import pickle
    assert type(copy.copy(third[0])) is dict and type(pickle.loads(pickle.dumps(third[0]))) is dict


def test_token_meter_ignores_a_voucher_from_another_source_or_after_another_read():
    meter, a, b = TokenMeter(), object(), object()
    msgs = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    meter.read(msgs, 0, a)
    other = [{"role": "user", "content": "elsewhere"}]
    assert meter.read(other, 0, b) == other  # another conversation in between
    assert meter.read(msgs, 3, a) == msgs and meter.estimate(msgs) == estimate_tokens(msgs)
    meter.read(other)  # a caller that vouches for nothing
    assert meter.read(msgs, 3, a) == msgs
    assert meter.read(msgs, 99, a) == msgs  # more than it has seen: compared as usual
    msgs[0]["content"] = "edited in place"
    assert meter.read(msgs, 0, a) == msgs and meter.estimate(msgs) == estimate_tokens(msgs)


def test_token_meter_count_measures_once_for_the_read_that_follows(monkeypatch):
    import toolchaos._internal.model as model

    encoded: list[object] = []
    size = model._encoded_size
    # a message measured (estimate_tokens, the expected figure, encodes the whole list at once)
    monkeypatch.setattr(model, "_encoded_size", lambda obj: (type(obj) is not list and encoded.append(obj)) or size(obj))
    meter, msgs = TokenMeter(), [{"role": "user", "content": "go"}]
    assert meter.count(msgs) == estimate_tokens(msgs)
    copies = meter.read(msgs)
    assert len(encoded) == 1 and copies == msgs and copies[0] is not msgs[0]
    msgs.append({"role": "tool", "tool_call_id": "c1", "content": {"rows": [1, 2]}})
    assert meter.count(msgs) == estimate_tokens(msgs) and len(encoded) == 2
    again = meter.read(msgs)
    assert len(encoded) == 2 and again[0] is copies[0]  # the read found nothing new
    again[1]["content"] = "edited by the reader"  # still a copy that reports its edits
    assert meter.count(msgs) == estimate_tokens(msgs) and meter.read(msgs)[1] == msgs[1]


def test_token_meter_count_between_vouched_reads_ends_the_voucher():
    meter, source = TokenMeter(), object()
    msgs = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    meter.read(msgs, 0, source)
    meter.count(msgs[:1])  # another list counted in between: the next read compares again
    assert meter.read(msgs, 3, source) == msgs and meter.estimate(msgs) == estimate_tokens(msgs)
