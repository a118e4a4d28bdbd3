"""``pytest --chaos-trials=N`` and ``--chaos-require-pass-k=K,P``: every scenario as N items ``NAME#trial=I``,
pass^k in the report, the exit status gated on pass^K, and trials split across shards merged again."""

from __future__ import annotations

import json

import pytest
from chaos_samples import flaky_model
from report_timings import assert_same_report
from toolchaos.pytest_plugin._settings import MAX_TRIALS as PLUGIN_MAX_TRIALS
from toolchaos.reports import merge_reports, pass_hat_k
from toolchaos.scenario import MAX_TRIALS

pytest_plugins = ["pytester"]

FLAKY = flaky_model(3)
BASE = ("--chaos", "--chaos-isolation=none", "-p", "no:hypothesispytest", "-p", "no:benchmark")


def test_the_plugin_knows_the_loaders_largest_trial_count() -> None:
    assert PLUGIN_MAX_TRIALS == MAX_TRIALS


def test_trials_are_items_and_the_report_gives_pass_k(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", flaky=FLAKY)
    res = pytester.runpytest(*BASE, "--chaos-trials=10", "--chaos-report=out", "-v")
    res.stdout.fnmatch_lines(["*flaky-model *", "*flaky-model#trial=9 *"])
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    [stats] = report["trials"]
    c = stats["passed"]
    assert stats["trials"] == 10 and 0 < c < 10
    assert res.ret == 1  # a scenario passes only if every trial passes
    value = pass_hat_k(10, c, 2)
    held = pytester.runpytest(*BASE, "--chaos-trials=10", f"--chaos-require-pass-k=2,{value - 0.01:.4f}")
    assert held.ret == 0
    held.stdout.fnmatch_lines(["*CERTIFIED for * critical pass^2 >= *"])
    short = pytester.runpytest(*BASE, "--chaos-trials=10", f"--chaos-require-pass-k=2,{value + 0.01:.4f}")
    assert short.ret == 1
    short.stdout.fnmatch_lines([f"PASS^K SHORT: flaky-model: pass^2 = {value:.3f} < *", "NOT CERTIFIED*"])


def test_k_above_the_trials_and_bad_options_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", flaky=FLAKY)
    res = pytester.runpytest(*BASE, "--chaos-trials=3", "--chaos-require-pass-k=5,0.5")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stdout.fnmatch_lines(["COULD NOT CERTIFY: *'flaky-model' ran 3 trial(s), fewer than K=5*"])
    bad = pytester.runpytest(*BASE, "--chaos-require-pass-k=5")
    bad.stderr.fnmatch_lines(["*--chaos-require-pass-k: expected K,P*got '5'"])
    zero = pytester.runpytest(*BASE, "--chaos-trials=0")
    zero.stderr.fnmatch_lines(["*--chaos-trials: expected a number of trials from 1 to 10000, got 0"])


def test_trials_split_across_shards_merge_into_the_unsharded_report(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", flaky=FLAKY)
    base = (*BASE, "--chaos-trials=6")
    pytester.runpytest(*base, "--chaos-report=whole")
    for i in (1, 2, 3):
        pytester.runpytest(*base, f"--chaos-shard={i}/3", f"--chaos-report=shard-{i}")
    merge_reports([pytester.path / f"shard-{i}" for i in (1, 2, 3)], pytester.path / "merged", step_summary=False)
    assert_same_report(pytester.path / "merged", pytester.path / "whole")
