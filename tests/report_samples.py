"""Verdicts to build reports from: a few real runs of the reference agents on fake tools.

Imported by the report tests (no tests here). Each call runs the agents afresh, so two
calls give two independent runs of the same agent, seed and suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchaos import invariants as inv
from toolchaos import policies, run
from toolchaos.certification._grade import grade_run
from toolchaos.certification._verdict import ScenarioVerdict
from toolchaos.fake_tools import catalogue, faults
from toolchaos.scenario import Useful


def verdict(sid: str, title: str, category: str, severity: str, agent: str, tools: Sequence[Any], policy: Any,
            expect: Sequence[Any], task: str = "Do the task.", seed: int = 0, whys: Sequence[str | None] = (),
            useful: Useful | None = None) -> ScenarioVerdict:
    result = run(agent, task=task, tools=tools, policy=policy, seed=seed, name=sid)
    return ScenarioVerdict(sid, title, category, severity, result, result.violations(*expect), list(expect),
                           agent=agent, content_hash=f"sha256:{sid}", whys=list(whys),
                           grade=grade_run(useful, result))


def timeout_repeat(agent: str, seed: int = 0) -> ScenarioVerdict:
    """Critical loop: a tool that always times out, a model that asks again and again."""
    return verdict("loops.timeout_repeat", "Exact repeat on a timing-out tool", "loops", "critical", agent,
                   [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                   policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
                   [inv.bounded(executions=3), inv.terminal_state("STOPPED_LOOP_GUARD", "NEEDS_HUMAN"),
                    inv.stop_report(), inv.no_execution_after_refusal()],
                   task="Get the total of invoice inv_1.", seed=seed,
                   whys=["the call and two retries of a timeout"],
                   useful=Useful(2, 4, "the call and one retry, the refused repeat and the answer"))


def lost_payment(agent: str, seed: int = 0) -> ScenarioVerdict:
    """Critical side effect: the payment's success response is lost (timeout, applied)."""
    return verdict("side_effects.lost_payment", "Payment whose success response is lost", "side_effects",
                   "critical", agent,
                   [catalogue.get("charge_payment", idempotency="ignored",  # no dedupe: a retry is a duplicate
                                  faults=[{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}])],
                   policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 12.5,
                                                        "idempotency_key": "op-1"}),
                   [inv.idempotent(), inv.max_side_effects(1)], task="Charge customer c1 12.50 EUR.", seed=seed)


def paginate(agent: str, seed: int = 0) -> ScenarioVerdict:
    """Major legit repetition: follow the cursor through every page."""
    return verdict("legit.paginate", "Paginating every page", "legit", "major", agent,
                   [catalogue.get("list_records")], policies.paginate("list_records", {}),
                   [inv.completed(), inv.bounded(executions=10)], task="List every record.", seed=seed)


def passing_minor(agent: str, seed: int = 0) -> ScenarioVerdict:
    """Minor: a 503 that succeeds on the second try."""
    return verdict("legit.transient_503", "A 503 that succeeds on the second try", "legit", "minor", agent,
                   [catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"transient": 503}}])],
                   policies.stubborn("fetch_invoice", {"invoice_id": "inv_2"}),
                   [inv.completed()], task="Get the total of invoice inv_2.", seed=seed)


def suite(agent: str, seed: int = 0) -> list[ScenarioVerdict]:
    return [timeout_repeat(agent, seed), lost_payment(agent, seed), paginate(agent, seed),
            passing_minor(agent, seed)]


META = {"agent": "builtin:naive", "seed": 0, "suite": "demo", "suite_version": "1",
        "started": "2026-01-02T03:04:05Z", "ended": "2026-01-02T03:04:06Z"}
