"""The certification suite under two random orders (pytest-randomly): the same traces, byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pytest_randomly")


def _session(pytester: pytest.Pytester, seed: int) -> tuple[list[str], dict[str, bytes]]:
    out = f"traces-{seed}"
    res = pytester.runpytest("--chaos-certify", f"--chaos-artifacts={out}", "-p", "randomly",
                             f"--randomly-seed={seed}", "-v")
    assert res.ret == 0, res.stdout.str()[-3000:]
    order = re.findall(r"^(toolchaos_scenarios/\S+) PASSED", res.stdout.str(), flags=re.M)
    traces = {p.name: p.read_bytes() for p in sorted(Path(pytester.path, out).glob("*.trace.jsonl"))}
    return order, traces


def test_two_random_orders_give_identical_traces(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest -p no:langsmith_plugin")  # randomly on here
    first_order, first = _session(pytester, 1)
    second_order, second = _session(pytester, 2)
    assert len(first_order) >= 40 and sorted(first_order) == sorted(second_order)
    assert first_order != second_order  # really two orders
    assert first.keys() == second.keys() and len(first) >= 40
    assert first == second
