"""A served run's input is bounded: a request body past the cap (``Server(max_body=)``) is refused with
a 413 in its API's own format without being held, and an end the server cannot read is refused
with a 400 saying what the body must be, while the run goes on."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos import policies
from toolchaos.errors import UserError
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server
from toolchaos.serve._asgi import MAX_BODY

STATUS = Path("/proc/self/status")
MB = 1 << 20


def _server(**kw: Any) -> Server:
    return Server(task="Get the invoice total", tools=[catalogue.get("fetch_invoice")],
                  policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), real_seconds=60, **kw)


def _peak_rss() -> int:
    """This process's peak resident memory so far (bytes): the server runs in it."""
    match = re.search(r"VmHWM:\s+(\d+) kB", STATUS.read_text())
    assert match is not None
    return int(match.group(1)) * 1024


def _gigabyte() -> Iterator[bytes]:
    chunk = b"x" * MB  # the same megabyte, 1024 times: the test itself never holds the body
    for _ in range(1024):
        yield chunk


CHAT = {"model": "m", "messages": [{"role": "user", "content": "go"}]}


@pytest.mark.skipif(not STATUS.exists(), reason="reads the peak memory from /proc")
def test_a_gigabyte_body_is_refused_and_the_server_never_holds_more_than_the_cap() -> None:
    with _server() as srv, httpx.Client(timeout=60) as http:
        assert http.post(srv.base_urls["openai"] + "/chat/completions", json=CHAT).status_code == 200  # warmed up
        before = _peak_rss()
        r = http.post(srv.base_urls["openai"] + "/chat/completions", content=_gigabyte(),
                      headers={"content-type": "application/json"})  # chunked: no length said up front
        grown = _peak_rss() - before
        after = http.post(srv.base_urls["openai"] + "/chat/completions", json=CHAT)
        srv.end()
    assert r.status_code == 413
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and f"at most {MAX_BODY} bytes" in error["message"]
    assert grown < MAX_BODY + 20 * MB, f"the peak memory grew by {grown / MB:.1f} MB"
    assert after.status_code == 200  # the run goes on, on the same connection
    # recorded, never dispatched: no model turn
    assert srv.result is not None and [(q.status, q.fault) for q in srv.result.requests] == [
        (200, None), (413, "too_large"), (200, None)]
    assert srv.result.turns == 2


def test_a_body_declared_past_the_cap_is_refused_before_a_byte_of_it_is_read() -> None:
    with _server(max_body=1000) as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(f"POST /{srv.token}/v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{srv.port}\r\n"
                     f"content-type: application/json\r\ncontent-length: {10**12}\r\n\r\n".encode())
        answer = b""
        while not answer.endswith(b"0\r\n\r\n"):  # no body was sent: the answer cannot have waited for it
            chunk = sock.recv(65536)
            assert chunk, f"the connection closed after {answer!r}"
            answer += chunk
        srv.end()
    head, _, chunked = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(chunked.split(b"\r\n")[1])["error"] == {
        "type": "request_too_large", "message": f"toolchaos serve: the request body is {10**12} bytes; this server "
                                                f"reads at most 1000 bytes (toolchaos serve --max-body BYTES, "
                                                f"Server(max_body=...))"}


def test_the_cap_is_exact_and_answered_in_each_apis_format() -> None:
    cap = 2000
    with _server(max_body=cap) as srv, httpx.Client(timeout=10) as http:
        def padded(size: int, **body: Any) -> bytes:
            raw = json.dumps({**body, "pad": ""}).encode()
            return raw.replace(b'"pad": ""', b'"pad": "' + b"x" * (size - len(raw)) + b'"')

        fits = http.post(srv.base_urls["openai"] + "/chat/completions", content=padded(cap, **CHAT))
        over = {path: http.post(srv.url + path, content=padded(cap + 1, **CHAT)) for path in
                ("/v1/chat/completions", "/v1/messages", "/v1beta/models/g:generateContent", "/toolchaos/end")}
        srv.end()
    assert fits.status_code == 200
    assert {r.status_code for r in over.values()} == {413}
    assert over["/v1/chat/completions"].json()["error"]["code"] == "invalid_request_error"
    assert over["/v1/messages"].json()["error"]["type"] == "request_too_large"
    assert over["/v1beta/models/g:generateContent"].json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "at most 2000 bytes" in over["/toolchaos/end"].json()["error"]
    assert srv.result is not None and srv.result.terminal_state == "FAILED"  # not ended by the refused end
    # the model requests refused are in the run's requests (the end is not a model request)
    assert [(q.api, q.status, q.fault) for q in srv.result.requests] == [
        ("openai.chat", 200, None), ("openai.chat", 413, "too_large"), ("anthropic.messages", 413, "too_large"),
        ("gemini", 413, "too_large")]


@pytest.mark.parametrize("bad", [0, -1, "8M", 1.5, True, None])
def test_the_cap_is_a_positive_number_of_bytes(bad: Any) -> None:
    with pytest.raises(UserError, match=r"max_body: expected a positive whole number of bytes") as caught:
        _server(max_body=bad)
    assert caught.value.field == "max_body"


@pytest.mark.parametrize(("body", "says"), [
    (b'{"state": "STOPPED_LOOP_GUARD", "report": "retries exhausted"}', "report is a string"),
    (b'{"report": ["guard"]}', "report is an array, not an object (the stop report)"),
    (b'{"state": 3}', "state is a number (3), not a string"),
    (b'{"answer": {"total": 3}}', "answer is an object, not a string"),
    (b'{"reprot": {}}', "unknown field 'reprot'; did you mean 'report'?"),
    (b'["COMPLETED"]', "the body is an array"),
    (b'{"state": "COMP', "the body is not JSON"),
    (b"\xff\xfe\x00", "the body is not JSON"),
])
def test_an_end_the_server_cannot_read_is_refused_and_the_run_goes_on(body: bytes, says: str) -> None:
    with _server() as srv, httpx.Client(timeout=10) as http:
        refused = http.post(srv.end_url, content=body)
        turn = http.post(srv.base_urls["openai"] + "/chat/completions", json=CHAT)
        ended = http.post(srv.end_url, json={"state": "NEEDS_HUMAN", "report": {"reason": "the total never came"}})
        assert srv.wait(10) is not None
    assert refused.status_code == 400
    message = refused.json()["error"]
    assert message.startswith("toolchaos serve: the run was not ended: ") and says in message
    assert "report an object (the stop report" in message or "not an object (the stop report)" in message
    assert turn.status_code == 200  # still running after the refusal
    assert ended.json() == {"ended": True}
    assert srv.result is not None and srv.result.terminal_state == "NEEDS_HUMAN"
    assert srv.result.stop_report == {"reason": "the total never came"}
