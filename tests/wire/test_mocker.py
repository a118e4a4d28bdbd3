"""respx routes both HTTP stacks, whatever the import order, with the SDKs' own error types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import respx
from toolchaos import wire
from toolchaos.wire import DualHTTPCoreMocker
from toolchaos.wire._mocker import installed

httpx2 = pytest.importorskip("httpx2", reason="httpx2 is not installed (it comes with openai>=3 / anthropic>=2)")

ROOT = Path(__file__).resolve().parents[2]


def test_installed_as_respx_default() -> None:
    assert installed()
    assert any(t.startswith("httpcore2.") for t in DualHTTPCoreMocker.targets)


def test_plain_respx_routes_classic_httpx_and_httpx2() -> None:
    with respx.mock(assert_all_mocked=True) as m:
        route = m.get("https://example.test/x").mock(return_value=httpx.Response(204))
        m.post("https://example.test/y").mock(return_value=httpx.Response(201, json={"a": 1}))
        assert httpx.Client().get("https://example.test/x").status_code == 204
        assert httpx2.Client().get("https://example.test/x").status_code == 204
        r = httpx2.Client().post("https://example.test/y", json={"q": 1})
        assert r.status_code == 201 and r.json() == {"a": 1}
        assert route.call_count == 2 and m.calls.last.request.content == b'{"q":1}'


async def _async_get(url: str) -> int:
    async with httpx2.AsyncClient() as client:
        return (await client.get(url)).status_code


def test_async_httpx2_and_mid_stream_errors() -> None:
    import asyncio

    def body():  # type: ignore[no-untyped-def]
        yield b"data: 1\n\n"
        raise httpx.ReadTimeout("cut")

    with respx.mock as m:
        m.get("https://example.test/a").mock(return_value=httpx.Response(202))
        m.get("https://example.test/s").mock(side_effect=lambda request: httpx.Response(200, content=body()))
        assert asyncio.run(_async_get("https://example.test/a")) == 202
        with pytest.raises(httpx2.ReadTimeout):
            with httpx2.Client().stream("GET", "https://example.test/s") as r:
                r.read()


@pytest.mark.parametrize("exc,expected", [(httpx.ConnectTimeout, "ConnectTimeout"), (httpx.ReadTimeout, "ReadTimeout"),
                                          (httpx.ConnectError, "ConnectError"),
                                          (httpx.RemoteProtocolError, "RemoteProtocolError")])
def test_httpx_errors_become_httpx2_errors(exc: type[Exception], expected: str) -> None:
    with respx.mock as m:
        m.get("https://example.test/e").mock(side_effect=exc)
        with pytest.raises(httpx2.HTTPError) as info:
            httpx2.Client().get("https://example.test/e")
    assert type(info.value).__name__ == expected


def test_unmatched_outside_a_run_is_respx_s_own_error() -> None:
    from respx.models import AllMockedAssertionError

    with respx.mock(assert_all_mocked=True), pytest.raises(AllMockedAssertionError, match=r"example\.test/nope"):
        httpx2.Client().get("https://example.test/nope")


def test_users_routes_work_inside_a_wire_run() -> None:
    from toolchaos import policies

    with respx.mock(assert_all_called=False) as outer:
        outer.get("https://outer.test/").mock(return_value=httpx.Response(200, text="outer"))

        def agent(task: str, env: object) -> str:
            env.router.get("https://inner.test/").mock(return_value=httpx.Response(200, text="inner"))  # type: ignore[attr-defined]
            return httpx2.get("https://outer.test/").text + "+" + httpx.get("https://inner.test/").text

        result = wire.run(agent, task="t", tools=[], policy=policies.scripted([]))
    assert result.answer == "outer+inner", result.error


SCRIPT = """
import socket
attempts = []
def refuse(*a, **k):
    attempts.append(a[:2])
    raise OSError("network disabled in this test")
socket.socket.connect = refuse
socket.getaddrinfo = refuse
import openai, httpx, httpx2, respx
oa = openai.OpenAI(api_key="k", max_retries=0)
raw = httpx2.Client()
import toolchaos.wire  # after the SDK was imported and its clients built
chat = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"}}]}
with respx.mock as m:
    m.post("https://api.openai.com/v1/chat/completions").mock(return_value=httpx.Response(200, json=chat))
    m.get("https://example.test/b").mock(return_value=httpx.Response(200, text="B"))
    a = oa.chat.completions.create(model="m", messages=[]).choices[0].message.content
    b = raw.get("https://example.test/b").text
print(a + b, len(attempts))
"""


def test_import_order_does_not_matter() -> None:
    """The SDK imported and clients built before the harness is: respx still answers, no socket is opened."""
    pytest.importorskip("openai")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["AB", "0"]


def test_the_module_can_be_imported_again_in_one_process() -> None:
    """pytester's in-process runs restore sys.modules, so a later run imports the mocker module
    again: respx must not refuse the second definition (it did: 'must define a unique name')."""
    import importlib

    import respx.mocks
    from toolchaos.wire import _mocker

    registry = respx.mocks.Mocker._Mocker__registry  # type: ignore[attr-defined]
    try:
        del sys.modules[_mocker.__name__]
        again = importlib.import_module(_mocker.__name__)
        assert again is not _mocker
        assert respx.mocks.Mocker.registry[_mocker.MOCKER_NAME] is again.DualHTTPCoreMocker
    finally:  # the rest of this process keeps the first import
        sys.modules[_mocker.__name__] = _mocker
        registry[_mocker.MOCKER_NAME] = _mocker.DualHTTPCoreMocker
