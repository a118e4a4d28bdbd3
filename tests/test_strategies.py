"""toolchaos.strategies: outcomes, fault schedules and policies as hypothesis strategies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from toolchaos import invariants, run
from toolchaos.fake_tools import DefinitionError, catalogue, fake_tool
from toolchaos.fake_tools import faults as F
from toolchaos.fake_tools.faults import CallInfo
from toolchaos.strategies import (
    ALL_KINDS,
    DEFAULT_KINDS,
    FaultPlan,
    ScheduleCodec,
    SpecPolicy,
    _Bytes,
    _Flat,
    _Pick,
    build_policy,
    describe_fault,
    example_args,
    fault_data,
    fault_schedules,
    fault_table,
    outcomes,
    plan,
    policies,
    policy_specs,
    tool_data,
)

FAST = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
NO_EXPLAIN = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
TOOLS = [catalogue.get("charge_payment"), catalogue.get("fetch_invoice"), catalogue.get("get_job_status")]


# --- outcomes and their YAML spelling -------------------------------------------------------


def test_every_fault_in_the_table_round_trips_through_its_yaml_spelling() -> None:
    for fault in (F.ok(), F.ok({"total": 3}), F.empty({"items": []}), *fault_table(ALL_KINDS),
                  F.fatal("invalid_argument", field="invoice_id"), F.pending(None, then=F.fatal("not_found"))):
        assert F.as_fault(fault_data(fault)) == fault, fault


def test_the_default_kinds_leave_out_paginated_and_all_kinds_are_drawable() -> None:
    assert "paginated" not in DEFAULT_KINDS
    assert {f.kind for f in fault_table()} == set(DEFAULT_KINDS)
    assert {f.kind for f in fault_table(ALL_KINDS)} == set(ALL_KINDS)


@FAST
@given(fault=outcomes(["timeout", "fatal"]))
def test_outcomes_draw_only_the_kinds_asked_for(fault: F.Fault) -> None:
    assert fault.kind in ("ok", "timeout", "fatal")


def test_outcomes_shrink_to_ok_and_unknown_kinds_are_named() -> None:
    assert find(outcomes(), lambda f: True) == F.ok()
    assert find(outcomes(ok=False), lambda f: True) == fault_table()[0]
    with pytest.raises(ValueError, match="unknown fault kind 'timout'; did you mean 'timeout'"):
        outcomes(["timout"])


def test_describe_fault_reads_like_a_call() -> None:
    assert describe_fault(F.timeout(30, applied=True)) == "timeout(after=30, applied=True)"
    assert describe_fault(F.transient(429, retry_after=10)) == "transient(code=429, retry_after=10)"
    assert describe_fault(F.ok()) == "ok"


# --- fault schedules ---------------------------------------------------------------------------


@FAST
@given(p=fault_schedules(TOOLS, max_calls=4))
def test_a_plan_gives_each_call_its_drawn_outcome(p: FaultPlan) -> None:
    assert [t.name for t in p] == [t.name for t in TOOLS]
    for tool in p:
        drawn = p.faults.get(tool.name, ())
        assert len(drawn) <= 4
        for n in range(1, 6):
            expected = drawn[n - 1] if n <= len(drawn) else F.ok()
            assert tool.schedule.pick(CallInfo(tool.name, {}, n, "{}", 0.0, {}, lambda: None), 1) == expected
    assert p.faulty_calls == sum(1 for _, fs in p.faults.items() for f in fs if f != F.ok())


@FAST
@given(p=fault_schedules(TOOLS, vary=["charge_payment"], kinds=["timeout"], max_faults=2))
def test_vary_kinds_and_max_faults_limit_what_is_drawn(p: FaultPlan) -> None:
    assert set(p.faults) == {"charge_payment"}
    assert p.faulty_calls <= 2
    assert all(f.kind in ("ok", "timeout") for f in p.faults["charge_payment"])
    assert p.tools[1] is TOOLS[1]  # a tool that does not vary is untouched


@FAST
@given(blobs=st.tuples(st.binary(max_size=6), st.binary(max_size=6), st.binary(max_size=6)),
       defaults=st.binary(min_size=3, max_size=3))
def test_the_codec_builds_what_plan_builds_and_caches_it(blobs: tuple[bytes, ...], defaults: bytes) -> None:
    # the fuzzer's decoding (cached per tool schedule, rules built from the table) against the
    # plain path: a byte's value modulo twice the table's size, the lower half meaning ok
    codec = ScheduleCodec(TOOLS, default_kinds=["timeout"])
    table, dtable = fault_table(), fault_table(["timeout"])

    def pick(b: int, options: tuple[F.Fault, ...]) -> F.Fault | None:
        i = b % (2 * len(options))
        return None if i < len(options) else options[i - len(options)]

    faults = {}
    for tool, blob in zip(TOOLS, blobs):
        calls = [pick(b, table) or F.ok() for b in blob]
        while calls and calls[-1] == F.ok():
            calls.pop()
        faults[tool.name] = calls
    dflts = {t.name: f for t, b in zip(TOOLS, defaults) if (f := pick(b, dtable)) is not None}
    expected = plan(TOOLS, faults, dflts)
    got = codec.decode((*blobs, defaults))
    assert got.tools == expected.tools and dict(got.faults) == dict(expected.faults)
    assert dict(got.defaults) == dict(expected.defaults) and repr(got) == repr(expected)
    assert codec.decode((*blobs, defaults)) is got  # the same draw again: the same plan


def test_a_shared_codec_is_built_once_for_the_same_tools_and_options() -> None:
    # fuzz() is called with the same tool objects again and again: its codec, and the plans it
    # has decoded, live on from one call to the next
    codec = ScheduleCodec.shared(TOOLS, kinds=["timeout"])
    assert ScheduleCodec.shared(list(TOOLS), kinds=("timeout",)) is codec
    blobs = (b"\x80", b"", b"")
    assert ScheduleCodec.shared(TOOLS, kinds=["timeout"]).decode(blobs) is codec.decode(blobs)
    assert ScheduleCodec.shared(TOOLS, kinds=["timeout"], max_calls=3) is not codec  # other options
    copies = [catalogue.get(t.name) for t in TOOLS]  # equal tools, other objects: a codec of their own
    assert ScheduleCodec.shared(copies, kinds=["timeout"]) is not codec
    with pytest.raises(ValueError, match="vary names 'nope'"):  # a bad option is an error every time
        ScheduleCodec.shared(TOOLS, vary=["nope"])
    with pytest.raises(ValueError, match="vary names 'nope'"):
        ScheduleCodec.shared(TOOLS, vary=["nope"])


def test_a_tool_that_does_not_vary_keeps_its_own_schedule_and_default() -> None:
    listing = catalogue.get("list_records")
    p = plan([listing, "fetch_invoice"], {"fetch_invoice": [F.ok(), F.timeout(5)]})
    assert p.tools[0] is listing
    assert p.rules("fetch_invoice") == [(2, F.timeout(5))]
    varied = plan([listing], {"list_records": [F.empty()]})
    assert varied.tools[0].schedule.default == listing.schedule.default  # paginated stays the default


def test_unknown_tool_names_and_bad_options_are_errors() -> None:
    with pytest.raises(ValueError, match=r"vary names 'fetch_invoce'.*did you mean 'fetch_invoice'"):
        fault_schedules(TOOLS, vary=["fetch_invoce"])
    with pytest.raises(ValueError, match="max_calls"):
        fault_schedules(TOOLS, max_calls=-1)
    with pytest.raises(ValueError, match="no tools"):
        fault_schedules([])
    with pytest.raises(DefinitionError, match="not in the catalogue"):
        fault_schedules(["no_such_tool"])


def test_schedules_shrink_to_one_simple_fault() -> None:
    minimal = find(fault_schedules(TOOLS), lambda p: p.faulty_calls >= 1,
                   settings=settings(database=None, max_examples=50, phases=NO_EXPLAIN))
    assert minimal.faulty_calls == 1
    (faults,) = (fs for fs in minimal.faults.values() if fs)
    assert faults == (fault_table()[0],)  # the first call, the simplest fault


def test_each_example_draws_every_tool_its_own_schedule() -> None:
    # Drawn as one tuple of byte strings, hypothesis copied one tool's schedule onto another's
    # in ~60% of the examples (its mutator pairs values of one strategy kind); drawn apart, ~1%.
    shared = []

    @settings(max_examples=200, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(p=fault_schedules(TOOLS))
    def draw(p: FaultPlan) -> None:
        rows = [fs for fs in p.faults.values() if fs]
        shared.append(any(a == b for i, a in enumerate(rows) for b in rows[i + 1:]))

    draw()
    assert len(shared) == 200 and sum(shared) < 20


def _drawn(strategy: st.SearchStrategy[Any], seed: int, examples: int = 150) -> list[Any]:
    out: list[Any] = []

    @hseed(seed)
    @settings(max_examples=examples, database=None, suppress_health_check=list(HealthCheck), phases=NO_EXPLAIN)
    @given(strategy)
    def draw(x: Any) -> None:
        out.append(x)

    draw()
    return out


@st.composite
def _spanned(draw: st.DrawFn, parts: tuple[st.SearchStrategy[Any], ...]) -> tuple[Any, ...]:
    return tuple(draw(part, label=i + 1) for i, part in enumerate(parts))  # each part in a span of its own


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bare_choices_draw_what_the_strategies_draw_under_spans_of_their_own(seed: int) -> None:
    # _Flat asks hypothesis for the choices st.binary and st.sampled_from make, without a span each:
    # the same examples from the same seed, so the search (and saved examples) are unchanged.
    options = tuple(range(60))
    flat = _Flat([_Bytes(0, 6), _Bytes(0, 6), _Bytes(0, 6), _Pick(options), _Bytes(3, 3)])
    spanned = _spanned((st.binary(max_size=6), st.binary(max_size=6), st.binary(max_size=6),
                        st.sampled_from(options), st.binary(min_size=3, max_size=3)))
    drawn = _drawn(flat, seed)
    assert len(drawn) == 150 and len(set(drawn)) > 140
    assert drawn == _drawn(spanned, seed)


def test_a_strategy_part_is_drawn_as_it_is_and_a_bad_one_is_hypothesiss_error() -> None:
    drawn = _drawn(_Flat([_Bytes(1, 1), st.integers(5, 9).map(str)]), seed=4, examples=30)
    assert all(len(b) == 1 and a in {"5", "6", "7", "8", "9"} for b, a in drawn)
    with pytest.raises(InvalidArgument):  # hypothesis validates the part when it is drawn
        _drawn(_Flat([st.integers(9, 5)]), seed=4)


@FAST
@given(p=fault_schedules(TOOLS, default_kinds=["timeout"]))
def test_default_kinds_set_what_every_later_call_gets(p: FaultPlan) -> None:
    for name, fault in p.defaults.items():
        assert fault.kind == "timeout"
        assert next(t for t in p if t.name == name).schedule.default == fault


def test_plan_repr_and_yaml_data_name_each_faulty_call() -> None:
    p = plan(TOOLS, {"charge_payment": [F.timeout(30, True)], "get_job_status": [F.ok(), F.transient(503)]})
    assert repr(p) == ("FaultPlan(charge_payment: call 1 timeout(after=30, applied=True); fetch_invoice: no faults; "
                       "get_job_status: call 2 transient(code=503))")
    data = p.as_data()
    assert data["charge_payment"] == {"faults": [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}],
                                      "default": "ok"}
    assert data["fetch_invoice"] == {"default": "ok"}


def test_an_inline_tool_is_written_out_in_full() -> None:
    tool = fake_tool("lookup", "Look a word up.", {"type": "object", "properties": {"q": {"type": "string"}},
                                                    "required": ["q"]}, faults=[{"calls": [2, None], "outcome": "empty"}])
    data = tool_data(tool)
    assert data["parameters"]["required"] == ["q"]
    assert data["faults"] == [{"calls": [2, None], "outcome": "empty"}]
    assert tool_data(catalogue.get("search")) == {"default": "ok"}


# --- policies ------------------------------------------------------------------------------------


def test_every_policy_spec_builds_and_runs() -> None:
    for spec in policy_specs(TOOLS):
        policy = SpecPolicy(spec)
        result = run("builtin:guarded", task="t", tools=TOOLS, policy=policy)
        assert result.harness_stop is None, (spec, result.error)
        assert policy.tools() <= {t.name for t in TOOLS}


def test_policy_kinds_and_args_come_from_the_tools() -> None:
    specs = policy_specs(TOOLS, kinds=["stubborn"], ignores_refusals=False)
    assert specs[0] == {"stubborn": {"tool": "charge_payment", "args": {"customer_id": "customer_1", "amount": 10.0},
                                     "until": "success"}}
    assert example_args(catalogue.get("write_record"), 2) == {"record_id": "record_2", "data": {"value": 2}}
    assert not [s for s in policy_specs(TOOLS) if "paraphrase" in s]  # no tool takes a query
    assert [s for s in policy_specs(["search"]) if "paraphrase" in s]
    with pytest.raises(ValueError, match="unknown policy kind 'stubbron'"):
        policies(TOOLS, kinds=["stubbron"])


def test_the_policies_of_the_same_tools_and_kinds_are_built_once() -> None:
    drawn = policies(TOOLS, kinds=["stubborn"])
    assert policies(list(TOOLS), kinds=("stubborn",)) is drawn
    assert policies(TOOLS, kinds=["stubborn"], ignores_refusals=False) is not drawn
    assert policies(TOOLS) is not drawn
    assert find(drawn, lambda p: True).spec == find(policies(TOOLS, kinds=["stubborn"]), lambda p: True).spec
    with pytest.raises(ValueError, match="unknown policy kind"):  # validated on every call, not cached
        policies(TOOLS, kinds=["stubbborn"])


def test_policies_shrink_to_a_plain_stubborn_call() -> None:
    policy = find(policies(TOOLS), lambda p: True)
    assert policy.spec == policy_specs(TOOLS)[0]
    assert repr(policy).startswith("policy({'stubborn'")


def test_build_policy_names_the_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown policy 'stubbron'; did you mean 'stubborn'"):
        build_policy({"stubbron": {"tool": "x"}})
    with pytest.raises(ValueError, match="one-key mapping"):
        build_policy({"stubborn": {}, "jitter": {}})


# --- the strategies in a user's own test -----------------------------------------------------------


@settings(max_examples=30, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(p=fault_schedules(["charge_payment"], kinds=["timeout", "transient"]), policy=policies(["charge_payment"]),
       seed=st.integers(0, 3))
def test_users_write_given_tests_with_the_strategies(p: FaultPlan, policy: SpecPolicy, seed: int) -> None:
    result = run("builtin:guarded", task="Charge the customer once.", tools=p, policy=policy, seed=seed)
    result.check(invariants.idempotent(), invariants.terminated(), invariants.no_execution_after_refusal())
