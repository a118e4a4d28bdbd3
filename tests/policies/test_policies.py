"""Policies: each built-in behaves as the model it stands for."""

from __future__ import annotations

import json

import pytest
from toolchaos import policies, run
from toolchaos.fake_tools import catalogue, faults
from toolchaos.policies import PolicyError


def calls(result):
    return [(c["tool"], c["args"]) for e in result.trace.model_events for c in e["calls"]]


def go(policy, tools, agent="builtin:naive", **kw):
    return run(agent, task="t", tools=tools, policy=policy, **kw)


def test_scripted_plays_its_turns_then_answers():
    r = go(policies.scripted([{"call": "search", "args": {"query": "a"}},
                              {"calls": [{"call": "search", "args": {"query": "b"}},
                                         {"call": "search", "args": {"query": "c"}}]}]),
           [catalogue.get("search")])
    assert [a["query"] for _, a in calls(r)] == ["a", "b", "c"] and r.answer == "Done."


def test_stubborn_repeats_until_satisfied():
    r = go(policies.stubborn("fetch_invoice", {"invoice_id": "i"}),
           [catalogue.get("fetch_invoice", faults=[{"calls": [1, 3], "outcome": "timeout"}])])
    assert len(calls(r)) == 4 and r.terminal_state == "COMPLETED"


def test_stubborn_needs_fields():
    tool = catalogue.get("fetch_invoice", faults=[{"calls": [1, 2], "outcome": {"ok": {"data": {"other": 1}}}}])
    r = go(policies.stubborn("fetch_invoice", {"invoice_id": "i"}, needs=["total"]), [tool])
    assert len(calls(r)) == 3


def test_alternate_bounces_a_b_a_b():
    r = go(policies.alternate([{"call": "search", "args": {"query": "x"}}, {"call": "read_document",
                                                                            "args": {"doc_id": "d"}}], max_turns=5),
           [catalogue.get("search"), catalogue.get("read_document")])
    assert [t for t, _ in calls(r)] == ["search", "read_document", "search", "read_document", "search"]


def test_jitter_changes_only_meaningless_things():
    r = go(policies.jitter("fetch_invoice", {"invoice_id": "inv 1", "note": "a b"}, max_turns=6),
           [catalogue.get("fetch_invoice", faults="timeout")])
    raw = [a for _, a in calls(r)]
    assert len({json.dumps(a) for a in raw}) == 6  # every request differs as text
    assert len({e["fp"] for e in r.trace.tool_events}) == 1  # and is the same call


def test_paraphrase_rewords_the_query_with_the_seed():
    def queries(seed):
        res = go(policies.paraphrase("search", {"query": "refund policy"}, max_turns=8), [catalogue.get("search")],
                 seed=seed)
        return [a["query"] for _, a in calls(res)]

    assert queries(1) == queries(1) != queries(2)
    assert all("refund policy" in q for q in queries(1)) and len(set(queries(1))) > 2


def test_poll_until_polls_then_finishes_and_gives_up_on_fatal():
    r = go(policies.poll_until("get_job_status", {"job_id": "j"}),
           [catalogue.get("get_job_status", faults=faults.pending(polls=4))])
    assert len(calls(r)) == 5 and r.terminal_state == "COMPLETED"
    r2 = go(policies.poll_until("get_job_status", {"job_id": "j"}),
            [catalogue.get("get_job_status", faults={"fatal": "not_found"})])
    assert len(calls(r2)) == 1 and "not_found" in (r2.answer or "")


def test_paginate_follows_the_cursor_to_the_end():
    r = go(policies.paginate("list_records"), [catalogue.get("list_records", default={"paginated": {"pages": 12}})])
    cursors = [a.get("cursor") for _, a in calls(r)]
    assert cursors == [None] + [f"p{i}" for i in range(2, 13)] and r.answer == "Listed 12 pages."


def test_paginate_retries_a_failed_page_with_the_same_cursor():
    tool = catalogue.get("list_records", faults=[{"call": 2, "outcome": faults.transient(503)}],
                         default={"paginated": {"pages": 3}})
    r = go(policies.paginate("list_records"), [tool])
    assert [a.get("cursor") for _, a in calls(r)] == [None, "p2", "p2", "p3"]


def test_explore_stops_after_enough_new_facts():
    qs = [{"query": f"topic {i}"} for i in range(5)]
    r = go(policies.explore("search", qs), [catalogue.get("search")])
    assert len(calls(r)) == 5 and r.terminal_state == "COMPLETED"


def test_obedient_gives_up_on_non_retryable_errors():
    r = go(policies.obedient(policies.stubborn("fetch_invoice", {"invoice_id": "i"})),
           [catalogue.get("fetch_invoice", faults={"fatal": "permission_denied"})])
    assert len(calls(r)) == 1 and "permission_denied" in (r.answer or "")


def test_refusals_stop_most_policies_but_not_ignores_refusals():
    tools = [catalogue.get("fetch_invoice", faults="empty")]
    polite = go(policies.stubborn("fetch_invoice", {"invoice_id": "i"}), tools, agent="builtin:guarded")
    rude = go(policies.ignores_refusals(policies.stubborn("fetch_invoice", {"invoice_id": "i"})), tools,
              agent="builtin:guarded")
    assert len(polite.trace.of_kind("refusal")) == 1
    assert len(rude.trace.of_kind("refusal")) > 1  # it kept asking until the runtime stopped the run
    assert rude.terminal_state == "STOPPED_LOOP_GUARD"


def test_recorded_replays_a_trace(tmp_path):
    first = go(policies.stubborn("fetch_invoice", {"invoice_id": "i"}),
               [catalogue.get("fetch_invoice", faults="timeout")], artifacts=tmp_path, name="incident")
    replay = go(policies.recorded(tmp_path / "incident.trace.jsonl"), [catalogue.get("fetch_invoice")],
                agent="builtin:guarded")
    assert calls(replay)[:2] == calls(first)[:2]
    assert replay.total_executions <= 3


def test_recorded_errors_are_clear(tmp_path):
    with pytest.raises(PolicyError, match=r"nope\.jsonl: no such file"):
        policies.recorded(tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "model"}\nnot json\n')
    with pytest.raises(PolicyError, match=r"bad\.jsonl: line 2: not valid JSON"):
        policies.recorded(bad)


@pytest.mark.parametrize("make,words", [
    (lambda: policies.scripted([42]), "steps[0]"),
    (lambda: policies.stubborn("t", args=[1]), "args must be a mapping"),
    (lambda: policies.stubborn("t", until="sometimes"), "until must be"),
    (lambda: policies.alternate([{"call": "a"}]), "at least 2"),
    (lambda: policies.paraphrase("search", {"q": "x"}), "field to reword"),
    (lambda: policies.stubborn("t", max_turns=0), "max_turns"),
])
def test_bad_parameters_name_the_policy(make, words):
    with pytest.raises(PolicyError, match=words.replace("[", r"\[").replace("]", r"\]")):
        make()


def test_ignores_refusals_rereads_only_turns_that_hold_a_refusal():
    from toolchaos._internal.model import Decision, Feedback, ModelView

    seen = []

    class Inner:
        name = "inner"

        def decide(self, view):
            seen.append(view)
            return Decision.final("x")

    rude = policies.ignores_refusals(Inner())
    ok = Feedback("c1", "search", {}, {"hits": 1}, "ok")
    view = ModelView("t", 1, [], [ok], ["search"], None, {})  # type: ignore[arg-type]
    rude.decide(view)
    assert seen[-1] is view  # no refusal: the view as it was, not a copy
    refused = Feedback("c2", "search", {}, "loop guard", "refused")
    rude.decide(ModelView("t", 2, [], [ok, refused], ["search"], None, {}))  # type: ignore[arg-type]
    assert [(f.kind, f.retryable) for f in seen[-1].feedback] == [("ok", None), ("error", True)]
