"""The chaos MCP server with the MCP Python SDK's own client: streamable HTTP inside the server, and
``toolchaos mcp SCENARIO`` over stdio. Each call is a traced tool call of the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the serve extra: pip install toolchaos[serve]")

from mcp import Client, StdioServerParameters
from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.serve import Server

from tests.serve.helpers import LOOP_YAML, run_async

TOOLS = [catalogue.get("fetch_invoice", faults={"timeout": {"after": 30}}),
         catalogue.get("get_job_status", faults={"pending": {"polls": 1}}),
         catalogue.get("read_document", faults={"malformed": "truncated"}),
         catalogue.get("send_email")]


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def _session(url_or_params: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    async with Client(url_or_params) as client:
        listed = await client.list_tools()
        return listed, [await client.call_tool(name, args) for name, args in calls]


def test_streamable_http_lists_the_tools_and_serves_their_faults_into_the_run() -> None:
    srv = Server(task="t", tools=TOOLS, policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                 real_seconds=20)
    calls = [("fetch_invoice", {"invoice_id": "inv_1"}), ("get_job_status", {"job_id": "j1"}),
             ("get_job_status", {"job_id": "j1"}), ("read_document", {"doc_id": "d1"}),
             ("send_email", {"to": "a@example.com", "subject": "s", "body": "b"}), ("send_email", {"subject": "s"}),
             ("nope", {})]
    with srv:
        listed, results = run_async(_session(srv.mcp_url, calls))
    schemas = {t.name: t.input_schema for t in listed.tools}
    assert set(schemas) == {"fetch_invoice", "get_job_status", "read_document", "send_email"}
    assert schemas["fetch_invoice"]["required"] == ["invoice_id"]
    timeout, poll1, poll2, doc, sent, bad, unknown = results
    assert timeout.is_error and json.loads(_text(timeout))["error"]["code"] == "timeout"
    assert not poll1.is_error and json.loads(_text(poll1))["status"] in ("processing", "pending", "running", "queued")
    assert not poll2.is_error and json.loads(_text(poll2)).get("status") not in ("processing", "pending")
    with pytest.raises(ValueError):
        json.loads(_text(doc))  # malformed content arrives as it is: a truncated payload
    assert not sent.is_error and bad.is_error and json.loads(_text(bad))["error"]["class"] == "PRECONDITION"
    assert unknown.is_error and "unknown tool 'nope'" in _text(unknown)
    res = srv.result
    assert res is not None
    tool_events = res.trace.of_kind("tool")
    assert [e["tool"] for e in tool_events] == [n for n, _ in calls[:-1]]
    assert tool_events[0]["latency"] == 30 and res.virtual_seconds >= 30  # the timeout answered at once, on the run's clock
    assert res.ledger.applied() == 1  # one email sent; the call missing its arguments applied nothing


def test_tool_calls_after_the_end_are_tool_errors_and_never_run() -> None:
    srv = Server(task="t", tools=TOOLS, policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                 real_seconds=20)
    with srv:
        srv.end()
        srv.wait(10)
        _, (late,) = run_async(_session(srv.mcp_url, [("send_email", {"to": "a@b.c", "subject": "s", "body": "b"})]))
    assert late.is_error and "has not started or has ended" in _text(late)
    assert srv.result is not None and srv.result.ledger.applied() == 0


def test_toolchaos_mcp_over_stdio_with_the_sdk_client(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolchaos", "mcp", str(LOOP_YAML),
                                                                 "--artifacts", str(tmp_path)])
    calls = [("fetch_invoice", {"invoice_id": "inv_1"}), ("fetch_invoice", {"invoice_id": "inv_1"})]
    listed, results = run_async(_session(params, calls), seconds=60)
    assert sorted(t.name for t in listed.tools) == ["charge_payment", "fetch_invoice"]
    assert all(r.is_error and json.loads(_text(r))["error"]["code"] == "timeout" for r in results)
    trace = tmp_path / "serve-timeout-loop.trace.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [e["kind"] for e in events] == ["tool", "tool", "end"]
    assert [e["t"] for e in events[:2]] == [0.0, 30.0]  # each timeout on the run's clock, answered at once
