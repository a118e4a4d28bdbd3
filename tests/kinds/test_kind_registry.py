"""The registry of agent kinds (``toolchaos.kinds``): one module per kind, accepted wherever an agent is.

- a kind registered in one module of the user's, with capabilities unlike the in-process kind's
  (it cannot report a stop), is accepted by a YAML scenario, ``--chaos-agent``, ``certify``,
  ``fuzz()``, and the report says which kind ran and what it can do;
- ``fuzz()``, a YAML scenario and ``certify`` take an SDK agent (``agent(task, env)``) as it is;
- the built-in kinds are each one module, tried in a stated order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import toolchaos
from chaos_samples import timeout_loop
from toolchaos import policies, run
from toolchaos._agents import NEEDS
from toolchaos.fake_tools import catalogue
from toolchaos.fuzzing import fuzz
from toolchaos.kinds import AgentKind, Capabilities, kinds, register_kind, resolve
from toolchaos.scenario import load_file, load_text

ROOT = Path(__file__).resolve().parents[2]

# A kind of the user's own, in one module: a "framework" whose agent keeps calling what the model
# asks for, a few times, and then just returns text: it has no way to report a stop.
KIND_MODULE = '''
from toolchaos import run
from toolchaos._internal.model import tool_message
from toolchaos.kinds import AgentKind, Capabilities, register_kind


class Tally:
    """The framework's agent object."""

    def __init__(self, max_calls):
        self.max_calls = max_calls


def _as_contract(agent):
    def loop(task, model, tools):
        messages = [{"role": "user", "content": task}]
        for _ in range(agent.max_calls):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return str(turn.text)
            for call in turn.tool_calls:
                try:
                    result = tools.call(call.name, call.arguments, call_id=call.id)
                except Exception as exc:
                    result = f"Error: {exc}"
                messages.append(tool_message(call, result))
        return "I gave up."

    return loop


register_kind(AgentKind(
    name="tally", help="a Tally agent (a toy framework)", form="a Tally",
    runner=lambda agent, label: lambda spec: run(_as_contract(agent), spec),
    recognise=lambda obj: isinstance(obj, Tally), by_type=True,
    capabilities=Capabilities(reports_stop=False)))

AGENT = Tally(max_calls=3)
'''

SCENARIO = timeout_loop("tally-loop", "bounded: {executions: 5}")


@pytest.fixture
def tally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "tally_kind_agents.py").write_text(KIND_MODULE)
    (tmp_path / "tally.chaos.yaml").write_text(SCENARIO + "agent: tally:tally_kind_agents:AGENT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("tally_kind_agents", None)
    kinds().remove("tally")  # type: ignore[attr-defined]


def test_every_built_in_kind_is_one_registered_module() -> None:
    import toolchaos.kinds as package

    names = ["in-process", "sdk", "openai-agents", "pydantic-ai", "langgraph", "process"]
    assert list(kinds()) == names
    for name in names:
        module = sys.modules[f"{package.__name__}.{name.replace('-', '_')}"]
        assert module.KIND is kinds()[name]
    assert kinds()["in-process"].capabilities == Capabilities(reports_stop=True, isolatable=True)
    assert kinds()["process"].capabilities == Capabilities(reports_stop=False, out_of_process=True, virtual_time=False,
                                                           budgets=False, restart=False, concurrent_workers=False)
    for name in names[:-1]:  # every kind but a program of its own can be judged on every bundled scenario
        caps = kinds()[name].capabilities
        assert caps.virtual_time and caps.restart and caps.concurrent_workers and caps.reports_stop


def test_a_kind_cannot_be_registered_twice_under_one_name_with_another_meaning() -> None:
    from toolchaos.errors import AgentRefError

    with pytest.raises(AgentRefError, match="registered already"):
        register_kind(AgentKind(name="sdk", help="something else", form="x", runner=lambda a, label: a))


def test_a_kind_of_ones_own_is_named_or_recognised(tally: Path) -> None:
    import tally_kind_agents as mod

    named = resolve("tally:tally_kind_agents:AGENT")  # the module registers the kind when imported
    assert (named.kind, named.label) == ("tally", "tally:tally_kind_agents:AGENT")
    assert resolve(mod.AGENT).kind == "tally"  # recognised by its type
    assert resolve("tally_kind_agents:AGENT").kind == "tally"
    with pytest.raises(toolchaos.errors.AgentRefError, match="named as tally"):
        resolve(lambda task, model, tools: None, "tally")


def test_a_kind_of_ones_own_is_accepted_by_run_certify_fuzz_and_a_yaml_scenario(tally: Path) -> None:
    import tally_kind_agents as mod

    tools = [catalogue.get("fetch_invoice", faults=toolchaos.fake_tools.faults.timeout(after=30))]
    policy = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})
    direct = run(mod.AGENT, task="t", tools=tools, policy=policy)
    assert direct.agent_kind == "tally" and direct.executions == {"fetch_invoice": 3}
    assert direct.answer == "I gave up." and direct.stop_report is None  # it cannot report a stop

    (scenario,) = load_file(tally / "tally.chaos.yaml", allow_imports=True)  # its agent: names the kind
    verdict = toolchaos.run_scenario(scenario)
    assert verdict.passed and verdict.result.agent_kind == "tally"
    (certified,) = toolchaos.certify(mod.AGENT, [scenario])
    assert certified.result.agent_kind == "tally" and certified.result.executions == {"fetch_invoice": 3}

    seen: list[str] = []
    from toolchaos.fuzzing._core import FuzzTarget, fuzz_target

    target = FuzzTarget(mod.AGENT, tools, policy)
    report = fuzz_target(target, examples=10, seed=1, database=None, on_example=lambda r: seen.append(r.agent_kind))
    assert report.examples >= 10 and set(seen) == {"tally"}
    assert fuzz(mod.AGENT, tools=tools, policy=policy, examples=5, seed=1, database=None).examples >= 5


def test_the_report_says_which_kind_ran_under_chaos_agent(tally: Path, pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(tally)
    pytester.makefile(".chaos.yaml", tally=SCENARIO)
    res = pytester.runpytest("-p", "toolchaos", "--chaos", "--chaos-agent=tally_kind_agents:AGENT",
                             "--chaos-report=out", "-p", "no:randomly")
    res.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out" / "report.json").read_text())
    (entry,) = data["scenarios"]
    assert entry["agent_kind"] == {"name": "tally", "reports_stop": False, "isolatable": False,
                                   "out_of_process": False, "virtual_time": True, "budgets": True, "restart": True,
                                   "concurrent_workers": True}
    assert entry["executions"] == {"fetch_invoice": 3}


def test_a_kind_that_cannot_report_a_stop_is_judged_by_harm_and_gets_na_only_where_its_capabilities_say(
        tally: Path) -> None:
    """The tally kind declares reports_stop=False and nothing else missing: a scenario needing a stop report
    is N/A to it (decided before it runs, saying why), one needing virtual time applies, and a loop scenario
    demanding STOPPED_LOOP_GUARD and a stop report judges it by harm: it gave up after 3 calls by itself."""
    import tally_kind_agents as mod

    loop = timeout_loop("tally-stops", "bounded: {executions: 5}", "terminal_state: [STOPPED_LOOP_GUARD]",
                        "stop_report")
    (judged,) = toolchaos.certify(mod.AGENT, load_text(loop))
    assert judged.not_applicable is None and judged.passed, judged.violations
    assert judged.result.terminal_state == "FAILED" and judged.result.stop_report is None  # it only returned
    rows = {type(i).__name__: i.actual_text(judged.result) for i in judged.expect}
    assert rows["StoppedByItself"] == "FAILED: ended by itself, counted as stopped"
    assert rows["StopReportNotAsked"] == "not judged"

    (na,) = toolchaos.certify(mod.AGENT, load_text(loop + "needs: [stop_report]\n"))
    assert na.not_applicable == f"needs stop_report, which a tally agent lacks ({NEEDS['stop_report'].meaning})"
    assert not na.passed and na.runs == [] and na.result.total_executions == 0  # nothing ran
    (applies,) = toolchaos.certify(mod.AGENT, load_text(loop + "needs: [virtual_time]\n"))
    assert applies.not_applicable is None and applies.passed
    # the in-process kind reports stops: the same scenario is no N/A for the reference agent, and judged as written
    (guarded,) = toolchaos.certify("builtin:guarded", load_text(loop + "needs: [stop_report]\n"))
    assert guarded.not_applicable is None and guarded.passed
    assert [type(i).__name__ for i in guarded.expect][:3] == ["Bounded", "TerminalState", "StopReport"]


# --- an SDK agent, as it is --------------------------------------------------------------------


@pytest.fixture
def sdk_agent(monkeypatch: pytest.MonkeyPatch) -> object:
    pytest.importorskip("openai")
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples"))
    import openai_naive

    return openai_naive.agent  # agent(task, env): the openai SDK at its defaults


def test_fuzz_a_yaml_scenario_and_certify_take_an_sdk_agent_as_it_is(sdk_agent: object, tmp_path: Path) -> None:
    tools = [catalogue.get("fetch_invoice", faults=toolchaos.fake_tools.faults.timeout(after=30))]
    policy = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})
    report = fuzz(sdk_agent, tools=tools, policy=policy, examples=3, seed=1, database=None)
    assert report.examples >= 1
    for failure in report.failures:  # whatever it finds, it found it in a run of the agent, over HTTP
        assert failure.result.agent_kind == "sdk" and failure.result.harness_stop != "uncallable"
        assert failure.result.model_requests > 0  # type: ignore[attr-defined]

    (tmp_path / "sdk.chaos.yaml").write_text(SCENARIO + "agent: sdk:openai_naive:agent\n")
    (scenario,) = load_file(tmp_path / "sdk.chaos.yaml", allow_imports=True)
    from_yaml = toolchaos.run_scenario(scenario)
    assert from_yaml.result.agent_kind == "sdk" and from_yaml.result.model_requests > 0  # type: ignore[attr-defined]
    (certified,) = toolchaos.certify(sdk_agent, [scenario])
    assert certified.result.agent_kind == "sdk" and certified.result.executions["fetch_invoice"] > 1


def test_a_kind_registered_later_claims_objects_recognised_before_it() -> None:
    # Recognition is remembered per object (the engine resolves its agent on every run); a kind
    # registered afterwards must still see the objects it claims.
    class Widget:
        def __call__(self, task: str, model: object, tools: object) -> None: ...

    widget = Widget()
    assert resolve(widget).kind == "in-process"
    register_kind(AgentKind(name="widget", help="a Widget", form="a Widget", by_type=True,
                            recognise=lambda obj: isinstance(obj, Widget), runner=lambda agent, label: agent))
    try:
        assert resolve(widget).kind == "widget"
    finally:
        kinds().remove("widget")  # type: ignore[attr-defined]
    assert resolve(widget).kind == "in-process"
