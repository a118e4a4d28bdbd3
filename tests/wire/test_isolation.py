"""Wire runs under ``--chaos-isolation=process``: they stay in process, and their result says so and why.

A ``chaos.wire`` block is the test's own code in the test's thread; in a forked child it would
run in a copy of the process while the test waited for it (the session died with ``KeyError: 'env'``
once the child was killed). ``toolchaos.wire.run`` keeps its record of the agent's requests here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from toolchaos import Ceiling, policies
from toolchaos._engine import run, session_defaults
from toolchaos.adapters import agent_under_test
from toolchaos.fake_tools import catalogue
from toolchaos.wire import run as wire_run
from toolchaos.wire import session, takes_env
from toolchaos.wire._run import WIRE_RUN, WIRE_SESSION

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="process isolation needs os.fork")

# Bounds a regression (a block that never starts) to seconds, not the SDK default's minute.
CEILING = Ceiling(real_seconds=10.0)


@pytest.fixture(autouse=True)
def isolated_runs() -> Iterator[None]:
    restore = session_defaults(isolation="process")
    yield
    restore()


def _ask(base_url: str) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reply = httpx.post(f"{base_url}/chat/completions", json=body, headers={"authorization": "Bearer x"})
    return str(reply.json()["choices"][0]["message"]["content"])


@takes_env
def _asks_once(task: str, env: Any) -> str:
    return _ask(env.openai_base_url)


def test_a_session_completes_in_process_and_says_why() -> None:
    with session(tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hello"}]),
                 ceiling=CEILING) as env:
        assert _ask(env.openai_base_url) == "hello"
    r = env.result
    assert r is not None and (r.terminal_state, r.model_requests, r.answer) == ("COMPLETED", 1, "hello")
    assert (r.isolation, r.isolation_reason) == ("none", WIRE_SESSION)


def test_wire_run_keeps_its_requests_in_process_and_says_why() -> None:
    r = wire_run(_asks_once, task="t", tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hi"}]),
                 ceiling=CEILING)
    assert (r.terminal_state, r.model_requests, r.answer) == ("COMPLETED", 1, "hi")
    assert (r.isolation, r.isolation_reason) == ("none", WIRE_RUN)


def test_an_sdk_agent_under_test_is_named_by_its_kind() -> None:
    r = run(agent_under_test(_asks_once, kind="sdk"), task="t", tools=[catalogue.get("search")],
            policy=policies.scripted([{"final": "hi"}]), ceiling=CEILING)
    assert (r.terminal_state, r.isolation) == ("COMPLETED", "none")
    assert (r.isolation_reason or "").startswith("an agent of kind sdk: its runner answers the agent's model over HTTP")


def test_an_in_process_agent_under_test_is_isolated_as_the_session_asks() -> None:
    # What `pytest --chaos-certify --chaos-agent=builtin:guarded` and `toolchaos certify` run: it used to
    # stay in process, as if it were an SDK agent, and no run of the suite was isolated.
    scripted = policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}])
    r = run(agent_under_test("builtin:guarded"), task="t", tools=[catalogue.get("search")], policy=scripted)
    assert (r.terminal_state, r.isolation, r.isolation_reason) == ("COMPLETED", "process", None)


def test_after_a_wire_run_the_thread_isolates_again() -> None:
    with session(tools=[catalogue.get("search")], policy=policies.scripted([{"final": "x"}]), ceiling=CEILING):
        pass
    wire_run(_asks_once, task="t", tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hi"}]),
             ceiling=CEILING)
    after = run(lambda task, model, tools: "done", task="t", tools=[catalogue.get("search")],
                policy=policies.scripted([]))
    assert (after.isolation, after.isolation_reason) == ("process", None)


def test_a_failed_wire_tests_report_says_it_ran_in_process_and_why(tmp_path: Path) -> None:
    from toolchaos.certification._verdict import ScenarioVerdict
    from toolchaos.invariants._builtin import Violation
    from toolchaos.reports import RunMeta, scenario_entry, write_entries

    with session(tools=[catalogue.get("search")], policy=policies.scripted([{"final": "x"}]), ceiling=CEILING) as env:
        _ask(env.openai_base_url)
    assert env.result is not None
    failed = ScenarioVerdict("test_w.py::test_w", "test_w", "test", "critical", env.result,
                             [Violation("test", "the test's assertions hold", "AssertionError")])
    entry, _events = scenario_entry(failed)
    assert entry["isolation"] == {"mode": "none", "reason": WIRE_SESSION}
    written = write_entries([scenario_entry(failed)], RunMeta(agent="builtin:guarded"), tmp_path, step_summary=False)
    assert f"Ran in process under process isolation: {WIRE_SESSION}." in written["md"].read_text()
