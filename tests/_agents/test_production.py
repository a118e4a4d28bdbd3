"""builtin:production, piece by piece: error classes, Retry-After in every form, operation keys and the
ledger, the loop detector, budgets; then the runtime on small runs where each piece decides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from toolchaos import Budgets, policies, run
from toolchaos import invariants as inv
from toolchaos._agents._production._budget import Budget, estimate_prompt_tokens
from toolchaos._agents._production._classes import ErrorClass, error_class, read_exception, read_result
from toolchaos._agents._production._ledger import fingerprint, holds_record, operation_key
from toolchaos._agents._production._loops import NO_PROGRESS_LIMIT, LoopDetector
from toolchaos._agents._production._retry import BACKOFF_CAP, SERVER_WAIT_PAD, backoff
from toolchaos._agents._production._retry_after import go_duration, header_wait, server_wait, text_wait
from toolchaos.errors import ToolError, ToolInvalidArgument, ToolNotFound, ToolPermissionDenied, ToolTimeout
from toolchaos.fake_tools import Outcome, OutcomeClass, catalogue, retry

NOW = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)


# -- Retry-After ---------------------------------------------------------------------------------

@pytest.mark.parametrize("form", retry.FORMS)
@pytest.mark.parametrize("seconds", [20, 90, 360])
def test_every_form_the_fake_apis_write_reads_back_as_at_least_the_wait(form: str, seconds: int) -> None:
    now = (NOW - retry.EPOCH).total_seconds()
    written = retry.headers(form, seconds, now)
    wait = server_wait(seconds if form == "seconds" else None, written if form != "seconds" else None, now=NOW)
    assert wait is not None and seconds <= wait < seconds + 1  # absolute times are rounded up to the second


@pytest.mark.parametrize(("name", "value", "seconds"), [
    ("Retry-After", "20", 20.0),
    ("retry-after", "Thu, 01 Jan 2026 00:00:50 GMT", 20.0),
    ("retry-after-ms", "1500", 1.5),
    ("x-ratelimit-reset-requests", "6m0s", 360.0),
    ("x-ratelimit-reset-tokens", "1m30s", 90.0),
    ("x-ratelimit-reset-tokens", "250ms", 0.25),
    ("x-ratelimit-reset-requests", "1h2m3.5s", 3723.5),
    ("anthropic-ratelimit-requests-reset", "2026-01-01T00:01:00Z", 30.0),
    ("anthropic-ratelimit-output-tokens-reset", "2026-01-01T00:01:00+00:00", 30.0),
])
def test_each_header_form(name: str, value: str, seconds: float) -> None:
    assert header_wait(name, value, NOW) == pytest.approx(seconds)


def test_headers_that_say_nothing_about_waiting_are_ignored() -> None:
    assert header_wait("content-type", "application/json", NOW) is None
    assert header_wait("retry-after", "soon", NOW) is None
    assert header_wait("x-ratelimit-reset-tokens", "6 minutes", NOW) is None
    assert go_duration("") is None and go_duration("5") is None


@pytest.mark.parametrize(("text", "seconds"), [
    ("rate limited, retry after 20 seconds", 20.0),
    ("Rate limit reached. Please try again in 1m30s.", 90.0),
    ("429 Too Many Requests (Retry-After: 7)", 7.0),
    ("overloaded; retry in 250ms", 0.25),
])
def test_waits_written_in_an_errors_text(text: str, seconds: float) -> None:
    assert text_wait(text) == pytest.approx(seconds)
    assert text_wait("permission denied") is None


def test_the_longest_wait_wins_and_a_time_already_past_is_zero() -> None:
    assert server_wait(5, {"retry-after-ms": "12000"}, "try again in 8s", now=NOW) == 12.0
    assert server_wait(headers={"retry-after": "Thu, 01 Jan 2026 00:00:00 GMT"}, now=NOW) == 0.0
    assert server_wait(now=NOW) is None


def test_backoff_never_waits_less_than_the_server_asks_and_is_reproducible() -> None:
    assert backoff(1, 20.0, seed=0, fp="f") == 20.0 + SERVER_WAIT_PAD
    waits = [backoff(n, None, seed=3, fp="f") for n in range(1, 10)]
    assert waits == [backoff(n, None, seed=3, fp="f") for n in range(1, 10)]
    assert all(0.0 <= w <= BACKOFF_CAP for w in waits)


# -- error classes -------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "cls"), [
    ("rate_limited", ErrorClass.RATE_LIMITED), ("timeout", ErrorClass.TRANSIENT),
    ("unavailable", ErrorClass.TRANSIENT), ("connection_reset", ErrorClass.TRANSIENT),
    ("invalid_argument", ErrorClass.INVALID), ("missing_argument", ErrorClass.INVALID),
    ("idempotency_key_reused", ErrorClass.CONFLICT), ("not_found", ErrorClass.NOT_FOUND),
    ("permission_denied", ErrorClass.AUTH), ("policy_blocked", ErrorClass.AUTH),
    ("429", ErrorClass.RATE_LIMITED), ("503", ErrorClass.TRANSIENT), ("403", ErrorClass.AUTH),
    ("404", ErrorClass.NOT_FOUND), ("400", ErrorClass.INVALID),
])
def test_error_codes_have_classes(code: str, cls: ErrorClass) -> None:
    assert error_class(code) is cls


def test_an_unknown_code_falls_back_to_the_apis_class_then_its_retryable_flag() -> None:
    assert error_class("weird", "RETRYABLE") is ErrorClass.TRANSIENT
    assert error_class("weird", "PRECONDITION") is ErrorClass.INVALID
    assert error_class("weird", "FATAL") is ErrorClass.PERMANENT
    assert error_class("weird", None, True) is ErrorClass.TRANSIENT
    assert error_class(None) is ErrorClass.PERMANENT


def test_results_are_read_into_classes() -> None:
    limited = read_result({"error": {"code": "rate_limited", "class": "RETRYABLE",
                                     "headers": {"retry-after-ms": "4000"}}}, NOW)
    assert (limited.cls, limited.wait, limited.outcome_unknown) == (ErrorClass.RATE_LIMITED, 4.0, False)
    lost = read_result({"error": {"code": "timeout", "class": "RETRYABLE", "retryable": True}}, NOW)
    assert lost.cls is ErrorClass.TRANSIENT and lost.outcome_unknown
    bad = read_result({"error": {"code": "missing_argument", "class": "PRECONDITION", "field": "invoice_id"}}, NOW)
    assert (bad.cls, bad.field) == (ErrorClass.INVALID, "invoice_id")
    pending = read_result({"status": "processing", "poll": 2, "retry_after": 30}, NOW)
    assert (pending.cls, pending.wait) == (ErrorClass.PENDING, 30.0)
    assert read_result({"results": []}, NOW).cls is ErrorClass.OK
    assert read_result({"error": "upstream failed, retry after 3 seconds"}, NOW).wait == 3.0


def _raised(cls: type[ToolError], code: str, oc: OutcomeClass, **kw: object) -> ToolError:
    return cls("t", Outcome("x", oc, code, **kw))  # type: ignore[arg-type]


def test_raised_errors_are_read_from_what_they_carry_or_their_type() -> None:
    limited = read_exception(_raised(ToolError, "rate_limited", OutcomeClass.RETRYABLE,
                                     headers=(("retry-after", "Thu, 01 Jan 2026 00:01:00 GMT"),)), NOW)
    assert (limited.cls, limited.wait) == (ErrorClass.RATE_LIMITED, 30.0)
    assert read_exception(_raised(ToolTimeout, "timeout", OutcomeClass.RETRYABLE), NOW).outcome_unknown
    assert read_exception(_raised(ToolPermissionDenied, "permission_denied", OutcomeClass.FATAL), NOW).cls \
        is ErrorClass.AUTH
    assert read_exception(_raised(ToolNotFound, "not_found", OutcomeClass.FATAL), NOW).cls is ErrorClass.NOT_FOUND
    assert read_exception(_raised(ToolInvalidArgument, "invalid_argument", OutcomeClass.PRECONDITION), NOW).cls \
        is ErrorClass.INVALID
    # a client library's own exceptions, without the server's record: the built-in type decides
    assert read_exception(TimeoutError("read timed out"), NOW).cls is ErrorClass.TRANSIENT
    assert read_exception(PermissionError("no"), NOW).cls is ErrorClass.AUTH
    assert read_exception(KeyError("job"), NOW).cls is ErrorClass.NOT_FOUND
    assert read_exception(RuntimeError("busy, retry after 2s"), NOW).cls is ErrorClass.TRANSIENT
    assert read_exception(RuntimeError("broken"), NOW).cls is ErrorClass.PERMANENT


# -- operation keys and the ledger ----------------------------------------------------------------

def test_the_same_operation_has_one_key_whatever_the_meaningless_differences() -> None:
    pay = catalogue.get("charge_payment")
    a = fingerprint(pay, "charge_payment", {"customer_id": "c1", "amount": 42.0})
    b = fingerprint(pay, "charge_payment", {"amount": 42.0, "customer_id": " c1 ", "currency": "EUR",
                                            "request_id": "r-9", "idempotency_key": "k-from-the-model"})
    assert a == b and operation_key(a) == operation_key(b)
    assert operation_key(a) != operation_key(fingerprint(pay, "charge_payment", {"customer_id": "c1", "amount": 43.0}))


def test_a_lookup_answer_holds_the_record_of_a_write() -> None:
    assert holds_record({"emails": [{"to": "a@x", "subject": "Hi", "body": "b"}]}, {"to": "a@x", "subject": "Hi"})
    assert not holds_record({"emails": []}, {"to": "a@x"})
    assert holds_record({"record_id": "r", "data": {"status": "paid", "by": "x"}}, {"data": {"status": "paid"}})
    assert not holds_record({"record_id": "r", "data": {"status": "draft"}}, {"data": {"status": "paid"}})


def _lost_charge(**api: object) -> list:
    return [catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}],
                          **api)]


def _keys_sent(r: object) -> list[str]:
    return [e["args"].get("idempotency_key") for e in r.trace.of_kind("tool")  # type: ignore[attr-defined]
            if e["tool"] == "charge_payment"]


def test_a_resend_after_a_lost_response_reuses_the_first_attempts_key() -> None:
    r = run("builtin:production", task="Charge c1 42", tools=_lost_charge(),
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0}))
    keys = _keys_sent(r)
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("op-")
    r.check(inv.idempotent(), inv.max_side_effects(1), inv.terminal_state("COMPLETED"))


def test_a_key_the_model_sent_is_kept_for_the_resend() -> None:
    r = run("builtin:production", task="Charge c1 42", tools=_lost_charge(),
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0,
                                                        "idempotency_key": "order-7"}))
    assert _keys_sent(r) == ["order-7", "order-7"]
    r.check(inv.idempotent(), inv.max_side_effects(1))


def test_a_lost_charge_is_looked_up_before_any_resend() -> None:
    r = run("builtin:production", task="Charge c1 42",
            tools=[*_lost_charge(honoured_after_applied=False), catalogue.get("get_charge")],
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0}))
    assert [e["tool"] for e in r.trace.of_kind("tool")] == ["charge_payment", "get_charge"]
    r.check(inv.idempotent(), inv.max_side_effects(1), inv.terminal_state("COMPLETED"))


def test_with_no_lookup_and_no_dedupe_a_lost_charge_goes_to_a_person() -> None:
    r = run("builtin:production", task="Charge c1 42", tools=_lost_charge(idempotency="ignored"),
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0}))
    r.check(inv.max_side_effects(1), inv.terminal_state("NEEDS_HUMAN"),
            inv.stop_report(fields=["guard", "reason", "completed", "unmet_precondition", "last_checkpoint",
                                    "resume_condition", "next_allowed_action"]))
    assert r.stop_report and r.stop_report["guard"] == "side_effect.outcome_unknown"


def test_an_operation_asked_for_again_is_answered_from_the_ledger_across_a_restart() -> None:
    store: dict = {}
    email = {"to": "ana@example.com", "subject": "Order 7", "body": "On its way."}
    first = run("builtin:production", task="Send it", tools=[catalogue.get("send_email")], store=store,
                policy=policies.scripted([{"call": "send_email", "args": email}, {"final": "sent"}]))
    again = run("builtin:production", task="Send it", tools=[catalogue.get("send_email")], store=store,
                policy=policies.scripted([{"call": "send_email", "args": {**email, "request_id": "r2"}},
                                          {"final": "sent"}]))
    assert first.ledger.applied("send_email") == 1 and again.ledger.applied("send_email") == 0
    assert again.trace.of_kind("refusal")[0]["guard"] == "idempotency.ledger"


# -- the loop detector -----------------------------------------------------------------------------

def test_an_exact_repeat_with_nothing_new_is_refused_the_third_time() -> None:
    d = LoopDetector()
    assert d.check("A") is None
    d.answered("A", {"x": 1})
    assert d.check("A") is None
    d.answered("A", {"x": 1})
    assert d.check("A") == ("repeat", "the same call answered twice with nothing new")
    assert d.check("A") is not None  # a refused call stays refused


def test_a_cycle_is_refused_once_a_round_brought_nothing_new_but_moving_feeds_are_not() -> None:
    d = LoopDetector()
    for fp, value in [("A", 1), ("B", 2), ("A", 1), ("B", 2)]:
        assert d.check(fp) is None
        d.answered(fp, {"v": value})
    assert d.check("A") is not None and d.check("A")[0] == "cycle"  # type: ignore[index]
    feeds = LoopDetector()
    for n in range(12):
        fp = "A" if n % 2 == 0 else "B"
        assert feeds.check(fp) is None
        feeds.answered(fp, {"item": n})


def test_answers_with_nothing_new_stop_reworded_calls() -> None:
    d = LoopDetector()
    for n in range(NO_PROGRESS_LIMIT + 1):
        assert d.check(f"q{n}") is None
        d.answered(f"q{n}", {"results": ["doc_1"]})
    assert d.check("q-next") == ("no_progress", f"{NO_PROGRESS_LIMIT} answers in a row brought nothing new")


def test_volatile_fields_in_an_answer_are_not_progress() -> None:
    d = LoopDetector()
    assert d.answered("A", {"v": 1, "request_id": "r1"}, volatile=("request_id",))
    assert not d.answered("A", {"v": 1, "request_id": "r2"}, volatile=("request_id",))


def test_an_input_the_api_rejected_is_not_resent_unchanged() -> None:
    d = LoopDetector()
    d.rejected["A"] = "invoice_id"
    assert d.check("A") is not None and d.check("A")[0] == "unchanged_resend"  # type: ignore[index]


# -- budgets -----------------------------------------------------------------------------------------

def test_the_next_prompt_is_estimated_and_a_turn_that_would_overrun_is_not_asked() -> None:
    messages = [{"role": "user", "content": "x" * 400}]
    assert 100 <= estimate_prompt_tokens(messages) <= 130
    b = Budget(started=0.0, max_tokens=300)
    assert b.before_turn(messages, 0.0) is None
    b.spent_turn(150, 40)
    over = b.before_turn(messages, 0.0)
    assert over is not None and over[0] == "budget.tokens"


def test_budgets_from_the_harness_win_over_the_defaults() -> None:
    b = Budget.from_limits(Budgets(max_steps=6, max_seconds=270, max_tokens=4000), now=10.0)
    assert (b.max_turns, b.deadline, b.max_tokens) == (6, 280.0, 4000)
    assert not b.allows_wait(200.0, 80.0) and b.allows_wait(200.0, 79.0)


def test_a_wait_past_the_deadline_is_not_started() -> None:
    limited = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {
        "code": 429, "retry_after": 600, "retry_form": "http_date"}}}])
    r = run("builtin:production", task="Get the invoice", tools=[limited], budgets=Budgets(max_seconds=300),
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.retry_after_honoured(), inv.bounded(executions=1, virtual_seconds=300),
            inv.terminal_state("STOPPED_LOOP_GUARD"))
    assert r.stop_report and r.stop_report["guard"] == "budget.deadline"


def test_a_rate_limit_in_a_raised_error_is_waited_out() -> None:
    limited = catalogue.get("fetch_invoice", delivery="raise", faults=[{"call": 1, "outcome": {"transient": {
        "code": 429, "retry_after": 45, "retry_form": "anthropic-ratelimit-tokens-reset"}}}])
    r = run("builtin:production", task="Get the invoice", tools=[limited],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.retry_after_honoured(), inv.completed(successes={"fetch_invoice": 1}), inv.bounded(executions=2))
    assert r.trace.of_kind("tool")[1]["t"] >= 45


def test_retries_of_a_timeout_are_bounded_and_named() -> None:
    r = run("builtin:production", task="Get the invoice", tools=[catalogue.get("fetch_invoice", faults="timeout")],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i1"}))
    r.check(inv.bounded(executions=3), inv.terminal_state("STOPPED_LOOP_GUARD"), inv.stop_report())
    assert r.stop_report and r.stop_report["guard"] == "retries_spent"
    assert timedelta(seconds=r.trace.of_kind("end")[0]["t"]) >= timedelta(seconds=90)


def test_the_ledger_lives_in_a_sqlite_store_too(tmp_path) -> None:  # a real restart: values must be JSON
    from toolchaos import SqliteStore

    email = {"to": "ana@example.com", "subject": "Order 7", "body": "On its way."}
    runs = [run("builtin:production", task="Send it", tools=[catalogue.get("send_email")],
                store=SqliteStore(tmp_path / "store.db"),
                policy=policies.scripted([{"call": "send_email", "args": email}, {"final": "sent"}]))
            for _ in range(2)]
    assert [len(r.trace.of_kind("tool")) for r in runs] == [1, 0]
    assert runs[1].trace.of_kind("refusal")[0]["guard"] == "idempotency.ledger"


def test_an_input_error_the_model_fixes_completes_one_it_gives_up_on_goes_to_a_person() -> None:
    fixed = run("builtin:production", task="Get the invoice", tools=[catalogue.get("fetch_invoice")],
                policy=policies.scripted([{"call": "fetch_invoice", "args": {"invoice": "i1"}},
                                          {"call": "fetch_invoice", "args": {"invoice_id": "i1"}},
                                          {"final": "42 EUR"}]))
    fixed.check(inv.terminal_state("COMPLETED"), inv.no_unchanged_resend())
    gave_up = run("builtin:production", task="Get the invoice", tools=[catalogue.get("fetch_invoice")],
                  policy=policies.scripted([{"call": "fetch_invoice", "args": {"invoice": "i1"}},
                                            {"final": "I could not get it."}]))
    gave_up.check(inv.terminal_state("NEEDS_HUMAN"), inv.stop_report(fields=["guard", "unmet_precondition"]))
    assert gave_up.stop_report and "invoice_id" in gave_up.stop_report["unmet_precondition"]
