"""What the wire answers when a request is wrong, as the real APIs would: the status, the
error the SDK parses, and ``wire.requests`` saying why."""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra: pip install toolchaos[openai]")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra: pip install toolchaos[anthropic]")

import httpx  # noqa: E402
from toolchaos import policies, wire  # noqa: E402

OPENAI = "https://api.openai.com/v1"
ANTHROPIC = "https://api.anthropic.com/v1"
MSGS = [{"role": "user", "content": "hi"}]


def _raw(requests: list[tuple[str, str, bytes]]) -> tuple[list[httpx.Response], Any]:
    """Send raw requests (method, url, body) from inside a run; the responses and the run."""
    got: list[httpx.Response] = []

    def agent(task: str) -> str:
        with httpx.Client() as client:
            for method, url, body in requests:
                got.append(client.request(method, url, content=body, headers={"content-type": "application/json"}))
        return "done"

    result = wire.run(agent, task="t", tools=[], policy=policies.scripted([{"final": "a"}, {"final": "b"}]))
    return got, result


@pytest.mark.parametrize(("url", "kind"), [
    (f"{OPENAI}/chat/completions", "openai"), (f"{OPENAI}/responses", "openai"),
    (f"{ANTHROPIC}/messages", "anthropic"), (f"{ANTHROPIC}/messages/count_tokens", "anthropic"),
])
def test_a_body_that_is_not_json_is_a_400_in_the_apis_own_error_shape(url: str, kind: str) -> None:
    (resp,), result = _raw([("POST", url, b"{not json")])
    assert resp.status_code == 400
    error = resp.json()["error"]
    if kind == "openai":
        assert error["type"] == "invalid_request_error" and "JSON" in error["message"]
    else:
        assert resp.json()["type"] == "error" and error["type"] == "invalid_request_error"
    assert result.turns == 0  # nothing reached the model


@pytest.mark.parametrize(("url", "body", "says"), [
    (f"{OPENAI}/chat/completions", b'{"messages": 1}', "messages: expected an array, got a number (1)"),
    (f"{OPENAI}/chat/completions", b'{"messages": ["hi"]}', "messages[]: expected an object, got a string ('hi')"),
    (f"{OPENAI}/chat/completions", b'{"messages": [{"role": "assistant", "tool_calls": {}}]}',
     "messages[].tool_calls: expected an array, got an object"),
    (f"{OPENAI}/chat/completions", b'{"messages": [], "stream": true, "stream_options": 1}',
     "stream_options: expected an object, got a number (1)"),
    (f"{OPENAI}/responses", b'{"input": [1], "tools": []}', "input[]: expected an object, got a number (1)"),
    (f"{OPENAI}/responses", b'{"input": "hi", "tools": 1}', "tools: expected an array, got a number (1)"),
    (f"{ANTHROPIC}/messages", b'{"messages": [{"role": "user", "content": {"text": "hi"}}]}',
     "messages[].content: expected a string or an array of content blocks, got an object"),
    (f"{ANTHROPIC}/messages/count_tokens", b'[]', "body: expected an object, got an array"),
])
def test_a_field_of_the_wrong_type_is_a_400_naming_it_and_no_model_turn(url: str, body: bytes, says: str) -> None:
    (resp, good), result = _raw([("POST", url, body), ("POST", url.replace("/count_tokens", ""), b'{"messages": []}')])
    assert resp.status_code == 400
    answer = resp.json()
    assert answer["error"]["message"] == says and answer["error"]["type"] == "invalid_request_error"
    if url.startswith(OPENAI):
        assert answer["error"]["param"] == says.partition(":")[0]
    assert good.status_code == 200 and result.turns == 1  # only the well-formed request reached the model
    assert [(r.status, r.fault) for r in result.requests][:1] == ([(400, "bad_request")] if "count" not in url else
                                                                  [(200, None)])


def test_an_unknown_previous_response_id_is_refused_and_recorded() -> None:
    def agent(task: str) -> str:
        client = openai.OpenAI(max_retries=0)
        first = client.responses.create(model="m", input="hi")
        again = client.responses.create(model="m", input="and?", previous_response_id=first.id)
        try:
            client.responses.create(model="m", input="x", previous_response_id="resp_nobody")
        except openai.BadRequestError as exc:
            return f"{again.output_text}|{exc.code}"
        return "not refused"

    result = wire.run(agent, task="t", tools=[], policy=policies.scripted([{"final": "a"}, {"final": "b"}]))
    assert result.answer == "b|previous_response_not_found"
    assert [(r.status, r.fault) for r in result.requests] == [
        (200, None), (200, None), (400, "previous_response_not_found")]


def test_a_response_not_stored_cannot_be_continued() -> None:
    def agent(task: str) -> str:
        client = openai.OpenAI(max_retries=0)
        first = client.responses.create(model="m", input="hi", store=False)
        try:
            client.responses.create(model="m", input="and?", previous_response_id=first.id)
        except openai.BadRequestError as exc:
            return str(exc.code)
        return "continued"

    assert wire.run(agent, task="t", tools=[], policy=policies.scripted([{"final": "a"}])).answer == (
        "previous_response_not_found")


def _thread(kind: str, **extra: Any) -> bytes:
    import json

    return json.dumps({"model": "c", "max_tokens": 5, "messages": MSGS, "thread": {"type": kind, **extra}}).encode()


def test_anthropic_threads_continue_once_and_unknown_ids_are_404() -> None:
    # Message ids are deterministic: the first message of the next run gets the same id.
    (created,), _ = _raw([("POST", f"{ANTHROPIC}/messages", _thread("create"))])
    mid = created.json()["id"]
    responses, result = _raw([
        ("POST", f"{ANTHROPIC}/messages", _thread("create")),
        ("POST", f"{ANTHROPIC}/messages", _thread("continue", previous_message_id=mid)),
        ("POST", f"{ANTHROPIC}/messages", _thread("continue", previous_message_id=mid)),
        ("POST", f"{ANTHROPIC}/messages", _thread("continue", previous_message_id="msg_nobody")),
    ])
    assert [r.status_code for r in responses] == [200, 200, 400, 404]
    assert responses[2].json()["error"]["type"] == "invalid_request_error"
    assert responses[3].json()["error"]["type"] == "not_found_error"
    assert [r.fault for r in result.requests] == [None, None, "thread_already_continued", "thread_not_found"]
    assert result.turns == 2


def test_count_tokens_grows_with_the_conversation_and_is_not_a_model_turn() -> None:
    import json

    small = json.dumps({"model": "c", "messages": MSGS}).encode()
    big = json.dumps({"model": "c", "messages": [{"role": "user", "content": "x" * 4000}]}).encode()
    responses, result = _raw([("POST", f"{ANTHROPIC}/messages/count_tokens", small),
                              ("POST", f"{ANTHROPIC}/messages/count_tokens", big)])
    counts = [r.json()["input_tokens"] for r in responses]
    assert counts[1] - counts[0] >= 990 and result.turns == 0


def test_trace_exports_are_accepted_and_dropped() -> None:
    (resp,), result = _raw([("POST", f"{OPENAI}/traces/ingest", b'{"data": []}')])
    assert resp.status_code == 204 and result.terminal_state != "CRASHED" and result.turns == 0
