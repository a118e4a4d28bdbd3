"""Trials: a scenario run n times (trial i with seed + i), and what its c passes say.

For n trials with c passed, per scenario and for each k <= n (the unbiased estimators over the
n runs, as the agent benchmarks report them):

- ``pass@k = 1 - C(n-c, k) / C(n, k)``: the chance that at least one of k trials passes;
- ``pass^k = C(c, k) / C(n, k)``: the chance that all k trials pass (what a release needs);

with a Wilson score interval (95%) on the pass rate c/n. The scenario's verdict stays strict:
it passes only if every trial passed. ``--require-pass-k K,P`` gates the certificate on
every critical scenario's pass^K >= P instead (its trials' verdicts then count through pass^K).

A trial's report.json entry says which scenario it is a trial of (``trial``); ``trial_stats``
groups the entries, so a merge of shards, each holding some trials, rebuilds the same figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolchaos.errors import ReportError
from toolchaos.reports._levels import Row, applicable, meets, rows

WILSON_Z = 1.959963984540054  # the 97.5th percentile of the normal distribution: a 95% interval
PASS_K_FORM = re.compile(r"\s*(\d+)\s*,\s*([0-9]*\.?[0-9]+)\s*")
PassK = tuple[int, float]  # (K, P): every critical scenario's pass^K >= P


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k of the n trials passes, c of which passed (unbiased)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all k of k trials drawn from the n pass, c of which passed (unbiased)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def wilson(c: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The Wilson score interval on the pass rate c/n (95% by default); (0, 1) for no trial."""
    if n == 0:
        return 0.0, 1.0
    p = c / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))  # p inside, whatever the rounding


def parse_pass_k(text: str, source: str) -> PassK:
    """``K,P`` (K >= 1, 0 <= P <= 1), or a ``ReportError`` naming ``source`` and the form."""
    m = PASS_K_FORM.fullmatch(str(text))
    if m is None or int(m.group(1)) < 1 or not 0.0 <= float(m.group(2)) <= 1.0:
        raise ReportError(f"{source}: expected K,P (K >= 1 trials all passing with probability at least P, "
                          f"0 <= P <= 1; e.g. 3,0.9), got {text!r}")
    return int(m.group(1)), float(m.group(2))


def shown_ks(n: int) -> list[int]:
    """The k a table shows of n trials (report.json has every k): 1, 2, 3, 5, 10 and n."""
    return sorted({k for k in (1, 2, 3, 5, 10, n) if k <= n})


def required_text(report: Mapping[str, Any]) -> str | None:
    """``critical scenarios' pass^K >= P`` when the run required it (``--require-pass-k``), else None."""
    req = report.get("required_pass_k")
    return None if not req else f"every critical scenario's pass^{req['k']} >= {req['p']:g}"


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _instance(item: Any) -> tuple[str, int, int] | None:
    """(scenario, trial index, trials) of a report entry or a verdict that is a trial, else None."""
    trial = _field(item, "trial")
    if isinstance(trial, Mapping):
        return str(trial["scenario"]), int(trial["index"]), int(trial["of"])
    sc = getattr(item, "scenario", None)
    if sc is not None and getattr(sc, "trials", 1) > 1:
        return str(sc.base_name), int(sc.trial), int(sc.trials)
    return None


def trial_entry(scenario: Any) -> dict[str, Any] | None:
    """What a trial's report.json entry says of it (``trial``); None for a scenario run once."""
    if scenario is None or getattr(scenario, "trials", 1) <= 1:
        return None
    return {"scenario": scenario.base_name, "index": scenario.trial, "of": scenario.trials}


def _passed(item: Any) -> bool:
    if isinstance(item, Mapping):
        return item.get("verdict") == "pass"
    return bool(getattr(item, "passed", False))


def _groups(items: Iterable[Any]) -> dict[str, list[Any]]:
    """The applicable items of each scenario: its trials, or the one run of a scenario without trials."""
    out: dict[str, list[Any]] = {}
    for it in applicable(list(items)):
        inst = _instance(it)
        out.setdefault(inst[0] if inst else str(_field(it, "id")), []).append(it)
    return out


def _rounded(x: float) -> float:
    return round(x, 6)


def trial_stats(items: Iterable[Any]) -> list[dict[str, Any]]:
    """Per scenario run as trials (sorted by name): n, c, the Wilson interval, pass@k and pass^k for k = 1..n."""
    out = []
    trials = [it for it in applicable(list(items)) if _instance(it) is not None]
    for name, group in sorted(_groups(trials).items()):
        n, c = len(group), sum(_passed(it) for it in group)
        lo, hi = wilson(c, n)
        out.append({"id": name, "severity": _field(group[0], "severity"), "trials": n, "passed": c,
                    "verdict": "pass" if c == n else "fail", "wilson_95": [_rounded(lo), _rounded(hi)],
                    "pass_at_k": [_rounded(pass_at_k(n, c, k)) for k in range(1, n + 1)],
                    "pass_hat_k": [_rounded(pass_hat_k(n, c, k)) for k in range(1, n + 1)]})
    return out


def _critical(group: Sequence[Any]) -> bool:
    return str(_field(group[0], "severity")) == "critical"


def _shortfalls(items: Iterable[Any], pass_k: PassK, strict: bool = True, partial: bool = False) -> dict[str, str]:
    """Critical scenario -> why its pass^K is below P; one with fewer than K trials is a ``ReportError``
    (``strict``: what a command says), a shortfall (a whole run's report), or left to the merge (``partial``:
    a shard holds some of its trials only)."""
    k, p = pass_k
    out = {}
    for name, group in sorted(_groups(items).items()):
        if not _critical(group):
            continue
        n, c = len(group), sum(_passed(it) for it in group)
        if k > n and partial:
            continue
        if k > n and not strict:
            out[name] = f"{name}: {n} trial(s), fewer than K={k}"
        elif k > n:
            raise ReportError(f"--require-pass-k {k},{p:g}: the critical scenario {name!r} ran {n} trial(s), "
                              f"fewer than K={k}; run at least {k} trials (trials: {k} in the scenario, "
                              f"--trials {k}, --chaos-trials={k}) or lower K")
        elif (value := pass_hat_k(n, c, k)) < p:
            out[name] = f"{name}: pass^{k} = {value:.3f} < {p:g} ({c} of {n} trials passed)"
    return out


def pass_k_shortfalls(items: Iterable[Any], pass_k: PassK) -> list[str]:
    """The critical scenarios whose pass^K is below P, each said; a ``ReportError`` for one with fewer than K trials."""
    return list(_shortfalls(items, pass_k).values())


def gated(items: Iterable[Any], level: str, pass_k: PassK | None, partial: bool = False) -> bool:
    """The certificate's gate: the level, with ``pass_k`` each critical scenario's trials counted as one
    row, passed when its pass^K >= P (without ``pass_k`` every trial must pass, as every scenario). A critical
    scenario with fewer than K trials here fails the gate (``pass_k_shortfalls`` says why, for a command), unless
    ``partial`` (a shard: the merged report judges it)."""
    listed = list(items)
    if pass_k is None:
        return meets(rows(listed), level)
    short = _shortfalls(listed, pass_k, strict=False, partial=partial)
    counted: list[Row] = []
    for name, group in _groups(listed).items():
        if _critical(group):
            counted.append(("critical", name not in short))
        else:
            counted += rows(group)
    return meets(counted, level)
