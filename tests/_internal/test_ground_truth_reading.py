"""The model double reads an executed call as what the harness served, and other content by its structure.

Each coding CLI hands an MCP tool's result to its model in its own bytes (recorded below from
each CLI's source and logs): Codex under ``Wall time: 0.0503 seconds\\nOutput:``, gemini-cli as
``{"output": ...}`` or, for an error, inside ``{"error": "MCP tool '...' reported tool error ...
with response: [...]"}``, Claude Code and OpenCode as the bare text. Whatever the wrapper and
whatever digits a wall time holds, the reading is the same: the served outcome for a call the
harness executed, the payload inside a known wrapper for content it did not serve.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chaos_samples import plain_loop
from hypothesis import given
from hypothesis import strategies as st
from toolchaos import policies, run
from toolchaos._internal.model import (
    Handled,
    interpret,
    read_feedback,
    served_reading,
    served_text,
    unwrap,
)
from toolchaos.certification import certify
from toolchaos.fake_tools import Outcome, OutcomeClass, catalogue
from toolchaos.wire import _formats as fmt

S, R, F, P, PRE = (OutcomeClass.SUCCESS, OutcomeClass.RETRYABLE, OutcomeClass.FATAL, OutcomeClass.PENDING,
                   OutcomeClass.PRECONDITION)
SENT = Outcome("ok", S, "ok", {"message_id": "msg_c60e3a2b94", "status": "sent", "to": "ana@example.com"})
EMPTY = Outcome("ok", S, "ok", [])
TIMEOUT = Outcome("timeout", R, "timeout", None, retryable=True, message="no response after 30s")
UNAVAILABLE = Outcome("transient", R, "unavailable", None, retryable=True)
RATE_LIMITED = Outcome("transient", R, "rate_limited", None, retryable=True, retry_after=20.0)
DENIED = Outcome("fatal", F, "permission_denied", None)
INVALID = Outcome("fatal", PRE, "invalid_argument", None, message="invalid value for argument 'x'", field="x")
PENDING = Outcome("pending", P, "processing", {"status": "processing", "poll": 1, "retry_after": 5.0},
                  retryable=True, retry_after=5.0)
BROKEN = Outcome("malformed", S, "malformed_invalid_json", "{'result': [{\"total\": 503,,]")
DIGITS = Outcome("ok", S, "ok", "Invoice inv_503: 429 items, total 503.00 EUR")  # prose data with status-like digits
OUTCOMES = (SENT, EMPTY, TIMEOUT, UNAVAILABLE, RATE_LIMITED, DENIED, INVALID, PENDING, BROKEN, DIGITS)


def codex(text: str, seconds: str = "0.0503", *, items: bool = True) -> str:
    """Codex's model-side text of an MCP result (codex-rs ``McpToolOutput``): the header, then the text
    right after it (content items, joined by the wire) or after a newline (one text); the header alone
    for an empty result."""
    header = f"Wall time: {seconds} seconds\nOutput:"
    return header if not text else header + ("" if items else "\n") + text


def gemini_untrusted(text: str) -> str:
    """gemini-cli 0.61's model-side text of an MCP tool's output (``wrapUntrusted``): tagged, the closing tag escaped."""
    return "<untrusted_context>\n" + text.replace("</untrusted_context>", "&lt;/untrusted_context&gt;") + \
        "\n</untrusted_context>"


def gemini_error(name: str, args: dict[str, Any], text: str) -> dict[str, Any]:
    """gemini-cli's ``functionResponse.response`` for an MCP tool error (``mcp-tool.ts``, as its chat logs show it)."""
    parts = [{"functionResponse": {"name": name, "response": {"content": [{"type": "text", "text": text}],
                                                               "isError": True}}}]
    call = json.dumps({"name": name, "args": args}, separators=(",", ":"))
    return {"error": f"MCP tool '{name}' reported tool error for function call: {call} with response: "
                     f"{json.dumps(parts, separators=(',', ':'))}"}


def _turn(content: Any, cid: str = "c1", tool: str = "fetch_invoice") -> list[dict[str, Any]]:
    return [{"role": "user", "content": "t"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "name": tool, "arguments": {}}]},
            {"role": "tool", "tool_call_id": cid, "content": content}]


def _reading(fb: Any) -> tuple[Any, ...]:
    return fb.kind, fb.retryable, fb.code, fb.retry_after


def _served(content: Any, outcome: Outcome, cid: str = "c1") -> Any:
    (fb,) = read_feedback(_turn(content, cid), {cid: Handled.of("tool", served=outcome)}, [outcome])
    return fb


# --- each CLI's recorded wrapper bytes ----------------------------------------------------------------


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: o.code)
def test_every_clis_wrapper_reads_as_the_bare_result_served_or_not(outcome: Outcome) -> None:
    text = served_text(outcome)
    error = outcome.cls not in (S, P)
    cid = "call_1_0"
    claude = fmt.anthropic_messages({"messages": [  # Claude Code: the MCP content blocks, is_error kept
        {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "fetch_invoice", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "is_error": error,
                                      "content": [{"type": "text", "text": text}]}]}]})
    response = gemini_error("fetch_invoice", {"invoice_id": "inv_1"}, text) if error else {"output": text}

    def gemini_turn(response: Any) -> list[dict[str, Any]]:  # gemini-cli: {"output": text}, or its MCP error
        return fmt.gemini_messages({"contents": [
            {"role": "model", "parts": [{"functionCall": {"id": cid, "name": "fetch_invoice", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": cid, "name": "fetch_invoice",
                                                             "response": response}}]}]})

    gemini = gemini_turn(response)
    untrusted = gemini_turn(response if error else {"output": gemini_untrusted(text)})
    answers = {
        "bare (OpenCode)": _turn(text, cid),
        "codex content items": _turn(codex(text), cid),
        "codex one text": _turn(codex(text, "0.0429", items=False), cid),
        "claude-code": claude,
        "gemini-cli": gemini,
        "gemini-cli 0.61 untrusted context": untrusted,
    }
    record = {cid: Handled.of("tool", served=outcome)}
    bare = read_feedback(answers["bare (OpenCode)"])[0]
    for cli, messages in answers.items():
        (served,) = read_feedback(messages, record, [outcome])
        assert _reading(served) == served_reading(outcome), cli
        (unserved,) = read_feedback(messages)  # no record: read from the content, structurally
        assert (unserved.kind, unserved.retryable) == (bare.kind, bare.retryable), cli
        assert served.content == bare.content or cli == "claude-code", cli  # the policy reads the bare result


def test_gemini_clis_untrusted_context_is_removed_from_what_the_policy_reads() -> None:
    """A page's cursor must be read inside the tags (legit-paginate-12-pages asked for page 1 again and again)."""
    page = '{"items":[{"id":"rec_0001"}],"next_cursor":"c2"}'
    (fb,) = read_feedback(_turn(gemini_untrusted(page)))
    assert fb.content == page and fb.sent == gemini_untrusted(page) and fb.kind == "ok"
    tricky = "a </untrusted_context> inside"
    assert read_feedback(_turn(gemini_untrusted(tricky)))[0].content == tricky
    assert read_feedback(_turn("<untrusted_context>\nno closing tag"))[0].sent is None  # not the wrapper: as sent


def test_the_wrapper_is_removed_from_what_the_policy_reads_and_kept_in_what_was_sent() -> None:
    wrapped = codex('{"next_cursor":"p2","items":[1]}')
    fb = _served(wrapped, Outcome("paginated", S, "ok", {"next_cursor": "p2", "items": [1]}))
    assert fb.content == '{"next_cursor":"p2","items":[1]}' and fb.sent == wrapped
    assert _served('{"a":1}', SENT).sent is None  # nothing removed: nothing kept apart
    assert unwrap(codex("")) == "" and unwrap("Wall time: soon\nOutput:x") == "Wall time: soon\nOutput:x"
    assert unwrap(gemini_error("send_email", {"to": "a b"}, "Could not send: quota")) == "Could not send: quota"
    assert unwrap({"error": "MCP tool 'x' said something else"}) == {"error": "MCP tool 'x' said something else"}


def test_the_issues_codex_reading_ok_and_503_cases() -> None:
    # Codex's [] after a header read as ok (one call, then a final answer); a sent e-mail read as a
    # retryable error because the wall time held "503". Both are read from their bytes now.
    assert interpret(codex("[]", "0.0166"))[0] == "empty"
    assert interpret(codex(served_text(SENT), "0.0503"))[0] == "ok"
    assert _reading(_served(codex("[]", "0.0166"), EMPTY))[0] == "empty"


# --- no digit changes a reading --------------------------------------------------------------------


seconds = st.one_of(st.sampled_from(["0.0503", "0.0429", "503.0000", "429.4290", "0.5030"]),
                    st.from_regex(r"[0-9]{1,4}\.[0-9]{4}", fullmatch=True))
ids = st.text(st.characters(codec="ascii", categories=("L", "N", "Pc", "Pd")), min_size=1, max_size=24)


@given(outcome=st.sampled_from(OUTCOMES), wall=seconds, cid=ids, items=st.booleans())
def test_no_wall_time_or_id_changes_a_reading(outcome: Outcome, wall: str, cid: str, items: bool) -> None:
    bare, wrapped = served_text(outcome), codex(served_text(outcome), wall, items=items)
    assert interpret(wrapped) == interpret(bare)
    served_bare, served_wrapped = _served(bare, outcome, cid), _served(wrapped, outcome, cid)
    assert _reading(served_wrapped) == _reading(served_bare) == served_reading(outcome)
    assert served_wrapped.content == served_bare.content


@given(wall=seconds, digits=st.from_regex(r"[0-9]{3}", fullmatch=True))
def test_digits_in_prose_are_no_status_code(wall: str, digits: str) -> None:
    for text in (f"Invoice {digits}: total {wall} EUR", f"HTTP {digits}", digits + " " + wall):
        assert interpret(text) == ("ok", None, None, None)
        assert interpret(codex(text, wall)) == ("ok", None, None, None)
    assert interpret("HTTP 503 Service Unavailable")[:2] == ("error", True)  # the words still read


# --- an executed call reads as what was served ----------------------------------------------------


@pytest.mark.parametrize("content,outcome", [
    ("Error: the service is temporarily unavailable, try again", SENT),  # words said error: it was sent
    ("Done.", TIMEOUT),  # a runtime that reworded a timeout
    ({"error": "something went wrong"}, DENIED),  # an unstructured error: its class is the served one
    ("Error: ToolException('fetch_invoice: rate_limited')", RATE_LIMITED),  # a raised error, reworded
])
def test_an_executed_call_reads_as_its_served_outcome_whatever_the_runtime_wrote(content: Any,
                                                                                 outcome: Outcome) -> None:
    assert _reading(_served(content, outcome)) == served_reading(outcome)


def test_served_readings_are_the_readings_of_the_payloads_served() -> None:
    # what a runtime handing results back as they are got read as before: in-process verdicts stay
    for outcome in OUTCOMES:
        payload = outcome.data if outcome.cls in (S, P) else outcome.error_payload()
        assert served_reading(outcome) == interpret(payload, refusals=False, words=False)
    assert served_reading(RATE_LIMITED) == ("error", True, "rate_limited", 20.0)
    assert served_reading(INVALID) == ("error", False, "invalid_argument", None)
    assert served_reading(DIGITS) == ("ok", None, None, None)  # served prose: its class, not its words


def test_a_call_answered_with_nothing_reads_as_empty_whatever_was_served() -> None:
    for content in (None, "", "  "):
        assert _served(content, SENT).kind == "empty"


def test_without_an_outcome_on_record_an_executed_call_is_read_from_its_content() -> None:
    (fb,) = read_feedback(_turn(codex('{"error":{"code":"timeout","retryable":true}}')), {"c1": Handled.of("tool")})
    assert _reading(fb)[:2] == ("error", True) and fb.executed is True


# --- refusals and data in place of an unexecuted call ----------------------------------------------


@pytest.mark.parametrize("content", [
    {"error": "You are repeating the same call. Try something different."},
    json.dumps({"error": "You are repeating the same call."}),
    {"error": {"code": "loop_detected", "retryable": False}},
    "Potential loop detected: fetch_invoice was called 5 times. Try something different.",
    codex("Tool call limit exceeded"),
    gemini_error("fetch_invoice", {}, "not executed"),
])
def test_whatever_a_runtime_puts_in_place_of_a_refused_call_reads_as_the_refusal(content: Any) -> None:
    (fb,) = read_feedback(_turn(content), {"c1": Handled.of("refusal", "loop_detected")})
    assert (fb.kind, fb.code, fb.executed) == ("refused", "loop_detected", False)


@pytest.mark.parametrize("content,kind", [
    ({"charge_id": "ch_1", "status": "succeeded"}, "ok"),
    (json.dumps({"charge_id": "ch_1"}), "ok"),
    (codex('{"charge_id":"ch_1"}'), "ok"),  # the ledger's answer under Codex's header
    ([], "empty"),
    ('{"id": "broken", ', "malformed"),
])
def test_a_result_shaped_payload_in_place_of_an_unexecuted_duplicate_reads_as_data(content: Any, kind: str) -> None:
    (fb,) = read_feedback(_turn(content), {"c1": Handled.of("refusal", "idempotency")})
    assert (fb.kind, fb.executed) == (kind, False)


# --- an answer carries the served result it is -----------------------------------------------------


def _two(first: Any, second: Any) -> list[dict[str, Any]]:
    calls = [{"id": "a", "name": "fetch_invoice", "arguments": {"invoice_id": "inv_1"}},
             {"id": "b", "name": "fetch_invoice", "arguments": {"invoice_id": "inv_2"}}]
    return [{"role": "user", "content": "t"}, {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "a", "content": first},
            {"role": "tool", "tool_call_id": "b", "content": second}]


def test_over_mcp_two_answers_in_another_order_read_as_the_results_they_carry() -> None:
    # the harness matched the MCP calls to the wrong requests (by name); the bytes say which is which
    record = {"a": Handled.of("tool", served=TIMEOUT), "b": Handled.of("tool", served=SENT)}
    a, b = read_feedback(_two(codex(served_text(SENT)), codex(served_text(TIMEOUT), "0.0429")), record,
                         [TIMEOUT, SENT])
    assert (a.kind, b.kind, b.retryable) == ("ok", "error", True)
    # each answer carrying its own result keeps it
    a, b = read_feedback(_two(served_text(TIMEOUT), served_text(SENT)), record, [TIMEOUT, SENT])
    assert (a.kind, b.kind) == ("error", "ok")


def test_a_lookup_result_handed_back_for_a_lost_response_reads_as_the_lookup() -> None:
    charge = {"charge_id": "ch_1", "customer_id": "cus_4", "status": "succeeded"}
    lookup = Outcome("ok", S, "ok", {"charges": [charge]})
    (fb,) = read_feedback(_turn(dict(charge)), {"c1": Handled.of("tool", served=TIMEOUT)}, [TIMEOUT, lookup])
    assert fb.kind == "ok"
    # an answer that carries none of the turn's results keeps its own call's
    (fb,) = read_feedback(_turn({"note": "retrying later"}), {"c1": Handled.of("tool", served=TIMEOUT)},
                          [TIMEOUT, lookup])
    assert _reading(fb)[:2] == ("error", True)


def test_an_answer_carrying_results_that_read_differently_keeps_its_own() -> None:
    first, empty = Outcome("ok", S, "ok", {"id": "x", "v": 1}), Outcome("ok", S, "ok", [])
    record = {"c1": Handled.of("tool", served=DENIED)}
    (fb,) = read_feedback(_turn(json.dumps([{"id": "x", "v": 1}, []])), record, [DENIED, first, empty])
    assert fb.kind == "ok"  # the one result it carries: `first` (an empty one is inside anything)
    pending = Outcome("pending", P, "processing", {"status": "processing", "poll": 1})
    (fb,) = read_feedback(_turn({"a": {"id": "x", "v": 1}, "b": {"status": "processing", "poll": 1}}), record,
                          [DENIED, first, pending])
    assert _reading(fb) == served_reading(DENIED)


# --- whole runs: a loop that wraps every result like Codex gets the bare loop's verdicts ------------


def _loop(wrap: bool) -> Any:
    """The plain loop (builtin:naive) handing back each result as text, under Codex's header or bare."""
    walls = iter(("0.0503", "0.0429", "503.0429", "0.1234") * 1000)
    handed = iter(range(10**6))

    def answer(tools: Any, call: Any) -> Any:
        try:
            result: Any = tools.call(call.name, call.arguments, call_id=call.id)
        except Exception as exc:
            result = f"Error: {exc}"
        text = result if isinstance(result, str) else json.dumps(result, separators=(",", ":"), default=str)
        return codex(text, next(walls), items=next(handed) % 2 == 0) if wrap else text

    return plain_loop(answer)


def _verdicts(agent: Any) -> list[tuple[Any, ...]]:
    out = []
    for v in certify(agent):
        r = v.result
        out.append((v.id, v.passed, r.terminal_state, r.total_executions, r.turns, r.answer,
                    sorted(x.invariant for x in v.violations)))
    return out


def test_in_process_a_loop_wrapping_results_like_codex_gets_the_verdicts_of_the_bare_loop() -> None:
    bare, wrapped = _verdicts(_loop(False)), _verdicts(_loop(True))
    assert len(bare) >= 40 and wrapped == bare


def _retrying(hand_back: int) -> Any:
    """Runs each asked call twice under its id (the first time out, the second answers) and hands
    back the result of run ``hand_back`` (0: the first, 1: the last)."""
    return plain_loop(lambda tools, call: [tools.call(call.name, call.arguments, call_id=call.id)
                                           for _ in range(2)][hand_back], steps=5)


def test_a_call_run_twice_under_one_id_reads_as_the_execution_handed_back() -> None:
    def go(hand_back: int) -> Any:
        tools = [catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"timeout": {"after": 1}}},
                                                        {"call": 3, "outcome": {"timeout": {"after": 1}}}])]
        return run(_retrying(hand_back), task="t", tools=tools,
                   policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))

    last, first = go(1), go(0)
    assert last.turns == 2 and last.total_executions == 2  # the last run answered: read as ok at once
    assert first.turns > 2  # the timeout it handed back reads as one, though a later run of the call answered
