"""Retry-After in every form real APIs send: sent by a fault, read by retry_after_honoured, honoured by guarded.

Per form, on an in-process tool (the error payload), on an HTTP-backed tool (the response
headers) and on the model API (``api_faults``): one run where the wait is honoured and the
invariant holds, one where it is not and the invariant fires.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from toolchaos import invariants as inv
from toolchaos import policies, run, wire
from toolchaos.fake_tools import ToolSet, catalogue
from toolchaos.fake_tools._retry import EPOCH, FORMS, SECONDS, wait

WAIT = 20.0
T0 = EPOCH.timestamp()  # time.time() in a run reads the virtual clock, which starts here
POLICY = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})


def limited(form: str) -> Any:
    return catalogue.get("fetch_invoice", faults=[
        {"call": 1, "outcome": {"transient": {"code": 429, "retry_after": WAIT, "retry_form": form}}}])


def broke(result: Any) -> list[str]:
    return [v.invariant for v in result.violations(inv.retry_after_honoured())]


@pytest.mark.parametrize("form", FORMS)
def test_a_tool_payload_carries_the_form_and_only_the_form(form: str) -> None:
    err = ToolSet([limited(form)]).call("fetch_invoice", invoice_id="inv_1")["error"]
    if form == SECONDS:
        assert err["retry_after"] == WAIT and "headers" not in err
    else:
        assert "retry_after" not in err and wait(err["headers"], 0.0) == WAIT
    r = run("builtin:naive", task="t", tools=[limited(form)], policy=policies.scripted([
        {"call": "fetch_invoice", "args": {"invoice_id": "inv_1"}}]))
    event = r.trace.tool_events[0]
    assert (event["code"], event["retry_after"]) == ("rate_limited", WAIT)  # the trace has the wait in seconds


@pytest.mark.parametrize("form", FORMS)
def test_guarded_honours_every_form_and_the_invariant_holds(form: str) -> None:
    r = run("builtin:guarded", task="t", tools=[limited(form)], policy=POLICY)
    assert broke(r) == [] and r.terminal_state == "COMPLETED"
    first, second = r.trace.tool_events[:2]
    assert second["t"] >= first["t"] + WAIT and second["class"] == "SUCCESS"


@pytest.mark.parametrize("form", FORMS)
def test_a_retry_before_the_wait_fires_the_invariant(form: str) -> None:
    r = run("builtin:naive", task="t", tools=[limited(form)], policy=POLICY)
    assert broke(r)[:1] == ["retry_after_honoured"]
    assert r.trace.tool_events[1]["code"] == "rate_limited"  # the limiter is enforced: early means 429 again


@pytest.mark.parametrize("honour", [True, False], ids=["honoured", "ignored"])
@pytest.mark.parametrize("form", FORMS)
def test_an_http_backed_tool_sends_the_form_as_headers(form: str, honour: bool) -> None:
    seen: list[dict[str, str]] = []

    def agent(task: str) -> str:
        with httpx.Client() as client:
            for _ in range(3):
                r = client.get("https://billing.test/invoices/inv_1")
                if r.status_code != 429:
                    return "done"
                seen.append(dict(r.headers))
                assert "headers" not in r.json()["error"]  # the wait is in the headers, not the body
                time.sleep(wait(r.headers, time.time() - T0) or 0.0 if honour else 1.0)  # virtual time
        return "gave up"

    route = wire.http_tool("fetch_invoice", "GET https://billing.test/invoices/{invoice_id}")
    result = wire.run(agent, task="t", tools=[limited(form)], policy=POLICY, http_tools=[route])
    assert result.harness_stop is None, result.error
    assert wait(seen[0], 0.0) == WAIT
    assert (broke(result) == []) is honour


def _chat(task: str, honour: bool) -> str:
    with httpx.Client() as client:
        for _ in range(3):
            r = client.post("https://api.openai.com/v1/chat/completions",
                            json={"model": "m", "messages": [{"role": "user", "content": task}]})
            if r.status_code != 429:
                return str(r.json()["choices"][0]["message"]["content"])
            time.sleep(wait(r.headers, time.time() - T0) or 0.0 if honour else 1.0)  # virtual time
    return "gave up"


@pytest.mark.parametrize("honour", [True, False], ids=["honoured", "ignored"])
@pytest.mark.parametrize("form", FORMS)
def test_the_model_api_sends_every_form(form: str, honour: bool) -> None:
    result = wire.run(lambda task: _chat(task, honour), task="t", tools=[],
                      policy=policies.scripted([{"final": "fine"}]),
                      api_faults={1: {"rate_limited": {"retry_after": WAIT, "retry_form": form}}})
    assert result.answer == "fine", result.error
    (api,) = result.trace.of_kind("api")
    assert api["retry_after"] == WAIT and [r.status for r in result.requests] == [429, 200]
    assert (broke(result) == []) is honour


def test_a_form_is_checked_where_it_is_written() -> None:
    from toolchaos.errors import DefinitionError
    from toolchaos.wire import ApiFaultError, as_api_fault

    with pytest.raises(DefinitionError, match=r"outcome.retry_form.: expected one of seconds, http_date"):
        catalogue.get("fetch_invoice", faults={"transient": {"code": 429, "retry_after": 5, "retry_form": "minutes"}})
    with pytest.raises(DefinitionError, match="ms writes a wait: give retry_after too"):
        catalogue.get("fetch_invoice", faults={"transient": {"code": 429, "retry_form": "ms"}})
    with pytest.raises(ApiFaultError, match="retry_form: expected one of"):
        as_api_fault({"rate_limited": {"retry_after": 5, "retry_form": "minutes"}})
    with pytest.raises(ApiFaultError, match="writes a wait"):
        as_api_fault({"503": {"retry_form": "http_date"}})
    fault = as_api_fault({"529": {"retry_after": 5, "retry_form": "anthropic-ratelimit-requests-reset"}})
    assert fault.describe() == "overloaded(retry_after=5, retry_form=anthropic-ratelimit-requests-reset)"
    assert as_api_fault(fault.to_data()) == fault
