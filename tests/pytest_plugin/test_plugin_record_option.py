"""``--chaos-record``: a test's cassette recorded from its live model once, replayed by every later run."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

TEST = """
import json

import httpx
import pytest
import respx
from toolchaos import policies

TASK = "@TASK@"
CALL = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": "refunds"})}}
ANSWERS = [{"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [CALL]}}]},
           {"choices": [{"message": {"role": "assistant", "content": "Found the refund policy."}}]}]


@pytest.fixture
def live_endpoint():
    answers = iter(ANSWERS)
    with respx.mock(assert_all_called=False) as router:
        route = router.post("https://llm.example.test/v1/chat/completions").mock(
            side_effect=lambda request: httpx.Response(200, json=next(answers)))
        yield route


def test_refund_search(chaos, live_endpoint):
    live = policies.openai_chat("https://llm.example.test/v1", model="gpt-4o-mini", api_key="sk-fake-secret-key-42")
    result = chaos.run(task=TASK, tools=[chaos.tool("search")], policy=chaos.cassette(live))
    assert result.answer == "Found the refund policy."
    print("LIVE CALLS", live_endpoint.call_count)
"""


def _write(pytester: pytest.Pytester, task: str) -> None:
    pytester.makepyfile(test_agent=TEST.replace("@TASK@", task))


def test_record_then_replay_then_diverge(pytester: pytest.Pytester) -> None:
    _write(pytester, "Find the refund policy.")
    res = pytester.runpytest("--chaos", "-s")  # nothing recorded yet, and nothing recorded unless asked
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*CassetteError: no cassette at cassettes/test_agent.py__test_refund_search-*"
                              ".cassette.json: record it first*"])  # the test id, and a short hash of it
    cassettes = pytester.path / "cassettes"
    assert not cassettes.exists()

    res = pytester.runpytest("--chaos", "--chaos-record", "-s")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["*LIVE CALLS 2"])
    [cassette] = cassettes.iterdir()
    assert cassette.name.startswith("test_agent.py__test_refund_search-") and cassette.name.endswith(".cassette.json")
    text = cassette.read_text()
    assert "sk-fake" not in text and len(json.loads(text)["turns"]) == 2

    res = pytester.runpytest("--chaos", "-s")  # replayed: the live model is not asked
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["*LIVE CALLS 0"])
    assert cassette.read_text() == text

    _write(pytester, "Find the returns policy.")  # the agent now asks something else
    res = pytester.runpytest("--chaos")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*CassetteDiverged: turn 1: the agent's request differs from the one cassettes/"
                              f"{cassette.name} recorded (first at messages?0? (user))",
                              "*--- recorded", "*+++ now"])
    assert cassette.read_text() == text  # a failed replay never rewrites the recording
