"""A request the wire does not serve fails the run, naming the URL, without retries or network."""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai extra: pip install toolchaos[openai]")
anthropic = pytest.importorskip("anthropic", reason="needs the anthropic extra: pip install toolchaos[anthropic]")

from toolchaos import policies, wire  # noqa: E402

FINAL = policies.scripted([{"final": "fine"}])


def test_unknown_endpoint_names_the_url() -> None:
    def agent(task: str) -> None:
        openai.OpenAI().embeddings.create(model="e", input="x")

    result = wire.run(agent, task="t", tools=[], policy=FINAL)
    assert result.terminal_state == "CRASHED"
    assert "POST https://api.openai.com/v1/embeddings" in (result.error or "")
    assert result.unmatched == ["POST https://api.openai.com/v1/embeddings"]


def test_undeclared_model_api_names_the_url_and_is_not_retried() -> None:
    def agent(task: str) -> None:
        anthropic.Anthropic(api_key="k", max_retries=5).messages.create(model="c", max_tokens=5,
                                                           messages=[{"role": "user", "content": "hi"}])

    result = wire.run(agent, task="t", tools=[], policy=FINAL, apis=["openai"])
    assert "https://api.anthropic.com/v1/messages" in (result.error or "")
    assert "serves the model APIs openai" in (result.error or "")
    assert result.virtual_seconds == 0  # the SDK did not retry it with backoff
    assert len(result.unmatched) == 1


def test_swallowed_unmatched_request_still_fails_the_run() -> None:
    def agent(task: str) -> str:
        try:
            openai.OpenAI(base_url="https://llm.internal.test/v1").chat.completions.create(model="m", messages=[])
        except BaseException:
            pass
        return "pretend all is well"

    result = wire.run(agent, task="t", tools=[], policy=FINAL)
    assert result.terminal_state == "CRASHED" and "https://llm.internal.test/v1/chat/completions" in (result.error or "")


def test_base_url_from_argument_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8080/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.test/anthropic")

    def agent(task: str) -> str:
        a = openai.OpenAI().chat.completions.create(model="m", messages=[]).choices[0].message.content
        b = openai.OpenAI(base_url="https://proxy.test/openai/v1").chat.completions.create(model="m", messages=[])
        c = anthropic.Anthropic().messages.create(model="c", max_tokens=5, messages=[])
        return f"{a}|{b.choices[0].message.content}|{c.content[0].text}"

    policy = policies.scripted([{"final": "x"}, {"final": "y"}, {"final": "z"}])
    result = wire.run(agent, task="t", tools=[], policy=policy, base_urls={"openai": "https://proxy.test/openai/v1"})
    assert result.answer == "x|y|z"
    assert [r.url for r in result.requests] == ["http://localhost:8080/v1/chat/completions",
                                                "https://proxy.test/openai/v1/chat/completions",
                                                "https://gateway.test/anthropic/v1/messages"]


def test_dummy_api_keys_are_set_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: dict[str, Any] = {}

    def agent(task: str) -> str:
        import os

        seen["key"] = os.environ.get("OPENAI_API_KEY")
        return str(openai.OpenAI().chat.completions.create(model="m", messages=[]).choices[0].message.content)

    result = wire.run(agent, task="t", tools=[], policy=FINAL)
    assert result.answer == "fine" and seen["key"] == wire.FAKE_API_KEY
    import os

    assert "OPENAI_API_KEY" not in os.environ
