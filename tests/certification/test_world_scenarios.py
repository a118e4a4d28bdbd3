"""The issue's proofs for the fake world, as tests over the certification scenarios.

Three small runtimes retry a timed-out charge, each its own way:

- ``same_key``: a stable idempotency key per operation (what payment APIs ask for);
- ``new_key``: a fresh key per attempt (a common bug: a uuid4 made inside the retry loop);
- ``looks_up``: before any retry, the lookup of the charge made under its key.

Against a key-honouring API the stable key passes and a fresh key charges twice; against an
API without dedupe (``idempotency: ignored``) both charge twice; the lookup passes the
lost-response scenario, where the plain loop charges twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from toolchaos import AgentResult, tool_message
from toolchaos.certification import run_scenario, suite
from toolchaos.fake_tools import canonical

Key = Callable[[str, dict[str, Any], int], str]


def _retrying(key: Key, look_up: bool = False) -> Callable[..., Any]:
    """A plain loop that retries a timed-out side effect up to 3 times, with ``key`` for its idempotency key,
    and stops for a human on a FATAL error."""

    def agent(task: str, model: Any, tools: Any) -> AgentResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(10):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return AgentResult("COMPLETED", answer=turn.text)
            for call in turn.tool_calls:
                result = _call(tools, call, key, look_up)
                if isinstance(result, dict) and result.get("error", {}).get("class") == "FATAL":
                    return AgentResult("NEEDS_HUMAN", report={
                        "guard": "fatal_error", "reason": f"{call.name}: {result['error']['code']}", "completed": [],
                        "unmet_precondition": result["error"]["code"], "last_checkpoint": {"step": len(messages)},
                        "resume_condition": "fix the permission, then run again"})
                messages.append(tool_message(call, result))
        return AgentResult("STOPPED_LOOP_GUARD", report={"guard": "budget.steps", "reason": "10 steps",
                                                         "completed": [], "resume_condition": "raise the budget"})

    return agent


def _call(tools: Any, call: Any, key: Key, look_up: bool) -> Any:
    spec = tools.spec(call.name)
    result: Any = None
    for attempt in range(3):
        args = dict(call.arguments)
        if spec.idempotency_key:
            args[spec.idempotency_key] = key(call.name, dict(call.arguments), attempt)
        if attempt and look_up:
            found = tools.call("get_charge", {"idempotency_key": args[spec.idempotency_key]})
            if "error" not in found:
                return found  # it did apply: the lost response's charge
        result = tools.call(call.name, args, call_id=call.id)
        if not (isinstance(result, dict) and result.get("error", {}).get("code") == "timeout"):
            return result
    return result


def _stable(name: str, args: dict[str, Any], attempt: int) -> str:
    return f"{name}-{canonical(args)}"


_fresh = itertools.count(1)


def _new(name: str, args: dict[str, Any], attempt: int) -> str:
    return f"{name}-{next(_fresh)}"


same_key, new_key, looks_up = _retrying(_stable), _retrying(_new), _retrying(_stable, look_up=True)
SCENARIOS = {s.name: s for s in suite()}


def verdict(scenario: str, agent: Any) -> Any:
    return run_scenario(SCENARIOS[scenario], agent)


def test_a_retry_with_the_same_key_passes_against_an_honouring_api_and_fails_without_dedupe() -> None:
    honoured = verdict("side-retry-same-key-honoured", same_key)
    assert honoured.passed, honoured.violations
    assert honoured.result.ledger.applied("charge_payment") == 1 and honoured.result.ledger.replayed() == 1
    ignored = verdict("side-no-dedupe-retry-duplicates", same_key)
    assert not ignored.passed and ignored.result.ledger.applied("charge_payment") == 2
    assert {v.invariant for v in ignored.violations} >= {"max_side_effects", "idempotent"}


@pytest.mark.parametrize("scenario", ["side-retry-same-key-honoured", "side-no-dedupe-retry-duplicates",
                                      "side-lost-payment-lookup", "side-lost-payment-response"])
def test_a_retry_with_a_new_key_charges_twice_everywhere(scenario: str) -> None:
    v = verdict(scenario, new_key)
    assert not v.passed and v.result.ledger.applied("charge_payment") == 2
    assert v.result.ledger.replayed() == 0  # nothing the API could replay: every key was new


def test_looking_the_charge_up_passes_the_lost_response_scenario_and_naive_fails_it() -> None:
    v = verdict("side-lost-payment-lookup", looks_up)
    assert v.passed, v.violations
    executed = [e["tool"] for e in v.result.trace.tool_events]
    assert executed == ["charge_payment", "get_charge"]  # found: no retry at all
    naive = verdict("side-lost-payment-lookup", "builtin:naive")
    assert not naive.passed and naive.result.ledger.duplicates()
    lossy = verdict("side-lossy-dedupe-lookup", looks_up)
    assert lossy.passed, lossy.violations
    assert not verdict("side-lossy-dedupe-lookup", same_key).passed  # the key alone is not enough there


def test_the_reference_agent_takes_the_right_move_in_each() -> None:
    lookup = verdict("side-lost-payment-lookup", "builtin:guarded").result
    assert [e["tool"] for e in lookup.trace.tool_events] == ["charge_payment", "get_charge"]
    same = verdict("side-retry-same-key-honoured", "builtin:guarded").result
    assert [e["outcome"] for e in same.trace.tool_events] == ["timeout", "replay"]
    stop = verdict("side-no-dedupe-retry-duplicates", "builtin:guarded").result
    assert stop.terminal_state == "NEEDS_HUMAN" and len(stop.trace.tool_events) == 1


def test_a_restarted_run_meets_the_world_the_first_one_left() -> None:
    v = verdict("resume-redo-only-unfinished", same_key)  # resends the finished writes under stable keys
    assert v.passed, v.violations
    ledger = v.result.ledger
    assert ledger.applied("write_record") == 3 and ledger.replayed("write_record") == 2
    assert [r["record_id"] for r in v.result.world.records("records")] == ["rec_a", "rec_b", "rec_c"]


def test_each_lost_charge_scenario_declares_its_apis_idempotency_in_the_spec_the_runtime_gets() -> None:
    """What the runtime can see decides: the lossy dedupe is in ``tools.specs``, not only in a tool attribute."""
    seen: dict[str, Any] = {}

    def reads_specs(task: str, model: Any, tools: Any) -> AgentResult:
        seen.update({s["name"]: s["x-idempotency"] for s in tools.specs})
        return AgentResult("NEEDS_HUMAN", report={"guard": "g", "reason": "r", "completed": [], "resume_condition": "c"})

    declared = {"side-lossy-dedupe-lookup": "honoured-after-delivery", "side-no-dedupe-retry-duplicates": "ignored",
                "side-retry-same-key-honoured": "honoured", "side-lost-payment-lookup": "honoured"}
    for scenario, value in declared.items():
        seen.clear()
        verdict(scenario, reads_specs)
        assert seen["charge_payment"] == value, scenario
