"""Model-API faults on the virtual clock: the SDKs' own retries and backoff run, nothing waits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra: pip install toolchaos[openai]")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra: pip install toolchaos[anthropic]")

from freezegun.api import real_perf_counter  # noqa: E402
from toolchaos import policies, wire  # noqa: E402
from toolchaos.wire import ApiFaultError, as_api_fault  # noqa: E402

MSGS = [{"role": "user", "content": "hi"}]
FINAL = policies.scripted([{"final": "fine"}])


def _oa(client_kwargs: dict[str, Any] | None = None) -> Any:
    def agent(task: str) -> str:
        client = openai.OpenAI(**(client_kwargs or {}))
        return str(client.chat.completions.create(model="m", messages=MSGS).choices[0].message.content)
    return agent


def _an(stream: bool = False, **client_kwargs: Any) -> Any:
    def agent(task: str) -> str:
        client = anthropic.Anthropic(**client_kwargs)
        if stream:
            with client.messages.stream(model="c", max_tokens=5, messages=MSGS) as s:
                return "".join(b.text for b in s.get_final_message().content if b.type == "text")
        return str(client.messages.create(model="c", max_tokens=5, messages=MSGS).content[0].text)
    return agent


@pytest.mark.parametrize("agent_factory", [_oa, _an], ids=["openai", "anthropic"])
def test_429_retry_after_is_honoured_on_the_virtual_clock(agent_factory: Any) -> None:
    started = real_perf_counter()
    result = wire.run(agent_factory(), task="t", tools=[], policy=FINAL, api_faults={1: {"429": 30}, 2: {"429": 30}})
    assert result.answer == "fine" and result.terminal_state == "COMPLETED"
    assert [r.status for r in result.requests] == [429, 429, 200]
    assert result.virtual_seconds >= 60  # the SDK slept retry-after twice, virtually
    assert real_perf_counter() - started < 5
    api_events = result.trace.of_kind("api")
    assert [e["code"] for e in api_events] == ["rate_limited", "rate_limited"] and api_events[0]["retry_after"] == 30
    assert result.turns == 1 and result.model_requests == 3


@pytest.mark.parametrize("spec,status", [("500", 500), ("503", 503), ("529", 529)])
def test_server_errors_are_retried_with_backoff(spec: str, status: int) -> None:
    result = wire.run(_an(), task="t", tools=[], policy=FINAL, api_faults={1: spec})
    assert [r.status for r in result.requests] == [status, 200]
    assert 0 < result.virtual_seconds < 10  # the SDK's own jittered backoff, virtual


def test_errors_past_the_retry_budget_reach_the_agent() -> None:
    result = wire.run(_oa({"max_retries": 1}), task="t", tools=[], policy=FINAL, api_faults={"always": "503"})
    assert result.terminal_state == "CRASHED" and "InternalServerError" in (result.error or "")
    assert result.model_requests == 2 and result.turns == 0


@pytest.mark.parametrize("agent", [_oa({"timeout": 20.0}), _an(timeout=20.0)], ids=["openai", "anthropic"])
def test_timeout_uses_the_clients_read_timeout(agent: Any) -> None:
    result = wire.run(agent, task="t", tools=[], policy=FINAL, api_faults={1: "timeout"})
    assert result.answer == "fine"
    assert [r.fault for r in result.requests] == ["timeout", None]
    assert 20 <= result.virtual_seconds < 30


def test_timeout_after_is_capped_by_the_client() -> None:
    result = wire.run(_oa({"timeout": 600.0}), task="t", tools=[], policy=FINAL, api_faults={1: {"timeout": 45}})
    assert 45 <= result.virtual_seconds < 55


def test_async_retries_run_on_the_virtual_clock() -> None:
    async def agent(task: str) -> str:
        a = await openai.AsyncOpenAI().chat.completions.create(model="m", messages=MSGS)
        b = await anthropic.AsyncAnthropic().messages.create(model="c", max_tokens=5, messages=MSGS)
        return f"{a.choices[0].message.content}/{b.content[0].text}"

    started = real_perf_counter()
    result = wire.run(agent, task="t", tools=[], policy=policies.scripted([{"final": "a"}, {"final": "b"}]),
                      api_faults={1: {"429": 40}, 3: "timeout"})
    assert result.answer == "a/b"
    assert result.virtual_seconds >= 40 + 600  # retry-after, then anthropic's default read timeout
    assert real_perf_counter() - started < 5


def test_an_async_sdk_agent_runs_on_a_loop_whose_timers_are_virtual() -> None:
    async def agent(task: str) -> str:
        loop = asyncio.get_running_loop()
        before = loop.time()
        try:  # a timeout built on the loop's timers, not on asyncio.sleep: real time would hang here
            await asyncio.wait_for(asyncio.Event().wait(), timeout=50)
        except TimeoutError:
            pass
        waited = loop.time() - before
        a = await openai.AsyncOpenAI().chat.completions.create(model="m", messages=MSGS)
        return f"{a.choices[0].message.content} after {waited:g}s"

    started = real_perf_counter()
    result = wire.run(agent, task="t", tools=[], policy=FINAL)
    assert result.answer == "fine after 50s"
    assert result.virtual_seconds >= 50 and real_perf_counter() - started < 5


def test_stream_cut_midway_reaches_the_agent_as_the_sdks_error() -> None:
    result = wire.run(_an(stream=True), task="t", tools=[], policy=FINAL, api_faults={1: {"stream_cut": 2}})
    assert result.terminal_state == "CRASHED"
    assert "RemoteProtocolError" in (result.error or "") and result.turns == 0

    def agent(task: str) -> str:
        client = openai.OpenAI()
        try:
            list(client.chat.completions.create(model="m", messages=MSGS, stream=True))
        except openai.APIConnectionError:
            pass
        return str(client.chat.completions.create(model="m", messages=MSGS).choices[0].message.content)

    result = wire.run(agent, task="t", tools=[], policy=FINAL, api_faults={1: "stream_cut"})
    assert result.answer == "fine" and [r.fault for r in result.requests] == ["stream_cut", None]


def test_malformed_json_body() -> None:
    def agent(task: str) -> str:
        client = openai.OpenAI(max_retries=0)
        try:
            client.chat.completions.create(model="m", messages=MSGS)
        except Exception as exc:  # the SDK's error for a body that is not JSON
            return f"broken: {type(exc).__name__}"
        return "parsed?"

    result = wire.run(agent, task="t", tools=[], policy=FINAL, api_faults={1: "malformed"})
    assert (result.answer or "").startswith("broken:")


def test_fault_specs_are_validated() -> None:
    assert as_api_fault("429").retry_after == 1.0
    assert as_api_fault({"timeout": 30}).after == 30
    assert as_api_fault(529).kind == "overloaded"
    with pytest.raises(ApiFaultError, match="unknown model-API fault 'oops'"):
        as_api_fault("oops")
    with pytest.raises(ApiFaultError, match="retry_after"):
        as_api_fault({"429": -1})
    with pytest.raises(ApiFaultError, match="request numbers"):
        wire.run(_oa(), task="t", tools=[], policy=FINAL, api_faults={"first": "429"})


@pytest.mark.parametrize("agent_factory", [_oa, _an], ids=["openai", "anthropic"])
@pytest.mark.parametrize("spec", ["503", "timeout"])
def test_the_sdk_retry_jitter_follows_the_run_seed_not_the_process(agent_factory: Any, spec: str) -> None:
    # Without a retry-after header the SDKs jitter their backoff with the global `random`: the
    # trace's virtual times must come from the run's seed, whatever the process drew before.
    import random

    def seconds(process_seed: int, run_seed: int) -> float:
        random.seed(process_seed)
        result = wire.run(agent_factory(), task="t", tools=[], policy=FINAL, api_faults={1: spec}, seed=run_seed)
        assert [r.status for r in result.requests][-1] == 200
        return result.virtual_seconds

    assert seconds(1, run_seed=0) == seconds(2, run_seed=0) == seconds(3, run_seed=0)
    assert seconds(1, run_seed=0) != seconds(1, run_seed=7)  # seeded from the run, so a run's seed changes it


def test_the_callers_global_random_goes_on_as_if_the_run_drew_nothing() -> None:
    import random

    random.seed(11)
    expected = random.Random(11)
    assert random.random() == expected.random()
    wire.run(_oa(), task="t", tools=[], policy=FINAL, api_faults={1: "503"})
    assert random.random() == expected.random()
