"""The scenario loader in a process that loads many times, and that imports PyYAML more than once.

PyYAML's C extension (``yaml._yaml``) is initialised once per process, and keeps the event
and error classes of the first import of ``yaml``. pytester's in-process sessions restore
``sys.modules`` after each run, so a second session imports ``yaml`` (and
``toolchaos.scenario``) again, with new classes the extension does not produce. The loader
used to compose libyaml's events with the new PyYAML classes, and failed with an
``UnboundLocalError`` inside PyYAML's composer. These tests make that re-import happen on
purpose, so they do not depend on whether ``yaml`` was imported before the test started.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest
import toolchaos
import yaml
from chaos_samples import PAY_SCENARIO
from toolchaos import scenario as _scenario
from toolchaos.scenario import ScenarioError, load_yaml

pytest_plugins = ["pytester"]

SCENARIO = PAY_SCENARIO

BAD_DOCUMENTS = {
    "parse-error": "a: [1, 2",
    "duplicate-key": "a: 1\na: 2",
    "object-tag": "a: !!python/object:os.system x",
    "too-deep": "a: " + "[" * 60 + "]" * 60,  # raised from inside the composer, mid-load
    "two-documents": "a: &x [1]\n---\nb: *x",
}


def _forget_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop PyYAML and the scenario package from ``sys.modules`` (as pytester's restore does), so
    the next import of ``toolchaos.scenario`` imports ``yaml`` afresh; all undone after the test."""
    monkeypatch.setattr(toolchaos, "scenario", _scenario)  # a fresh import rebinds the package attribute
    for name in list(sys.modules):
        if name in ("yaml", "toolchaos.scenario") or name.startswith(("yaml.", "toolchaos.scenario.")):
            monkeypatch.delitem(sys.modules, name)


def _fresh_scenario_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    _forget_yaml(monkeypatch)
    module = importlib.import_module("toolchaos.scenario")
    assert module is not _scenario
    assert sys.modules["yaml"].events.ScalarEvent is not yaml.events.ScalarEvent  # really a second import
    return module


def test_loads_again_after_failed_loads() -> None:
    for _ in range(3):
        for bad in BAD_DOCUMENTS.values():
            with pytest.raises(ScenarioError):
                load_yaml(bad, "bad.chaos.yaml")
            assert load_yaml("a: {b: [1, 2]}") == {"a": {"b": [1, 2]}}


def test_loads_after_yaml_is_imported_again(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = _fresh_scenario_module(monkeypatch)
    data = fresh.load_yaml("a: &x {b: [1, 2.5, null, true]}\nc: *x\n")
    assert data == {"a": {"b": [1, 2.5, None, True]}, "c": {"b": [1, 2.5, None, True]}}
    assert data.key_spans["c"].line == 2
    [scenario] = fresh.load_text(SCENARIO, "pay.chaos.yaml")
    assert scenario.id == "pay"


@pytest.mark.parametrize("bad", list(BAD_DOCUMENTS.values()), ids=list(BAD_DOCUMENTS))
def test_errors_after_yaml_is_imported_again_are_scenario_errors(monkeypatch: pytest.MonkeyPatch,
                                                                   bad: str) -> None:
    fresh = _fresh_scenario_module(monkeypatch)
    with pytest.raises(fresh.ScenarioError) as info:
        fresh.load_yaml(bad, "bad.chaos.yaml")
    assert str(info.value).startswith("bad.chaos.yaml:")
    assert fresh.load_yaml("a: 1") == {"a": 1}


def test_two_in_process_pytest_sessions(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makefile(".chaos.yaml", pay=SCENARIO)
    _forget_yaml(monkeypatch)  # each inner session then imports yaml anew, as the first one in a process would
    for _ in range(2):
        pytester.runpytest("--chaos", "--chaos-agent=builtin:naive").assert_outcomes(passed=1)
