"""A process agent that wraps every tool result as Codex CLI does gets the verdicts of one that does not.

The same Python agent (``codex_wrapped_agent.py``, the ``python`` preset's loop) runs each
scenario twice through ``toolchaos serve`` and MCP: once handing results back bare, once under
Codex's header with wall times such as 0.0503 and 0.0429. The model double reads the outcome the
harness served, so the two runs are the same run: same verdict, same counts, same answer.
The scenarios are those where a reading decides the run: an empty result (the jitter loop Codex
left after one call when its ``Output:[]`` read as ok), a malformed one, a fatal error, a 503 then
success, pages behind a cursor, a sent e-mail. The whole bundled suite, run the same way, gave the
same verdicts on all 44 scenarios (30 applicable), but took about 21 minutes a side: too slow for
a test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from toolchaos.certification import certify, suite
from toolchaos.process import ProcessAgent

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

AGENT = Path(__file__).with_name("codex_wrapped_agent.py")
SCENARIOS = ["loop-argument-jitter", "loop-malformed-result", "err-permission-denied", "legit-transient-503",
             "legit-paginate-12-pages", "side-email-asked-repeatedly"]


def _run(scenario: Any, wrap: str) -> tuple[tuple[Any, ...], list[Any]]:
    agent = ProcessAgent((sys.executable, str(AGENT)), env={"AGENT_WRAP": wrap, "AGENT_MAX_TURNS": "8"})
    (verdict,) = certify(agent, [scenario])
    r = verdict.result
    shown = [s["content"] for e in r.trace.model_events for s in e.get("shown") or []]
    return (verdict.passed, r.terminal_state, r.total_executions, r.turns, r.answer,
            sorted(v.invariant for v in verdict.violations)), shown


@pytest.mark.slow
@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_a_process_agent_wrapping_results_like_codex_gets_the_bare_agents_verdict(scenario_id: str) -> None:
    scenario = next(s for s in suite() if s.name == scenario_id)
    bare, bare_shown = _run(scenario, "bare")
    wrapped, wrapped_shown = _run(scenario, "codex")
    assert wrapped == bare
    # the wrapper was really there, and the harness kept what the agent sent
    assert wrapped_shown and all(str(s).startswith("Wall time: ") for s in wrapped_shown)
    assert not any(str(s).startswith("Wall time: ") for s in bare_shown)
