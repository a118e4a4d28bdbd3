"""Fault-schedule fuzzing: the proofs of issue 5, shrinking, YAML regressions, reproduction.

- fuzzing ``builtin:naive`` finds a duplicate side effect, shrunk to one faulty call;
- fuzzing ``builtin:guarded`` over certification-like tools finds nothing in 500 examples;
- a planted bug in a guarded variant (its idempotency check skipped after a 503) is found
  and shrunk to at most 3 faulty calls;
- the shrunk case printed as YAML loads as a scenario and fails the same way.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import strategies as st
from toolchaos import Budgets, GuardConfig, GuardedAgent, RunResult, invariants, policies
from toolchaos.fake_tools import catalogue
from toolchaos.fake_tools import faults as F
from toolchaos.fuzzing._core import (
    FuzzFailed,
    FuzzSpec,
    FuzzSpecError,
    fuzz,
    fuzz_scenario,
    in_ci,
    invariant_data,
    must_hold,
    policy_data,
)
from toolchaos.strategies import SpecPolicy, build_policy, plan

PAY = {"customer_id": "c1", "amount": 10.0}
# A payment API without dedupe: the runtime's own idempotency check is all that stands between a
# lost response and a second charge (against a key-honouring API the planted bug would be harmless).
TOOLS = [catalogue.get("charge_payment", idempotency="ignored"), catalogue.get("fetch_invoice"),
         catalogue.get("get_job_status")]
CERT_TOOLS = [catalogue.get(n) for n in ("fetch_invoice", "charge_payment", "send_email", "get_job_status",
                                           "list_records")]


# --- a planted bug: the guarded agent, with its idempotency check skipped after a 503 -------------


class _TrippedConfig:
    """The guarded agent's config, with ``idempotency`` switched off once a 503 was seen."""

    def __init__(self, cfg: GuardConfig) -> None:
        self._cfg, self.tripped = cfg, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cfg, name)

    @property
    def idempotency(self) -> bool:
        return self._cfg.idempotency and not self.tripped


class _Watch:
    """The toolbox, watched for a 503."""

    def __init__(self, tools: Any, cfg: _TrippedConfig) -> None:
        self._tools, self._cfg = tools, cfg

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools, name)

    def call(self, name: str, args: Any = None, /, **kw: Any) -> Any:
        out = self._tools.call(name, args, **kw)
        err = out.get("error") if isinstance(out, dict) else None
        if isinstance(err, dict) and err.get("code") == "unavailable":
            self._cfg.tripped = True
        return out


def skips_idempotency_after_503(task: str, model: Any, tools: Any) -> Any:
    cfg = _TrippedConfig(GuardConfig())
    agent = GuardedAgent()
    agent.config = cfg  # type: ignore[assignment]
    return agent(task, model, _Watch(tools, cfg))


def test_the_planted_bug_is_silent_without_a_503() -> None:
    from toolchaos import run

    tools = plan(TOOLS, {"charge_payment": [F.timeout(30, applied=True)]})
    result = run(skips_idempotency_after_503, task="t", tools=tools, policy=policies.stubborn("charge_payment", PAY))
    assert result.terminal_state == "NEEDS_HUMAN" and not result.violations(invariants.idempotent())


# --- the proofs --------------------------------------------------------------------------------------


def test_fuzzing_naive_finds_a_duplicate_side_effect_shrunk_to_one_faulty_call() -> None:
    report = fuzz("builtin:naive", tools=TOOLS, policy=policies.stubborn("charge_payment", PAY), examples=200,
                  database=None, seed=1)
    failure = report.failure("idempotent")
    assert failure is not None, report.message()
    _assert_minimal(failure)
    # what the bug needs: some answer to a charge the agent could not read as done
    assert any(f.kind in _UNREAD for _, f in failure.plan.rules("charge_payment")), failure.plan
    assert failure.result.ledger.duplicates()  # the ground truth: the card was charged twice
    with pytest.raises(FuzzFailed, match="broke idempotent"):
        report.check()


def test_fuzzing_guarded_over_certification_tools_finds_nothing_in_500_examples() -> None:
    report = fuzz("builtin:guarded", tools=CERT_TOOLS, policy="vary", examples=500, database=None, seed=20260)
    assert report.ok, report.message()
    assert report.examples == 500
    assert report.check() is report


def _first_failure(seeds: tuple[int, ...], **kw: Any) -> Any:
    # Two faults must meet (a 503, then a lost answer after the effect applied): one
    # exploration of 500 examples finds them about 4 times in 5, three in a row all but surely.
    for seed in seeds:
        failure = fuzz(skips_idempotency_after_503, tools=TOOLS, examples=500, database=None, seed=seed,
                       **kw).failure("idempotent")
        if failure is not None:
            return failure
    raise AssertionError(f"the planted bug was not found with seeds {seeds}")


def test_a_planted_idempotency_bug_is_found_and_shrunk_to_at_most_3_faulty_calls() -> None:
    failure = _first_failure((2, 3, 4), policy=policies.stubborn("charge_payment", PAY), vary=["charge_payment"],
                             kinds=["timeout", "transient"])
    assert 2 <= failure.faulty_calls <= 3
    _assert_minimal(failure)
    # what the bug needs, whatever order the shrinker leaves them in: a 503 (it trips the bug)
    # and a charge whose answer was lost after it applied (the second charge follows)
    faults = _faults(failure.plan)
    assert any(_is_503(f) for f in faults), failure.plan
    assert any(f.kind == "timeout" and f.applied for f in faults), failure.plan
    assert failure.result.ledger.duplicates()


def test_the_planted_bug_is_also_found_with_the_default_kinds_when_the_policy_varies() -> None:
    failure = _first_failure((1, 5, 6))
    assert failure.faulty_calls <= 3
    _assert_minimal(failure)
    # The bug is silent without a 503 (test above): the shrunk plan keeps one, on whichever tool
    # the drawn policy calls first; which tool is the shrinker's choice, not a promise.
    assert any(_is_503(f) for f in _faults(failure.plan)), failure.plan
    assert failure.result.ledger.duplicates()


def test_the_same_seed_finds_the_same_failure() -> None:
    # Within one hypothesis version an explicit seed repeats the exploration: same plan, same run.
    def found(seed: int) -> Any:
        return fuzz(skips_idempotency_after_503, tools=TOOLS, examples=300, database=None, seed=seed)

    for seed in (1, 5, 6):
        first = found(seed)
        if first.failures:
            break
    second = found(seed)
    assert [repr(f.plan) for f in first.failures] == [repr(f.plan) for f in second.failures]
    assert [f.result.trace.events for f in first.failures] == [f.result.trace.events for f in second.failures]
    assert first.examples == second.examples


def test_the_minimality_check_can_fail() -> None:
    # A plan with a fault the bug does not need is not minimal: _assert_minimal says so.
    base = _first_failure((2, 3, 4), policy=policies.stubborn("charge_payment", PAY), vary=["charge_payment"],
                          kinds=["timeout", "transient"])
    rules = dict(base.plan.rules("charge_payment"))
    calls = [rules.get(n, F.ok()) for n in range(1, max(rules) + 1)]
    padded = plan(TOOLS, {"charge_payment": calls, "fetch_invoice": [F.empty()]})
    bloated = replace(base, plan=padded)
    assert base.target.run_case(padded, base.policy, base.run_seed)[1]  # still fails with the extra fault
    with pytest.raises(AssertionError, match="not minimal"):
        _assert_minimal(bloated)


# --- what a shrunk failure promises ----------------------------------------------------------------

# faults whose answer leaves an applied charge unread (the naive agent charges again)
_UNREAD = ("empty", "timeout", "malformed", "contradictory", "oversized", "slow")


def _faults(p: Any) -> list[Any]:
    return [f for tool in p.tools for _, f in p.rules(tool.name)]


def _is_503(fault: Any) -> bool:
    return bool(fault.kind == "transient" and fault.code == "unavailable")


def _without(p: Any, tool: str, call: int) -> Any:
    """``p`` with call ``call`` of ``tool`` answered plainly (its fault removed)."""
    faults = {name: tuple(F.ok() if (name, n) == (tool, call) else f for n, f in enumerate(fs, 1))
              for name, fs in p.faults.items()}
    return plan(TOOLS, faults, p.defaults)


def _assert_minimal(failure: Any) -> None:
    """The shrunk plan is minimal: without any one of its faults, the invariant holds."""
    again = failure.target.run_case(failure.plan, failure.policy, failure.run_seed)[1]
    assert any(v.invariant == failure.invariant for v in again), "the shrunk plan no longer fails"
    for tool in failure.plan.tools:
        for n, fault in failure.plan.rules(tool.name):
            violations = failure.target.run_case(_without(failure.plan, tool.name, n), failure.policy,
                                                 failure.run_seed)[1]
            assert not any(v.invariant == failure.invariant for v in violations), (
                f"not minimal: {failure.plan} still breaks {failure.invariant} without {tool.name} call {n} {fault}")


# --- the shrunk case as a YAML scenario ----------------------------------------------------------


def _scenario_module() -> Any:
    import toolchaos.scenario

    return toolchaos.scenario


@pytest.mark.parametrize("agent", ["builtin:naive", skips_idempotency_after_503])
def test_the_shrunk_yaml_loads_and_fails_the_same_way(agent: Any) -> None:
    scenario_mod = _scenario_module()
    from toolchaos.certification import run_scenario

    kw: dict[str, Any] = {"policy": policies.stubborn("charge_payment", PAY), "task": "Charge customer c1 once."}
    if agent == "builtin:naive":
        failure = fuzz(agent, tools=TOOLS, examples=200, database=None, seed=3, **kw).failure("idempotent")
    else:
        failure = _first_failure((2, 3, 4), vary=["charge_payment"], kinds=["timeout", "transient"], **kw)
    assert failure is not None
    text = failure.yaml
    assert text.startswith("# Regression found by `toolchaos` fuzzing")
    (scenario,) = scenario_mod.load_text(text)
    assert scenario.task == "Charge customer c1 once." and scenario.category == "side_effects"
    verdict = run_scenario(scenario, agent)
    assert not verdict.passed
    assert verdict.violations[0].invariant == "idempotent"
    assert verdict.violations[0].seq == failure.violations[0].seq  # same run, same event
    def story(events: list[dict[str, Any]]) -> list[Any]:
        return [(e["seq"], e["kind"], e.get("tool"), e.get("outcome"), e.get("effects")) for e in events]

    assert story(verdict.result.trace.events) == story(failure.result.trace.events)


def test_the_yaml_is_a_complete_scenario() -> None:
    report = fuzz("builtin:naive", tools=TOOLS, policy=policies.stubborn("charge_payment", PAY), examples=200,
                  database=None, seed=1, budgets={"max_steps": 30})
    failure = report.failure("idempotent")
    assert failure is not None
    data = yaml.safe_load(failure.yaml)
    assert list(data) == ["id", "title", "category", "severity", "description", "seed", "task", "tools", "policy",
                          "budgets", "expect"]
    assert data["id"].startswith("fuzz-idempotent-")
    assert data["severity"] == "critical"
    assert data["budgets"] == {"max_steps": 30}
    assert data["policy"] == {"stubborn": {"tool": "charge_payment", "args": PAY, "until": "success"}}
    assert {"bounded": {"executions": 50, "turns": 30}} in data["expect"]
    assert "idempotent" in data["expect"]
    assert "fuzz(..., seed=1)" in failure.yaml
    message = report.message()
    assert "Save this scenario under scenarios/" in message and "trace around event" in message


def test_distinct_invariants_are_distinct_failures() -> None:
    # naive retries a 429 at once and loops to its step cap (no stop report), and charges twice after a lost answer
    # (hypothesis keeps looking for other bugs only briefly after the first: a few seeds may be needed)
    for seed in range(1, 8):
        report = fuzz("builtin:naive", tools=TOOLS, policy=policies.stubborn("charge_payment", PAY), examples=200,
                      database=None, seed=seed, kinds=["transient", "empty"])
        if len(report.failures) > 1:
            break
    assert {f.invariant for f in report.failures} == {"idempotent", "stop_report"}
    for failure in report.failures:
        _assert_minimal(failure)
    assert "2 distinct failure(s)" in report.message()


# --- reproduction: CI, blobs, the example database ------------------------------------------------


def test_in_ci_the_run_is_derandomised_and_prints_a_blob_that_replays_the_case() -> None:
    kw: dict[str, Any] = {"tools": TOOLS, "policy": policies.stubborn("charge_payment", PAY), "examples": 100}
    first = fuzz("builtin:naive", ci=True, **kw)
    second = fuzz("builtin:naive", ci=True, **kw)
    assert first.seed == second.seed
    assert [repr(f.plan) for f in first.failures] == [repr(f.plan) for f in second.failures]
    failure = first.failure("idempotent")
    assert failure is not None and failure.blob
    assert f"blob={failure.blob!r}" in failure.yaml
    replay = fuzz("builtin:naive", ci=False, database=None, blob=failure.blob, **kw)
    assert replay.examples == 1
    again = replay.failure("idempotent")
    assert again is not None and repr(again.plan) == repr(failure.plan)


def test_ci_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert in_ci()
    for off in ("", "0", "false"):
        monkeypatch.setenv("CI", off)
        assert not in_ci()
    monkeypatch.delenv("CI")
    assert not in_ci()


def test_a_found_failure_replays_first_from_the_example_database(tmp_path: Path) -> None:
    kw: dict[str, Any] = {"tools": TOOLS, "policy": policies.stubborn("charge_payment", PAY), "ci": False,
                          "database": tmp_path / "db", "examples": 100}
    first = fuzz("builtin:naive", **kw)
    assert first.failure("idempotent") is not None
    assert isinstance(first.seed, int)  # the seed hypothesis drew, for fuzz(..., seed=...)
    assert list((tmp_path / "db").iterdir())
    seen: list[bool] = []
    from toolchaos.fuzzing._core import FuzzTarget, fuzz_target

    target = FuzzTarget("builtin:naive", TOOLS, kw["policy"])
    second = fuzz_target(target, ci=False, database=tmp_path / "db", examples=100,
                         on_example=lambda r: seen.append(bool(r.ledger.duplicates())))
    assert seen[0], "the saved failing case runs first"
    assert second.failure("idempotent") is not None
    other = FuzzTarget("builtin:guarded", TOOLS, kw["policy"])  # another target: its own keys
    replayed: list[RunResult] = []
    fuzz_target(other, ci=False, database=tmp_path / "db", examples=5, on_example=replayed.append)
    assert not any(r.ledger.duplicates() for r in replayed)


def test_the_database_key_is_the_one_hypothesis_computes_worked_out_once() -> None:
    # Saved examples stay where they were: the key hypothesis would read from the test's source,
    # set on the test so that hypothesis does not read the source again on every call.
    from hypothesis.internal.reflection import function_digest
    from toolchaos.fuzzing._core import FuzzTarget, _hypothesis_test

    target = FuzzTarget("builtin:naive", TOOLS, policies.stubborn("charge_payment", PAY))
    tests = [_hypothesis_test(target, lambda plan, policy, seed: None, examples=1, seed=None, ci=False,
                              database=None, blob=None) for _ in range(2)]
    inner = tests[0].hypothesis.inner_test  # type: ignore[attr-defined]
    assert tests[0]._hypothesis_internal_database_key == function_digest(inner)  # type: ignore[attr-defined]
    assert tests[1]._hypothesis_internal_database_key == function_digest(inner)  # type: ignore[attr-defined]


def test_the_heap_made_before_a_fuzz_call_is_frozen_during_it_and_thawed_after() -> None:
    import gc

    from toolchaos.fuzzing._core import FuzzTarget, fuzz_target

    target = FuzzTarget("builtin:naive", TOOLS, policies.stubborn("charge_payment", PAY))
    during: list[int] = []
    # From an unfrozen heap: a library loaded earlier in this process may have frozen it (seen on
    # 3.12 in a full run), and a frozen heap is one the fuzzer leaves as it is (the second half).
    gc.unfreeze()
    fuzz_target(target, examples=3, seed=1, database=None, on_example=lambda r: during.append(gc.get_freeze_count()))
    assert during and all(n > 0 for n in during)  # the full passes during the call skip the older objects
    assert gc.get_freeze_count() == 0
    gc.freeze()  # a heap someone else froze: left frozen, as it was
    try:
        frozen = gc.get_freeze_count()
        fuzz_target(target, examples=3, seed=1, database=None)
        assert gc.get_freeze_count() >= frozen - 10  # still frozen (less what was freed meanwhile)
    finally:
        gc.unfreeze()


# --- options ---------------------------------------------------------------------------------------


def test_must_hold_bounds_follow_the_budgets() -> None:
    names = [i.name for i in must_hold()]
    assert names == ["terminated", "bounded", "idempotent", "terminal_state", "stop_report",
                     "no_execution_after_refusal"]
    bounded = must_hold(40, Budgets(max_steps=10, max_executions=60))[1]
    assert bounded.params() == {"executions": 40, "turns": 10}


def test_a_policy_strategy_and_custom_invariants_are_accepted() -> None:
    report = fuzz("builtin:guarded", tools=TOOLS, policy=st.just(policies.stubborn("fetch_invoice", {"invoice_id": "i"})),
                  invariants=[invariants.bounded(executions=3)], kinds=["timeout"], examples=30, database=None, seed=5)
    failure = report.failure("bounded")
    assert report.ok or (failure is not None and failure.faulty_calls <= 3)


def test_policy_data_spells_every_builtin_policy() -> None:
    cases = [policies.stubborn("fetch_invoice", {"invoice_id": "i"}, until="never", max_turns=4),
             policies.jitter("fetch_invoice", {"invoice_id": "i"}),
             policies.paraphrase("search", {"query": "q"}),
             policies.alternate([{"call": "search", "args": {"query": "a"}}, {"call": "fetch_invoice", "args": {}}]),
             policies.poll_until("get_job_status", {"job_id": "j"}),
             policies.paginate("list_records"),
             policies.explore("search", [{"query": "a"}, {"query": "b"}], goal=2),
             policies.obedient(policies.stubborn("search", {"query": "q"})),
             policies.ignores_refusals(policies.stubborn("search", {"query": "q"})),
             policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}])]
    for p in cases:
        data = policy_data(p)
        rebuilt = build_policy(data)
        assert type(rebuilt) is type(p) and policy_data(rebuilt) == data
    assert policy_data(SpecPolicy({"stubborn": {"tool": "x"}})) == {"stubborn": {"tool": "x"}}
    with pytest.raises(TypeError, match="no plain-data spelling"):
        policy_data(lambda view: None)


def test_invariant_data_is_what_scenarios_accept() -> None:
    assert invariant_data(invariants.idempotent()) == "idempotent"
    assert invariant_data(invariants.stop_report()) == "stop_report"
    assert invariant_data(invariants.stop_report(["guard"])) == {"stop_report": {"fields": ["guard"]}}
    assert invariant_data(invariants.terminal_state("FAILED")) == {"terminal_state": ["FAILED"]}
    assert invariant_data(invariants.bounded(executions=3)) == {"bounded": {"executions": 3}}


# --- scenarios with a fuzz: block -----------------------------------------------------------------

SCENARIO = """
id: fuzz-me
title: charge once
task: Charge customer c1 once.
tools:
  charge_payment:
    faults: [{call: 1, outcome: {transient: 503}}]
  fetch_invoice: {}
policy:
  stubborn: {tool: charge_payment, args: {customer_id: c1, amount: 10.0}}
expect:
  - terminal_state: [COMPLETED]
"""


def test_fuzz_spec_validates_and_names_the_field() -> None:
    spec = FuzzSpec.from_data({"vary": ["charge_payment"], "kinds": "timeout", "examples": 20, "check": "both"},
                              ["charge_payment"])
    assert spec.vary == ("charge_payment",) and spec.kinds == ("timeout",) and spec.examples == 20
    assert FuzzSpec.from_data(None) == FuzzSpec()
    bad = [({"kinds": ["timeout", "timout"]}, r"fuzz.kinds\[1\]: unknown fault kind 'timout'.*did you mean"),
           ({"vary": ["nope"]}, r"fuzz.vary\[0\]: unknown tool 'nope'"),
           ({"exmples": 3}, r"fuzz.exmples: unknown key; did you mean 'examples'"),
           ({"examples": 0}, r"fuzz.examples: expected an integer from 1 to 10,000"),
           ({"examples": 1_000_000_000}, r"fuzz.examples: expected an integer from 1 to 10,000, got 1000000000"),
           ({"policy": "random"}, r"fuzz.policy: expected one of scenario, vary"),
           ({"vary_seed": "yes"}, r"fuzz.vary_seed: expected true or false"),
           ([1], r"fuzz: expected a mapping")]
    for data, pattern in bad:
        with pytest.raises(FuzzSpecError, match=pattern):
            FuzzSpec.from_data(data, ["charge_payment"])


def test_fuzzing_a_scenario_uses_its_tools_task_policy_and_seed() -> None:
    scenario_mod = _scenario_module()
    (scenario,) = scenario_mod.load_text(SCENARIO)
    report = fuzz_scenario(scenario, {"vary": ["charge_payment"], "examples": 100}, agent="builtin:naive",
                           database=None, seed=4)
    failure = report.failure("idempotent")
    assert failure is not None and failure.faulty_calls == 1
    data = yaml.safe_load(failure.yaml)
    assert data["task"] == "Charge customer c1 once."
    assert data["policy"] == {"stubborn": {"tool": "charge_payment", "args": {"customer_id": "c1", "amount": 10.0}}}
    assert data["tools"]["fetch_invoice"] == {"default": "ok"}
    (again,) = scenario_mod.load_text(failure.yaml)
    assert again.id == data["id"]
    guarded = fuzz_scenario(scenario, {"examples": 50, "check": "must_hold"}, database=None, seed=4)
    assert guarded.ok, guarded.message()
    both = fuzz_scenario(scenario, {"examples": 50, "check": "both"}, database=None, seed=4)
    assert both.failure("terminal_state") is not None  # the scenario's own expect does not hold under any schedule


WORLD_SCENARIO = """
id: fuzz-world
title: a record written twice
category: side_effects
task: Mark rec_1 as paid.
world:
  records:
    rec_1: {record_id: rec_1, data: {status: draft}}
tools:
  write_record: {idempotency: ignored}
  read_record: {}
policy:
  scripted:
    - {call: read_record, args: {record_id: rec_1}}
    - {call: write_record, args: {record_id: rec_1, data: {status: paid}}}
    - {call: write_record, args: {record_id: rec_1, data: {status: paid}}}
    - {final: Paid.}
expect:
  - world_state: {collection: records, where: {record_id: rec_1}, holds: {data: {status: paid}}}
"""


def test_a_fuzzed_scenario_starts_every_case_from_its_world_and_its_regression_keeps_it() -> None:
    (scenario,) = _scenario_module().load_text(WORLD_SCENARIO)
    report = fuzz_scenario(scenario, {"vary": ["read_record"], "examples": 20, "check": "both"},
                           agent="builtin:naive", database=None, seed=1)
    failure = report.failure("idempotent")
    assert failure is not None and failure.result.world.records("records")[0]["data"] == {"status": "paid"}
    data = yaml.safe_load(failure.yaml)
    assert data["world"] == {"records": {"rec_1": {"record_id": "rec_1", "data": {"status": "draft"}}}}
    assert data["tools"]["write_record"]["idempotency"] == "ignored"
    (again,) = _scenario_module().load_text(failure.yaml)
    assert again.world == data["world"]
