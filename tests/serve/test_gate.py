"""A served run answers only the URLs it handed out: the run's token, its own Host, no foreign Origin.

Tried as another process on the same machine would: a forged end without the token, a
cross-site "simple" request (text/plain, a foreign Host and Origin), another run's token. Each
is refused in the API's own error format, recorded as a foreign attempt, and the verdict stays
the agent's.
"""

from __future__ import annotations

import json

import httpx
import pytest
from chaos_samples import timeout_loop

pytest.importorskip("uvicorn", reason="needs the serve extra")

from toolchaos.certification import judge, scenario_spec
from toolchaos.errors import UserError
from toolchaos.reports import scenario_entry
from toolchaos.scenario import load_text
from toolchaos.serve import Server

LOOP = timeout_loop("served-loop", "terminal_state: STOPPED_LOOP_GUARD", "stop_report")
FORGED = {"state": "STOPPED_LOOP_GUARD", "report": {"guard": "loop", "reason": "forged"}}


(SCENARIO,) = load_text(LOOP)


def _server(**kw: object) -> Server:
    return Server(scenario_spec(SCENARIO, real_seconds=20), **kw)  # type: ignore[arg-type]


def test_every_url_handed_out_carries_the_runs_token() -> None:
    with _server() as srv:
        assert srv.token.startswith("tc-") and len(srv.token) > 20
        assert all(f"/{srv.token}" in url for url in srv.urls().values()), srv.urls()
        ok = httpx.get(srv.url + "/toolchaos/urls", timeout=5)
        assert ok.status_code == 200 and ok.json() == srv.urls()
        srv.end()


def test_a_forged_end_without_the_token_is_refused_and_the_verdict_stays_the_agents() -> None:
    with _server() as srv:
        forged = httpx.post(f"{srv.root}/toolchaos/end", json=FORGED, timeout=5)
        assert forged.status_code == 401 and "token" in forged.json()["error"]["message"]
        assert srv.wait(0.2) is None  # the run goes on
        # a cross-site "simple" request: text/plain, with the token even, from a foreign page
        cross = httpx.post(srv.end_url, content=json.dumps(FORGED), timeout=5,
                           headers={"content-type": "text/plain", "origin": "http://evil.example"})
        assert cross.status_code == 403 and "foreign Origin" in cross.json()["error"]["message"]
        rebound = httpx.post(srv.end_url, json=FORGED, timeout=5, headers={"host": f"evil.example:{srv.port}"})
        assert rebound.status_code == 403 and "foreign Host" in rebound.json()["error"]["message"]
        assert srv.wait(0.2) is None
        srv.end()  # the agent (here: the test) ends it, with no stop report
    assert srv.result is not None
    verdict = judge(SCENARIO, srv.result, agent="the test")
    assert not verdict.passed  # the agent's own verdict: it reported nothing
    assert srv.result is not None and srv.result.terminal_state != "STOPPED_LOOP_GUARD"
    reasons = [a["reason"] for a in srv.result.foreign]
    assert reasons == ["no run token in the path", "foreign Origin 'http://evil.example'",
                       f"foreign Host 'evil.example:{srv.port}'"]
    entry, _ = scenario_entry(verdict)
    assert [a["reason"] for a in entry["foreign_attempts"]] == reasons
    assert all(srv.token not in json.dumps(a) for a in entry["foreign_attempts"])


@pytest.mark.parametrize(("path", "shape"), [
    ("/v1/chat/completions", lambda b: b["error"]["code"] == "invalid_api_key"),
    ("/v1/messages", lambda b: b["type"] == "error" and b["error"]["type"] == "authentication_error"),
    ("/v1beta/models/m:generateContent", lambda b: b["error"]["status"] == "UNAUTHENTICATED"),
])
def test_a_model_request_without_the_token_is_refused_in_its_apis_own_format(path: str, shape: object) -> None:
    with _server() as srv:
        r = httpx.post(srv.root + path, json={"model": "m", "messages": []}, timeout=5)
        assert r.status_code == 401 and shape(r.json()), r.text  # type: ignore[operator]
        assert srv.wait(0.1) is None and srv._wire is not None and not srv._wire.requests  # nothing reached the run
        srv.end()


def test_two_runs_side_by_side_cannot_end_or_query_each_other() -> None:
    with _server() as a, _server() as b:
        # a's agent, knowing a's token, tries b's port (found as a socket on the same machine)
        for url in (f"{b.root}/{a.token}/toolchaos/end", f"{b.root}/{a.token}/v1/chat/completions"):
            r = httpx.post(url, json=FORGED, timeout=5)
            assert r.status_code == 401, url
        assert b.wait(0.2) is None
        a.end()
        b.end()
    assert b.result is not None and len(b.result.foreign) == 2 and not a.result.foreign  # type: ignore[union-attr]


def test_binding_beyond_loopback_needs_to_be_meant() -> None:
    with pytest.raises(UserError, match="allow_remote=True"):
        _server(host="0.0.0.0").start()
    srv = _server(host="0.0.0.0")
    srv.allow_remote = True
    with srv:
        assert httpx.post(f"http://127.0.0.1:{srv.port}/toolchaos/end", json=FORGED, timeout=5).status_code == 401
        good = httpx.get(f"http://127.0.0.1:{srv.port}/{srv.token}/toolchaos/urls", timeout=5)
        assert good.status_code == 200
        srv.end()
