"""``toolchaos.wire.session``: the block is the agent; its failure is the run's and is raised again."""

from __future__ import annotations

import time

import httpx
import pytest
from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.wire import session


def _ask(base_url: str) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reply = httpx.post(f"{base_url}/chat/completions", json=body, headers={"authorization": "Bearer x"})
    return str(reply.json()["choices"][0]["message"]["content"])


def test_the_block_talks_to_the_wire_on_the_runs_clock() -> None:
    with session(tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hello"}]), seed=3) as env:
        assert _ask(env.openai_base_url) == "hello"
        time.sleep(60)
        env.answer = "hello"
    r = env.result
    assert r is not None and (r.terminal_state, r.model_requests, r.virtual_seconds, r.seed) == ("COMPLETED", 1, 60, 3)
    assert r.answer == "hello"


def test_an_exception_in_the_block_fails_the_run_and_is_raised_again() -> None:
    with pytest.raises(ValueError, match="the agent's own bug"):
        with session(tools=[catalogue.get("search")], policy=policies.scripted([{"final": "x"}])) as env:
            raise ValueError("the agent's own bug")
    assert env.result is not None and env.result.terminal_state != "COMPLETED"
    assert "the agent's own bug" in (env.result.error or "")


def test_a_usage_error_is_raised_before_the_block() -> None:
    with pytest.raises(ValueError, match="unknown model API"):
        with session(tools=[], policy=policies.scripted([]), apis=["no-such-api"]):
            raise AssertionError("the block must not run")
