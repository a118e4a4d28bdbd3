"""Adding a fault, a policy or an invariant touches one module: its registration.

This test plays the module: it defines one new kind of each, registers them (removed
again afterwards) and finds them wherever kinds are listed, validated, built, drawn or
written: the JSON Schema, ``toolchaos list``, the scenario loader, ``toolchaos new``,
the strategies (what the registration says the fuzzer draws), the fuzzer's YAML (the
invariant's declared category and severity) and the certification report's wording.
A registration without what those need is an error that names it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find
from toolchaos import strategies
from toolchaos.certification import run_scenario
from toolchaos.cli import main
from toolchaos.cli._new import scaffold
from toolchaos.fake_tools import FakeTool, Outcome, OutcomeClass, catalogue
from toolchaos.fake_tools.faults import FAULTS, CallInfo, Fault, as_fault
from toolchaos.fake_tools.registry import Check, Registry
from toolchaos.fuzzing import fuzz
from toolchaos.invariants import INVARIANTS, FinishedRun, Invariant, Violation
from toolchaos.policies import POLICIES, Decision, ModelView
from toolchaos.reports import RunMeta, write_reports
from toolchaos.scenario import ScenarioError, json_schema, load_text
from toolchaos.strategies import example_args, fault_schedules, fault_table, policy_specs

# --- the "module" that adds one kind of each ----------------------------------------------------


class Throttled(Fault):
    """Every call is refused for ``seconds``, as a rate limiter does."""

    kind = "throttled"
    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def resolve(self, call: CallInfo) -> Outcome:
        return Outcome("throttled", OutcomeClass.RETRYABLE, "rate_limited", None, retryable=True,
                       retry_after=self.seconds, applied=False)

    def to_data(self) -> Any:
        return {"throttled": {"seconds": self.seconds}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Throttled) and other.seconds == self.seconds

    def __hash__(self) -> int:
        return hash(self.seconds)


def throttled(seconds: float = 5.0) -> Throttled:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError(f"seconds: expected a number >= 0, got {seconds!r}")
    return Throttled(seconds)


class Hesitant:
    """Asks for one tool twice, then answers whatever it got."""

    name = "hesitant"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None) -> None:
        self.tool, self.args = tool, dict(args or {})

    def decide(self, view: ModelView) -> Decision:
        return Decision.call(self.tool, self.args) if view.step <= 2 else Decision.final("Done, more or less.")

    def tools(self) -> set[str]:
        return {self.tool}

    def to_data(self) -> Any:
        return {"hesitant": {"tool": self.tool, "args": self.args}}


def hesitant(tool: str, args: Mapping[str, Any] | None = None) -> Hesitant:
    return Hesitant(tool, args)


def hesitating(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """How the fuzzer draws ``hesitant``: once per tool."""
    return [{kind: {"tool": t.name, "args": example_args(t)}} for t in tools]


class AtMostTurns(Invariant):
    """The model is asked at most N times."""

    name = "at_most_turns"

    def __init__(self, n: int) -> None:
        self.n = n

    def params(self) -> dict[str, Any]:
        return {"n": self.n}

    def check(self, result: FinishedRun) -> list[Violation]:
        if result.turns <= self.n:
            return []
        return [Violation(self.name, f"at most {self.n} model turns", f"{result.turns} model turns")]

    def expected_text(self) -> str:
        return f"the model asked at most {self.n} times"

    def actual_text(self, result: FinishedRun) -> str:
        return f"asked {result.turns} times"


def at_most_turns(n: int) -> Invariant:
    return AtMostTurns(n)


_WHOLE = Check("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)


@pytest.fixture
def registered() -> Iterator[None]:
    added: list[tuple[Registry[Any], str]] = [(FAULTS, "throttled"), (POLICIES, "hesitant"), (INVARIANTS, "at_most_turns")]
    FAULTS.register(Throttled, help="refused for N seconds, every call", fuzz=({"seconds": 2.0}, {"seconds": 60}))(
        throttled)
    POLICIES.register(Hesitant, fuzz=hesitating)(hesitant)
    INVARIANTS.register(AtMostTurns, checks={"n": _WHOLE}, category="budgets", severity="minor")(at_most_turns)
    try:
        yield
    finally:
        for registry, name in added:
            registry.remove(name)


SCENARIO = """\
id: registered-kinds
title: Kinds a test registered
task: Get the total of invoice inv_1.
tools:
  fetch_invoice:
    faults: [{call: 1, outcome: {throttled: 2}}]
policy:
  hesitant: {tool: fetch_invoice, args: {invoice_id: inv_1}}
expect:
  - at_most_turns: 5
"""


# --- where they show up ------------------------------------------------------------------------


def test_they_are_in_the_json_schema(registered: None) -> None:
    defs = json_schema()["$defs"]
    assert "throttled" in defs["Fault"]["anyOf"][0]["enum"]
    assert "hesitant" in defs["Policy"]["anyOf"][0]["enum"]
    assert "at_most_turns" in defs["Invariant"]["anyOf"][0]["enum"]
    (fault,) = [v for v in defs["Fault"]["anyOf"] if v.get("required") == ["throttled"]]
    assert list(fault["properties"]["throttled"]["anyOf"][1]["properties"]) == ["seconds"]
    (policy,) = [v for v in defs["Policy"]["anyOf"] if v.get("required") == ["hesitant"]]
    assert policy["description"] == "Asks for one tool twice, then answers whatever it got."


def test_they_are_listed(registered: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "faults", "policies", "invariants", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["faults"]["throttled"] == "refused for N seconds, every call"
    assert data["policies"]["hesitant"] == "Asks for one tool twice, then answers whatever it got."
    assert data["invariants"]["at_most_turns"] == "The model is asked at most N times."


def test_the_loader_builds_and_checks_them(registered: None) -> None:
    (scenario,) = load_text(SCENARIO, "kinds.chaos.yaml")
    assert scenario.tools[0].schedule.rules[0].outcome == Throttled(2)
    assert isinstance(scenario.policy(), Hesitant)
    assert scenario.invariants[0].params() == {"n": 5}
    with pytest.raises(ScenarioError, match="did you mean 'seconds'"):
        load_text(SCENARIO.replace("{throttled: 2}", "{throttled: {secnds: 2}}"), "kinds.chaos.yaml")
    with pytest.raises(ScenarioError, match="at_most_turns': n: expected an integer >= 0, got -1"):
        load_text(SCENARIO.replace("at_most_turns: 5", "at_most_turns: -1"), "kinds.chaos.yaml")
    with pytest.raises(ScenarioError, match="unknown parameter 'tol'; did you mean 'tool'"):
        load_text(SCENARIO.replace("{tool: fetch_invoice,", "{tol: fetch_invoice,"), "kinds.chaos.yaml")


def test_the_fault_round_trips_and_gets_a_scaffold(registered: None) -> None:
    assert as_fault(FAULTS.to_data(throttled(3))) == Throttled(3)
    assert as_fault({"throttled": 3}) == Throttled(3)  # the first parameter's shorthand
    (scenario,) = load_text(scaffold("fetch_invoice", "throttled"), "s.chaos.yaml")  # `toolchaos new`
    assert scenario.tools[0].schedule.rules[0].outcome == Throttled(5.0)


def test_the_fuzzers_yaml_writes_them(registered: None) -> None:
    tool = catalogue.get("fetch_invoice", default=throttled(1))
    report = fuzz("builtin:guarded", tools=[tool], policy=hesitant("fetch_invoice", {"invoice_id": "inv_1"}),
                  invariants=[at_most_turns(0)], vary=[], examples=3, database=None, seed=1)
    failure = report.failure("at_most_turns")
    assert failure is not None
    scenario = failure.scenario()
    assert scenario["tools"]["fetch_invoice"]["default"] == {"throttled": {"seconds": 1}}
    assert scenario["policy"] == {"hesitant": {"tool": "fetch_invoice", "args": {"invoice_id": "inv_1"}}}
    assert scenario["expect"] == [{"at_most_turns": {"n": 0}}]
    assert (scenario["category"], scenario["severity"]) == ("budgets", "minor")  # as the registration declares
    (again,) = load_text(failure.yaml, "fuzz.chaos.yaml")  # the YAML loads as written
    assert isinstance(again.policy(), Hesitant)


def test_the_report_uses_the_invariants_wording(registered: None, tmp_path: Path) -> None:
    (scenario,) = load_text(SCENARIO, "kinds.chaos.yaml")
    verdict = run_scenario(scenario, "builtin:guarded")
    paths = write_reports([verdict], RunMeta(agent="builtin:guarded"), tmp_path, step_summary=False)
    (entry,) = json.loads(Path(paths["json"]).read_text())["scenarios"]
    (inv,) = [i for i in entry["invariants"] if i["name"] == "at_most_turns"]
    assert inv["passed"] and inv["expected"] == "the model asked at most 5 times"
    assert inv["actual"] == f"asked {verdict.result.turns} times"


def test_removing_a_kind_forgets_it(registered: None) -> None:
    kind = FAULTS.remove("throttled")
    try:
        assert "throttled" not in FAULTS and "throttled" not in json_schema()["$defs"]["Fault"]["anyOf"][0]["enum"]
        with pytest.raises(TypeError, match="no plain-data spelling"):
            FAULTS.to_data(throttled(1))
        with pytest.raises(ValueError, match="registered already"):
            FAULTS.add(FAULTS["timeout"])
    finally:
        FAULTS.add(kind)


def test_the_strategies_draw_what_the_registration_declares(registered: None) -> None:
    tools = [catalogue.get("fetch_invoice"), catalogue.get("send_email")]
    assert strategies.DEFAULT_KINDS[-1] == "throttled" and "throttled" in strategies.ALL_KINDS  # drawn last
    assert fault_table()[-2:] == (Throttled(2.0), Throttled(60))
    drawn = find(fault_schedules(tools), lambda plan: any(isinstance(f, Throttled) for _, f in plan.rules("send_email")))
    assert drawn.rules("send_email") == [(1, Throttled(2.0))]  # shrunk to the first call and the first fault
    assert strategies.DEFAULT_POLICY_KINDS[-1] == "hesitant"
    assert {"hesitant": {"tool": "send_email", "args": example_args(tools[1])}} in policy_specs(tools)


def test_removing_the_kinds_stops_drawing_them(registered: None) -> None:
    fault, policy = FAULTS.remove("throttled"), POLICIES.remove("hesitant")
    try:
        assert "throttled" not in strategies.ALL_KINDS and "hesitant" not in strategies.DEFAULT_POLICY_KINDS
        assert not any(isinstance(f, Throttled) for f in fault_table(strategies.ALL_KINDS))
    finally:
        FAULTS.add(fault)
        POLICIES.add(policy)


def test_a_kind_registered_not_to_be_drawn_is_not(registered: None) -> None:
    FAULTS.register(Throttled, name="rare_throttle", fuzz=({"seconds": 1},), fuzz_by_default=False)(throttled)
    FAULTS.register(Throttled, name="never_throttle", fuzz=None)(throttled)
    try:
        assert "rare_throttle" in strategies.ALL_KINDS and "rare_throttle" not in strategies.DEFAULT_KINDS
        assert fault_table(["rare_throttle"]) == (Throttled(1),)  # drawn when named
        assert "never_throttle" not in strategies.ALL_KINDS
        with pytest.raises(ValueError, match=r"'never_throttle' is not drawn by the fuzzer .*fuzz=None"):
            fault_table(["never_throttle"])
    finally:
        FAULTS.remove("rare_throttle")
        FAULTS.remove("never_throttle")


def test_a_registration_without_what_the_fuzzer_and_its_yaml_need_is_an_error() -> None:
    with pytest.raises(TypeError, match="fault 'throttled' is registered without fuzz=: give fuzz= the faults"):
        FAULTS.register(Throttled)(throttled)
    with pytest.raises(ValueError, match=r"fault 'throttled': fuzz=\({'secs': 1},\): .*unexpected keyword"):
        FAULTS.register(Throttled, fuzz=({"secs": 1},))(throttled)
    with pytest.raises(ValueError, match=r"fault 'throttled': fuzz=.*seconds: expected a number >= 0"):
        FAULTS.register(Throttled, fuzz=({"seconds": -1},))(throttled)
    with pytest.raises(TypeError, match="policy 'hesitant' is registered without fuzz=: give fuzz= how the fuzzer"):
        POLICIES.register(Hesitant)(hesitant)
    with pytest.raises(TypeError, match=r"invariant 'at_most_turns' is registered without category=: .*\(loops, "):
        INVARIANTS.register(AtMostTurns, severity="minor")(at_most_turns)
    with pytest.raises(TypeError, match="invariant 'at_most_turns' is registered without severity="):
        INVARIANTS.register(AtMostTurns, category="loops")(at_most_turns)
    with pytest.raises(ValueError,
                       match="severity='minr': expected one of critical, major, minor, advisory; did you mean 'minor'"):
        INVARIANTS.register(AtMostTurns, category="loops", severity="minr")(at_most_turns)
    assert "throttled" not in FAULTS and "hesitant" not in POLICIES and "at_most_turns" not in INVARIANTS


def test_every_built_in_kind_declares_what_its_consumers_read() -> None:
    assert all("fuzz" in kind.extra and "fuzz_by_default" in kind.extra for kind in FAULTS.values())
    assert all("fuzz" in kind.extra for kind in POLICIES.values())
    assert all({"category", "severity"} <= set(kind.extra) for kind in INVARIANTS.values())


def test_an_invariant_no_registry_knows_counts_as_custom() -> None:
    assert "at_most_turns" not in INVARIANTS  # a custom Invariant subclass, not registered here
    policy = {"stubborn": {"tool": "fetch_invoice", "args": {"invoice_id": "inv_1"}}}
    report = fuzz("builtin:guarded", tools=[catalogue.get("fetch_invoice")], policy=policy,
                  invariants=[at_most_turns(0)], vary=[], examples=3, database=None, seed=1)
    failure = report.failure("at_most_turns")
    assert failure is not None
    assert (failure.scenario()["category"], failure.scenario()["severity"]) == ("custom", "major")
