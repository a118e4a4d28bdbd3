"""``toolchaos.errors``: one hierarchy in one module, public names, "did you mean", CLI exit codes."""

from __future__ import annotations

import argparse
import inspect
import traceback
from collections.abc import Callable
from typing import Any

import pytest
import toolchaos
from toolchaos import cli, errors
from toolchaos import fake_tools as ft
from toolchaos import invariants as inv
from toolchaos.errors import (
    AgentFailure,
    HarnessStop,
    ToolchaosError,
    ToolError,
    UserError,
)
from toolchaos.fake_tools import Outcome, OutcomeClass

CLASSES = [c for _, c in inspect.getmembers(errors, inspect.isclass)
           if issubclass(c, BaseException) and c.__module__ == errors.__name__]

# What the module docstring promises: each class and the bases it derives from.
BASES: dict[str, tuple[type[BaseException], ...]] = {
    "ToolchaosError": (Exception,), "UserError": (ToolchaosError,),
    **{n: (UserError, ValueError) for n in ("ScenarioError", "DefinitionError", "PolicyError", "InvariantError",
                                            "AgentRefError", "LogFormatError", "ReportError", "ApiFaultError",
                                            "PatchError", "FuzzSpecError", "CassetteError")},
    "CommandError": (UserError,), "AgentCallError": (errors.AgentRefError,),
    "AgentFailure": (ToolchaosError, AssertionError),
    **{n: (AgentFailure,) for n in ("InvariantViolation", "FuzzFailed", "ScenarioFailed", "CassetteDiverged")},
    "RunClosed": (ToolchaosError, RuntimeError),
    "ToolError": (ToolchaosError,), "ToolTimeout": (ToolError, TimeoutError),
    "ToolConnectionReset": (ToolError, ConnectionResetError), "ToolPermissionDenied": (ToolError, PermissionError),
    "ToolNotFound": (ToolError, LookupError), "ToolInvalidArgument": (ToolError, ValueError),
    "UnknownTool": (ToolchaosError, KeyError),
    "HarnessStop": (BaseException,),
    **{n: (HarnessStop,) for n in ("HardCeiling", "WatchdogExpired", "NetworkBlocked", "LeftoverStopped",
                                   "PolicyCrashed", "UnmatchedRequest")},
}


def test_every_class_lives_in_toolchaos_errors_under_its_documented_bases() -> None:
    assert {c.__name__ for c in CLASSES} == set(BASES)
    for cls in CLASSES:
        assert cls.__module__ == "toolchaos.errors"
        assert cls.__bases__ == BASES[cls.__name__], cls
        assert cls.__name__ in errors.__all__ and cls.__name__ in (errors.__doc__ or "")
    stops = {c for c in CLASSES if issubclass(c, HarnessStop)}
    assert all(not issubclass(c, Exception) for c in stops)  # past an agent's `except Exception`
    assert all(issubclass(c, ToolchaosError) for c in set(CLASSES) - stops)


def test_the_module_imports_only_the_standard_library() -> None:
    import ast
    import sys

    tree = ast.parse(inspect.getsource(errors))
    roots = {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    roots |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}, roots


def test_old_public_paths_are_the_same_classes() -> None:
    from toolchaos import fuzzing, logs, policies, reports, scenario, wire

    homes: list[tuple[Any, str]] = [
        (toolchaos, "InvariantViolation"), (toolchaos, "ScenarioError"), (toolchaos, "HardCeiling"),
        (toolchaos, "RunClosed"), (toolchaos, "LeftoverStopped"), (toolchaos, "NetworkBlocked"),
        (toolchaos, "WatchdogExpired"), (inv, "InvariantViolation"), (inv, "InvariantError"),
        (policies, "PolicyError"), (scenario, "ScenarioError"), (logs, "LogFormatError"), (reports, "ReportError"),
        (fuzzing, "FuzzFailed"), (wire, "ApiFaultError"), (wire, "PatchError"), (wire, "UnmatchedRequest"),
        (cli, "CommandError"), *((ft, n) for n in ("DefinitionError", "ToolError", "ToolTimeout", "ToolNotFound",
                                                     "ToolConnectionReset", "ToolPermissionDenied",
                                                     "ToolInvalidArgument", "UnknownTool")),
    ]
    for module, name in homes:
        assert getattr(module, name) is getattr(errors, name), (module.__name__, name)


def test_a_violation_prints_under_its_public_path() -> None:
    pay = ft.catalogue.get("charge_payment", faults=ft.faults.timeout(after=30, applied=True))
    result = toolchaos.run("builtin:naive", task="Charge c1", tools=[pay],
                           policy=toolchaos.policies.stubborn("charge_payment", {"customer_id": "c1", "amount": 1}))
    with pytest.raises(inv.InvariantViolation) as info:
        result.check(inv.max_side_effects(1))
    line = traceback.format_exception_only(info.type, info.value)[0]
    assert line.startswith("toolchaos.errors.InvariantViolation: invariant max_side_effects")
    assert isinstance(info.value, AssertionError)


def test_a_tool_error_is_the_real_exception_and_prints_under_its_public_path() -> None:
    exc = errors.ToolTimeout("fetch", Outcome("timeout", OutcomeClass.RETRYABLE, "timeout", retryable=True))
    assert isinstance(exc, TimeoutError) and exc.cls is OutcomeClass.RETRYABLE and exc.retryable
    assert traceback.format_exception_only(type(exc), exc) == [
        "toolchaos.errors.ToolTimeout: fetch: timeout [RETRYABLE/timeout]\n"]


def test_did_you_mean_has_one_implementation() -> None:
    from toolchaos.fake_tools import _faults
    from toolchaos.scenario import _load

    assert errors.did_you_mean("gaurded", ["naive", "guarded"]) == "; did you mean 'guarded'?"
    assert errors.did_you_mean(3, ["naive"]) == ""
    known = ["rerun", "run", "runs", "ruin", "other"]
    assert errors.did_you_mean("runn", known, several=True) == "; did you mean 'run', 'runs' or 'ruin'?"
    assert errors.did_you_mean("rrun", ["rerun", "run"], several=True, prefix="m.") == "; did you mean 'm.rerun' or 'm.run'?"
    assert _faults.did_you_mean is errors.did_you_mean and _load.did_you_mean is errors.did_you_mean


def test_user_errors_carry_the_offending_field() -> None:
    with pytest.raises(errors.PolicyError) as p:
        toolchaos.policies.explore("search", queries=[])
    assert p.value.field == "queries"
    with pytest.raises(errors.InvariantError) as i:
        inv.stop_report(fields=["guard", "why"])
    assert i.value.field == "fields" and isinstance(i.value, ValueError)
    with pytest.raises(errors.DefinitionError) as d:
        ft.fake_tool("t", faults=[{"call": 1, "outcome": {"timeout": {"after": -1}}}])
    assert d.value.field.endswith("after")
    assert errors.ReportError("x").field is None and errors.AgentRefError("x", field="agent").field == "agent"


SCENARIO = """\
id: t1
title: A timing-out invoice tool
task: Get the total.
tools:
  fetch_invoice: {}
policy:
  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}
expect:
  - bounded: {executions: 3}
"""


@pytest.mark.parametrize(("replace", "by", "at"), [
    ("args: {invoice_id: inv_1}}", "args: {invoice_id: inv_1}, max_turns: 0}", "0}"),
    ("- bounded: {executions: 3}", "- stop_report: {fields: [guard, why]}", "[guard"),
])
def test_a_scenario_points_at_the_field_the_constructor_names(replace: str, by: str, at: str) -> None:
    from toolchaos.scenario import load_text

    text = SCENARIO.replace(replace, by)
    with pytest.raises(errors.ScenarioError) as info:
        load_text(text, "s.chaos.yaml")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if at in t)
    assert (info.value.line, info.value.col) == (line, text.splitlines()[line - 1].index(at) + 1), info.value


# --- the command line: UserError -> 2, anything else -> 3 ---------------------------------


class _Span:
    line, col, end_line, end_col = 1, 1, 1, 2


# One instance of every user error; a new UserError subclass without a sample fails the test below.
USER_ERRORS: dict[type[UserError], Callable[[], UserError]] = {
    errors.ScenarioError: lambda: errors.ScenarioError("bad key", "a.chaos.yaml", _Span(), "x: 1\n"),
    errors.DefinitionError: lambda: errors.DefinitionError("pay", "delivery", "expected return or raise"),
    errors.PolicyError: lambda: errors.PolicyError("stubborn: args must be a mapping", field="args"),
    errors.InvariantError: lambda: errors.InvariantError("stop_report: unknown fields", field="fields"),
    errors.AgentRefError: lambda: errors.AgentRefError("no built-in agent 'gaurded'"),
    errors.AgentCallError: lambda: errors.AgentCallError("myapp:run", "run() takes 1 argument", "agent(task, ...)"),
    errors.LogFormatError: lambda: errors.LogFormatError("unknown format", "x.jsonl", option="format"),
    errors.ReportError: lambda: errors.ReportError("unknown level 'mayor'"),
    errors.ApiFaultError: lambda: errors.ApiFaultError("unknown API fault kind"),
    errors.PatchError: lambda: errors.PatchError("patch target 'x': expected 'package.module:attribute'"),
    errors.FuzzSpecError: lambda: errors.FuzzSpecError("fuzz.kinds[0]", "unknown fault kind"),
    errors.CommandError: lambda: errors.CommandError("--top must be at least 0"),
    errors.CassetteError: lambda: errors.CassetteError("no cassette at c.cassette.json: record it first"),
}


def _subclasses(cls: type[UserError]) -> set[type[UserError]]:
    return {cls, *(s for c in cls.__subclasses__() for s in _subclasses(c))}


class _Raises:
    HELP = "a fake command"
    EXAMPLES = "  toolchaos fake"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        raise self.exc


def _main(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> int:
    monkeypatch.delenv("TOOLCHAOS_DEBUG", raising=False)
    monkeypatch.setattr(cli, "COMMANDS", {"fake": _Raises(exc)})
    return cli.main(["fake"])


def test_every_user_error_has_a_sample() -> None:
    assert _subclasses(UserError) - {UserError} == set(USER_ERRORS)


@pytest.mark.parametrize("cls", sorted(USER_ERRORS, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_user_error_exits_2(cls: type[UserError], monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    exc = USER_ERRORS[cls]()
    assert type(exc) is cls
    assert _main(monkeypatch, exc) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolchaos fake: error: ") and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("exc", [RuntimeError("boom"), errors.RunClosed("late"),
                                 errors.ToolError("t", Outcome("fatal", OutcomeClass.FATAL, "not_found"))],
                         ids=lambda e: type(e).__name__)
def test_anything_else_exits_3(exc: Exception, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(monkeypatch, exc) == 3
    assert f"toolchaos fake: internal error: {type(exc).__name__}: " in capsys.readouterr().err
