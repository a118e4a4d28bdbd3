"""The model double judges what happened to a call from the harness's record, not from the runtime's words.

A runtime may refuse a call (``tools.refuse``) or never execute it, and tell the model anything
in its place: gemini-cli's "Potential loop detected ... try something different", LangChain's
"Tool call limit exceeded", a ``json.dumps()``'d dict. The double reads such a call as refused
because the trace says it did not run (a ``refusal`` or ``skipped`` event for its call id), in
process and over the wire.
"""

from __future__ import annotations

import json
from typing import Any

from toolchaos import policies, run, tool_message, wire
from toolchaos.fake_tools import catalogue, faults

GEMINI = "Potential loop detected: {tool} was called with the same arguments. Try something different."
LIMIT = "Tool call limit exceeded. Do not call {tool} again."


def _loop(say: str, *, refuse: bool, limit: int = 2) -> Any:
    """A plain loop that executes a call ``limit`` times, then answers ``say`` without executing it."""

    def agent(task: str, model: Any, tools: Any) -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        done = 0
        for _ in range(10):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return turn.text
            for call in turn.tool_calls:
                if done < limit:
                    done += 1
                    content = tools.call(call.name, call.arguments, call_id=call.id)
                else:
                    if refuse:
                        tools.refuse(call.name, call.arguments, guard="loop_detected", reason="repeat",
                                     call_id=call.id)
                    content = say.format(tool=call.name)  # prose in place of the result
                messages.append(tool_message(call, content))
        return None

    return agent


STUBBORN = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})


def _timeouts() -> list[Any]:
    return [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]


def test_a_refusal_worded_as_gemini_words_it_reads_as_a_refusal() -> None:
    r = run(_loop(GEMINI, refuse=True), task="t", tools=_timeouts(), policy=STUBBORN)
    assert r.total_executions == 2 and r.turns == 4
    assert r.answer == "I cannot complete the task: the runtime refused fetch_invoice (loop_detected)."


def test_a_call_skipped_with_a_limit_message_reads_as_not_executed() -> None:
    r = run(_loop(LIMIT, refuse=False), task="t", tools=_timeouts(), policy=STUBBORN)
    assert [e["kind"] for e in r.trace][-3:] == ["skipped", "model", "end"]  # the record: never executed
    assert r.answer == "I cannot complete the task: the runtime refused fetch_invoice (not_executed)."


def test_a_json_dumped_malformed_result_is_still_malformed() -> None:
    def dumps(task: str, model: Any, tools: Any) -> Any:  # as docs/examples/openai_naive.py hands results back
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(5):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return turn.text
            for call in turn.tool_calls:
                result = tools.call(call.name, call.arguments, call_id=call.id)
                messages.append(tool_message(call, json.dumps(result, default=str)))
        return None

    tools = [catalogue.get("fetch_invoice", faults=faults.malformed("invalid_json"))]
    r = run(dumps, task="t", tools=tools, policy=STUBBORN)
    assert r.total_executions == 5  # the model keeps asking: a broken payload is no answer


def _sdk_limited(executed: int) -> Any:
    """An OpenAI SDK loop that executes the first ``executed`` calls, then answers the limit's message instead."""

    def sdk_loop(task: str, env: Any) -> Any:
        client = env.openai()
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        calls = 0
        for _ in range(6):
            message = client.chat.completions.create(model="m", messages=messages,
                                                     tools=env.openai_tools).choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                calls += 1
                if calls <= executed:
                    content = json.dumps(env.call(call.function.name, json.loads(call.function.arguments)))
                else:  # the limit: nothing executed, a message instead
                    content = LIMIT.format(tool=call.function.name)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        return None

    return sdk_loop


def test_an_sdk_agent_that_skips_a_call_is_read_from_the_record_over_the_wire() -> None:
    r = wire.run(_sdk_limited(2), task="t", tools=_timeouts(), policy=STUBBORN)
    assert r.total_executions == 2 and r.terminal_state == "COMPLETED"
    shown = r.trace.model_events[-1]["shown"]
    assert [s["read_as"] for s in shown] == ["refused"]
    assert r.answer == "I cannot complete the task: the runtime refused fetch_invoice (not_executed)."


def test_a_skipped_duplicate_of_a_sent_email_reads_as_done_over_the_wire() -> None:
    """The email went out and its answer came back; the limit's message in place of a resend is the work done."""
    email = {"to": "ana@example.com", "subject": "Order", "body": "On its way."}
    script = policies.scripted([{"call": "send_email", "args": email}, {"call": "send_email", "args": email},
                                {"final": "Sent once."}])
    r = wire.run(_sdk_limited(1), task="t", tools=[catalogue.get("send_email")], policy=script)
    assert r.ledger.applied("send_email") == 1 and r.answer == "Sent once."
    assert [s["read_as"] for s in r.trace.model_events[-1]["shown"]] == ["duplicate"]
