"""Fake tools reach an SDK agent three ways: passed in, patched by import path, behind HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from toolchaos import policies, wire
from toolchaos.fake_tools import catalogue
from toolchaos.wire import PatchError

from . import billing_app

STUBBORN = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})


def test_env_tools_are_callables_with_declarations() -> None:
    def agent(task: str, env: Any) -> str:
        tool = env.tool("fetch_invoice")
        assert tool.name == "fetch_invoice" and tool.parameters["required"] == ["invoice_id"]
        assert env.openai_tools[0]["function"]["name"] == "fetch_invoice"
        assert env.responses_tools[0]["name"] == "fetch_invoice"
        assert env.anthropic_tools[0]["input_schema"]["properties"]["invoice_id"] == {"type": "string"}
        data = tool(invoice_id="inv_9")
        return str(data["invoice_id"])

    result = wire.run(agent, task="t", tools=[catalogue.get("fetch_invoice")], policy=STUBBORN)
    assert result.answer == "inv_9" and result.executions == {"fetch_invoice": 1}


def test_patched_by_import_path_and_restored() -> None:
    original = billing_app.lookup_invoice

    def agent(task: str) -> str:
        assert billing_app.lookup_invoice is not original
        assert billing_app.lookup_invoice.__name__ == "lookup_invoice"  # signature and name kept
        out = [billing_app.lookup_invoice("inv_1"), billing_app.lookup_invoice(invoice_id="inv_1", expand=True)]
        out.append(asyncio.run(billing_app.alookup_invoice("inv_2")))
        return json.dumps(out)

    tool = catalogue.get("fetch_invoice", faults=[{"call": 2, "outcome": "timeout"}])
    result = wire.run(agent, task="t", tools=[tool], policy=STUBBORN,
                      patch={f"{billing_app.__name__}:lookup_invoice": "fetch_invoice",
                             f"{billing_app.__name__}:alookup_invoice": "fetch_invoice"})
    assert billing_app.lookup_invoice is original
    first, second, third = json.loads(result.answer or "[]")
    assert first["invoice_id"] == "inv_1" and second["error"]["code"] == "timeout" and third["invoice_id"] == "inv_2"
    events = result.trace.tool_events
    assert [e["args"] for e in events][:2] == [{"invoice_id": "inv_1"}, {"invoice_id": "inv_1", "expand": True}]


def test_patch_restored_after_a_crash_and_targets_checked_first() -> None:
    original = billing_app.lookup_invoice

    def agent(task: str) -> str:
        raise RuntimeError("boom")

    result = wire.run(agent, task="t", tools=[catalogue.get("fetch_invoice")], policy=STUBBORN,
                      patch={f"{billing_app.__name__}:lookup_invoice": "fetch_invoice"})
    assert result.terminal_state == "CRASHED" and billing_app.lookup_invoice is original
    with pytest.raises(PatchError, match="has no attribute 'nope'"):
        wire.run(agent, task="t", tools=[], policy=STUBBORN, patch={f"{billing_app.__name__}:nope": "fetch_invoice"})


def _get(url: str, timeout: float = 10.0) -> httpx.Response:
    with httpx.Client(timeout=timeout) as client:  # classic httpx: the other stack
        return client.get(url)


def _get2(url: str, timeout: float = 10.0) -> Any:
    import httpx2

    with httpx2.Client(timeout=timeout) as client:
        return client.get(url)


@pytest.mark.parametrize("getter", [_get, _get2], ids=["httpx", "httpx2"])
def test_http_backed_tool_answers_with_the_fault_schedule(getter: Any) -> None:
    pytest.importorskip("httpcore2") if getter is _get2 else None
    schedule = [{"call": 1, "outcome": {"transient": {"code": 429, "retry_after": 2.5}}},
                {"call": 2, "outcome": {"transient": 503}},
                {"call": 3, "outcome": {"malformed": "invalid_json"}},
                {"call": 4, "outcome": {"fatal": "not_found"}},
                {"call": 5, "outcome": {"slow": {"latency": 4}}},
                {"call": 6, "outcome": {"pending": {"polls": 1}}}]
    tool = catalogue.get("fetch_invoice", faults=schedule)
    seen: list[Any] = []

    def agent(task: str) -> str:
        for _ in range(7):
            r = getter("https://billing.test/invoices/inv_1?expand=true")
            seen.append((r.status_code, r.headers.get("retry-after"), r.text[:40]))
            if r.status_code == 429:
                time.sleep(float(r.headers["retry-after"]))  # virtual; the rate limiter enforces it
        return "done"

    route = wire.http_tool("fetch_invoice", "GET https://billing.test/invoices/{invoice_id}")
    result = wire.run(agent, task="t", tools=[tool], policy=STUBBORN, http_tools=[route])
    assert result.harness_stop is None, result.error
    statuses = [s for s, _, _ in seen]
    assert statuses == [429, 503, 200, 404, 200, 202, 200]
    assert seen[0][1] == "3"  # Retry-After, whole seconds, rounded up
    with pytest.raises(ValueError):
        json.loads(seen[2][2] + "x")
    assert result.executions == {"fetch_invoice": 7}
    assert result.trace.tool_events[0]["args"] == {"invoice_id": "inv_1", "expand": "true"}
    assert result.virtual_seconds >= 3 + 4  # Retry-After slept, then the slow call's latency


def test_http_backed_transport_errors() -> None:
    schedule = [{"call": 1, "outcome": {"timeout": 30}}, {"call": 2, "outcome": {"transient": "reset"}},
                {"call": 3, "outcome": {"slow": {"latency": 60}}}]
    tool = catalogue.get("fetch_invoice", faults=schedule)
    errors: list[str] = []

    def agent(task: str) -> str:
        for _ in range(6):
            try:
                _get("https://billing.test/invoices/inv_1", timeout=10.0)
                errors.append("ok")
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
        return "done"

    route = wire.http_tool("fetch_invoice", "https://billing.test/invoices/{invoice_id}",
                           connect_faults={4: "timeout", 5: "refused"})
    result = wire.run(agent, task="t", tools=[tool], policy=STUBBORN, http_tools=[route])
    assert errors == ["ReadTimeout", "ReadError", "ReadTimeout", "ConnectTimeout", "ConnectError", "ok"]
    # connect faults never reach the tool: 4 executions for 6 requests
    assert result.executions == {"fetch_invoice": 4}


def test_http_tool_json_body_and_types() -> None:
    tool = catalogue.get("charge_payment")

    def agent(task: str) -> str:
        r = httpx.post("https://pay.test/charges", json={"customer_id": "c1", "amount": 12.5, "idempotency_key": "k1"})
        return str(r.json()["status"])

    result = wire.run(agent, task="t", tools=[tool], policy=STUBBORN,
                      http_tools=[wire.http_tool("charge_payment", "POST https://pay.test/charges")])
    assert result.answer == "succeeded" and result.ledger.applied("charge_payment") == 1
