"""Every fault kind fires when scheduled, and does not when the schedule says otherwise."""

from __future__ import annotations

import json

import pytest
from toolchaos.fake_tools import (
    DefinitionError,
    ManualClock,
    OutcomeClass,
    ToolConnectionReset,
    ToolError,
    ToolInvalidArgument,
    ToolNotFound,
    ToolPermissionDenied,
    ToolSet,
    ToolTimeout,
    catalogue,
    faults,
)

C = OutcomeClass

# kind spec -> (class, code) of the outcome it must produce
CASES = {
    "ok": ({"ok": {"data": {"total": 1}}}, C.SUCCESS, "ok"),
    "empty": ("empty", C.SUCCESS, "empty"),
    "malformed": ({"malformed": "invalid_json"}, C.SUCCESS, "malformed_invalid_json"),
    "timeout": ({"timeout": {"after": 30}}, C.RETRYABLE, "timeout"),
    "transient": ({"transient": {"code": 503}}, C.RETRYABLE, "unavailable"),
    "fatal": ({"fatal": "permission_denied"}, C.FATAL, "permission_denied"),
    "pending": ({"pending": {"polls": 2}}, C.PENDING, "processing"),
    "contradictory": ("contradictory", C.SUCCESS, "contradictory"),
    "paginated": ({"paginated": {"pages": 2}}, C.SUCCESS, "ok"),
    "slow": ({"slow": {"latency": 12, "then": "empty"}}, C.SUCCESS, "empty"),
    "oversized": ({"oversized": {"size": 5000}}, C.SUCCESS, "oversized"),
}


def execute(spec, calls=2, tool="fetch_invoice", args=None):
    t = catalogue.get(tool, faults=[{"call": 2, "outcome": spec}])
    ts = ToolSet([t], seed=7)
    return ts, [ts.execute(tool, args or {"invoice_id": "inv_1"})[1] for _ in range(calls)]


def test_every_kind_has_a_case():
    assert set(CASES) | {"stale"} == set(faults.FAULTS)  # stale needs a read tool: tests/fake_tools/test_world.py


@pytest.mark.parametrize("kind", sorted(CASES))
def test_fault_fires_on_its_call_and_not_before(kind):
    spec, cls, code = CASES[kind]
    _, (first, second) = execute(spec)
    assert (first.cls, first.code, first.kind) == (C.SUCCESS, "ok", "ok")  # holds: call 1 is not scheduled
    assert (second.cls, second.code) == (cls, code)  # fires: call 2 is


def test_ok_gives_seeded_realistic_data_the_same_in_every_toolset():
    a = ToolSet([catalogue.get("fetch_invoice")], seed=3).call("fetch_invoice", invoice_id="inv_9")
    b = ToolSet([catalogue.get("fetch_invoice")], seed=3).call("fetch_invoice", invoice_id="inv_9")
    c = ToolSet([catalogue.get("fetch_invoice")], seed=4).call("fetch_invoice", invoice_id="inv_9")
    assert a == b and a != c
    assert {"invoice_id", "customer", "total", "currency", "due_date"} <= set(a)


@pytest.mark.parametrize("variant", ["invalid_json", "truncated", "schema_violation", "wrong_type"])
def test_malformed_variants_are_unusable(variant):
    ts = ToolSet([catalogue.get("fetch_invoice", faults={"malformed": variant})])
    data = ts.call("fetch_invoice", invoice_id="i")
    good = ToolSet([catalogue.get("fetch_invoice")]).call("fetch_invoice", invoice_id="i")
    assert data != good
    if variant in ("invalid_json", "truncated"):
        with pytest.raises(ValueError):
            json.loads(data)
    elif variant == "schema_violation":
        assert "total" not in data
    else:
        assert not isinstance(data, dict)


def test_timeout_advances_virtual_time_and_marks_the_effect():
    pay = catalogue.get("charge_payment", faults={"timeout": {"after": 30, "applied": True}})
    ts = ToolSet([pay])
    out = ts.call("charge_payment", customer_id="c", amount=5)
    assert out["error"]["code"] == "timeout" and out["error"]["retryable"] is True
    assert ts.clock.now() == 30
    assert ts.ledger.applied("charge_payment") == 1  # the trap: the charge happened
    lost = ToolSet([catalogue.get("charge_payment", faults={"timeout": {"after": 30, "applied": False}})])
    lost.call("charge_payment", customer_id="c", amount=5)
    assert lost.ledger.applied("charge_payment") == 0 and lost.ledger.executions("charge_payment") == 1


def test_transient_429_enforces_retry_after():
    t = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {"code": 429, "retry_after": 30}}}])
    ts = ToolSet([t])
    first = ts.call("fetch_invoice", invoice_id="i")
    assert first["error"]["code"] == "rate_limited" and first["error"]["retry_after"] == 30
    ts.clock.advance(10)
    again = ts.call("fetch_invoice", invoice_id="i")  # too soon: another 429
    assert again["error"]["code"] == "rate_limited" and again["error"]["retry_after"] == pytest.approx(20)
    ts.clock.advance(20)
    assert "total" in ts.call("fetch_invoice", invoice_id="i")


def test_transient_connection_reset():
    _, (_, out) = execute({"transient": "reset"})
    assert out.code == "connection_reset" and out.retryable and not out.applied


@pytest.mark.parametrize("code,cls", [("permission_denied", C.FATAL), ("not_found", C.FATAL),
                                      ("policy_blocked", C.FATAL), ("invalid_argument", C.PRECONDITION)])
def test_fatal_codes(code, cls):
    _, (_, out) = execute({"fatal": code})
    assert out.cls is cls and out.retryable is False
    if cls is C.PRECONDITION:
        assert out.field == "invoice_id"


def test_pending_polls_then_finishes_per_job():
    t = catalogue.get("get_job_status", faults={"pending": {"polls": 2, "then": {"ok": {"data": {"status": "done"}}}}})
    ts = ToolSet([t])
    seen = [ts.call("get_job_status", job_id="a")["status"] for _ in range(3)]
    assert seen == ["processing", "processing", "done"]
    assert ts.call("get_job_status", job_id="b")["status"] == "processing"  # another job polls on its own


def test_pending_with_after_finishes_on_the_jobs_clock_not_on_a_poll_count():
    clock = ManualClock()
    ts = ToolSet([catalogue.get("get_job_status", faults={"pending": {"after": 120, "interval": 30}})], clock=clock)
    fast = [ts.call("get_job_status", job_id="a")["status"] for _ in range(10)]  # ten polls at t=0
    assert fast == ["processing"] * 10
    seen = []
    for _ in range(4):
        clock.advance(30)
        seen.append(ts.call("get_job_status", job_id="a")["status"])
    assert seen == ["processing", "processing", "processing", "done"]  # done at t=120, however often it was asked
    assert ts.call("get_job_status", job_id="b")["status"] == "processing"  # job b's clock starts at its first poll
    clock.advance(120)
    assert ts.call("get_job_status", job_id="b")["status"] == "done"


def test_pending_writes_the_form_it_was_given():
    timed, counted = faults.pending(after=120, interval=30), faults.pending(polls=4, interval=30)
    assert timed.to_data() == {"pending": {"after": 120, "then": {"ok": {"data": {"status": "done"}}}, "interval": 30}}
    assert faults.as_fault(timed.to_data()) == timed and faults.as_fault(counted.to_data()) == counted
    assert "polls" in counted.to_data()["pending"] and "after" not in counted.to_data()["pending"]


@pytest.mark.parametrize("spec", [{"pending": {"polls": 4, "after": 120}}, {"pending": {"polls": None, "after": 60}}])
def test_pending_takes_a_poll_count_or_a_time_not_both(spec: dict) -> None:
    with pytest.raises(DefinitionError, match=r"give polls .* or after .*not both"):
        catalogue.get("get_job_status", faults=spec)


def test_pending_forever():
    ts = ToolSet([catalogue.get("get_job_status", faults={"pending": {"polls": None}})])
    assert all(ts.call("get_job_status", job_id="a")["status"] == "processing" for _ in range(50))


def test_contradictory_flips_between_versions():
    ts = ToolSet([catalogue.get("fetch_invoice", faults={"contradictory": {"values": [{"v": 1}, {"v": 2}]}})])
    assert [ts.call("fetch_invoice", invoice_id="i") for _ in range(3)] == [{"v": 1}, {"v": 2}, {"v": 1}]


def test_paginated_follows_cursor_and_rejects_unknown_cursor():
    ts = ToolSet([catalogue.get("list_records", default={"paginated": {"pages": 3, "page_size": 2}})])
    pages, cursor = [], None
    while True:
        out = ts.call("list_records", cursor=cursor)
        pages.append(out["page"])
        cursor = out["next_cursor"]
        if cursor is None:
            break
    assert pages == [1, 2, 3]
    bad = ts.call("list_records", cursor="p99")
    assert bad["error"]["class"] == "PRECONDITION" and bad["error"]["field"] == "cursor"


def test_slow_adds_latency_to_the_inner_outcome():
    ts = ToolSet([catalogue.get("fetch_invoice", faults={"slow": {"latency": 12, "then": {"timeout": {"after": 3}}}})])
    out = ts.call("fetch_invoice", invoice_id="i")
    assert out["error"]["code"] == "timeout" and ts.clock.now() == 15


def test_oversized_has_the_size_asked():
    ts = ToolSet([catalogue.get("read_document", faults={"oversized": {"size": 123_456}})])
    assert len(ts.call("read_document", doc_id="d")["content"]) == 123_456


@pytest.mark.parametrize("code,exc", [("timeout", ToolTimeout), ("reset", ToolConnectionReset),
                                      ("permission_denied", ToolPermissionDenied), ("not_found", ToolNotFound),
                                      ("invalid_argument", ToolInvalidArgument)])
def test_raise_delivery_raises_the_real_exception_type(code, exc):
    spec = "timeout" if code == "timeout" else ({"transient": code} if code == "reset" else {"fatal": code})
    ts = ToolSet([catalogue.get("fetch_invoice", faults=spec, delivery="raise")])
    with pytest.raises(exc) as info:
        ts.call("fetch_invoice", invoice_id="i")
    assert isinstance(info.value, ToolError) and info.value.outcome.code in (code, "connection_reset")
    base = {"timeout": TimeoutError, "reset": ConnectionResetError, "permission_denied": PermissionError,
            "not_found": LookupError, "invalid_argument": ValueError}[code]
    assert isinstance(info.value, base)


def test_return_delivery_returns_an_error_payload():
    ts = ToolSet([catalogue.get("fetch_invoice", faults={"fatal": "permission_denied"})])
    assert ts.call("fetch_invoice", invoice_id="i") == {"error": {
        "code": "permission_denied", "class": "FATAL", "retryable": False, "message": "permission denied"}}


@pytest.mark.parametrize("spec,field,words", [
    ({"timeout": {"after": -1}}, "faults[0].outcome.after", ">= 0"),
    ({"timout": {}}, "faults[0].outcome", "did you mean 'timeout'"),
    ({"malformed": "bogus"}, "faults[0].outcome.variant", "invalid_json"),
    ({"transient": {"code": 999}}, "faults[0].outcome.code", "503"),
    ({"timeout": {"aftr": 3}}, "faults[0].outcome.aftr", "did you mean 'after'"),
    ({"pending": {"polls": 2, "then": "nope"}}, "faults[0].outcome.then", "unknown fault kind"),
    ({"contradictory": {"values": [1]}}, "faults[0].outcome.values", "at least 2"),
])
def test_bad_fault_definitions_name_the_tool_and_field(spec, field, words):
    with pytest.raises(DefinitionError) as info:
        catalogue.get("fetch_invoice", faults=[spec])
    assert info.value.tool == "fetch_invoice" and info.value.field == field
    assert words in str(info.value)
