"""Every invariant: one run where it fires, one where it holds."""

from __future__ import annotations

import threading

import pytest
from toolchaos import (
    REPORT_FIELDS,
    REPORT_SYNONYMS,
    AgentResult,
    Decision,
    InvariantViolation,
    policies,
    run,
    tool_message,
)
from toolchaos import invariants as inv
from toolchaos._plumbing import clock as _clock
from toolchaos.fake_tools import catalogue, faults


def go(agent, tools, policy, **kw):
    return run(agent, task="t", tools=tools, policy=policy, **kw)


def stubborn_timeout(agent):
    return go(agent, [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
              policies.stubborn("fetch_invoice", {"invoice_id": "i"}))


def names(result, *invariants):
    return [v.invariant for v in result.violations(*invariants)]


# -- bounded ---------------------------------------------------------------------------


def test_bounded_executions_fires_at_the_first_execution_past_the_bound():
    r = stubborn_timeout("builtin:naive")
    (v,) = r.violations(inv.bounded(executions=3))
    assert v.invariant == "bounded.executions" and v.actual == "40 tool executions"
    fourth = r.trace.tool_events[3]
    assert (v.seq, v.step) == (fourth["seq"], fourth["step"]) == (8, 4)


def test_bounded_holds_for_the_guarded_agent():
    r = stubborn_timeout("builtin:guarded")
    assert r.violations(inv.bounded(executions=3, per_tool={"fetch_invoice": 3}, turns=5,
                                    virtual_seconds=200, tokens=5000)) == []


def test_bounded_per_tool_turns_seconds_tokens_fire():
    r = stubborn_timeout("builtin:naive")
    got = names(r, inv.bounded(per_tool={"fetch_invoice": 2}, turns=10, virtual_seconds=100, tokens=1000))
    assert sorted(got) == ["bounded.executions[fetch_invoice]", "bounded.tokens", "bounded.turns",
                           "bounded.virtual_seconds"]


def _transport(attempts):
    """A runtime whose HTTP layer sends each request up to ``attempts`` times (one call id, no model turn between)."""

    def agent(task, model, tools):
        messages = [{"role": "user", "content": task}]
        for _ in range(3):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            for call in turn.tool_calls:
                for _ in range(attempts):
                    result = tools.call(call.name, call.arguments, call_id=call.id)
                    if not (isinstance(result, dict) and result.get("error")):
                        break
                messages.append(tool_message(call, result))
        return AgentResult("FAILED")

    return agent


def test_bounded_counts_transport_retries_apart_and_holds_at_the_sdk_default_and_one_above():
    r = stubborn_timeout(_transport(3))
    assert r.total_executions == 9 and [e.get("attempt", 1) for e in r.trace.tool_events] == [1, 2, 3] * 3
    assert r.violations(inv.bounded(executions=3)) == []  # 3 requests, each at the SDKs' 3 attempts
    assert r.violations(inv.bounded(executions=2)) != []  # the model's requests still count
    assert stubborn_timeout(_transport(4)).violations(inv.bounded(executions=3)) == []  # one retry above it


def test_bounded_attempts_fires_past_the_default_and_past_a_stated_bound():
    r = stubborn_timeout(_transport(6))
    (v,) = r.violations(inv.bounded(executions=3))
    assert v.invariant == "bounded.attempts" and v.actual == "5 attempts at fetch_invoice"
    fifth = r.trace.tool_events[4]
    assert (v.seq, v.step) == (fifth["seq"], fifth["step"]) and fifth["attempt"] == 5
    assert names(stubborn_timeout(_transport(3)), inv.bounded(attempts=2)) == ["bounded.attempts"]
    assert names(r, inv.bounded(turns=10)) == []  # no execution bound: no attempts bound either


def _reported_usage(task, model, tools):
    """A token budget checked on each turn's reported usage, after the turn: it stops one turn late."""
    messages, spent = [{"role": "user", "content": task}], 0
    while spent <= tools.budgets.max_tokens:
        turn = model.complete(messages, tools.specs)
        spent += turn.usage.total
        messages.append(turn.as_message())
        for call in turn.tool_calls:
            messages.append(tool_message(call, tools.call(call.name, call.arguments, call_id=call.id)))
    return AgentResult("STOPPED_LOOP_GUARD", report={"guard": "budget.tokens", "reason": "spent"})


def test_bounded_tokens_allows_the_turns_of_overshoot_it_is_given():
    from toolchaos import Budgets

    reads = policies.explore("read_document", [{"doc_id": f"doc_{i}"} for i in range(1, 13)], goal=12)
    r = go(_reported_usage, [catalogue.get("read_document")], reads, budgets=Budgets(max_tokens=1500))
    assert r.tokens > 1500
    (v,) = r.violations(inv.bounded(tokens=1500))
    assert v.step == r.turns and v.expected == "at most 1500 tokens"
    assert r.violations(inv.bounded(tokens=1500, overshoot=1)) == []  # the turn that crossed it, no more
    naive = go("builtin:naive", [catalogue.get("read_document")], reads)
    (v,) = naive.violations(inv.bounded(tokens=1500, overshoot=1))
    assert v.expected == "at most 1500 tokens, but for one turn that ends past them"
    first_past = next(i for i, total in enumerate(_running(naive), 1) if total > 1500)
    assert v.step == first_past + 1


def _running(result):
    total = 0
    for e in result.trace.model_events:
        total += e["tokens_in"] + e["tokens_out"]
        yield total


def test_bounded_refuses_an_overshoot_without_a_token_bound_or_below_zero():
    for kw in ({"overshoot": 1}, {"tokens": 10, "overshoot": -1}, {"tokens": 10, "overshoot": True}):
        with pytest.raises(Exception, match="overshoot"):
            inv.bounded(**kw)


def test_bounded_refuses_an_attempts_bound_that_is_not_a_positive_whole_number():
    for bad in (0, 2.5, True):
        with pytest.raises(Exception, match="attempts must be a positive whole number"):
            inv.bounded(executions=3, attempts=bad)


# -- side effects ------------------------------------------------------------------------


def lost_payment(agent):
    pay = catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}])
    return go(agent, [pay], policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 10}))


def test_idempotent_fires_on_a_retry_after_a_lost_success():
    r = lost_payment("builtin:naive")
    (v,) = r.violations(inv.idempotent())
    assert "applied 2 times" in v.actual and v.seq == r.trace.tool_events[1]["seq"]


def test_idempotent_holds_when_the_effect_did_not_apply():
    pay = catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": False}}}])
    r = go("builtin:naive", [pay], policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 10}))
    assert r.ledger.executions("charge_payment") == 2 and r.violations(inv.idempotent()) == []


def test_max_side_effects_fires_and_holds():
    assert names(lost_payment("builtin:naive"), inv.max_side_effects(1, tool="charge_payment")) == ["max_side_effects"]
    assert names(lost_payment("builtin:guarded"), inv.max_side_effects(1), inv.idempotent()) == []


# -- terminal state and stop report -------------------------------------------------------


def test_terminal_state_fires_and_holds():
    assert names(stubborn_timeout("builtin:naive"), inv.terminal_state("STOPPED_LOOP_GUARD")) == ["terminal_state"]
    assert names(stubborn_timeout("builtin:guarded"), inv.terminal_state("STOPPED_LOOP_GUARD")) == []


def test_terminal_state_rejects_unknown_names():
    with pytest.raises(ValueError, match="did you mean 'COMPLETED'"):
        inv.terminal_state("COMPLETE")


def test_stop_report_fires_without_a_report_and_holds_with_one():
    def quitter(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        return AgentResult("STOPPED_LOOP_GUARD", None, {"guard": "x", "reason": ""})

    r = go(quitter, [catalogue.get("search")], policies.stubborn("search", {"query": "q"}))
    (v,) = r.violations(inv.stop_report())
    assert "missing reason, completed, resume_condition" in v.actual
    assert names(stubborn_timeout("builtin:naive"), inv.stop_report()) == ["stop_report"]
    assert names(stubborn_timeout("builtin:guarded"), inv.stop_report()) == []



def reporter(report):
    """An agent that asks the model once and stops with ``report``."""
    def agent(task, model, tools):
        model.complete([{"role": "user", "content": task}])
        return AgentResult("NEEDS_HUMAN", None, report)
    return agent


def test_stop_report_reads_the_loopguard_designs_spellings():
    design = {"terminal_state": "NEEDS_HUMAN", "guard_reason": "fatal.permission_denied: delete_record failed",
              "completed": [], "last_safe_checkpoint": {"step": 1}, "unmet_precondition": "delete allowed",
              "resume_condition": "a human grants access", "next_allowed_action": "hand over to a human"}
    r = go(reporter(design), [catalogue.get("search")], policies.stubborn("search", {"query": "q"}))
    every = inv.stop_report(fields=REPORT_FIELDS)
    assert r.violations(inv.stop_report(), every) == []
    end = r.trace.of_kind("end")[-1]
    assert end["guard"] == end["reason"] == design["guard_reason"] == r.guard


def test_stop_report_prefers_the_own_spelling_and_a_blank_synonym_is_missing():
    r = go(reporter({"guard": "g", "guard_reason": "g2: why", "reason": "", "completed": [],
                     "resume_condition": "r", "last_safe_checkpoint": ""}),
           [catalogue.get("search")], policies.stubborn("search", {"query": "q"}))
    end = r.trace.of_kind("end")[-1]
    assert (end["guard"], end["reason"]) == ("g", "g2: why")
    (v,) = r.violations(inv.stop_report(fields=["guard", "reason", "completed", "last_checkpoint"]))
    assert v.actual == "missing last_checkpoint"


def test_report_synonyms_name_known_fields_only():
    assert set(REPORT_SYNONYMS) <= set(REPORT_FIELDS)
    assert not set(REPORT_FIELDS) & {s for spellings in REPORT_SYNONYMS.values() for s in spellings}

# -- refusals ----------------------------------------------------------------------------


def sneaky(task, model, tools):
    """Refuses a call, then executes it anyway: what the invariant is for."""
    messages = [{"role": "user", "content": task}]
    turn = model.complete(messages)
    call = turn.tool_calls[0]
    content = tools.refuse(call.name, call.arguments, guard="exact_repeat", reason="test", call_id=call.id)
    messages += [turn.as_message(), tool_message(call, content)]
    tools.call(call.name, call.arguments)
    return AgentResult("STOPPED_LOOP_GUARD", None, {"guard": "exact_repeat", "reason": "test", "completed": [],
                                                    "resume_condition": "none"})


def test_no_execution_after_refusal_fires_and_holds():
    r = go(sneaky, [catalogue.get("search")], policies.stubborn("search", {"query": "q"}))
    (v,) = r.violations(inv.no_execution_after_refusal())
    assert v.seq == r.trace.tool_events[0]["seq"]
    para = go("builtin:guarded", [catalogue.get("search")],
              policies.ignores_refusals(policies.stubborn("search", {"query": "q"}, until="never")))
    assert para.trace.of_kind("refusal") and names(para, inv.no_execution_after_refusal()) == []


def test_late_calls_after_the_agent_returned_are_caught():
    caught = []

    def leaves_a_thread(task, model, tools):
        def later():  # calls once the agent has returned, while the harness closes the run
            while not tools._run.closed:
                _clock.real_sleep(0.001)
            try:
                tools.call("search", {"query": "late"})
            except RuntimeError as exc:
                caught.append(str(exc))

        threading.Thread(target=later, daemon=True).start()
        return "done"

    r = go(leaves_a_thread, [catalogue.get("search")], policies.scripted([{"final": "ok"}]))
    assert caught and "after the run had ended" in caught[0]
    assert r.ledger.executions("search") == 0
    assert names(r, inv.no_execution_after_refusal()) == ["no_execution_after_refusal"]


# -- Retry-After and unchanged resends ------------------------------------------------------


def rate_limited(agent):
    t = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": {"code": 429, "retry_after": 30}}}])
    return go(agent, [t], policies.stubborn("fetch_invoice", {"invoice_id": "i"}))


def test_retry_after_fires_when_retried_too_soon():
    r = rate_limited("builtin:naive")
    v = r.violations(inv.retry_after_honoured())[0]
    assert "not called before t=30s" in v.expected and v.actual.startswith("called at t=0s (and ")


def test_retry_after_holds_when_the_agent_waits():
    r = rate_limited("builtin:guarded")
    assert r.terminal_state == "COMPLETED" and names(r, inv.retry_after_honoured()) == []
    assert r.trace.tool_events[1]["t"] >= 30


@pytest.mark.parametrize("fault", [{"fatal": "permission_denied"}, {"fatal": "invalid_argument"}])
def test_no_unchanged_resend_fires_and_holds(fault):
    tools = [catalogue.get("fetch_invoice", faults=fault)]
    pol = policies.stubborn("fetch_invoice", {"invoice_id": "i"})
    assert names(go("builtin:naive", tools, pol), inv.no_unchanged_resend()) == ["no_unchanged_resend"]
    assert names(go("builtin:guarded", tools, pol), inv.no_unchanged_resend()) == []


def test_a_corrected_resend_is_not_an_unchanged_one():
    bad = {"match": {"invoice_id": "bad"}, "outcome": {"fatal": "invalid_argument"}}
    tools = [catalogue.get("fetch_invoice", faults=[bad])]
    pol = policies.scripted([{"call": "fetch_invoice", "args": {"invoice_id": "bad"}},
                             {"call": "fetch_invoice", "args": {"invoice_id": "good"}}, {"final": "ok"}])
    assert names(go("builtin:naive", tools, pol), inv.no_unchanged_resend()) == []


# -- legitimate work ----------------------------------------------------------------------------


def paging(agent):
    lst = catalogue.get("list_records", default={"paginated": {"pages": 12}})
    return go(agent, [lst], policies.paginate("list_records"))


def test_completed_holds_for_legit_pagination():
    assert names(paging("builtin:guarded"), inv.completed({"list_records": 12})) == []


def test_completed_fires_on_a_false_positive():
    r = paging(__import__("toolchaos").GuardedAgent(eager=False, max_repeats=0, max_executions=5))
    got = r.violations(inv.completed({"list_records": 12}))
    assert [v.invariant for v in got] == ["completed", "completed.successes[list_records]"]
    assert "STOPPED_LOOP_GUARD" in got[0].actual


# -- goal: a COMPLETED claim from ground truth -----------------------------------------------


def test_goal_judges_only_a_completed_claim_by_usable_results():
    r = stubborn_timeout("builtin:doomloop")  # 2 timeouts, the block, then "COMPLETED" on the model's give-up
    (v,) = r.violations(inv.goal(successes={"fetch_invoice": 1}))
    assert (v.invariant, v.severity) == ("goal", "major")  # a reporting failure, not a runaway loop
    assert v.expected == "a COMPLETED claim only with the goal met: at least 1 usable results of fetch_invoice"
    assert v.actual == "COMPLETED with 0 usable results of fetch_invoice"
    assert stubborn_timeout("builtin:guarded").violations(inv.goal(successes={"fetch_invoice": 1})) == []  # no claim


@pytest.mark.parametrize("fault", [faults.empty(), faults.malformed("invalid_json")])
def test_goal_does_not_count_an_empty_or_malformed_success(fault):
    r = go("builtin:naive", [catalogue.get("fetch_invoice", faults=fault)],
           policies.scripted([{"call": "fetch_invoice", "args": {"invoice_id": "i"}}, {"final": "The total is 3."}]))
    assert r.terminal_state == "COMPLETED" and r.trace.tool_events[0]["class"] == "SUCCESS"
    assert names(r, inv.goal(successes={"fetch_invoice": 1})) == ["goal"]


def test_goal_counts_applied_effects_from_the_ledger():
    pay = [catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}])]
    steps = [{"call": "charge_payment", "args": {"customer_id": "c1", "amount": 42}}, {"final": "It failed."}]
    r = go("builtin:naive", pay, policies.scripted(steps))
    assert r.violations(inv.goal(effects={"charge_payment": 1})) == []  # the charge applied, whatever the agent saw
    assert names(r, inv.goal(effects={"charge_payment": 2})) == ["goal"]


def test_terminated_fires_on_crash_and_holds_otherwise():
    def crashes(task, model, tools):
        raise ZeroDivisionError("boom")

    r = go(crashes, [catalogue.get("search")], policies.scripted([]))
    (v,) = r.violations(inv.terminated())
    assert "crashed" in v.actual and "ZeroDivisionError: boom" in v.actual
    assert names(paging("builtin:guarded"), inv.terminated()) == []


# -- the violation message ------------------------------------------------------------------------


def test_violation_message_names_invariant_step_figures_and_shows_the_trace(tmp_path):
    r = run("builtin:naive", task="t", tools=[catalogue.get("fetch_invoice", faults="timeout")],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "i"}), artifacts=tmp_path, name="loop")
    with pytest.raises(InvariantViolation) as info:
        r.check(inv.bounded(executions=3), inv.terminal_state("STOPPED_LOOP_GUARD"))
    text = str(info.value)
    assert text.startswith("invariant bounded.executions broke at step 4 (trace event #8): "
                           "expected at most 3 tool executions; actual: 40 tool executions")
    assert "also: invariant terminal_state broke" in text
    assert ">> 8    4" in text and "RETRYABLE/timeout" in text
    assert f"trace file: {tmp_path / 'loop.trace.jsonl'}" in text
    assert isinstance(info.value, AssertionError) and len(info.value.violations) == 2


def test_check_with_no_arguments_runs_the_default_invariants():
    def crashes(task, model, tools):
        raise SystemExit(3)

    r = go(crashes, [catalogue.get("search")], policies.scripted([]))
    with pytest.raises(InvariantViolation, match="terminated"):
        r.check()


def test_check_fails_a_run_the_harness_ended_unless_told_otherwise():
    def crashes(task, model, tools):
        raise ZeroDivisionError("boom")

    r = go(crashes, [catalogue.get("search")], policies.scripted([]))
    with pytest.raises(InvariantViolation, match=r"invariant terminated broke.*the agent crashed"):
        r.check(inv.bounded(executions=3))  # the bound holds: nothing ran. Not a pass.
    r.check(inv.bounded(executions=3), terminated=False)  # a test that expects the crash says so
    r.check(inv.terminal_state("CRASHED"))  # or expects it by name
    assert r.violations(inv.bounded(executions=3)) == []  # violations() checks what it is given, only


# -- faults_fired: no vacuous pass -------------------------------------------------------------


def _scripted_invoices(*ids):
    return policies.scripted([{"call": "fetch_invoice", "args": {"invoice_id": i}} for i in ids] + [{"final": "ok"}])


def test_faults_fired_names_a_rule_the_calls_never_reached():
    tool = catalogue.get("fetch_invoice", faults=[{"call": 3, "outcome": "timeout"},
                                                  {"match": {"invoice_id": "inv_x"}, "outcome": "empty"}])
    r = go("builtin:naive", [tool], _scripted_invoices("inv_1", "inv_2"))
    got = {v.expected: v.actual for v in r.violations(inv.faults_fired())}
    assert got == {
        "fault rule faults[0] of fetch_invoice (call 3 -> timeout) to answer at least one call":
            "it never matched: call 3 of fetch_invoice never came as a valid call (valid calls: 1, 2) (and 1 more)"}
    (v,) = r.violations(inv.faults_fired())
    assert v.invariant == "faults_fired[fetch_invoice]"
    hit = go("builtin:naive", [tool], _scripted_invoices("inv_1", "inv_x", "inv_3"))
    assert hit.violations(inv.faults_fired()) == []


def test_faults_fired_blames_arguments_that_fail_the_schema_whatever_the_runtime():
    def typo(view):  # a policy whose arguments are only known as it runs
        return Decision.call("fetch_invoice", {"invoce_id": "inv_1"}) if view.step < 4 else Decision.final("x")

    for agent in ("builtin:naive", "builtin:guarded"):  # guarded refuses the resend: still the arguments' fault
        r = go(agent, [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))], typo)
        (v,) = r.violations(inv.faults_fired())
        assert v.actual.startswith("none was read: all ") and "failed its argument schema (missing_argument; " \
            'sent {"invoce_id": "inv_1"}) before any fault was read: the arguments are wrong' in v.actual


def test_faults_fired_leaves_rules_a_runtime_kept_the_model_from_reaching():
    tool = catalogue.get("fetch_invoice", faults=[{"calls": [1, 4], "outcome": "timeout"},
                                                  {"call": 5, "outcome": "empty"}])
    r = go("builtin:guarded", [tool], policies.stubborn("fetch_invoice", {"invoice_id": "i"}))
    assert r.total_executions < 5 and any(e["kind"] == "refusal" for e in r.trace)  # stopped: right to
    assert r.violations(inv.faults_fired()) == []
    assert names(go("builtin:naive", [tool], _scripted_invoices("i", "i")), inv.faults_fired()) == [
        "faults_fired[fetch_invoice]"]  # the model itself asked twice: call 5 was never coming


# -- check_all with a custom invariant -------------------------------------------------


def test_a_custom_invariant_may_yield_its_violations_and_one_that_returns_nothing_is_an_error():
    from toolchaos.invariants import _builtin

    class Yields(inv.Invariant):
        name = "yields"

        def check(self, result):
            yield inv.Violation("yields", "nothing", "something", 1, 1)
            yield inv.Violation("yields", "nothing", "something else", 2, 1)

    class ForgotToReturn(inv.Invariant):
        name = "forgot"

        def check(self, result):
            pass

    r = stubborn_timeout("builtin:guarded")
    (v,) = _builtin.check_all(r, [Yields()])  # two breaks of one check: its first, and how many more
    assert v.actual == "something (and 1 more)"
    with pytest.raises(TypeError):  # not read as "holds": a check that can never fail is a defect
        _builtin.check_all(r, [ForgotToReturn()])
