"""Malformed input never breaks a served run: thousands of generated requests (random bytes, truncated
JSON, JSON of the wrong shape for each API, random paths and content types) against one running
server, and thousands of malformed lines on ``toolchaos mcp``'s stdin. Every one is answered in the
4xx range (a malformed model request with a 400 in its API's own format), nothing is logged with a
traceback, the run goes on, and a well-formed request afterwards is answered as usual."""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos import policies
from toolchaos._internal.limits import Ceiling
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server

EXAMPLES = settings(max_examples=1000, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))

# --- what is generated ------------------------------------------------------------------

CALL_ARGS = json.dumps({"invoice_id": "inv_1"})
CHAT = {"model": "m", "stream": False, "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function", "function": {"name": "fetch_invoice", "arguments": CALL_ARGS}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "{}"}],
        "tools": [{"type": "function", "function": {"name": "fetch_invoice", "parameters": {"type": "object"}}}]}
RESPONSES = {"model": "m", "instructions": "be brief", "store": True, "stream": False,
             "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                       {"type": "function_call", "call_id": "c1", "name": "fetch_invoice", "arguments": CALL_ARGS},
                       {"type": "function_call_output", "call_id": "c1", "output": "x"}],
             "tools": [{"type": "function", "name": "fetch_invoice", "parameters": {"type": "object"}}]}
MESSAGES = {"model": "c", "max_tokens": 10, "system": [{"type": "text", "text": "s"}], "thread": {"type": "create"},
            "messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {
                             "type": "tool_use", "id": "t1", "name": "fetch_invoice", "input": {"invoice_id": "inv_1"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                       "content": [{"type": "text", "text": "x"}]}]}],
            "tools": [{"name": "fetch_invoice", "input_schema": {"type": "object"}}]}
GEMINI = {"systemInstruction": {"parts": [{"text": "s"}]},
          "contents": [{"role": "user", "parts": [{"text": "hi"}]},
                       {"role": "model", "parts": [{"functionCall": {"id": "g1", "name": "fetch_invoice",
                                                                     "args": {"invoice_id": "inv_1"}}}]},
                       {"role": "user", "parts": [{"functionResponse": {"id": "g1", "name": "fetch_invoice",
                                                                        "response": {"output": "x"}}}]}],
          "tools": [{"functionDeclarations": [{"name": "fetch_invoice", "parameters": {"type": "object"}}]}]}
TOOL_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "fetch_invoice", "arguments": {"invoice_id": "inv_1"}}}
RPC = [TOOL_CALL, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
       {"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"},
       {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
           "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
       {"jsonrpc": "2.0", "id": 5, "result": {}}, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                 "params": {"requestId": 1}}]
END = {"state": "COMPLETED", "answer": "done", "report": {"guard": "g", "completed": []}}
# each model path with the body it is built for; a body is sent to any path too
TEMPLATES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": CHAT, "/v1/responses": RESPONSES, "/v1/messages": MESSAGES,
    "/v1/messages/count_tokens": MESSAGES, "/v1beta/models/g:generateContent": GEMINI,
    "/v1beta/models/g:streamGenerateContent": GEMINI, "/v1beta/models/g:countTokens": GEMINI,
    "/v1/models/g:generateContent": GEMINI, "/mcp": TOOL_CALL, "/toolchaos/end": END}
PREFIXES = ["/v1/", "/v1/models/", "/v1beta/models/", "/v1/messages/", "/toolchaos/", "/mcp/", "/"]
CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "application/json; charset=utf-16",
                 "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/octet-stream", "text/event-stream", "", "*/*", "application/json;;;=\xe9"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with some of its parts replaced by any JSON value or dropped: the wrong shape in a known place."""
    if draw(st.integers(0, 7)) == 0:
        return draw(json_values)
    if isinstance(value, dict):
        return {k: draw(mutated(v)) for k, v in value.items() if draw(st.integers(0, 11))}
    if isinstance(value, list):
        return [draw(mutated(v)) for v in value]
    return value


def encoded(value: Any) -> st.SearchStrategy[bytes]:
    """A JSON value as bytes: whole, truncated, or in another encoding."""
    text = json.dumps(value)
    return st.one_of(st.just(text.encode()), st.integers(0, max(0, len(text) - 1)).map(lambda n: text[:n].encode()),
                     st.sampled_from(["utf-16", "utf-32", "latin-1"]).map(lambda e: text.encode(e, "replace")))


def bodies(template: dict[str, Any]) -> st.SearchStrategy[bytes]:
    nested = st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n)
    return st.one_of(mutated(template).flatmap(encoded), json_values.flatmap(encoded), st.binary(max_size=300),
                     nested, st.sampled_from([b"", b"{}", b"[]", b"null", b"\xff\xfe{", b'{"messages": [}', b"\x00"]))


# mostly the served paths, whose bodies are read; some random ones under the prefixes
paths = st.integers(0, 4).flatmap(lambda n: st.sampled_from(list(TEMPLATES)) if n else st.tuples(
    st.sampled_from(PREFIXES), st.text("abcxyz019:._-~%/$!*'()@", max_size=30)).map("".join))


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, dict[str, bytes], bytes]:
    path = draw(paths)
    template = TEMPLATES.get(path) or draw(st.sampled_from([*TEMPLATES.values(), *RPC]))
    # not GET /mcp: that is MCP's listening stream, open until the client leaves
    method = draw(st.sampled_from(["POST"] * 12 + ["PUT", "DELETE", "PATCH"] + (["GET"] if path != "/mcp" else [])))
    query = draw(st.sampled_from(["", "alt=sse", "beta=true", "alt=%ff", "x=1&x=2"]))
    headers = {"content-type": draw(st.sampled_from(CONTENT_TYPES)).encode("latin-1"),
               "accept": draw(st.sampled_from([b"application/json, text/event-stream", b"*/*", b"text/html"]))}
    return method, path, query, headers, draw(bodies(template))


def _ends(path: str, method: str, body: bytes) -> bool:
    """Would this request end the run (a well-formed end)? Those are not sent: the run must go on."""
    if path.rstrip("/") != "/toolchaos/end" or method != "POST":
        return False
    try:
        data = json.loads(body) if body.strip() else {}
    except (ValueError, RecursionError):
        return False
    types = {"state": str, "answer": str, "report": dict}
    return isinstance(data, dict) and all(k in types and (v is None or isinstance(v, types[k])) for k, v in data.items())


# --- what is checked --------------------------------------------------------------------


class Tracebacks(logging.Handler):
    """Every record logged with an exception or at ERROR, from any logger of the process."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)

    def shown(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}\n{self.format(r)}" for r in self.records]


@pytest.fixture
def tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    # uvicorn's loggers do not propagate to the root: its own errors ("Exception in ASGI application") are its
    loggers = [logging.getLogger(), logging.getLogger("uvicorn"), logging.getLogger("uvicorn.error")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


API_FORMATS = {"/v1/chat/completions": "openai", "/v1/responses": "openai", "/v1/messages": "anthropic",
               "/v1/messages/count_tokens": "anthropic", "/v1beta/models/g:generateContent": "gemini",
               "/v1beta/models/g:streamGenerateContent": "gemini", "/v1beta/models/g:countTokens": "gemini",
               "/v1/models/g:generateContent": "gemini"}


def _in_api_format(api: str, answer: Any) -> bool:
    if api == "anthropic":
        return bool(answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error")
    if api == "gemini":
        return bool(answer["error"]["code"] == 400 and answer["error"]["status"] == "INVALID_ARGUMENT")
    return bool(answer["error"]["type"] == "invalid_request_error" and "param" in answer["error"])


def test_a_thousand_malformed_requests_get_4xx_answers_and_the_run_goes_on(tracebacks: Tracebacks) -> None:
    srv = Server(task="Get the invoice total", tools=[catalogue.get("fetch_invoice")],
                 policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}), real_seconds=600,
                 ceiling=Ceiling(max_model_turns=100_000, max_tool_calls=100_000))
    statuses: dict[int, int] = {}
    with srv, httpx.Client(timeout=30) as http:

        @EXAMPLES
        @given(requests())
        def one(request: tuple[str, str, str, dict[str, bytes], bytes]) -> None:
            method, path, query, headers, body = request
            if _ends(path, method, body):
                return
            try:
                url = httpx.URL(srv.url + path, query=query.encode())
            except httpx.InvalidURL:
                return  # the client cannot send it
            r = http.request(method, url, headers=headers, content=body)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (r.status_code, method, path, body[:200], r.text)
            if r.status_code == 400 and path in API_FORMATS:
                assert _in_api_format(API_FORMATS[path], r.json()), (path, body[:200], r.text)
            assert not tracebacks.records, tracebacks.shown()

        one()
        ok = http.post(srv.base_urls["openai"] + "/chat/completions", json={"model": "m", "messages": [
            {"role": "user", "content": "go"}], "tools": [{"type": "function", "function": {
                "name": "fetch_invoice", "parameters": {"type": "object"}}}]})  # declared: a main turn
        assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["tool_calls"]
        srv.end()
    assert srv.result is not None and srv.result.terminal_state == "FAILED"  # ended by the end, as a plain return
    assert sum(statuses.values()) >= 900 and statuses.get(400, 0) >= 400, statuses
    assert not tracebacks.records, tracebacks.shown()


# --- toolchaos mcp over stdio ------------------------------------------------------------

SCENARIO = """\
id: stdio-junk
title: Malformed lines on the stdio MCP server
task: Get the total of invoice inv_1.
tools:
  fetch_invoice: {}
policy:
  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}
ceiling: {max_tool_calls: 100000}
expect:
  - bounded: {executions: 100000}
"""
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}
lines = st.one_of(st.binary(max_size=200), st.sampled_from(RPC).flatmap(mutated).flatmap(encoded),
                  json_values.flatmap(encoded), st.lists(st.sampled_from(RPC), min_size=1, max_size=3).flatmap(encoded),
                  st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n)
                  ).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" "))


class Stdio:
    """``toolchaos mcp`` in a child process: lines in, answers out (each stdout line read by a thread)."""

    def __init__(self, scenario: Path, err: Path) -> None:
        self.err = err
        self.proc = subprocess.Popen([sys.executable, "-m", "toolchaos", "mcp", str(scenario), "--real-seconds", "600"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err.open("wb"))
        self.out: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, name="test-stdio-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.put(line)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid: str) -> dict[str, Any]:
        """The answer to request ``rid``; every line before it must be a JSON-RPC message too."""
        waited = 0
        while True:
            try:
                line = self.out.get(timeout=0.5)
            except queue.Empty:
                waited += 1
                if self.proc.poll() is not None or waited > 60:
                    raise AssertionError(f"no answer to {rid} (exit status {self.proc.poll()}): "
                                         f"{self.err.read_text(errors='replace')}") from None
                continue
            message = json.loads(line)
            assert message.get("jsonrpc") == "2.0", line
            if message.get("id") == rid:
                return dict(message)


def test_a_thousand_malformed_lines_on_toolchaos_mcp_never_break_it(tmp_path: Path) -> None:
    scenario = tmp_path / "junk.chaos.yaml"
    scenario.write_text(SCENARIO)
    stdio = Stdio(scenario, tmp_path / "stderr.txt")
    try:
        stdio.send(json.dumps(INIT).encode())
        assert stdio.answer("init")["result"]["serverInfo"]["name"] == "toolchaos"
        stdio.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        sent = iter(range(10**9))

        @EXAMPLES
        @given(lines)
        def one(line: bytes) -> None:
            stdio.send(line)
            probe = f"probe-{next(sent)}"  # still answering: the line broke nothing
            stdio.send(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "ping"}).encode())
            assert stdio.answer(probe) == {"jsonrpc": "2.0", "id": probe, "result": {}}
            assert b"Traceback" not in stdio.err.read_bytes(), (line, stdio.err.read_text(errors="replace"))

        one()
        stdio.send(json.dumps({**TOOL_CALL, "id": "last"}).encode())
        assert stdio.answer("last")["result"]["isError"] is False
        assert stdio.proc.stdin is not None
        stdio.proc.stdin.close()
        assert stdio.proc.wait(60) == 0
    finally:
        stdio.proc.kill()
    err = stdio.err.read_text(errors="replace")
    assert "Traceback" not in err and "stdio-junk: " in err and "ended" in err, err
