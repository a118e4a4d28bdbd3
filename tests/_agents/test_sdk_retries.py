"""builtin:sdk-retries, layer by layer: the SDK-default transport, the decisions over the model's requests, the
ledger; then the runtime on small runs where each decides."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from toolchaos import Budgets, SqliteStore, policies, run
from toolchaos import invariants as inv
from toolchaos._agents._sdk_retries._decisions import IDENTICAL_LIMIT, NO_PROGRESS_LIMIT, Decisions, fingerprint
from toolchaos._agents._sdk_retries._ledger import find_lookup, holds, idempotency_key, replay_safe
from toolchaos._agents._sdk_retries._runtime import SdkRetries
from toolchaos._agents._sdk_retries._transport import (
    INITIAL_RETRY_DELAY,
    JITTER,
    MAX_RETRY_DELAY,
    backoff,
    retry_after,
    should_retry,
)
from toolchaos._internal.types import AgentResult
from toolchaos.fake_tools import catalogue

NOW = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)
AGENT = "builtin:sdk-retries"


# -- the transport: what the SDKs retry, and how long they wait -----------------------------------------

@pytest.mark.parametrize(("status", "headers", "retried"), [
    (408, {}, True), (409, {}, True), (429, {}, True), (500, {}, True), (503, {}, True), (529, {}, True),
    (400, {}, False), (401, {}, False), (403, {}, False), (404, {}, False), (422, {}, False), (None, {}, False),
    (503, {"x-should-retry": "false"}, False), (400, {"x-should-retry": "true"}, True),
])
def test_what_the_sdks_retry(status: int | None, headers: dict[str, str], retried: bool) -> None:
    assert should_retry(status, headers) is retried


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "20"}, 20.0),
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after-ms": "1500", "retry-after": "20"}, 1.5),  # milliseconds first, as the SDKs read them
    ({"retry-after": "Thu, 01 Jan 2026 00:00:50 GMT"}, 20.0),
    ({"retry-after": "soon"}, None),
    ({"x-ratelimit-reset-requests": "6m0s"}, None),  # a quota header: the SDKs' retry logic does not read it
    ({"anthropic-ratelimit-requests-reset": "2026-01-01T00:01:00Z"}, None),
])
def test_the_server_wait_the_sdks_read(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers, NOW) == (pytest.approx(seconds) if seconds is not None else None)


def test_backoff_doubles_from_half_a_second_to_eight_less_up_to_a_quarter() -> None:
    assert [backoff(n, 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff(0, 0.999) == pytest.approx(INITIAL_RETRY_DELAY * (1 - JITTER * 0.999))
    assert backoff(10, 0.5) == MAX_RETRY_DELAY * (1 - JITTER * 0.5)


def _timeouts(task_tool: str = "fetch_invoice") -> object:
    return run(AGENT, task="Get the invoice", tools=[catalogue.get(task_tool, faults="timeout")],
               policy=policies.stubborn(task_tool, {"invoice_id": "i1"}))


def test_a_request_is_sent_three_times_under_one_call_id_with_no_model_turn_between() -> None:
    r = _timeouts()
    tools = r.trace.of_kind("tool")  # type: ignore[attr-defined]
    assert [e["call_id"] for e in tools[:3]] == [tools[0]["call_id"]] * 3
    gaps = [round(b["t"] - (a["t"] + a["latency"]), 6) for a, b in itertools.pairwise(tools[:3])]
    assert INITIAL_RETRY_DELAY * (1 - JITTER) <= gaps[0] <= INITIAL_RETRY_DELAY <= gaps[1] <= 2 * INITIAL_RETRY_DELAY
    turns = [e["t"] for e in r.trace.of_kind("model")]  # type: ignore[attr-defined]
    assert not any(tools[0]["t"] < t < tools[2]["t"] for t in turns)


def test_a_transient_error_is_retried_inside_the_request_the_model_sees_one_answer() -> None:
    tool = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": 503}}], default="ok")
    r = run(AGENT, task="Get the invoice", tools=[tool], policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.completed(successes={"fetch_invoice": 1}), inv.bounded(executions=2, turns=2))


@pytest.mark.parametrize("form", ["seconds", "http_date", "ms"])
def test_a_retry_after_directive_is_waited_out_by_the_transport(form: str) -> None:
    tool = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {
        "code": 429, "retry_after": 20, "retry_form": form}}}], default="ok")
    r = run(AGENT, task="Get the invoice", tools=[tool], policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.retry_after_honoured(), inv.completed(successes={"fetch_invoice": 1}), inv.bounded(executions=2))


def test_a_server_wait_past_the_sdks_cap_is_not_retried_early_the_model_is_held_back_instead() -> None:
    tool = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {
        "code": 429, "retry_after": 90}}}], default="ok")
    r = run(AGENT, task="Get the invoice", tools=[tool], policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.retry_after_honoured(), inv.completed(successes={"fetch_invoice": 1}), inv.bounded(executions=2))
    assert r.trace.of_kind("tool")[1]["t"] >= 90


def test_a_quota_header_alone_is_not_read_as_the_sdks_do_not() -> None:
    tool = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {
        "code": 429, "retry_after": 360, "retry_form": "x-ratelimit-reset-requests"}}}], default="ok")
    r = run(AGENT, task="Get the invoice", tools=[tool], policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    assert [v.invariant for v in inv.check_all(r, [inv.retry_after_honoured()])] == ["retry_after_honoured"]


# -- the decisions over the model's requests --------------------------------------------------------------

def test_the_third_identical_request_without_progress_is_refused() -> None:
    d = Decisions()
    for _ in range(IDENTICAL_LIMIT - 1):
        assert d.check("t", "A") is None
        d.failed("A", None, "timeout", retryable=True)
    verdict = d.check("t", "A")
    assert verdict is not None and verdict.guard == "identical_requests"


def test_an_answer_with_something_new_resets_the_identical_count_and_no_progress_stops_rewordings() -> None:
    d = Decisions()
    for n in range(6):  # a job whose status moves: every answer new
        assert d.check("t", "job") is None
        assert d.answered("job", {"status": "processing", "poll": n})
    stale = Decisions()
    for n in range(NO_PROGRESS_LIMIT + 1):
        assert stale.check("t", f"q{n}") is None
        stale.answered(f"q{n}", {"results": ["doc_1"]})
    verdict = stale.check("t", "q-next")
    assert verdict is not None and verdict.guard == "no_progress"


@pytest.mark.parametrize(("status", "state"), [(400, "NEEDS_HUMAN"), (403, "NEEDS_HUMAN"), (404, "FAILED")])
def test_a_request_answered_with_a_final_error_is_never_resent_unchanged(status: int, state: str) -> None:
    d = Decisions()
    d.failed("A", status, "x", retryable=False)
    verdict = d.check("t", "A")
    assert verdict is not None and verdict.state == state
    assert d.check("t", "B") is None


def test_the_fingerprint_drops_what_means_nothing() -> None:
    spec = catalogue.get("search").spec()
    a = fingerprint(spec, "search", {"query": "refund  policy", "request_id": "r1"})
    b = fingerprint(spec, "search", {"limit": 3, "query": "refund policy", "request_id": "r2"})
    assert a == b != fingerprint(spec, "search", {"query": "refund policy", "limit": 5})


# -- the ledger and lookups -----------------------------------------------------------------------------------

def test_side_effects_go_out_under_the_models_key_else_one_derived_from_the_request() -> None:
    spec = catalogue.get("charge_payment").spec()
    assert idempotency_key(spec, {"idempotency_key": "ord-8"}, "fp") == "ord-8"
    assert idempotency_key(spec, {}, "fp") == idempotency_key(spec, {}, "fp") != idempotency_key(spec, {}, "fp2")


def test_only_an_api_that_declares_it_honours_keys_gets_a_lost_write_resent() -> None:
    assert replay_safe(catalogue.get("search").spec())
    assert replay_safe(catalogue.get("charge_payment").spec())
    assert not replay_safe(catalogue.get("charge_payment", idempotency="ignored").spec())
    assert not replay_safe(catalogue.get("delete_record").spec())


def test_a_lookup_is_the_read_of_the_collection_the_write_writes() -> None:
    specs = {n: catalogue.get(n).spec() for n in ("charge_payment", "get_charge", "search")}
    sent = {"customer_id": "c1", "amount": 42.0, "idempotency_key": "k1"}
    lookup = find_lookup(specs, specs["charge_payment"], sent)
    assert lookup is not None and (lookup.tool, lookup.args) == ("get_charge", {"idempotency_key": "k1"})
    assert holds({"charge": {**sent, "id": "ch_1"}}, lookup.expect) and not holds({"charge": {}}, lookup.expect)
    assert find_lookup({"charge_payment": specs["charge_payment"]}, specs["charge_payment"], sent) is None


def _charge(**idem: object) -> list[object]:
    return [catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}],
                          **idem)]  # type: ignore[arg-type]


def _charge_policy() -> object:
    return policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0})


def test_a_lost_charge_to_an_api_that_honours_keys_is_resent_under_the_same_key() -> None:
    r = run(AGENT, task="Charge", tools=_charge(), policy=_charge_policy())
    keys = [e["args"]["idempotency_key"] for e in r.trace.of_kind("tool")]
    assert len(keys) == 2 and keys[0] == keys[1]
    r.check(inv.idempotent(), inv.max_side_effects(1), inv.terminal_state("COMPLETED"))


def test_a_lost_charge_without_dedupe_or_lookup_goes_to_a_person() -> None:
    r = run(AGENT, task="Charge", tools=_charge(idempotency="ignored"), policy=_charge_policy())
    r.check(inv.max_side_effects(1), inv.terminal_state("NEEDS_HUMAN"), inv.bounded(executions=1))
    assert r.stop_report and r.stop_report["guard"] == "side_effect.outcome_unknown"


def test_a_lost_charge_without_dedupe_is_looked_up_not_resent() -> None:
    r = run(AGENT, task="Charge", tools=[*_charge(idempotency="ignored"), catalogue.get("get_charge")],
            policy=_charge_policy())
    assert [e["tool"] for e in r.trace.of_kind("tool")] == ["charge_payment", "get_charge"]
    r.check(inv.max_side_effects(1), inv.terminal_state("COMPLETED"))


def test_a_write_that_keeps_getting_lost_is_looked_up_before_each_bounded_resend() -> None:
    lost = catalogue.get("charge_payment", idempotency="ignored", faults="timeout")  # never applied, never answered
    r = run(AGENT, task="Charge", tools=[lost, catalogue.get("get_charge")], policy=_charge_policy())
    tools = [e["tool"] for e in r.trace.of_kind("tool")]
    first = ["charge_payment", "get_charge"] * 3  # the write, its lookup, and two resends each looked up
    assert tools == [*first, "get_charge", *first]  # the model's re-ask starts with a lookup of the open write
    r.check(inv.max_side_effects(0), inv.terminal_state("STOPPED_LOOP_GUARD"), inv.no_execution_after_refusal())


def test_the_ledger_answers_a_repeat_across_a_restart_in_a_persistent_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    email = {"to": "ana@example.com", "subject": "Order 7", "body": "On its way."}
    runs = [run(AGENT, task="Send it", tools=[catalogue.get("send_email")], store=SqliteStore(tmp_path / "s.db"),
                policy=policies.scripted([{"call": "send_email", "args": email}, {"final": "sent"}]))
            for _ in range(2)]
    assert [len(r.trace.of_kind("tool")) for r in runs] == [1, 0]
    assert runs[1].trace.of_kind("refusal")[0]["guard"] == "idempotency_key"


# -- budgets and the report -------------------------------------------------------------------------------------

def test_a_token_budget_is_checked_on_reported_usage_after_the_turn() -> None:
    r = run(AGENT, task="Read them", tools=[catalogue.get("read_document")], budgets=Budgets(max_tokens=1000),
            policy=policies.explore("read_document", [{"doc_id": f"d{n}"} for n in range(20)], goal=20))
    r.check(inv.terminal_state("STOPPED_LOOP_GUARD"), inv.stop_report())
    assert r.stop_report and r.stop_report["guard"] == "budget.tokens"
    assert r.tokens - r.usage[-1].total < 1000 <= r.tokens  # the last turn took it over: the one-turn overshoot


def test_every_stop_reports_every_documented_field() -> None:
    r = _timeouts()
    r.check(inv.terminal_state("STOPPED_LOOP_GUARD"),  # type: ignore[attr-defined]
            inv.stop_report(fields=["guard", "reason", "completed", "unmet_precondition", "last_checkpoint",
                                    "resume_condition", "next_allowed_action"]))


def test_the_same_decisions_over_a_transport_that_does_not_retry_stay_within_the_loop_bound() -> None:
    """The bound-counting artifact, isolated: only the transport's retries put 6 executions where the bound is 4."""
    def no_transport_retries(task: str, model: object, tools: object) -> AgentResult:
        runtime = SdkRetries(model, tools)
        runtime.transport.max_retries = 0
        return runtime.run(task)

    tool = [catalogue.get("fetch_invoice", faults="timeout")]
    policy = policies.stubborn("fetch_invoice", {"invoice_id": "i1"})
    plain = run(no_transport_retries, task="Get the invoice", tools=tool, policy=policy)
    plain.check(inv.bounded(executions=2, turns=3), inv.terminal_state("STOPPED_LOOP_GUARD"))
    sdk = run(AGENT, task="Get the invoice", tools=tool, policy=policy)
    assert sdk.total_executions == 6 and sdk.turns == plain.turns == 3


def test_same_seed_same_trace() -> None:
    a, b = _timeouts(), _timeouts()
    assert a.trace.events == b.trace.events  # type: ignore[attr-defined]
