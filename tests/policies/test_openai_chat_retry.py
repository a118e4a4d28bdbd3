"""``openai_chat`` asks again after a 429 or 503, waiting what its Retry-After says (seconds or an HTTP date),
a few times at most, and refuses a wait longer than ``max_wait``; once against the stochastic server, for real."""

from __future__ import annotations

import email.utils
import random
from typing import Any

import httpx
import pytest
import respx
from live_model import StochasticModel
from toolchaos import policies
from toolchaos._internal.model import ModelView
from toolchaos._plumbing import clock
from toolchaos.errors import CassetteError, PolicyError
from toolchaos.policies._cassette import retry_after

URL = "https://llm.example.test/v1"
FINAL = {"choices": [{"message": {"role": "assistant", "content": "done"}}]}


def _view() -> ModelView:
    return ModelView(task="t", step=1, messages=[{"role": "user", "content": "t"}], feedback=[], tools=["search"],
                     rng=random.Random(0))


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The real seconds the client would have slept (not slept: the endpoint is a respx double)."""
    seen: list[float] = []
    monkeypatch.setattr(clock, "real_sleep", seen.append)
    return seen


def _answering(*responses: httpx.Response) -> Any:
    router = respx.mock(assert_all_called=True)
    router.post(f"{URL}/chat/completions").mock(side_effect=list(responses))
    return router


def test_a_429_is_asked_again_after_its_retry_after(waits: list[float]) -> None:
    limited = httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"})
    with _answering(limited, httpx.Response(503, headers={"Retry-After": "0.5"}), httpx.Response(200, json=FINAL)):
        decision = policies.openai_chat(URL, model="m", api_key="k")(_view())
    assert decision.text == "done" and waits == [2.0, 0.5]


def test_an_http_date_and_no_header_at_all(waits: list[float]) -> None:
    date = email.utils.formatdate(clock.real_time() + 3, usegmt=True)
    with _answering(httpx.Response(429, headers={"Retry-After": date}), httpx.Response(429),
                    httpx.Response(200, json=FINAL)):
        policies.openai_chat(URL, model="m", api_key="k")(_view())
    assert 1.5 < waits[0] <= 3.0  # the date's distance from the real now (whole seconds)
    assert waits[1] == 2.0  # no Retry-After: 1, 2, 4... seconds, by attempt


def test_the_retries_run_out_and_the_error_says_how_often_it_asked(waits: list[float]) -> None:
    with _answering(*[httpx.Response(429, headers={"Retry-After": "1"}, text="busy")] * 3):
        with pytest.raises(CassetteError, match=r"answered HTTP 429 \(asked 3 times\): busy"):
            policies.openai_chat(URL, model="m", api_key="k", retries=2)(_view())
    assert waits == [1.0, 1.0]


def test_a_wait_longer_than_max_wait_is_an_error_not_a_stalled_run(waits: list[float]) -> None:
    with _answering(httpx.Response(429, headers={"Retry-After": "3600"})):
        with pytest.raises(CassetteError, match=r"asks to wait 3600s \(Retry-After: 3600\), more than max_wait=30s"):
            policies.openai_chat(URL, model="m", api_key="k")(_view())
    assert waits == []


def test_other_errors_are_not_retried(waits: list[float]) -> None:
    with _answering(httpx.Response(401, text="bad key")):
        with pytest.raises(CassetteError, match=r"answered HTTP 401: bad key"):
            policies.openai_chat(URL, model="m", api_key="k")(_view())
    assert waits == []


@pytest.mark.parametrize(("kw", "match"), [({"retries": -1}, "retries must be a whole number >= 0, got -1"),
                                           ({"retries": True}, "retries must be"),
                                           ({"max_wait": "30"}, "max_wait must be a number of seconds >= 0")])
def test_bad_retry_settings_are_refused(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        policies.openai_chat(URL, model="m", **kw)


def test_retry_after_forms() -> None:
    assert retry_after("1") == 1.0 and retry_after(" 2.5 ") == 2.5 and retry_after("-4") == 0.0
    assert retry_after("soon") is None and retry_after("nan") is None
    assert retry_after("Thu, 01 Jan 1970 00:00:00 GMT") == 0.0  # in the past: ask now


def test_the_stochastic_server_limits_and_the_client_waits_for_real() -> None:
    # Every other answer limited: seed 4 makes the first ask one (Retry-After: 1, waited for real).
    with StochasticModel(seed=4, limited=0.5, latency=0.02, jitter=0.0) as server:
        live = policies.openai_chat(server.url, model="stochastic", api_key="sk-test")
        started = clock.real_monotonic()
        decision = live(_view())
        took = clock.real_monotonic() - started
        stats = server.stats()
    assert list(decision.calls) == [("search", {})]
    assert stats["limited"] >= 1 and stats["answered"] == 1
    assert took >= stats["limited"] * 1.0  # each 429 waited its Retry-After: 1 second
