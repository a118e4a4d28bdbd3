"""pass@k, pass^k and the Wilson interval of a scenario's trials (toolchaos.reports), and the gate they make."""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolchaos.errors import ReportError
from toolchaos.reports import pass_at_k, pass_hat_k, trial_stats, wilson
from toolchaos.reports._trials import gated, parse_pass_k, pass_k_shortfalls

counts = st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@given(counts)
def test_at_k_1_both_estimators_are_the_pass_rate(nc: tuple[int, int]) -> None:
    n, c = nc
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n)
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)


@given(counts)
def test_pass_hat_k_falls_and_pass_at_k_rises_with_k_within_bounds(nc: tuple[int, int]) -> None:
    n, c = nc
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= x <= 1.0 for x in hat + at)
    assert all(a >= b for a, b in pairwise(hat))  # all k pass: harder as k grows
    assert all(a <= b for a, b in pairwise(at))  # one of k passes: easier as k grows
    assert all(h <= a + 1e-12 for h, a in zip(hat, at, strict=True))
    lo, hi = wilson(c, n)
    assert 0.0 <= lo <= c / n <= hi <= 1.0


def test_known_values() -> None:
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_at_k(5, 3, 2) == pytest.approx(1 - 1 / 10)  # 1 - C(2,2)/C(5,2)
    assert pass_hat_k(5, 3, 4) == 0.0 and pass_at_k(5, 3, 3) == 1.0  # 3 passes can't fill 4; 2 failures can't fill 3
    assert pass_hat_k(20, 20, 20) == 1.0 and pass_at_k(20, 0, 20) == 0.0
    assert pass_hat_k(20, 14, 3) == pytest.approx(math.comb(14, 3) / math.comb(20, 3))
    assert wilson(0, 10) == pytest.approx((0.0, 0.277533), abs=1e-6)
    assert wilson(5, 10) == pytest.approx((0.236593, 0.763407), abs=1e-6)
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 3, 0), (5, 3, 6)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_hat_k(n, c, k)


def test_require_pass_k_is_read_as_k_comma_p() -> None:
    assert parse_pass_k("3,0.9", "--require-pass-k") == (3, 0.9)
    assert parse_pass_k(" 1 , 1 ", "--require-pass-k") == (1, 1.0)
    for bad in ("3", "0,0.5", "3,1.5", "x,0.5", "3;0.9"):
        with pytest.raises(ReportError, match=r"--require-pass-k: expected K,P .* got"):
            parse_pass_k(bad, "--require-pass-k")


def entry(name: str, index: int, of: int, passed: bool, severity: str = "critical") -> dict[str, Any]:
    sid = name if index == 0 else f"{name}#trial={index}"
    return {"id": sid, "severity": severity, "verdict": "pass" if passed else "fail", "failure_severity": None,
            "trial": {"scenario": name, "index": index, "of": of} if of > 1 else None}


def trials(name: str, passes: list[bool], severity: str = "critical") -> list[dict[str, Any]]:
    return [entry(name, i, len(passes), ok, severity) for i, ok in enumerate(passes)]


def test_trial_stats_group_the_trials_of_each_scenario() -> None:
    items = [*trials("flaky", [True, False, True, True]), entry("once", 0, 1, True)]
    [stats] = trial_stats(items)
    assert (stats["id"], stats["trials"], stats["passed"], stats["verdict"]) == ("flaky", 4, 3, "fail")
    assert stats["pass_hat_k"] == [0.75, 0.5, 0.25, 0.0]
    assert stats["pass_at_k"] == [0.75, 1.0, 1.0, 1.0]


def test_the_pass_k_gate_fires_below_p_and_holds_above() -> None:
    items = trials("flaky", [True] * 9 + [False]) + trials("minor", [False, True], "minor")
    assert not gated(items, "critical", None)  # without it every trial must pass
    assert gated(items, "critical", (2, 0.75))  # pass^2 = C(9,2)/C(10,2) = 0.8
    assert not gated(items, "critical", (2, 0.85))
    assert pass_k_shortfalls(items, (2, 0.85)) == ["flaky: pass^2 = 0.800 < 0.85 (9 of 10 trials passed)"]
    assert not gated(items, "all", (2, 0.75))  # a failed minor trial still fails level all


def test_k_above_a_critical_scenarios_trials_is_said_by_the_command_and_fails_the_gate() -> None:
    items = trials("flaky", [True, True, True])
    with pytest.raises(ReportError, match=r"'flaky' ran 3 trial\(s\), fewer than K=5; run at least 5 trials"):
        pass_k_shortfalls(items, (5, 0.5))
    assert not gated(items, "critical", (5, 0.5))
    assert gated(items, "critical", (3, 1.0))
