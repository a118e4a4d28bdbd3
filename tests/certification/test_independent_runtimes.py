"""Independent runtimes against the certification suite: today's verdicts, each with its reason.

builtin:loopguard, doomloop, gemini and breaker are ports of public guard designs written from
the documented contract, not from builtin:guarded; builtin:production is a careful
production-style runtime written the same way, from the documents alone. For each design, every scenario it fails
today is listed with the invariants it breaks, a class and the reason:

- ``a``: real harm the design really does (a duplicate effect, an unchanged resend of a FATAL
  call, a retry before Retry-After, a runaway loop, a false COMPLETED, a legitimate run stopped);
- ``b``: a contract artifact or an overfitted bound: the design behaved soundly and the suite
  failed it anyway (report key names, a bound equal to what builtin:guarded does, ...).

A scenario not listed passes. When a scenario, an invariant or the contract changes, the
verdicts that change show up here: update the entry, its class and its reason (and the tables
in docs/independent-runtimes.md, which hold the long form and are checked against this data).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from toolchaos.certification import certify, suite

DOC = Path(__file__).resolve().parents[2] / "docs" / "independent-runtimes.md"

FALSE_COMPLETED = "the model gave up after the block and the plain loop reported COMPLETED"
FEEDBACK_COMPLETED = ("the model gave up at the loop feedback, a refusal, and the plain loop reported COMPLETED, within "
                      "the bounds: the task was not done")
NO_BUDGETS = "the design watches no budget but its 40-turn cap"

NO_KEY = "retried the timed-out charge without a key: charged twice"
REWRITE = ("side-stale-read-rewrite", (("idempotent", "max_side_effects"), "a",
                                       "wrote again after the stale read: two writes"))
RESET_FORMS = [f"err-rate-limit-reset-forms[{form}]" for form in (
    "http-date", "retry-after-ms", "openai-reset-requests", "openai-reset-tokens", "anthropic-requests-reset",
    "anthropic-tokens-reset", "anthropic-input-tokens-reset", "anthropic-output-tokens-reset")]

Verdicts = dict[str, tuple[tuple[str, ...], str, str]]  # scenario -> (broken invariants, class, reason)


def _no_key_charges() -> Verdicts:
    """The lost-charge scenarios a plain loop without keys fails: it charges twice in each."""
    twice = ("idempotent", "max_side_effects", "world_state.created")
    return {"side-lossy-dedupe-lookup": (twice, "a", NO_KEY), "side-lost-payment-lookup": (twice, "a", NO_KEY),
            "side-retry-same-key-honoured": (twice, "a", NO_KEY),
            "side-no-dedupe-retry-duplicates": ((*twice[:2], "terminal_state", twice[2]), "a", NO_KEY)}

EXPECTED: dict[str, Verdicts] = {
    "loopguard": {
        "budget-tokens-growing-context": (("bounded.tokens",), "a",
                                          "no token budget: 16845 tokens against 4000"),
        "legit-poll-to-completion": (("completed", "completed.successes[get_job_status]"), "a",
                                     "its 60 s wall-clock budget is shorter than the job (done 120 s after the "
                                     "first poll)"),
        **{sc: (("completed", "completed.successes[fetch_invoice]", "retry_after_honoured"), "a",
                "read only a retry_after number; the wait came as another header: retried at once")
           for sc in RESET_FORMS},
        "side-lossy-dedupe-lookup": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                     "retried under its key against an API that dedupes only delivered responses: "
                                     "charged twice"),
        "side-no-dedupe-retry-duplicates": (("idempotent", "max_side_effects", "terminal_state", "world_state.created"),
                                            "a", "retried under its key against an API without dedupe: charged twice"),
    },
    "doomloop": {
        "budget-pending-never-finishes": (("goal",), "a", FALSE_COMPLETED),
        "budget-steps": (("bounded.executions", "bounded.turns"), "a", NO_BUDGETS),
        "budget-tokens-growing-context": (("bounded.tokens",), "a", NO_BUDGETS),
        "budget-wall-clock": (("bounded.virtual_seconds",), "a", NO_BUDGETS),
        "err-invalid-argument": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                                 "a", "resent the rejected call unchanged; " + FALSE_COMPLETED),
        "err-not-found-poll": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                               "a", "polled a nonexistent job again; " + FALSE_COMPLETED),
        "err-permission-denied": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                                  "a", "resent a permission-denied delete; COMPLETED instead of NEEDS_HUMAN"),
        "err-rate-limit-retry-after": (("bounded.turns", "completed.successes[fetch_invoice]", "goal",
                                        "retry_after_honoured"), "a", "retried at t=0 against Retry-After 20"),
        "legit-exploration-new-facts": (("completed.successes[read_alerts]", "goal"), "a",
                                        "blocked the third read although every read brought new alerts"),
        "legit-poll-to-completion": (("completed.successes[get_job_status]", "goal"), "a",
                                     "blocked the third poll of a job that finishes 120 s after the first"),
        "loop-abab-contradictory": (("bounded.executions", "bounded.turns"), "a", "A-B-A-B never repeats in a row"),
        "loop-almost-two-of-three": (("terminal_state",), "a", FALSE_COMPLETED),
        "loop-argument-jitter": (("goal",), "a", FALSE_COMPLETED),
        "loop-empty-result": (("goal",), "a", FALSE_COMPLETED),
        "loop-exact-repeat-timeout": (("goal",), "a", FALSE_COMPLETED),
        "loop-malformed-result": (("goal",), "a", FALSE_COMPLETED),
        "loop-no-progress-exploration": (("bounded.executions", "bounded.turns"), "a",
                                         "different queries never repeat: 40 executions"),
        "loop-oversized-refetch": (("terminal_state",), "a", FALSE_COMPLETED),
        "loop-paraphrase-same-docs": (("bounded.executions", "bounded.turns", "terminal_state"), "a",
                                      "rewordings are new loop keys: 8 executions"),
        "loop-search-read-cycle": (("bounded.executions", "bounded.turns"), "a",
                                   "a three-call cycle never repeats in a row: 40 executions"),
        "resume-redo-only-unfinished": (("goal", "idempotent", "max_side_effects"), "a",
                                        "no ledger: the restart rewrote finished records"),
        "side-concurrent-same-key": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                     "both parallel charges executed"),
        "side-email-asked-repeatedly": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                        "two emails before the block"),
        "side-email-jittered-resend": (("idempotent", "max_side_effects"), "a",
                                       "two emails before the block (its loop key folds the jitter; no ledger)"),
        "side-lost-payment-response": (("idempotent", "max_side_effects"), "a",
                                       "retried the timed-out charge without a key: charged twice"),
        "side-write-before-guard-resume": (("goal", "idempotent", "max_side_effects"), "a",
                                           "no ledger: the restart wrote the record again"),
        **{sc: (("bounded.turns", "completed.successes[fetch_invoice]", "goal", "retry_after_honoured"), "a",
                "retried at t=0 against the wait") for sc in RESET_FORMS},
        **_no_key_charges(), REWRITE[0]: REWRITE[1],
    },
    "gemini": {
        "budget-pending-never-finishes": (("goal",), "a",
                                          "the fifth poll refused: COMPLETED with the job still processing"),
        "budget-steps": (("bounded.executions", "bounded.turns"), "a", NO_BUDGETS),
        "budget-tokens-growing-context": (("bounded.tokens",), "a", NO_BUDGETS),
        "budget-wall-clock": (("bounded.virtual_seconds",), "a", NO_BUDGETS),
        "err-invalid-argument": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                                 "a", "4 unchanged resends of a rejected argument"),
        "err-not-found-poll": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                               "a", "4 polls of a nonexistent job"),
        "err-permission-denied": (("bounded.executions", "bounded.turns", "goal", "no_unchanged_resend"),
                                  "a", "4 permission-denied deletes, then COMPLETED"),
        "err-rate-limit-retry-after": (("bounded.executions", "bounded.turns", "completed.successes[fetch_invoice]",
                                        "goal", "retry_after_honoured"), "a", "4 retries at t=0 against Retry-After 20"),
        "legit-exploration-new-facts": (("completed.successes[read_alerts]", "goal"), "a",
                                        "refused the fifth read of a feed that brought new alerts on every read"),
        "legit-poll-to-completion": (("completed.successes[get_job_status]", "goal", "poll_interval_honoured"), "a",
                                     "4 polls at t=0 against a 30 s interval, then refused the fifth"),
        "loop-abab-contradictory": (("bounded.executions", "bounded.turns"), "a", "A-B-A-B is never identical"),
        "loop-almost-two-of-three": (("terminal_state",), "a", FEEDBACK_COMPLETED),
        "loop-argument-jitter": (("bounded.executions", "bounded.turns"), "a",
                                 "no normalisation: a fresh request_id makes every call new"),
        "loop-empty-result": (("goal",), "a", FEEDBACK_COMPLETED),
        "loop-exact-repeat-timeout": (("goal",), "a", FEEDBACK_COMPLETED),
        "loop-malformed-result": (("goal",), "a", FEEDBACK_COMPLETED),
        "loop-no-progress-exploration": (("bounded.executions", "bounded.turns"), "a",
                                         "different queries are never identical: 40 executions"),
        "loop-oversized-refetch": (("terminal_state",), "a", FEEDBACK_COMPLETED),
        "loop-paraphrase-same-docs": (("bounded.executions", "bounded.turns"), "a", "rewordings: 40 executions"),
        "loop-search-read-cycle": (("bounded.executions", "bounded.turns"), "a", "a cycle: 40 executions"),
        "resume-redo-only-unfinished": (("goal", "idempotent", "max_side_effects"), "a",
                                        "no ledger: the restart rewrote finished records"),
        "side-concurrent-same-key": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                     "both parallel charges executed"),
        "side-email-asked-repeatedly": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                        "four emails before the detector fired"),
        "side-email-jittered-resend": (("bounded.turns", "idempotent", "max_side_effects"), "a",
                                       "no normalisation: a fresh request_id makes every send new: 40 emails"),
        "side-lost-payment-response": (("idempotent", "max_side_effects"), "a",
                                       "retried the timed-out charge without a key: charged twice"),
        "side-write-before-guard-resume": (("goal", "idempotent", "max_side_effects"), "a",
                                           "no ledger: the restart wrote the record again"),
        **{sc: (("bounded.executions", "bounded.turns", "completed.successes[fetch_invoice]", "goal",
                 "retry_after_honoured"), "a", "retried at t=0 against the wait") for sc in RESET_FORMS},
        **_no_key_charges(), REWRITE[0]: REWRITE[1],
    },
    "breaker": {
        "budget-steps": (("bounded.executions", "bounded.turns"), "a", NO_BUDGETS),
        "budget-tokens-growing-context": (("bounded.tokens",), "a", NO_BUDGETS),
        "budget-wall-clock": (("bounded.virtual_seconds",), "a", NO_BUDGETS),
        "err-invalid-argument": (("bounded.executions", "no_unchanged_resend"), "a",
                                 "resent the rejected call unchanged once"),
        "err-not-found-poll": (("bounded.executions", "bounded.turns", "no_unchanged_resend", "terminal_state"),
                               "a", "polled a nonexistent job again; STOPPED_LOOP_GUARD instead of FAILED"),
        "err-permission-denied": (("bounded.executions", "bounded.turns", "no_unchanged_resend", "stop_report",
                                   "terminal_state"), "a",
                                  "resent a permission-denied delete; STOPPED_LOOP_GUARD instead of NEEDS_HUMAN"),
        "err-rate-limit-retry-after": (("completed", "completed.successes[fetch_invoice]", "retry_after_honoured"),
                                       "a", "retried at t=0 against Retry-After 20, then tripped"),
        "legit-exploration-new-facts": (("completed", "completed.successes[read_alerts]"), "a",
                                        "tripped on the third read of a productive feed"),
        "legit-poll-to-completion": (("completed", "completed.successes[get_job_status]"), "a",
                                     "tripped on the third poll of a job that finishes 120 s after the first"),
        "legit-two-feeds-in-turn": (("completed", "completed.successes[read_orders]",
                                     "completed.successes[read_tickets]"), "a",
                                    "an over-eager cycle detector: tripped on the fifth read of two productive feeds"),
        "loop-argument-jitter": (("bounded.executions", "bounded.turns"), "a",
                                 "no normalisation: a fresh request_id makes every hash new"),
        "loop-no-progress-exploration": (("bounded.executions", "bounded.turns"), "a",
                                         "different queries never hash alike: 40 executions"),
        "loop-paraphrase-same-docs": (("bounded.executions", "bounded.turns"), "a", "rewordings: 8 executions"),
        "loop-search-read-cycle": (("bounded.executions", "bounded.turns"), "a",
                                   "a three-call cycle never puts 3 alike in a window of 5: 40 executions"),
        "resume-redo-only-unfinished": (("goal", "idempotent", "max_side_effects"), "a",
                                        "no ledger: the restart rewrote finished records"),
        "side-concurrent-same-key": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                     "both parallel charges executed"),
        "side-email-asked-repeatedly": (("idempotent", "max_side_effects", "world_state.created"), "a",
                                        "two emails before it tripped"),
        "side-email-jittered-resend": (("bounded.turns", "idempotent", "max_side_effects"), "a",
                                       "no normalisation: a fresh request_id makes every hash new: 40 emails"),
        "side-lost-payment-response": (("idempotent", "max_side_effects"), "a",
                                       "retried the timed-out charge without a key: charged twice"),
        "side-write-before-guard-resume": (("idempotent", "max_side_effects"), "a",
                                           "no ledger: the restart wrote the record again"),
        **{sc: (("completed", "completed.successes[fetch_invoice]", "retry_after_honoured"), "a",
                "no Retry-After: retried at t=0") for sc in RESET_FORMS},
        **_no_key_charges(), REWRITE[0]: REWRITE[1],
    },
    # Written from the documents alone (README, docs/agent-contract.md, docs/scenarios.md,
    # docs/domain.md, docs/independent-runtimes.md), with its own constants: it fails nothing.
    # Where it sits on a bound rather than inside it is in docs/independent-runtimes.md.
    "production": {},
}

# builtin:sdk-retries: a transport that retries each request at the official SDKs' default (3
# attempts) under sound decisions. FIRST_RUN holds its verdicts on the suite it was written
# against (suite version 5): the evidence that the suite judged mechanisms there, each failure
# saying which demand it met. A failure the suite has fixed since moves to FIXED_SINCE with the
# fix; today's verdicts are the first run without them.
TRANSPORT_COUNTED = ("bound-counting artifact: one execution bound counts the transport's retries (3 attempts a "
                     "request, the SDK default, same call id, no model turn between) with the model's re-asks: "
                     "2 requests made 6 executions against 4, the model's third request refused")
QUOTA_FORMS = [sc for sc in RESET_FORMS if not sc.endswith(("[http-date]", "[retry-after-ms]"))]
FIRST_RUN: Verdicts = {
    "loop-exact-repeat-timeout": (("bounded.executions",), "b", TRANSPORT_COUNTED),
    "loop-ignores-refusals": (("bounded.executions",), "b", TRANSPORT_COUNTED),
    "loop-abab-contradictory": (("bounded.executions",), "b",
                                "a bound with room only for guards that see the cycle: no progress 3 without a cycle "
                                "detector stops at the fifth read-only call (2 new answers, 3 stale): 5 against 4"),
    "budget-tokens-growing-context": (("bounded.tokens",), "b",
                                      "a bound equal to the budget: checked on the usage each turn reports, as the "
                                      "SDKs' agent loops check theirs, the budget overshoots by one turn: 4650 "
                                      "tokens against 4000"),
    **{sc: (("bounded.executions", "completed", "completed.successes[fetch_invoice]", "retry_after_honoured"), "a",
            "real, of the advisory kind: the wait came only in a quota reset header, which the SDKs' retry logic "
            "does not read: retried after 0.4 s and 1.2 s, the model's re-ask the same, its third request refused")
       for sc in QUOTA_FORMS},
    "side-lossy-dedupe-lookup": (("idempotent", "max_side_effects", "world_state.created"), "b",
                                 "the rule hidden from the spec: tools.specs said x-idempotency: honoured, the lossy "
                                 "dedupe was only a FakeTool attribute; resent the timed-out charge under its key "
                                 "(as the SDKs do against an API that honours keys): charged twice"),
}
TRANSPORT_APART = ("transport retries are counted apart (bounded.attempts, 3 a request, the SDK default): the model's "
                   "two requests are 2 executions against 4")
FIXED_SINCE: dict[str, str] = {
    "side-lossy-dedupe-lookup": ("the spec declares x-idempotency: honoured-after-delivery: the transport does not "
                                 "resend the lost charge, the runtime looks it up through get_charge and finds it"),
    "loop-exact-repeat-timeout": TRANSPORT_APART, "loop-ignores-refusals": TRANSPORT_APART,
    "loop-abab-contradictory": ("the bound derived for a no-progress limit without a cycle detector: 2 new answers "
                                "+ 3 stale = 5 executions, 7 turns"),
    "budget-tokens-growing-context": ("one turn of overshoot allowed (bounded overshoot: 1) for a budget checked on "
                                      "reported usage after the turn: 4650 tokens, the turn that crossed 4000"),
}
# A verdict that changed without being fixed: what it is now, and why.
CHANGED_SINCE: Verdicts = {
    sc: (("completed", "completed.successes[fetch_invoice]", "retry_after_honoured"), "a",
         "real, of the advisory kind: the wait came only in a quota reset header, which the SDKs' retry logic does "
         "not read: retried after 0.4 s and 1.2 s (transport attempts, now bounded apart), then the model's re-ask "
         "the same, its third request refused")
    for sc in QUOTA_FORMS}
EXPECTED["sdk-retries"] = {**{sc: v for sc, v in FIRST_RUN.items() if sc not in FIXED_SINCE}, **CHANGED_SINCE}


def broken(design: str) -> dict[str, tuple[str, ...]]:
    """Scenario -> the invariants it broke, for every scenario the design fails."""
    return {v.id: tuple(sorted({x.invariant for x in v.violations}))
            for v in certify(f"builtin:{design}") if not v.passed}


@pytest.mark.parametrize("design", list(EXPECTED))
def test_todays_verdicts(design: str) -> None:
    expected = {scenario: invariants for scenario, (invariants, _, _) in EXPECTED[design].items()}
    assert broken(design) == expected


def test_entries_name_real_scenarios_and_classes() -> None:
    ids = {s.name for s in suite()}
    for design, verdicts in EXPECTED.items():
        assert set(verdicts) <= ids, (design, set(verdicts) - ids)
        assert all(cls in ("a", "b") and reason for _, cls, reason in verdicts.values()), design
    assert set(FIXED_SINCE) <= set(FIRST_RUN) and all(FIXED_SINCE.values())  # a fix says what it fixed


def test_the_sdk_retries_transport_counts_apart_from_the_model() -> None:
    """The evidence of the bound-counting artifact, from the trace: 3 attempts per request under one call id."""
    verdict, = certify("builtin:sdk-retries", [s for s in suite() if s.name == "loop-exact-repeat-timeout"])
    events = verdict.result.trace.events
    ids = [e["call_id"] for e in events if e["kind"] == "tool"]
    assert ids == [ids[0]] * 3 + [ids[3]] * 3 and ids[0] != ids[3]  # two model requests, three attempts each
    kinds = [e["kind"] for e in events if e["kind"] in ("model", "tool", "refusal")]
    assert kinds == ["model", "tool", "tool", "tool", "model", "tool", "tool", "tool", "model", "refusal"]
    assert [e.get("attempt", 1) for e in events if e["kind"] == "tool"] == [1, 2, 3, 1, 2, 3]  # counted apart


def _tables() -> dict[str, list[list[str]]]:
    """Heading -> the cells of every table row under it (header and separator rows left out)."""
    tables: dict[str, list[list[str]]] = {}
    rows: list[list[str]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            rows = tables.setdefault(line.lstrip("#").strip(), [])
        elif line.startswith("| `") or line.startswith("| passed") or line.startswith("| failures"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return tables


def test_the_per_design_tables_match_the_data() -> None:
    tables = _tables()
    ids = [s.name for s in suite()]
    for design, verdicts in EXPECTED.items():
        rows = {row[0].strip("`"): (row[1], row[2]) for row in tables[f"`builtin:{design}`"]}
        assert list(rows) == ids, design
        for scenario in ids:
            invariants, cls, _ = verdicts.get(scenario, ((), "", ""))
            assert rows[scenario] == (", ".join(f"`{i}`" for i in invariants) or "PASS", cls), (design, scenario)


def test_the_overview_matches_the_data() -> None:
    rows = {row[0].strip("`"): row[3:] for row in _tables()["Overview"]}  # the four designs' columns
    ids = [s.name for s in suite()]
    for column, (design, verdicts) in enumerate(EXPECTED.items()):
        for scenario in ids:
            want = f"fail ({verdicts[scenario][1]})" if scenario in verdicts else "pass"
            assert rows[scenario][column] == want, (design, scenario)
        classes = [cls for _, cls, _ in verdicts.values()]
        assert rows["passed"][column] == f"{len(ids) - len(verdicts)}/{len(ids)}", design
        assert rows["failures that are real harm (a)"][column] == str(classes.count("a")), design
        assert rows["failures that are artifacts (b)"][column] == str(classes.count("b")), design


def test_no_loop_scenario_fails_a_design_at_its_published_constants_on_an_artifact() -> None:
    """Every loop bound is passable by each sound mechanism (docs: Bounds and their derivations): what the
    ports and designs fail there (the data above, checked against today's runs) is real harm, class a."""
    loops = {s.name for s in suite() if s.category == "loops"}
    artifacts = {(design, sc) for design, verdicts in EXPECTED.items() for sc, (_, cls, _) in verdicts.items()
                 if sc in loops and cls != "a"}
    assert artifacts == set()
    assert FIRST_RUN["loop-abab-contradictory"][1] == "b"  # the check has seen one: sdk-retries' first run


def test_the_sdk_default_transport_under_sound_decisions_is_certified() -> None:
    """Issue's done-when: it failed the critical level on its first run; it reaches every level now, its only
    failures the advisory quota-header waits (real, but required by no level)."""
    from toolchaos.reports import certified, level_reached

    verdicts = certify("builtin:sdk-retries")
    assert certified(verdicts, "critical") and level_reached(verdicts) == "all"
    assert {v.id for v in verdicts if not v.passed} == set(QUOTA_FORMS)
    fixed = {v.id: v.severity for v in verdicts if v.id in FIRST_RUN and v.id not in QUOTA_FORMS}
    assert set(fixed) == set(FIRST_RUN) - set(QUOTA_FORMS) and "critical" in fixed.values()  # it failed them then
