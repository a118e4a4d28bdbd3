"""Determinism at scale: a scenario's trace depends only on its seed and content.

The same suite (marker tests with seeded-random faults, async and threaded agents, and the
bundled certification scenarios) runs serially, under ``-n 2`` and in a shuffled order, each
with another hash seed; every ``--chaos-artifacts`` directory must be byte-identical.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = '''
import asyncio
import pytest
from toolchaos import tool_message

FLAKY = [{"probability": 0.35, "outcome": "timeout"}, {"probability": 0.2, "outcome": {"transient": {"code": 503}}}]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("agent", ["builtin:naive", "builtin:guarded"])
def test_paraphrasing_model_against_a_flaky_search(chaos, agent, seed):
    chaos.run(agent=agent, seed=seed, task="find the refund policy",
              tools=[chaos.tool("search", FLAKY), chaos.tool("charge_payment", FLAKY)],
              policy=chaos.policies.paraphrase("search", {"query": "refund policy"}, max_turns=10))


@pytest.mark.parametrize("seed", range(4))
def test_payments_with_lost_responses(chaos, seed):
    pay = chaos.tool("charge_payment", [{"probability": 0.5, "outcome": {"timeout": {"applied": True}}}])
    chaos.run(seed=seed, task="pay", tools=[pay], policy=chaos.policies.scripted(
        [{"call": "charge_payment", "args": {"customer_id": "c", "amount": 5, "idempotency_key": f"k{i % 2}"}}
         for i in range(6)] + [{"final": "paid"}]))


@pytest.mark.parametrize("seed", range(3))
def test_async_agent_with_parallel_calls(chaos, seed):
    async def agent(task, model, tools):
        messages = [{"role": "user", "content": task}]
        for _ in range(4):
            turn = await model.acomplete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return turn.text
            results = await asyncio.gather(*(tools.acall(c.name, c.arguments, call_id=c.id) for c in turn.tool_calls))
            messages += [tool_message(c, r) for c, r in zip(turn.tool_calls, results)]
        return None

    slow = [{"always": True, "outcome": {"slow": {"latency": 3}}}]
    chaos.run(agent=agent, seed=seed, task="t", tools=[chaos.tool("search", FLAKY + slow)],
              policy=chaos.policies.scripted([{"calls": [{"call": "search", "args": {"query": f"q{i}"}}
                                                         for i in range(3)]}] * 3 + [{"final": "done"}]))
'''

SHUFFLE = '''
import os, random

def pytest_collection_modifyitems(session, config, items):
    seed = os.environ.get("SHUFFLE_TESTS")
    if seed:
        random.Random(seed).shuffle(items)
'''


def session(path: Path, out: str, *args: str, hashseed: str, shuffle: str = "") -> None:
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "SHUFFLE_TESTS": shuffle, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--chaos", "--chaos-certify", f"--chaos-artifacts={out}", *args],
                          cwd=path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]  # 1: some scenarios fail, fine
    assert " error" not in proc.stdout.splitlines()[-1], proc.stdout[-3000:]  # but every test ran


def same_tree(a: Path, b: Path) -> list[str]:
    names_a = sorted(p.name for p in a.iterdir())
    names_b = sorted(p.name for p in b.iterdir())
    assert names_a == names_b, set(names_a) ^ set(names_b)
    _, mismatch, errors = filecmp.cmpfiles(a, b, names_a, shallow=False)
    return mismatch + errors


@pytest.mark.slow
def test_serial_xdist_and_shuffled_runs_write_byte_identical_traces(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(SHUFFLE)
    path = pytester.path
    session(path, "serial", hashseed="1")
    session(path, "xdist", "-n", "2", hashseed="2")
    session(path, "shuffled", hashseed="3", shuffle="7")
    serial = path / "serial"
    traces = list(serial.iterdir())
    assert len(traces) == 12 + 4 + 3 + len([p for p in traces if not p.name.startswith("test_suite")]), len(traces)
    assert len(traces) >= 40
    assert all(p.stat().st_size > 0 for p in traces)
    assert same_tree(serial, path / "xdist") == []
    assert same_tree(serial, path / "shuffled") == []
