"""The same seed gives byte-identical traces, in this process and in others."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from toolchaos.fake_tools import catalogue, faults
    from toolchaos import run, policies
    tools = [catalogue.get("search", faults=[{"probability": 0.4, "outcome": "timeout"}]),
             catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"applied": True}}}])]
    for agent in ("builtin:naive", "builtin:guarded", "builtin:production"):  # production: its seeded jitter
        for seed in (1, 2):
            r = run(agent, task="t", tools=tools, seed=seed, name=agent.split(":")[1],
                    policy=policies.paraphrase("search", {"query": "refund policy"}, max_turns=12))
            sys.stdout.write(r.trace.jsonl())
""")


def trace_text(extra_env=None):
    import os

    env = {**os.environ, **(extra_env or {})}
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, env=env).stdout


def test_two_processes_give_byte_identical_traces():
    a = trace_text({"PYTHONHASHSEED": "1"})
    b = trace_text({"PYTHONHASHSEED": "2"})
    assert a == b and len(a.splitlines()) > 20


def test_a_different_seed_gives_a_different_trace():
    from toolchaos import policies, run
    from toolchaos.fake_tools import catalogue

    def once(seed):
        return run("builtin:naive", task="t", seed=seed, tools=[catalogue.get("search", faults=[
            {"probability": 0.5, "outcome": "timeout"}])],
            policy=policies.paraphrase("search", {"query": "x y"}, max_turns=8)).trace.jsonl()

    assert once(5) == once(5) != once(6)
