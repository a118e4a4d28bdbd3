"""Side requests over HTTP, as a coding CLI sends them to ``toolchaos serve``: answered without the
policy, counted apart in the trace, the result and report.json, and no turn of the ceiling."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos.certification import judge
from toolchaos.reports import scenario_entry
from toolchaos.reports._html import timeline_svg
from toolchaos.reports._markdown import ended_line
from toolchaos.serve import Server

from tests.serve.helpers import loop_scenario, loop_spec

PARAMS = {"type": "object", "properties": {"invoice_id": {"type": "string"}}}
MAIN = {"systemInstruction": {"parts": [{"text": "You are gemini-cli."}]},
        "contents": [{"role": "user", "parts": [{"text": "Get the total of invoice inv_1"}]}],
        "tools": [{"functionDeclarations": [{"name": "mcp_chaos_fetch_invoice", "parametersJsonSchema": PARAMS}]}]}
LOOP_CHECK = {"systemInstruction": {"role": "user", "parts": [{"text": "You are a diagnostic agent."}]},
              "contents": [{"role": "user", "parts": [{"text": "Is the conversation looping?"}]}],
              "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
                  "type": "object", "required": ["unproductive_state_analysis", "unproductive_state_confidence"],
                  "properties": {"unproductive_state_analysis": {"type": "string"},
                                 "unproductive_state_confidence": {"type": "number"}}}}}


def test_a_served_runs_side_requests_take_no_turn_of_its_ceiling_and_count_apart_in_the_report() -> None:
    with Server(loop_spec()) as srv:  # its ceiling: 6 model turns
        url = f"{srv.base_urls['gemini']}/v1beta/models/gemini-2.5-flash:generateContent"
        with httpx.Client(timeout=20) as client:
            answers = []
            for _ in range(8):  # more side requests than the ceiling has turns
                answers.append(client.post(url, json=LOOP_CHECK).json())
            main = client.post(url, json=MAIN).json()
        srv.end()
    texts = [a["candidates"][0]["content"]["parts"][0]["text"] for a in answers]
    assert {json.loads(t)["unproductive_state_confidence"] for t in texts} == {0}
    assert main["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "mcp_chaos_fetch_invoice"
    result = srv.result
    assert result is not None and result.turns == 1 and result.side_requests == 8
    assert result.terminal_state != "HARD_CEILING"
    assert [r.is_side for r in result.requests] == [True] * 8 + [False]
    entry, events = scenario_entry(judge(loop_scenario(), result, agent="served"))
    assert entry["figures"]["model_turns"] == 1 and entry["figures"]["side_requests"] == 8
    assert sum(e["kind"] == "side" for e in events) == 8
    assert "after 1 model turns (and 8 side requests) and" in ended_line(entry)
    svg = timeline_svg(entry, events)  # each in its API's lane, titled with its answer
    assert svg.count('class="ev ev-side"') == 8 and "side request (schema), answered without the policy" in svg
