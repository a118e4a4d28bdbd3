"""The trace event's owner: every kind, its keys in the order they are written, the exact JSON bytes."""

from __future__ import annotations

import pytest
from toolchaos import AgentResult, policies, run
from toolchaos._internal import events as ev
from toolchaos._internal.trace import Trace
from toolchaos.fake_tools import catalogue

# One event of each kind, built by its constructor, and the line it is written as.
SAMPLES = {
    "model": (ev.model_event("r#0", 1, 1, 0.1234567, [{"id": "call_1_0", "tool": "search", "args": {"q": "x"},
                                                       "fp": "abc"}], None, 12, 9),
              '{"run":"r#0","seq":1,"step":1,"kind":"model","t":0.123457,"calls":[{"id":"call_1_0","tool":"search",'
              '"args":{"q":"x"},"fp":"abc"}],"final":null,"tokens_in":12,"tokens_out":9}'),
    "tool": (ev.tool_event("r#0", 2, 1, 0.5, 30.0, "search", 1, {"q": "x"}, "abc", "call_1_0", "timeout",
                           "RETRYABLE", "timeout", None, None),
             '{"run":"r#0","seq":2,"step":1,"kind":"tool","t":0.5,"latency":30.0,"tool":"search","call_no":1,'
             '"args":{"q":"x"},"fp":"abc","call_id":"call_1_0","outcome":"timeout","class":"RETRYABLE",'
             '"code":"timeout","retry_after":null,"executed":true,"effects":null}'),
    "refusal": (ev.refusal_event("r#0", 3, 2, 1.0, "search", {}, "abc", None, "exact_repeat", "again"),
                '{"run":"r#0","seq":3,"step":2,"kind":"refusal","t":1.0,"tool":"search","args":{},"fp":"abc",'
                '"call_id":null,"guard":"exact_repeat","reason":"again","executed":false}'),
    "skipped": (ev.skipped_event("r#0", 4, 2, 1.0, "search", "abc", "call_2_0"),
                '{"run":"r#0","seq":4,"step":2,"kind":"skipped","t":1.0,"tool":"search","fp":"abc",'
                '"call_id":"call_2_0","executed":false}'),
    "late": (ev.late_event("r#0", 5, 2, 1.0, "search", {}, "abc"),
             '{"run":"r#0","seq":5,"step":2,"kind":"late","t":1.0,"tool":"search","args":{},"fp":"abc",'
             '"executed":false}'),
    "api": (ev.api_event("r#0", 6, 2, 1.0, "openai.chat", 3, "rate_limited", 429, 20.0, "https://x/v1"),
            '{"run":"r#0","seq":6,"step":2,"kind":"api","t":1.0,"tool":"openai.chat","request":3,'
            '"code":"rate_limited","status":429,"retry_after":20.0,"args":{"url":"https://x/v1"}}'),
    "side": (ev.side_event("r#0", 7, 2, 1.0, "gemini", 4, "schema", '{"unproductive_state_confidence":0}', 30, 12),
             '{"run":"r#0","seq":7,"step":2,"kind":"side","t":1.0,"tool":"gemini","request":4,"why":"schema",'
             '"answer":"{\\"unproductive_state_confidence\\":0}","tokens_in":30,"tokens_out":12}'),
    "end": (ev.end_event("r#0", 7, 2, 1.0, "STOPPED_LOOP_GUARD", "exact_repeat", "again", None, None),
            '{"run":"r#0","seq":7,"step":2,"kind":"end","t":1.0,"state":"STOPPED_LOOP_GUARD","guard":"exact_repeat",'
            '"reason":"again","harness_stop":null,"error":null}'),
}


def test_every_kind_has_a_constructor_and_a_key_order():
    assert ev.KINDS == tuple(SAMPLES) == tuple(ev.KEYS)


@pytest.mark.parametrize("kind", ev.KINDS)
def test_a_constructor_writes_its_keys_in_the_order_of_its_kind(kind):
    event, line = SAMPLES[kind]
    assert event["kind"] == kind
    # "shown" only over the wire; "attempt" only on a transport retry
    keys = ev.KEYS[kind] if kind not in ("model", "tool") else ev.KEYS[kind][:-1]
    assert tuple(event) == keys
    assert Trace([event]).jsonl() == line + "\n"


def test_a_transport_retry_carries_its_attempt_last() -> None:
    def retries(task, model, tools):  # the same call id three times, no model turn between: an HTTP layer's retries
        turn = model.complete([{"role": "user", "content": task}], tools.specs)
        for _ in range(3):
            try:
                tools.call(turn.tool_calls[0].name, turn.tool_calls[0].arguments, call_id=turn.tool_calls[0].id)
            except Exception:
                pass
        return AgentResult("FAILED")

    r = run(retries, task="t", tools=[catalogue.get("fetch_invoice", faults="timeout")],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    tool_events = r.trace.tool_events
    assert [e.get("attempt") for e in tool_events] == [None, 2, 3]
    assert tuple(tool_events[1]) == ev.KEYS["tool"]
    assert r.trace.jsonl().count('"attempt":') == 2


def test_the_common_head_comes_first_in_every_kind():
    for keys in ev.KEYS.values():
        assert keys[:5] == ("run", "seq", "step", "kind", "t")


def test_the_analyzer_fast_path_neighbours_stay_together():
    # It slices a tool event's arguments up to its fingerprint, and its signature from the class to the code.
    keys = ev.KEYS["tool"]
    assert keys.index("fp") == keys.index("args") + 1 and keys.index("code") == keys.index("class") + 1


def test_a_run_writes_each_kind_in_its_key_order():
    def agent(task, model, tools):
        turn = model.complete([{"role": "user", "content": task}])
        first, second = turn.tool_calls
        tools.call(first.name, first.arguments, call_id=first.id)
        tools.refuse(second.name, second.arguments, guard="g", reason="r", call_id=second.id)
        model.complete([{"role": "user", "content": task}])  # the third call is asked for, never handled
        return AgentResult("STOPPED_LOOP_GUARD", report={"guard": "g", "reason": "r"})

    script = [{"calls": [{"call": "search", "args": {"query": q}} for q in ("a", "b")]},
              {"call": "search", "args": {"query": "c"}}]
    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.scripted(script))
    assert [e["kind"] for e in r.trace] == ["model", "tool", "refusal", "model", "skipped", "end"]
    for e in r.trace:
        assert tuple(e) == (ev.KEYS[e["kind"]][:-1] if e["kind"] in ("model", "tool") else ev.KEYS[e["kind"]])
