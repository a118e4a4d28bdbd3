"""Under pytest-xdist the controller runs no test: it loads neither the engine nor virtual time; its workers do."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import json, sys

def pytest_sessionfinish(session):
    # not PYTEST_XDIST_WORKER: under an outer -n the controller inherits the outer worker's
    role = session.config.workerinput["workerid"] if hasattr(session.config, "workerinput") else "controller"
    loaded = {m: m in sys.modules for m in ("toolchaos._engine", "freezegun", "toolchaos.scenario")}
    with open(f"{role}.json", "w") as fh:
        json.dump(loaded, fh)
"""

PROBE = """
import datetime
import os
from toolchaos._engine import session_isolation as isolation
from toolchaos._plumbing import clock

def test_probe(chaos):
    with open(os.environ["PYTEST_XDIST_WORKER"] + ".test.json", "w") as fh:
        fh.write(repr((isolation(), clock.installed(), type(datetime.datetime.now()).__name__)))
"""


def test_the_controller_loads_no_engine_and_its_workers_run_as_before(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_probe=PROBE)
    res = pytester.runpytest_subprocess("-p", "xdist", "-p", "toolchaos", "-n", "2", "--chaos",
                                        "--chaos-isolation=process", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1)
    controller = json.loads((pytester.path / "controller.json").read_text())
    assert controller == {"toolchaos._engine": False, "freezegun": False, "toolchaos.scenario": False}
    worker = next(pytester.path.glob("gw*.test.json")).read_text()
    assert worker == repr(("process", True, "FakeDatetime"))  # the worker's runs: isolated, on virtual time


def test_a_bad_ini_isolation_is_one_usage_error_from_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nchaos_isolation = threads\n")
    pytester.makepyfile(test_probe=PROBE)
    res = pytester.runpytest_subprocess("-p", "xdist", "-p", "toolchaos", "-n", "2", "--chaos")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*ini chaos_isolation: expected one of none, process, got 'threads'*"])
