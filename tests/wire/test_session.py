"""``toolchaos.wire.session``: the block is the agent; its failure is the run's and is raised again."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from toolchaos import policies, wire
from toolchaos.fake_tools import catalogue
from toolchaos.wire import session, takes_env


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


def test_the_sync_sdk_clients_the_env_hands_out_are_closed_when_the_run_ends() -> None:
    """Left open, a client is closed by its __del__ at interpreter exit, after httpx is gone: an error printed."""
    kept: list[Any] = []

    def agent(task: str, env: Any) -> str:
        openai_client, anthropic_client = env.openai(), env.anthropic()
        kept.extend([openai_client, anthropic_client])
        reply = openai_client.chat.completions.create(model="m", messages=[{"role": "user", "content": task}])
        assert not openai_client.is_closed()  # open while the run goes on
        return str(reply.choices[0].message.content)

    result = wire.run(takes_env(agent), task="t", tools=[], policy=policies.scripted([{"final": "done"}]))
    assert result.answer == "done" and len(kept) == 2
    assert all(client.is_closed() for client in kept)
