"""The watchdog of a served run: what counts as progress over HTTP, its two limits, and the agent's process.

A retry of the same request and a side request are no progress; another request and a tool
call are. The agent's process stopped (SIGSTOP) is no chance to make progress. These tests
use real time (a server and its clients run on it), with limits of a fraction of a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from chaos_samples import state_becomes

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server

ARGS = {"invoice_id": "inv_1"}
TOOLS = [{"type": "function", "function": {"name": "fetch_invoice", "parameters": {"type": "object"}}}]


def _server(**kw: Any) -> Server:
    return Server(task="Get the invoice total", tools=[catalogue.get("fetch_invoice")],
                  policy=policies.stubborn("fetch_invoice", ARGS, until="never"), **kw)


def _ask(srv: Server, http: httpx.Client, text: str) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "tools": TOOLS}
    return http.post(srv.base_urls["openai"] + "/chat/completions", json=body).status_code


def _request(body: bytes, path: str = "/v1/chat/completions") -> httpx.Request:
    return httpx.Request("POST", f"http://127.0.0.1{path}", content=body)


# --- what counts (no server: the count itself) ---------------------------------------------


APIS = {"/v1/chat/completions": "openai.chat", "/v1/responses": "openai.responses",
        "/v1/messages/count_tokens": "anthropic.count_tokens"}


def test_a_request_counts_as_progress_unless_it_repeats_the_last_or_is_a_side_request() -> None:
    srv = _server(real_seconds=20)
    state = SimpleNamespace(sides=0)
    srv._state = state  # type: ignore[assignment]
    srv._wire = SimpleNamespace(api_of=lambda r: APIS.get(r.url.path))  # type: ignore[assignment]
    srv._count(_request(b'{"a": 1}'), 0)
    assert srv._progress() == 1
    srv._count(_request(b'{"a": 1}'), 0)  # the same bytes again: a retry
    assert srv._progress() == 1
    srv._count(_request(b'{"a": 1}', "/v1/responses"), 0)  # the same body to another endpoint
    srv._count(_request(b'{"a": 2}'), 0)
    assert srv._progress() == 3
    state.sides = 1  # the wire recorded a side event while it answered this one
    srv._count(_request(b'{"title": 1}'), 0)
    assert srv._progress() == 3
    srv._count(_request(b'{"a": 1}'), 1)  # after the side request, a request of the run's own
    srv._tool_done()  # a tool call, repeated or not
    srv._tool_done()
    assert srv._progress() == 6
    srv._count(_request(b'{"n": 1}', "/v1/messages/count_tokens"), 1)  # asks the model nothing
    srv._count(_request(b'{"n": 2}', "/v2/nothing-here"), 1)
    assert srv._progress() == 6


# --- the two limits over HTTP --------------------------------------------------------------


def test_a_client_that_resends_the_same_request_is_ended_at_the_no_progress_limit() -> None:
    with _server(real_seconds=0.5, total_seconds=60) as srv, httpx.Client(timeout=5) as http:
        t0 = time.monotonic()
        while srv.wait(0.05) is None and time.monotonic() - t0 < 20:
            _ask(srv, http, "the same question, again and again")
    res = srv.result
    assert res is not None and res.terminal_state == "WATCHDOG", res
    assert res.watchdog == {"limit": "no_progress", "seconds": 0.5}
    assert len(res.requests) > 2  # it kept asking, and that was not progress


def test_side_requests_are_no_progress_however_new_each_one_is() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    with _server(real_seconds=0.5, total_seconds=60) as srv, httpx.Client(timeout=5) as http:
        t0 = time.monotonic()
        n = 0
        while srv.wait(0.05) is None and time.monotonic() - t0 < 20:
            n += 1  # a title for a new conversation each time: a schema'd request that declares none of the tools
            http.post(srv.base_urls["openai"] + "/chat/completions", json={
                "model": "m", "messages": [{"role": "user", "content": f"a title for conversation {n}"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "title", "schema": schema}}})
    res = srv.result
    assert res is not None and res.watchdog == {"limit": "no_progress", "seconds": 0.5}, res
    assert res.side_requests > 2 and res.turns == 0


def test_a_client_that_asks_something_new_each_time_is_not_stuck_and_is_ended_at_the_total_limit() -> None:
    t0 = time.monotonic()  # before the run starts: it ends 2 s after it started
    with _server(real_seconds=0.5, total_seconds=2.0) as srv, httpx.Client(timeout=5) as http:
        n = 0
        while srv.wait(0.05) is None and time.monotonic() - t0 < 20:
            n += 1
            _ask(srv, http, f"question {n}")
        took = time.monotonic() - t0
    res = srv.result
    assert res is not None and res.watchdog == {"limit": "total", "seconds": 2.0}, res
    assert res.error == "the run went on for 2s of real time in all without reaching a ceiling, its total limit"
    assert 2.0 <= took < 10.0


# --- the agent's process, stopped ----------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_stopped_agent_process_is_not_stuck_and_is_once_it_runs_again() -> None:
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert state_becomes(agent.pid, "S")
        with _server(real_seconds=0.5, total_seconds=60) as srv:
            srv.agent_process(agent.pid)
            os.kill(agent.pid, signal.SIGSTOP)
            assert state_becomes(agent.pid, "Tt")
            assert srv.wait(2.0) is None  # four no-progress limits: a stopped agent had no chance to progress
            os.kill(agent.pid, signal.SIGCONT)
            t0 = time.monotonic()
            assert srv.wait(10) is not None  # running again, and silent: stuck
            took = time.monotonic() - t0
        res = srv.result
        assert res is not None and res.watchdog == {"limit": "no_progress", "seconds": 0.5}, res
        assert 0.4 <= took < 8.0
    finally:
        agent.kill()
        agent.wait(10)
