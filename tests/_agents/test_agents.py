"""The reference agents against the acceptance cases of the foundation issue."""

from __future__ import annotations

import pytest
from toolchaos import GuardedAgent, policies, run
from toolchaos import invariants as inv
from toolchaos.fake_tools import catalogue, faults


def timing_out(agent):
    return run(agent, task="Retry until you have the total", tools=[catalogue.get("fetch_invoice", faults="timeout")],
               policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))


def test_naive_loops_40_times_on_an_always_timing_out_tool_and_fails_a_bound_of_3():
    r = timing_out("builtin:naive")
    assert r.executions == {"fetch_invoice": 40}
    with pytest.raises(AssertionError, match=r"bounded\.executions"):
        r.check(inv.bounded(executions=3))


def test_guarded_stops_within_3_executions_naming_the_guard():
    r = timing_out("builtin:guarded")
    r.check(inv.bounded(executions=3), inv.terminal_state("STOPPED_LOOP_GUARD"), inv.stop_report(),
            inv.no_execution_after_refusal())
    assert r.stop_report and r.stop_report["guard"] == "retry_budget"
    assert r.trace.of_kind("end")[0]["guard"] == "retry_budget"


def lost_payment(agent, **api):
    pay = catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}],
                        **api)
    return run(agent, task="Charge the customer", tools=[pay],
               policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 42.0}))


def test_lost_response_payment_naive_charges_twice_guarded_once():
    assert lost_payment("builtin:naive").ledger.applied("charge_payment") >= 2
    r = lost_payment("builtin:guarded")  # the API honours the stable key guarded sends: the retry is replayed
    assert r.ledger.applied("charge_payment") == 1 and r.ledger.replayed("charge_payment") == 1
    r.check(inv.idempotent(), inv.terminal_state("COMPLETED"))
    r = lost_payment("builtin:guarded", idempotency="ignored")  # no dedupe: a retry would charge again
    assert r.ledger.applied("charge_payment") == 1
    r.check(inv.idempotent(), inv.terminal_state("NEEDS_HUMAN"), inv.stop_report())
    assert "confirm whether" in (r.stop_report or {})["unmet_precondition"]


@pytest.mark.parametrize("agent", ["builtin:guarded", "builtin:naive"])
def test_legit_polling_and_pagination_complete(agent):
    poll = run(agent, task="wait for the job", tools=[catalogue.get("get_job_status", faults=faults.pending(polls=6))],
               policy=policies.poll_until("get_job_status", {"job_id": "j1"}))
    poll.check(inv.completed({"get_job_status": 1}), inv.bounded(executions=7))
    pages = run(agent, task="list all", tools=[catalogue.get("list_records", default=faults.paginated(pages=12))],
                policy=policies.paginate("list_records"))
    pages.check(inv.completed({"list_records": 12}))


def test_guarded_polls_on_the_virtual_clock_at_the_servers_interval():
    r = run("builtin:guarded", task="wait", tools=[catalogue.get("get_job_status",
                                                                 faults=faults.pending(polls=3, interval=20))],
            policy=policies.poll_until("get_job_status", {"job_id": "j1"}))
    assert [e["t"] for e in r.trace.tool_events] == [0, 20, 40, 60]


def test_guarded_ends_a_job_that_never_finishes_at_its_polling_deadline():
    r = run("builtin:guarded", task="wait", tools=[catalogue.get("get_job_status",
                                                              faults=faults.pending(polls=None, interval=60))],
            policy=policies.poll_until("get_job_status", {"job_id": "j1"}))
    assert (r.terminal_state, r.guard) == ("STOPPED_LOOP_GUARD", "pending_deadline")


@pytest.mark.parametrize("faults_spec,state,guard", [
    ({"fatal": "permission_denied"}, "NEEDS_HUMAN", "fatal_error"),
    ({"fatal": "not_found"}, "FAILED", "fatal_error"),
    ("empty", "STOPPED_LOOP_GUARD", "exact_repeat"),
])
def test_guarded_branches_by_result_class(faults_spec, state, guard):
    r = run("builtin:guarded", task="t", tools=[catalogue.get("fetch_invoice", faults=faults_spec)],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "x"}))
    assert (r.terminal_state, r.guard) == (state, guard)
    assert r.total_executions <= 2


def test_guarded_detects_a_b_a_b_before_executing_the_cycle():
    tools = [catalogue.get("fetch_invoice", faults="contradictory"), catalogue.get("search", faults="contradictory")]
    pol = policies.ignores_refusals(policies.alternate([{"call": "fetch_invoice", "args": {"invoice_id": "a"}},
                                                        {"call": "search", "args": {"query": "a"}}]))
    r = run("builtin:guarded", task="reconcile", tools=tools, policy=pol)
    assert r.trace.of_kind("refusal")[0]["guard"] == "cycle"
    assert r.total_executions <= 4 and r.terminal_state == "STOPPED_LOOP_GUARD"


def test_guarded_catches_paraphrase_by_what_it_returns():
    """Rewordings are different calls; the same documents again are no progress, whatever the wording."""
    same_docs = catalogue.get("search", default={"ok": {"data": {"results": [{"id": "doc_1"}]}}})
    r = run("builtin:guarded", task="t", tools=[same_docs],
            policy=policies.paraphrase("search", {"query": "refund policy"}))
    assert len({e["fp"] for e in r.trace.tool_events}) > 1  # the rewordings did not collide
    assert r.total_executions == 4 and (r.terminal_state, r.guard) == ("STOPPED_LOOP_GUARD", "no_progress")


def test_guarded_keeps_reading_two_feeds_that_bring_something_new():
    """A-B-A-B is a cycle only when the repeated calls bring nothing new."""
    feeds = [catalogue.get("fetch_invoice", faults=faults.contradictory([{"n": i} for i in range(3)])),
             catalogue.get("search", faults=faults.contradictory([{"hit": i} for i in range(3)]))]
    calls = [{"call": "fetch_invoice", "args": {"invoice_id": "a"}}, {"call": "search", "args": {"query": "a"}}]
    r = run("builtin:guarded", task="t", tools=feeds, policy=policies.scripted(calls * 3 + [{"final": "done"}]))
    assert r.total_executions == 6 and r.terminal_state == "COMPLETED" and not r.trace.of_kind("refusal")


def test_guarded_respects_a_token_budget():
    qs = [{"query": f"topic {i}"} for i in range(30)]
    r = run("builtin:guarded", task="t", tools=[catalogue.get("search")], policy=policies.explore("search", qs),
            budgets={"max_tokens": 4000})
    assert (r.terminal_state, r.guard) == ("STOPPED_LOOP_GUARD", "budget.tokens")
    assert r.tokens < 6000


def test_guarded_counts_its_prompt_alike_with_or_without_the_models_count_tokens():
    class CompleteOnly:  # a model API without count_tokens: the agent's own meter counts
        def __init__(self, model):
            self.complete = model.complete

    def own_meter(task, model, tools):
        return GuardedAgent()(task, CompleteOnly(model), tools)

    def budgeted(agent):
        qs = [{"query": f"topic {i}"} for i in range(30)]
        return run(agent, task="t", tools=[catalogue.get("search")], policy=policies.explore("search", qs),
                   budgets={"max_tokens": 4000})

    counted, own = budgeted("builtin:guarded"), budgeted(own_meter)
    assert (own.terminal_state, own.guard) == (counted.terminal_state, counted.guard) == ("STOPPED_LOOP_GUARD",
                                                                                         "budget.tokens")
    assert (own.tokens, own.turns, own.stop_report["reason"]) == (counted.tokens, counted.turns,
                                                                  counted.stop_report["reason"])


def test_guarded_resumes_without_repeating_a_done_write():
    store: dict = {}
    pol = policies.scripted([{"call": "write_record", "args": {"record_id": "r1", "data": {"a": 1}}},
                             {"call": "charge_payment", "args": {"customer_id": "c", "amount": 5}}])
    tools = [catalogue.get("write_record"), catalogue.get("charge_payment", faults="timeout", idempotency="ignored")]
    first = run("builtin:guarded", task="t", tools=tools, policy=pol, store=store)
    assert first.terminal_state == "NEEDS_HUMAN" and first.ledger.applied("write_record") == 1
    pol2 = policies.scripted([{"call": "write_record", "args": {"record_id": "r1", "data": {"a": 1}}},
                              {"final": "done"}])
    second = run("builtin:guarded", task="t", tools=[catalogue.get("write_record")], policy=pol2, store=store)
    assert second.ledger.applied("write_record") == 0  # refused: already applied before the restart
    assert second.trace.of_kind("refusal")[0]["guard"] == "idempotency"


def test_the_over_eager_guard_kills_legit_polling():
    r = run(GuardedAgent(eager=True), task="wait",
            tools=[catalogue.get("get_job_status", faults=faults.pending(polls=3))],
            policy=policies.poll_until("get_job_status", {"job_id": "j1"}))
    assert r.violations(inv.completed())


LOST = [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}]


def test_guarded_looks_a_lost_email_up_in_the_list_of_sent_ones() -> None:
    mail = {"to": "ana@example.com", "subject": "s", "body": "b"}
    r = run("builtin:guarded", task="t", tools=[catalogue.get("send_email", LOST, idempotency="ignored"),
                                                catalogue.get("list_sent_emails")],
            policy=policies.stubborn("send_email", mail))
    assert r.terminal_state == "COMPLETED" and r.ledger.applied("send_email") == 1
    assert [e["tool"] for e in r.trace.tool_events] == ["send_email", "list_sent_emails"]


@pytest.mark.parametrize(("api", "state", "charges"), [("ignored", "NEEDS_HUMAN", 1), ("honoured", "COMPLETED", 1)])
def test_a_lookup_that_gives_no_answer_is_no_answer(api: str, state: str, charges: int) -> None:
    """The lookup times out too: it cannot tell, so only a key the API honours makes a retry safe."""
    r = run("builtin:guarded", task="t", tools=[catalogue.get("charge_payment", LOST, idempotency=api),
                                                catalogue.get("get_charge", faults="timeout")],
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 5.0}))
    assert r.terminal_state == state and r.ledger.applied("charge_payment") == charges


def test_a_charge_the_lookup_does_not_find_is_retried_under_the_same_key() -> None:
    lost_before_it_applied = [{"call": 1, "outcome": {"timeout": {"after": 30}}}]
    r = run("builtin:guarded", task="t", tools=[catalogue.get("charge_payment", lost_before_it_applied,
                                                              idempotency="ignored"), catalogue.get("get_charge")],
            policy=policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 5.0}))
    assert r.terminal_state == "COMPLETED" and r.ledger.applied("charge_payment") == 1
    assert [e["tool"] for e in r.trace.tool_events] == ["charge_payment", "get_charge", "charge_payment"]
