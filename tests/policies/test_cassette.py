"""Cassettes: a run recorded from a live model (here a respx-mocked endpoint), replayed, and diverging."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from toolchaos import policies, run
from toolchaos.errors import CassetteDiverged, CassetteError, PolicyError
from toolchaos.fake_tools import catalogue

URL = "https://llm.example.test/v1"
KEY = "sk-fake-0123456789abcdef"  # a fake key: it must reach the endpoint and never the cassette
TASK = "Get the total of invoice inv_1."


def _answers() -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "fetch_invoice",
                                                          "arguments": '{"invoice_id": "inv_1"}'}}
    return [{"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]},
            {"choices": [{"message": {"role": "assistant", "content": "The total is 42.00 EUR."}}]}]


def _record(path: Path, task: str = TASK, agent: str = "builtin:guarded") -> tuple[Any, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    answers = iter(_answers())

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=next(answers))

    live = policies.openai_chat(URL, model="gpt-4o-mini", api_key=KEY,
                                specs={"fetch_invoice": {"type": "object", "properties": {"invoice_id": {}}}})
    with respx.mock(assert_all_called=True) as router:
        router.post(f"{URL}/chat/completions").mock(side_effect=answer)
        result = run(agent, task=task, tools=[catalogue.get("fetch_invoice")],
                     policy=policies.cassette(path, live=live, record=True))
    return result, seen


def _replay(path: Path, task: str = TASK) -> Any:
    return run("builtin:guarded", task=task, tools=[catalogue.get("fetch_invoice")], policy=policies.cassette(path))


def test_recording_calls_the_live_model_and_writes_every_turn(tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "invoice.cassette.json"
    result, seen = _record(path)
    assert result.terminal_state == "COMPLETED" and result.answer and "42.00" in result.answer
    assert [r.headers["authorization"] for r in seen] == [f"Bearer {KEY}"] * 2  # the key was used
    body = json.loads(seen[1].content)
    assert body["model"] == "gpt-4o-mini" and body["tools"][0]["function"]["name"] == "fetch_invoice"
    assert [m["role"] for m in body["messages"]][-2:] == ["assistant", "tool"]
    data = json.loads(path.read_text())
    assert (data["format"], data["version"], data["model"]) == ("toolchaos.cassette", 1, "gpt-4o-mini")
    assert data["endpoint"] == f"{URL}/chat/completions"
    assert [t["turn"] for t in data["turns"]] == [1, 2]
    assert data["turns"][0]["answer"] == {"calls": [["fetch_invoice", {"invoice_id": "inv_1"}]], "text": None}


def test_no_secret_reaches_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.cassette.json"
    _record(path, task=f"Get invoice inv_1; my key is {KEY}.")  # the agent even echoes the key to the model
    text = path.read_text()
    assert KEY not in text and "sk-fake" not in text
    assert "authorization" not in text.lower() and "bearer" not in text.lower()
    assert "my key is <redacted>" in text


def test_a_cassette_replays_deterministically_without_the_network(tmp_path: Path) -> None:
    path = tmp_path / "c.cassette.json"
    recorded, _ = _record(path)
    one, two = _replay(path), _replay(path)  # no respx route: a real request would be refused
    assert one.trace.jsonl() == two.trace.jsonl() == recorded.trace.jsonl()
    assert one.answer == recorded.answer and one.harness_stop is None


def test_a_changed_request_fails_with_a_diff_naming_the_first_divergent_turn(tmp_path: Path) -> None:
    path = tmp_path / "c.cassette.json"
    _record(path)
    with pytest.raises(CassetteDiverged) as info:
        _replay(path, task="Get the total of invoice inv_2.")
    message = str(info.value)
    assert info.value.turn == 1
    assert message.startswith("turn 1: the agent's request differs from the one ")
    assert f"{path.name} recorded (first at messages[0] (user))" in message.splitlines()[0]
    lines = message.splitlines()
    assert "--- recorded" in lines and "+++ now" in lines
    assert any(x.startswith("-") and "invoice inv_1." in x for x in lines)
    assert any(x.startswith("+") and "invoice inv_2." in x for x in lines)
    assert "record the cassette again: pytest --chaos --chaos-record" in message


def test_a_later_turn_diverges_when_the_tool_answers_differently(tmp_path: Path) -> None:
    path = tmp_path / "c.cassette.json"
    _record(path, agent="builtin:naive")  # an agent that hands every tool result back to the model
    tools = [catalogue.get("fetch_invoice", faults="fatal")]  # the tool now fails: the model is told otherwise
    with pytest.raises(CassetteDiverged, match=r"^turn 2: .*first at messages\[2\] \(tool\)"):
        run("builtin:naive", task=TASK, tools=tools, policy=policies.cassette(path))


def test_nothing_is_recorded_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "none.cassette.json"
    with pytest.raises(CassetteError, match=r"no cassette at .*record it first .*--chaos-record"):
        policies.cassette(path)
    assert not path.exists()
    with pytest.raises(PolicyError, match="recording needs the live model"):
        policies.cassette(path, record=True)
    with pytest.raises(PolicyError, match="base_url must be an http"):
        policies.openai_chat("llm.example.test", model="m")
    path.write_text('{"format": "other"}')
    with pytest.raises(CassetteError, match="not a toolchaos cassette"):
        policies.cassette(path)


def test_the_endpoint_shown_has_no_credentials() -> None:
    live = policies.openai_chat("https://user:pw@llm.example.test:8443/v1?key=abc", model="m")
    assert live.endpoint == "https://llm.example.test:8443/v1/chat/completions"  # no user, password or query


def test_an_unmodified_sdk_agent_records_and_replays_through_the_wire(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    import sys

    from toolchaos import wire
    from toolchaos._internal.model import Decision, ModelView

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples"))
    try:
        from openai_naive import agent
    finally:
        sys.path.pop(0)

    def live(view: ModelView) -> Decision:  # any callable can stand for the real model
        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"}) if view.step == 1 else Decision.final("42")

    path = tmp_path / "sdk.cassette.json"

    def go(policy: Any, task: str = TASK) -> Any:
        return wire.run(agent, task=task, tools=[catalogue.get("fetch_invoice")], policy=policy)

    recorded = go(policies.cassette(path, live=live, record=True))
    replayed = go(policies.cassette(path))
    assert recorded.answer == replayed.answer == "42"
    assert recorded.trace.jsonl() == replayed.trace.jsonl()
    assert [t["request"]["messages"][0]["role"] for t in json.loads(path.read_text())["turns"]] == ["system"] * 2
    with pytest.raises(CassetteDiverged, match=r"^turn 1: .*first at messages\[1\] \(user\)"):
        go(policies.cassette(path), task="Get the total of invoice inv_9.")


def test_a_run_that_stops_asking_early_diverges(tmp_path: Path) -> None:
    from toolchaos import Chaos

    path = tmp_path / "c.cassette.json"
    _record(path, agent="builtin:naive")
    chaos = Chaos(agent="builtin:guarded")  # stops at the permission error without asking the model again
    tools = [catalogue.get("fetch_invoice", faults="fatal")]
    with pytest.raises(CassetteDiverged, match=r"^turn 2: the agent stopped after 1 model turns; .*recorded 2"):
        chaos.run(task=TASK, tools=tools, policy=policies.cassette(path))
    done = policies.cassette(path)
    chaos.run(task=TASK, tools=[catalogue.get("fetch_invoice")], policy=done)  # every turn asked: no complaint
    done.check_complete()


def test_each_trial_has_a_cassette_of_its_own_beside_trial_0s(tmp_path: Path) -> None:
    live = policies.openai_chat(URL, model="m")
    c = policies.cassette(tmp_path / "refund.cassette.json", live=live, record=True)
    assert c.for_trial(0) is c and c.reaches_network
    third = c.for_trial(3)
    assert third.path == tmp_path / "refund.trial-3.cassette.json" and third.live is live and third.record
    assert policies.cassette(tmp_path / "x.json", live=live, record=True).for_trial(1).path.name == (
        "x.trial-1.cassette.json")
    third.path.write_text('{"format": "toolchaos.cassette", "version": 1, "turns": []}')
    replayed = policies.cassette(third.path, live=live)
    assert not replayed.reaches_network  # replaying asks nothing: its isolated run keeps the sealed network
