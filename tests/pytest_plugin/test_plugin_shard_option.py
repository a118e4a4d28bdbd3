"""``pytest --chaos-shard=I/N`` (toolchaos.pytest_plugin._shard): one CI job's part, and the merge of all parts.

Three sessions with ``--chaos-shard=1/3`` .. ``3/3`` run every test exactly once between them, and
``toolchaos report merge`` of their reports gives the unsharded session's report, apart from the timings.
"""

from __future__ import annotations

import json

import pytest
from chaos_samples import timeout_loop
from report_timings import assert_same_report
from toolchaos.cli import main
from toolchaos.reports import merge_reports, read_report

pytest_plugins = ["pytester"]

OWN_TESTS = '''
import pytest


@pytest.mark.chaos
def test_marker(chaos):
    script = chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "done"}])
    r = chaos.run(task="Find it", tools=[chaos.tool("search")], policy=script)
    assert r.terminal_state == "COMPLETED"


def test_plain():
    pass
'''

def _outcomes(res: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in res.parseoutcomes().items() if k in ("passed", "failed", "deselected")}


def test_three_shards_run_each_test_once_and_merge_into_the_unsharded_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_TESTS)
    pytester.makefile(".chaos.yaml", mine=timeout_loop("mine-timeout-loop", "bounded: {executions: 3}"))
    base = ("--chaos", "--chaos-certify", "--chaos-isolation=none", "--chaos-agent=builtin:guarded")
    whole = pytester.runpytest(*base, "--chaos-report=whole")
    ran = _outcomes(whole)["passed"]
    assert ran > 40 and whole.ret == 0
    total = 0
    for i in (1, 2, 3):
        res = pytester.runpytest(*base, f"--chaos-shard={i}/3", f"--chaos-report=shard-{i}")
        assert res.ret == 0
        out = _outcomes(res)
        assert out["passed"] + out["deselected"] == ran
        total += out["passed"]
        res.stdout.fnmatch_lines([f"SHARD {i}/3 PASSED: level reached all, required all; *",
                                  f"toolchaos: shard {i}/3 of {ran} instances (by hash); merge the shards' reports*"])
    assert total == ran  # every test in exactly one shard, the plain one too
    parts = [read_report(pytester.path / f"shard-{i}" / "report.json") for i in (1, 2, 3)]
    assert {p["suite"]["name"] for p in parts} == {"custom"}  # the whole selection's, though a part may be all bundled
    merge_reports([pytester.path / f"shard-{i}" for i in (1, 2, 3)], pytester.path / "merged", step_summary=False)
    assert_same_report(pytester.path / "merged", pytester.path / "whole")


def test_a_shard_of_pytest_holds_the_scenarios_of_the_same_shard_of_the_cli(pytester: pytest.Pytester,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    res = pytester.runpytest("--chaos-certify", "--chaos-isolation=none", "-k", "loop-", "--chaos-shard=2/3",
                             "--chaos-report=py")
    assert res.ret == 0
    monkeypatch.chdir(pytester.path)
    assert main(["certify", "--isolation", "none", "-k", "loop-*", "--shard", "2/3", "--report", "cli"]) == 0
    py, cli = (read_report(pytester.path / d / "report.json") for d in ("py", "cli"))
    assert [s["id"] for s in py["scenarios"]] == [s["id"] for s in cli["scenarios"]]
    assert py["shard"] == cli["shard"] and py["suite"]["name"] == "certification"


def test_an_empty_shard_passes_and_says_why(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--chaos-certify", "--chaos-isolation=none", "-k", "budget-steps", "--chaos-shard=2/2",
                             "--chaos-report=out", "--chaos-require=all")
    assert res.ret == pytest.ExitCode.OK
    res.stdout.fnmatch_lines(["shard 2/2: no chaos scenario fell in this shard"])
    data = read_report(pytester.path / "out" / "report.json")
    assert data["scenarios"] == [] and data["shard"]["instances"] == 1
    assert data["suite"]["name"] == "certification"  # the whole selection is the bundled suite's
    nothing = pytester.runpytest("--chaos-certify", "-k", "no-such-scenario", "--chaos-shard=1/2")
    assert nothing.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # nothing to split at all: pytest's own word stands


def test_a_failing_shard_fails_on_its_own_part(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--chaos-certify", "--chaos-isolation=none", "--chaos-agent=builtin:naive",
                             "-k", "loop-", "--chaos-shard=1/2", "--chaos-report=out")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["SHARD 1/2 FAILED: level reached none, required all; 0/6 scenarios passed"])


@pytest.mark.parametrize(("args", "said"), [
    (["--chaos-shard=4/3"], "*--chaos-shard: shard 4/3 does not exist: I runs from 1 to N*"),
    (["--chaos-shard=one"], "*--chaos-shard: expected a shard as I/N*"),
    (["--chaos-shard-durations=d.json"], "*--chaos-shard-durations goes with --chaos-shard=I/N*"),
    (["--chaos-shard=1/2", "--chaos-shard-durations=nope.json"],
     "*--chaos-shard-durations: cannot read the durations file nope.json*"),
])
def test_a_bad_shard_is_a_usage_error(pytester: pytest.Pytester, args: list[str], said: str) -> None:
    res = pytester.runpytest("--chaos", *args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([said])


def test_durations_are_stored_then_split_by(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_TESTS)
    store = pytester.runpytest("--chaos-certify", "--chaos-isolation=none", "-k", "side- or test_", "--chaos",
                               "--chaos-store-durations=durations.json")
    assert store.ret == 0
    durations = json.loads((pytester.path / "durations.json").read_text())
    assert "side-lost-payment-response" in durations and "test_own.py::test_marker" in durations
    assert "test_own.py::test_plain" in durations and all(v >= 0 for v in durations.values())
    res = pytester.runpytest("--chaos-certify", "--chaos-isolation=none", "-k", "side- or test_", "--chaos",
                             "--chaos-shard=1/2", "--chaos-shard-durations=durations.json", "--chaos-report=out")
    assert res.ret == 0
    shard = read_report(pytester.path / "out" / "report.json")["shard"]
    assert shard["by"] == "durations" and shard["durations"].startswith("sha256:")


def test_the_shard_crosses_xdist_workers(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("-p", "xdist", "-n", "2", "--chaos-certify", "--chaos-isolation=none", "-k", "legit-",
                             "--chaos-shard=1/2", "--chaos-report=out", "--chaos-store-durations=d.json")
    assert res.ret == 0
    data = read_report(pytester.path / "out" / "report.json")
    assert data["shard"]["index"] == 1 and data["shard"]["instances"] == 6 and len(data["scenarios"]) == 3
    assert sorted(json.loads((pytester.path / "d.json").read_text())) == [s["id"] for s in data["scenarios"]]
