"""One encoder, not two: the same conversation through respx (in process) and through the server
gives the same bytes for every answer and the same trace, apart from the transport (the URL an
``api`` event names)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos import policies, wire
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server
from toolchaos.wire._server import ALL_APIS

ARGS = {"invoice_id": "inv_1"}
TOOLS_DECL = {"name": "fetch_invoice", "description": "d", "parameters": {"type": "object"}}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages",
         "gemini": "/v1beta/models/gem-test:generateContent"}
STREAM_PATHS = {"gemini": "/v1beta/models/gem-test:streamGenerateContent?alt=sse"}

Post = Callable[[str, str, dict[str, Any]], bytes]  # (api, path, body) -> the answer's bytes
Call = Callable[[str, dict[str, Any], str], str]  # (tool, args, call id) -> the result's text


def _body(api: str, history: list[Any], stream: bool) -> dict[str, Any]:
    if api == "chat":
        return {"model": "m", "messages": history, "stream": stream, "tools": [{"type": "function", "function": TOOLS_DECL}]}
    if api == "responses":
        return {"model": "m", "input": history, "stream": stream, "tools": [{"type": "function", **TOOLS_DECL}]}
    if api == "anthropic":
        return {"model": "c", "max_tokens": 50, "messages": history, "stream": stream,
                "tools": [{"name": "fetch_invoice", "input_schema": {"type": "object"}}]}
    return {"contents": history, "tools": [{"functionDeclarations": [TOOLS_DECL]}]}


def _answered(api: str, cid: str, text: str) -> list[Any]:
    """The model's call and its result, in the API's own history format."""
    if api == "chat":
        return [{"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "fetch_invoice", "arguments": json.dumps(ARGS)}}]},
            {"role": "tool", "tool_call_id": cid, "content": text}]
    if api == "responses":
        return [{"type": "function_call", "call_id": cid, "name": "fetch_invoice", "arguments": json.dumps(ARGS)},
                {"type": "function_call_output", "call_id": cid, "output": text}]
    if api == "anthropic":
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "fetch_invoice", "input": ARGS}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": text}]}]
    return [{"role": "model", "parts": [{"functionCall": {"id": cid, "name": "fetch_invoice", "args": ARGS}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": cid, "name": "fetch_invoice",
                                                             "response": {"output": text}}}]}]


def converse(api: str, post: Post, call: Call) -> list[bytes]:
    """Three turns, streamed and not in turn; each asks the tool, whose result goes back."""
    first = {"parts": [{"text": "get it"}], "role": "user"} if api == "gemini" else {"role": "user", "content": "get it"}
    history: list[Any] = [first]
    answers = []
    for step in (1, 2, 3):
        stream = step % 2 == 0
        path = STREAM_PATHS.get(api, PATHS[api]) if stream else PATHS[api]
        answers.append(post(api, path, _body(api, history, stream)))
        cid = f"call_{step}_0"
        if step < 3:
            history += _answered(api, cid, call("fetch_invoice", ARGS, cid))
    return answers


POLICY = [{"call": "fetch_invoice", "args": ARGS}, {"call": "fetch_invoice", "args": ARGS}, {"final": "total 42"}]
FAULTS = {2: {"429": 0}}  # the second request is refused (no wait owed: nothing real to wait for)


def _in_process(api: str) -> tuple[list[bytes], Any]:
    bases = {"chat": "https://api.openai.com", "responses": "https://api.openai.com",
             "anthropic": "https://api.anthropic.com", "gemini": "https://generativelanguage.googleapis.com"}
    answers: list[bytes] = []

    def agent(task: str, env: Any) -> str:
        with httpx.Client() as http:
            def post(api: str, path: str, body: dict[str, Any]) -> bytes:
                r = http.post(bases[api] + path, json=body)
                if r.status_code == 429:  # a client's retry
                    r = http.post(bases[api] + path, json=body)
                return r.content

            def call(name: str, args: dict[str, Any], cid: str) -> str:
                return json.dumps(env.call(name, args, call_id=cid), separators=(",", ":"), ensure_ascii=False)

            answers.extend(converse(api, post, call))
        return "done"

    res = wire.run(agent, task="t", tools=[catalogue.get("fetch_invoice")], policy=policies.scripted(POLICY),
                   apis=ALL_APIS, api_faults=FAULTS, seed=3)
    return answers, res


def _served(api: str) -> tuple[list[bytes], Any]:
    srv = Server(task="t", tools=[catalogue.get("fetch_invoice")], policy=policies.scripted(POLICY),
                 api_faults=FAULTS, seed=3, name="run", real_seconds=20)
    with srv, httpx.Client() as http:
        def post(api: str, path: str, body: dict[str, Any]) -> bytes:
            r = http.post(srv.url + path, json=body)
            if r.status_code == 429:
                r = http.post(srv.url + path, json=body)
            return r.content

        def call(name: str, args: dict[str, Any], cid: str) -> str:  # over MCP, which knows no call ids
            r = http.post(srv.mcp_url, headers={"accept": "application/json, text/event-stream"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": name, "arguments": args}})
            return str(r.json()["result"]["content"][0]["text"])

        answers = converse(api, post, call)
        srv.end(answer="done")
    assert srv.result is not None
    return answers, srv.result


def _transport_apart(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without the URL an ``api`` event names (the only thing the transport changes)."""
    return [{**e, "args": {}} if e["kind"] == "api" else e for e in events]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_the_same_bytes_and_trace_in_process_and_over_the_server(api: str) -> None:
    inproc, res_in = _in_process(api)
    served, res_out = _served(api)
    assert served == inproc
    assert any(b"data: " in a for a in served) and len(served) == 3
    assert _transport_apart(res_out.trace.events) == _transport_apart(res_in.trace.events)
    assert res_out.trace.of_kind("api")[0]["args"]["url"].startswith("http://127.0.0.1:")
    assert res_out.terminal_state == res_in.terminal_state == "COMPLETED"
    assert [r.status for r in res_out.requests] == [r.status for r in res_in.requests] == [200, 429, 200, 200]


def test_the_same_seed_served_twice_gives_byte_identical_traces(tmp_path: Any) -> None:
    first, second = _served("responses")[1], _served("responses")[1]
    first.trace.write(tmp_path / "a.jsonl")
    second.trace.write(tmp_path / "b.jsonl")
    a, b = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "b.jsonl").read_bytes()
    port = re.compile(rb"127\.0\.0\.1:\d+")  # each server binds a free port: the one part that differs
    assert port.sub(b"PORT", a) == port.sub(b"PORT", b) and a.count(b"\n") == 7
