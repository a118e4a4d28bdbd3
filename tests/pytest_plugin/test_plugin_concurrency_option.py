"""``--chaos-concurrency``: a test's trials recorded from a live model (``chaos.trials``) run at once, each in an
isolated child; ``--chaos-trials`` gives their count; the recording replays offline."""

from __future__ import annotations

import json

import pytest
from live_model import LIVE_POLICY, StochasticModel, live_scenario
from toolchaos._engine import trials
from toolchaos.pytest_plugin import _settings

pytest_plugins = ["pytester"]

TEST = """
from toolchaos import policies

SPECS = {"fetch_invoice": {"type": "object", "properties": {"invoice_id": {"type": "string"}}}}


def test_invoice(chaos):
    live = policies.openai_chat("@URL@", model="stochastic", api_key="sk-test-key", specs=SPECS)
    results = chaos.trials(task="Get the total of invoice inv_1.", tools=[chaos.tool("fetch_invoice")], live=live)
    print("TRIALS", [r.seed for r in results], sorted({r.isolation for r in results}), chaos.concurrency)
"""


def test_the_plugin_knows_the_engines_concurrency_bounds() -> None:
    assert (_settings.DEFAULT_CONCURRENCY, _settings.MAX_CONCURRENCY) == (trials.DEFAULT_CONCURRENCY,
                                                                          trials.MAX_CONCURRENCY)


def test_trials_record_at_once_then_replay_offline(pytester: pytest.Pytester) -> None:
    with StochasticModel(seed=2) as server:
        pytester.makepyfile(test_agent=TEST.replace("@URL@", server.url))
        res = pytester.runpytest("--chaos", "--chaos-record", "--chaos-trials=4", "--chaos-concurrency=4", "-s")
        res.assert_outcomes(passed=1)
        res.stdout.fnmatch_lines(["*TRIALS [[]0, 1, 2, 3[]] [[]'process'[]] 4"])
    cassettes = sorted(p.name for p in (pytester.path / "cassettes").iterdir())
    assert len(cassettes) == 4 and sum(".trial-" in name for name in cassettes) == 3
    assert all(json.loads((pytester.path / "cassettes" / n).read_text())["turns"] for n in cassettes)
    # the server is gone: replayed, one trial after the other, in this process
    res = pytester.runpytest("--chaos", "--chaos-trials=4", "-s")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines([f"*TRIALS [[]0, 1, 2, 3[]] [[]'none'[]] {trials.DEFAULT_CONCURRENCY}"])


@pytest.mark.parametrize("value", ["0", "65"])
def test_a_concurrency_out_of_range_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_agent="def test_x(chaos):\n    pass\n")
    res = pytester.runpytest("--chaos", f"--chaos-concurrency={value}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*--chaos-concurrency: expected how many trials may wait on a live model at once, "
                              f"from 1 to 64, got {value} (1 runs them one after the other)"])




def _scenario(pytester: pytest.Pytester, url: str, record: bool) -> None:
    pytester.makefile(".chaos.yaml", live=live_scenario(url, record))


def _isolation(pytester: pytest.Pytester, out: str) -> list[tuple[str, str]]:
    report = json.loads((pytester.path / out / "report.json").read_text())
    return [(s["id"], s["isolation"]["mode"]) for s in report["scenarios"]]


def test_scenario_trials_that_record_from_a_live_model_run_at_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(livepol=LIVE_POLICY)
    pytester.makeini("[pytest]\nchaos_allow_imports = true\n")
    pytester.syspathinsert()
    ids = ["live-invoice", *(f"live-invoice#trial={i}" for i in range(1, 5))]
    with StochasticModel(seed=4) as server:
        _scenario(pytester, server.url, record=True)
        res = pytester.runpytest("--chaos", "--chaos-trials=5", "--chaos-concurrency=5", "--chaos-report=rec",
                                 "--chaos-artifacts=rec-traces")
        res.assert_outcomes(passed=5)
    assert _isolation(pytester, "rec") == [(i, "process") for i in ids]  # each in a child, reported in order
    assert len(list((pytester.path / "cassettes").iterdir())) == 5
    _scenario(pytester, "http://127.0.0.1:9/v1", record=False)  # replayed offline, in this process
    res = pytester.runpytest("--chaos", "--chaos-trials=5", "--chaos-report=rep", "--chaos-artifacts=rep-traces")
    res.assert_outcomes(passed=5)
    assert _isolation(pytester, "rep") == [(i, "none") for i in ids]
    traces = sorted((pytester.path / "rec-traces").glob("*.trace.jsonl"))
    assert len(traces) == 5
    for trace in traces:
        assert (pytester.path / "rep-traces" / trace.name).read_bytes() == trace.read_bytes()
