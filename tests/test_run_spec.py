"""``RunSpec``: one value holds every setting of a run; the session's defaults fill only what it leaves unset.

And the public ways to isolate an untrusted agent: ``toolchaos.run(..., isolation=)``,
``toolchaos.certify(..., isolation=)`` and ``toolchaos run --isolation``, each tried with an
agent that takes its own process down.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import toolchaos
from toolchaos import Budgets, Ceiling, RunSpec, policies, run
from toolchaos._engine import isolated, session_defaults
from toolchaos.errors import UserError
from toolchaos.fake_tools import catalogue

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
TOOLS = [catalogue.get("search")]


def spec(**kw: object) -> RunSpec:
    return RunSpec.of(task="t", tools=TOOLS, policy=policies.scripted([]), **kw)  # type: ignore[arg-type]


# --- the value ---------------------------------------------------------------------------------


def test_a_spec_is_validated_once_and_names_the_field() -> None:
    for bad, field in (({"seed": "1"}, "seed"), ({"seed": True}, "seed"), ({"isolation": "thread"}, "isolation"),
                       ({"real_seconds": 0}, "real_seconds"), ({"real_seconds": float("nan")}, "real_seconds"),
                       ({"budgets": 3}, "budgets")):
        with pytest.raises(UserError) as caught:
            spec(**bad)
        assert caught.value.field == field, bad
    with pytest.raises(UserError, match=r"ceiling: expected a toolchaos\.Ceiling"):
        RunSpec("t", tuple(TOOLS), None, ceiling="big")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="task: expected a string"):
        RunSpec(None, tuple(TOOLS), None)  # type: ignore[arg-type]


def test_a_spec_is_frozen_and_its_copies_are_validated_again() -> None:
    s = spec(budgets={"max_steps": 3})
    assert s.budgets == Budgets(max_steps=3) and isinstance(s.tools, tuple)
    with pytest.raises(AttributeError):
        s.seed = 2  # type: ignore[misc]
    assert s.with_(seed=2).seed == 2 and s.seed == 0
    with pytest.raises(UserError):
        s.with_(isolation="elsewhere")


def test_what_a_spec_leaves_unset_comes_from_the_session_when_it_is_built() -> None:
    assert (spec().isolation, spec().real_seconds) == ("none", None)
    restore = session_defaults(isolation="process", real_seconds=0.7, source="--chaos-real-seconds")
    try:
        inherited, own = spec(), spec(isolation="none", real_seconds=2)
    finally:
        restore()
    assert (inherited.isolation, inherited.watchdog_limit()) == ("process", (0.7, "--chaos-real-seconds"))
    assert (own.isolation, own.watchdog_limit()) == ("none", (2.0, ""))  # the run's own settings win
    assert spec().isolation == "none"  # restored
    # the ceiling's limit is over the session's, the run's own over the ceiling's
    restore = session_defaults(real_seconds=0.7)
    try:
        assert spec(ceiling=Ceiling(real_seconds=3)).watchdog_limit() == (3.0, "")
        assert spec(ceiling=Ceiling(real_seconds=3), real_seconds=4).watchdog_limit() == (4.0, "")
    finally:
        restore()
    assert spec().watchdog_limit() == (5.0, "") and spec().watchdog_limit(60) == (60, "")


def test_the_total_limit_is_the_runs_the_ceilings_the_sessions_else_three_times_the_no_progress_limit() -> None:
    assert spec().total_limit() == (15.0, "") and spec().total_limit(60) == (180.0, "")
    assert spec(real_seconds=0.1).total_limit() == (0.3, "")  # not 0.30000000000000004
    restore = session_defaults(total_seconds=40, total_source="--chaos-total-seconds")
    try:
        assert spec().total_limit() == (40.0, "--chaos-total-seconds")
        assert spec(ceiling=Ceiling(total_seconds=30)).total_limit() == (30.0, "")
        assert spec(ceiling=Ceiling(total_seconds=30), total_seconds=20).total_limit() == (20.0, "")
        assert spec().watchdog_limit() == (5.0, "")  # the two limits are set apart
    finally:
        restore()
    assert spec().total_seconds is None  # restored
    for bad in (0, -1, float("nan"), True, "9"):
        with pytest.raises(UserError, match="total_seconds: expected a positive number of seconds") as caught:
            spec(total_seconds=bad)
        assert caught.value.field == "total_seconds"


def test_the_names_a_process_agent_gets_are_the_runs_own_and_the_sessions() -> None:
    assert spec().pass_env == () and spec(pass_env=["B", "A", "B"]).pass_env == ("B", "A")
    restore = session_defaults(pass_env=("S", "A"))
    try:
        assert spec(pass_env=["A", "B"]).pass_env == ("A", "B", "S") and spec().pass_env == ("S", "A")
        assert spec(pass_env=["A"]).with_(seed=1).pass_env == ("A", "S")  # validated again, not added twice
    finally:
        restore()
    assert spec().pass_env == ()  # restored
    with pytest.raises(UserError, match="'A=1' is not an environment variable name") as caught:
        spec(pass_env=["A=1"])
    assert caught.value.field == "pass_env"


def test_no_module_level_setter_decides_how_a_run_executes() -> None:
    # The old process-wide switches are gone; the engine reads the spec it is handed only.
    assert not hasattr(toolchaos._engine, "set_isolation")
    assert not hasattr(toolchaos._internal.limits, "set_session_real_seconds")
    restore = session_defaults(isolation="process")
    try:
        here = spec(isolation="none")
    finally:
        restore()
    built_for_a_child = spec(isolation="process")
    restore = session_defaults(isolation="none")  # a later change of the defaults does not reach a built spec
    try:
        assert isolated.placement(here) == ("none", None)
        assert isolated.placement(built_for_a_child)[0] == ("process" if hasattr(os, "fork") else "none")
    finally:
        restore()


def test_a_run_takes_a_spec_or_its_keywords_not_both() -> None:
    agent = "builtin:guarded"
    assert run(agent, spec()).terminal_state == run(agent, task="t", tools=TOOLS,
                                                    policy=policies.scripted([])).terminal_state
    with pytest.raises(TypeError, match="not both"):
        run(agent, spec(), task="t")
    with pytest.raises(TypeError, match="takes a RunSpec, or the keywords"):
        run(agent)


def test_staying_in_process_keeps_the_first_reason_and_only_when_isolation_was_asked() -> None:
    asked = spec(isolation="process")
    assert asked.staying("the caller's").staying("an inner runner's").stays_because == "the caller's"
    assert spec(isolation="none").staying("why").stays_because is None


# --- isolating an untrusted agent, publicly ---------------------------------------------------------

HOSTILE = '''
import os


def agent(task, model, tools):
    tools.call("search", {"query": "q"})
    os._exit(3)  # takes the whole process down, whoever it is
'''

SCENARIO = """\
id: hostile-exit
title: an agent that ends its own process
task: Search once.
tools:
  search: {}
policy:
  scripted: [{call: search, args: {query: q}}, {final: done}]
expect: [terminated]
"""


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "run_spec_hostile_agent.py").write_text(HOSTILE)
    (tmp_path / "hostile.chaos.yaml").write_text(SCENARIO)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("run_spec_hostile_agent", None)


@needs_fork
def test_toolchaos_run_isolates_a_run_spec_hostile_agent_when_asked(hostile: Path) -> None:
    result = run("run_spec_hostile_agent:agent", task="t", tools=TOOLS,
                 policy=policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "x"}]),
                 isolation="process")
    assert result.terminal_state == "CRASHED" and result.isolation == "process"
    assert result.executions == {"search": 1}  # what it did before it died streamed back
    assert "exit" in (result.error or "").lower() or "died" in (result.error or "").lower(), result.error


@needs_fork
def test_certify_isolates_a_run_spec_hostile_agent_when_asked(hostile: Path) -> None:
    from toolchaos.scenario import load_file

    (verdict,) = toolchaos.certify("run_spec_hostile_agent:agent", load_file(hostile / "hostile.chaos.yaml"),
                                   isolation="process")
    assert not verdict.passed and verdict.result.terminal_state == "CRASHED"
    assert verdict.result.isolation == "process"


@needs_fork
def test_the_run_command_isolates_a_run_spec_hostile_agent_when_asked(hostile: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from toolchaos.cli import main

    code = main(["run", str(hostile / "hostile.chaos.yaml"), "--agent", "run_spec_hostile_agent:agent", "--isolation",
                 "process"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "FAIL" in err.splitlines()[-1]
    assert session_defaults is not None and toolchaos._engine.session_isolation() == "none"  # put back after
