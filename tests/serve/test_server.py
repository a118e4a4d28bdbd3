"""``toolchaos.serve.Server`` with the real ``openai`` and ``anthropic`` SDK clients: what the client
saw is what the trace holds; API faults fire over HTTP; the run ends at the ceiling, the end
endpoint or the watchdog, and after the end nothing hangs; the server leaves nothing behind."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from mcp import Client  # noqa: E402
from toolchaos import invariants as inv  # noqa: E402
from toolchaos import policies  # noqa: E402
from toolchaos._internal.limits import Ceiling  # noqa: E402
from toolchaos._plumbing import clock as _clock  # noqa: E402
from toolchaos.certification import judge  # noqa: E402
from toolchaos.fake_tools import catalogue  # noqa: E402
from toolchaos.serve import ENDED_STATUS, Server  # noqa: E402

from tests.serve.helpers import harness_threads, loop_scenario, loop_spec, run_async  # noqa: E402

ARGS = {"invoice_id": "inv_1"}


def _stubborn(**kw: Any) -> Server:
    kw.setdefault("real_seconds", 20)
    return Server(task="Get the invoice total", tools=[catalogue.get("fetch_invoice", faults={"timeout": {"after": 30}})],
                  policy=policies.stubborn("fetch_invoice", ARGS), **kw)


async def openai_agent(srv: Server, stream: bool, seen: dict[str, Any]) -> None:
    """An agent as another process runs it: its own loop, real time, tools over MCP; stops when refused."""
    client = openai.AsyncOpenAI(base_url=srv.base_urls["openai"], api_key="x", max_retries=0)
    async with Client(srv.mcp_url) as mcp:
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                     "parameters": t.input_schema}} for t in (await mcp.list_tools()).tools]
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "Get the invoice total"}]
        while True:
            try:
                calls = await _openai_turn(client, msgs, tools, stream)
            except openai.BadRequestError as exc:
                seen["refused"] = str(exc)
                return
            seen["answers"] += 1
            for cid, name, args in calls:
                result = await mcp.call_tool(name, json.loads(args))
                seen["tool_calls"] += 1
                msgs.append({"role": "tool", "tool_call_id": cid, "content": result.content[0].text})


async def _openai_turn(client: Any, msgs: list[Any], tools: list[Any], stream: bool) -> list[tuple[str, str, str]]:
    if not stream:
        msg = (await client.chat.completions.create(model="m", messages=msgs, tools=tools)).choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls or ()]
    else:
        parts: dict[int, list[str]] = {}
        async for chunk in await client.chat.completions.create(model="m", messages=msgs, tools=tools, stream=True):
            for tc in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
                entry = parts.setdefault(tc.index, ["", "", ""])
                entry[0] = tc.id or entry[0]
                entry[1] = (tc.function.name or "") or entry[1]
                entry[2] += tc.function.arguments or ""
        calls = [(a, b, c) for a, b, c in (parts[i] for i in sorted(parts))]
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]})
    return calls


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_openai_sdk_agent_counts_match_the_trace_and_the_ceiling_ends_it(stream: bool) -> None:
    seen: dict[str, Any] = {"answers": 0, "tool_calls": 0}
    srv = Server(loop_spec())  # its ceiling: 6 model turns
    with srv:
        run_async(openai_agent(srv, stream, seen))
    res = srv.result
    assert res is not None and res.terminal_state == "HARD_CEILING"
    assert seen["answers"] == res.turns == 6 and seen["tool_calls"] == res.total_executions == 6
    assert "the run has ended (more than 6 model turns" in seen["refused"]  # a 400, which no SDK retries
    assert [r.status for r in res.requests] == [200] * 7  # the 7th reached the policy, which the ceiling refused
    verdict = judge(loop_scenario(), res, agent="an openai SDK agent")  # whoever loaded the scenario judges it
    assert [v.invariant for v in verdict.violations][:1] == ["bounded.executions"]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_anthropic_sdk_agent_counts_match_the_trace(stream: bool) -> None:
    srv = _stubborn(ceiling=None)
    answers, calls = 0, 0
    with srv:
        client = anthropic.Anthropic(base_url=srv.base_urls["anthropic"], api_key="x", max_retries=0)
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "Get the invoice total"}]
        tools = [{"name": "fetch_invoice", "input_schema": {"type": "object"}}]
        for _ in range(3):
            if stream:
                with client.messages.stream(model="c", max_tokens=50, messages=msgs, tools=tools) as s:
                    message = s.get_final_message()
            else:
                message = client.messages.create(model="c", max_tokens=50, messages=msgs, tools=tools)
            answers += 1
            uses = [b for b in message.content if b.type == "tool_use"]
            msgs.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in uses]})
            results = []
            for use in uses:
                calls += 1
                results.append({"type": "tool_result", "tool_use_id": use.id,
                                "content": json.dumps(srv_call(srv, use.name, use.input))})
            msgs.append({"role": "user", "content": results})
        srv.end(state="STOPPED_LOOP_GUARD", report={"guard": "retries", "reason": "3 timeouts", "completed": [],
                                                    "resume_condition": "the tool answers"})
    res = srv.result
    assert res is not None and res.terminal_state == "STOPPED_LOOP_GUARD" and res.guard == "retries"
    assert answers == res.turns == 3 and calls == res.total_executions == 3
    assert [m["shown"][0]["read_as"] for m in res.trace.model_events[1:]] == ["error", "error"]


def srv_call(srv: Server, name: str, args: Any) -> Any:
    """A tool call over MCP's plain JSON-RPC (stateless, JSON answers): what a minimal client sends."""
    r = httpx.post(srv.mcp_url, headers={"accept": "application/json, text/event-stream"},
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}})
    return json.loads(r.json()["result"]["content"][0]["text"])


def test_a_429_with_retry_after_waited_in_real_seconds_is_credited_to_the_run_clock() -> None:
    srv = Server(task="t", tools=[], policy=policies.scripted([{"final": "fine"}]), real_seconds=20,
                 api_faults={1: {"429": 0.3}})

    async def agent() -> str:  # its own loop, so its backoff sleeps real seconds, as another process's does
        client = openai.AsyncOpenAI(base_url=srv.base_urls["openai"], api_key="x", max_retries=1)
        r = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return str(r.choices[0].message.content)

    with srv:
        started = _clock.real_monotonic()
        assert run_async(agent()) == "fine"
        assert _clock.real_monotonic() - started >= 0.3
        srv.end()
    res = srv.result
    assert res is not None and [r.status for r in res.requests] == [429, 200]
    assert res.trace.of_kind("api")[0]["retry_after"] == 0.3 and res.trace.model_events[0]["t"] == pytest.approx(0.3)
    res.check(inv.retry_after_honoured())  # raises when broken


def test_a_429_the_client_did_not_wait_for_is_seen_as_ignored() -> None:
    srv = Server(task="t", tools=[], policy=policies.scripted([{"final": "fine"}]), real_seconds=20,
                 api_faults={1: {"429": 5}})
    with srv, httpx.Client() as http:
        url = srv.base_urls["openai"] + "/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert http.post(url, json=body).headers["retry-after"] == "5"
        assert http.post(url, json=body).status_code == 200  # at once: nothing owed is credited
        srv.end()
    res = srv.result
    assert res is not None and res.trace.model_events[0]["t"] < 5
    with pytest.raises(AssertionError, match="retry_after_honoured"):
        res.check(inv.retry_after_honoured())


def test_stream_cut_and_timeout_faults_drop_the_connection_and_the_sdk_retries() -> None:
    srv = Server(task="t", tools=[], policy=policies.scripted([{"final": "fine"}]), real_seconds=20,
                 api_faults={1: "stream_cut", 2: {"timeout": {"after": 12}}})
    with srv:
        client = openai.OpenAI(base_url=srv.base_urls["openai"], api_key="x", max_retries=2)
        r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert r.choices[0].message.content == "fine"
        srv.end()
    res = srv.result
    assert res is not None and [r.fault for r in res.requests] == ["stream_cut", "timeout", None]
    assert res.virtual_seconds >= 12  # the timeout's wait spent on the run's clock, none in real time


def test_a_streamed_answer_cut_part_way_reaches_the_client_as_a_broken_stream() -> None:
    srv = Server(task="t", tools=[], policy=policies.scripted([{"final": "fine"}]), real_seconds=20,
                 api_faults={1: {"stream_cut": 2}})
    with srv:
        client = anthropic.Anthropic(base_url=srv.base_urls["anthropic"], api_key="x", max_retries=0)
        seen = []
        with pytest.raises(Exception, match="incomplete chunked read"):  # the SDK's HTTP stack's own error
            with client.messages.stream(model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
                for event in s:
                    seen.append(event.type)
        assert seen[:1] == ["message_start"]
        srv.end()


def test_a_client_that_disconnects_mid_stream_does_not_hang_the_server() -> None:
    srv = Server(task="t", tools=[], policy=policies.scripted([{"final": "a long answer " * 50}, {"final": "again"}]),
                 real_seconds=20)
    with srv:
        body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            head = f"POST /{srv.token}/v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{srv.port}\r\n"
            sock.sendall(head.encode() + b"content-type: application/json\r\n"
                         b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
        r = httpx.post(srv.base_urls["openai"] + "/chat/completions", json={"model": "m", "messages": []}, timeout=5)
        assert r.json()["choices"][0]["message"]["content"] == "again"
        srv.end()
    assert srv.result is not None and srv.result.turns == 2


def test_after_the_end_every_request_is_refused_at_once_in_its_apis_format() -> None:
    srv = _stubborn()
    with srv, httpx.Client(timeout=5) as http:
        srv.end()
        assert srv.wait(10) is not None
        oa = http.post(srv.base_urls["openai"] + "/responses", json={"model": "m", "input": "hi"})
        an = http.post(srv.url + "/v1/messages?beta=true", json={"model": "c", "messages": []})
        ge = http.post(srv.url + "/v1beta/models/g:generateContent", json={"contents": []})
    assert oa.status_code == an.status_code == ge.status_code == ENDED_STATUS
    assert "the run has ended (the agent ended it)" in oa.json()["error"]["message"]
    assert an.json()["type"] == "error" and ge.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_the_end_endpoint_takes_the_agents_result() -> None:
    srv = _stubborn()
    with srv, httpx.Client(timeout=5) as http:
        assert http.post(srv.end_url, content=b"[1]").status_code == 400
        assert http.get(srv.url + "/toolchaos/urls").json()["mcp"] == srv.mcp_url
        assert http.post(srv.end_url, json={"state": "NEEDS_HUMAN", "answer": "stuck"}).json() == {"ended": True}
        srv.wait(10)
    assert srv.result is not None and srv.result.terminal_state == "NEEDS_HUMAN" and srv.result.answer == "stuck"


def test_an_unknown_path_says_what_is_served() -> None:
    with _stubborn() as srv:
        r = httpx.post(srv.url + "/v2/chat", json={}, timeout=5)
        srv.end()
    assert r.status_code == 404 and "/v1" in r.json()["error"]["message"]


def test_the_watchdog_ends_a_run_nobody_ends() -> None:
    with _stubborn(real_seconds=0.3) as srv:
        assert srv.wait(5) is not None
        r = httpx.post(srv.base_urls["openai"] + "/chat/completions", json={"model": "m", "messages": []}, timeout=5)
    assert srv.result is not None and srv.result.terminal_state == "WATCHDOG"
    assert r.status_code == ENDED_STATUS


def test_the_server_shuts_down_cleanly_and_frees_its_port() -> None:
    before = harness_threads()
    srv = _stubborn()
    with srv:
        port = srv.port
        httpx.post(srv.base_urls["openai"] + "/chat/completions", json={"model": "m", "messages": []}, timeout=5)
        assert "toolchaos-serve-http" in harness_threads()
    assert harness_threads() == before
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # free again


SSE_THEN_CLOSE = """
import httpx
from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server

srv = Server(task="t", tools=[catalogue.get("fetch_invoice")], policy=policies.scripted([{"final": "done"}]))
with srv:
    try:  # the notifications stream a client such as gemini-cli opens: nothing comes on it here
        with httpx.stream("GET", srv.mcp_url, headers={"accept": "text/event-stream"}, timeout=0.5) as r:
            print(r.headers["content-type"])
            next(r.iter_bytes())
    except httpx.ReadTimeout:
        pass
    srv.end()
print("closed")
"""


def test_closing_after_an_mcp_event_stream_leaves_no_task_pending(tmp_path: Any) -> None:
    """The MCP SDK's event-stream responses leave a shutdown watcher on the server's loop: cancelled when the
    server closes, not destroyed pending ("Task was destroyed but it is pending!" on the user's terminal)."""
    import subprocess
    import sys

    script = tmp_path / "sse_then_close.py"
    script.write_text(SSE_THEN_CLOSE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["text/event-stream", "closed"], done.stdout + done.stderr
    assert "destroyed but it is pending" not in done.stderr, done.stderr


def test_gemini_generate_content_over_the_server() -> None:
    with _stubborn() as srv, httpx.Client(timeout=5) as http:
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "tools": [{"functionDeclarations": [{"name": "fetch_invoice", "parameters": {"type": "object"}}]}]}
        one = http.post(srv.url + "/v1beta/models/gemini-test:generateContent", json=body).json()
        streamed = http.post(srv.url + "/v1beta/models/gemini-test:streamGenerateContent", json=body).json()
        count = http.post(srv.url + "/v1beta/models/gemini-test:countTokens", json=body).json()
        srv.end()
    call = one["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"id": "call_1_0", "name": "fetch_invoice", "args": ARGS}
    assert isinstance(streamed, list) and streamed[-1]["candidates"][0]["finishReason"] == "STOP"
    assert count["totalTokens"] > 0


def test_the_tool_ceiling_hit_over_mcp_ends_the_run() -> None:
    srv = _stubborn(ceiling=Ceiling(max_tool_calls=2))
    with srv:
        results = [srv_call(srv, "fetch_invoice", ARGS) for _ in range(2)]
        httpx.post(srv.mcp_url, headers={"accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fetch_invoice", "arguments": ARGS}})
        assert srv.wait(10) is not None
    assert [r["error"]["code"] for r in results[:2]] == ["timeout", "timeout"]
    assert srv.result is not None and srv.result.terminal_state == "HARD_CEILING"
    assert srv.result.total_executions == 2


def test_a_tool_call_past_the_ceiling_says_why() -> None:
    srv = _stubborn(ceiling=Ceiling(max_tool_calls=1))
    with srv:
        srv_call(srv, "fetch_invoice", ARGS)
        r = httpx.post(srv.mcp_url, headers={"accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fetch_invoice", "arguments": ARGS}})
    text = r.json()["result"]["content"][0]["text"]
    assert r.json()["result"]["isError"] and "more than 1 tool calls (the harness ceiling)" in text


def test_anthropic_beta_query_is_served() -> None:
    with _stubborn() as srv:
        r = httpx.post(srv.url + "/v1/messages?beta=true", json={"model": "c", "max_tokens": 5, "messages": [
            {"role": "user", "content": "hi"}]}, timeout=5)
        srv.end()
    assert r.status_code == 200 and r.json()["content"][0]["type"] == "tool_use"
    assert srv.result is not None and srv.result.requests[0].url.endswith("/v1/messages?beta=true")


def test_a_tools_retry_after_waited_in_real_seconds_lets_the_retry_through() -> None:
    limited = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {"code": 429,
                                                                                            "retry_after": 0.3}}}])
    srv = Server(task="t", tools=[limited], policy=policies.stubborn("fetch_invoice", ARGS), real_seconds=20)
    with srv:
        first = srv_call(srv, "fetch_invoice", ARGS)
        _clock.real_sleep(0.35)  # what a client in another process does with the Retry-After
        second = srv_call(srv, "fetch_invoice", ARGS)
        srv.end()
    assert first["error"]["code"] == "rate_limited" and "total" in second
    res = srv.result
    assert res is not None and [e["t"] for e in res.trace.of_kind("tool")] == [0.0, 0.3]
    res.check(inv.retry_after_honoured(), terminated=False)
