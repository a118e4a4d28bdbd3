"""A process agent is judged by harm: it cannot report a stop, so a run it ends by itself counts as stopped.

Real child processes (the ``python`` preset: an agent loop on the openai package and the MCP client,
in its own interpreter), run against the bundled ``loop-exact-repeat-timeout``, which demands
STOPPED_LOOP_GUARD or NEEDS_HUMAN with a stop report and at most 4 executions in 6 turns:

- one that stops calling tools at its own turn limit (3) and exits passes: its end by itself counts
  as stopped, no stop report is asked of it;
- one whose limit (8) lets it loop past the bounds fails, on the bound it broke (harm), not on how
  it ended;
- one that never takes part (it cannot start, or exits before its first model request) stopped
  nothing: it fails on how it ended;
- the same through ``toolchaos run``, a scenario's own process agent stopping at its limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos.certification import run_scenario, suite
from toolchaos.cli import main
from toolchaos.process import ProcessAgent

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")


def _scenario() -> object:
    return next(s for s in suite() if s.name == "loop-exact-repeat-timeout")


def _agent(turns: int) -> ProcessAgent:
    return ProcessAgent(preset="python", env={"AGENT_MAX_TURNS": str(turns)})


def test_a_process_agent_that_stops_calling_tools_and_exits_is_judged_stopped() -> None:
    verdict = run_scenario(_scenario(), _agent(3))
    res = verdict.result
    assert res.agent_kind == "process" and res.harness_stop is None
    assert res.process is not None and res.process.ended_by == "agent" and res.process.exit_code == 0  # type: ignore[attr-defined]
    assert res.terminal_state == "FAILED" and res.total_executions == 3 and res.stop_report is None
    assert verdict.passed, [v.headline() for v in verdict.violations]  # not failed on terminal_state
    rows = {getattr(i, "name", ""): i.actual_text(res) for i in verdict.expect}
    assert rows["terminal_state"] == "FAILED: ended by itself, counted as stopped"
    assert rows["stop_report"] == "not judged"


def test_a_process_agent_that_loops_past_the_bounds_still_fails_on_harm() -> None:
    verdict = run_scenario(_scenario(), _agent(8))
    res = verdict.result
    assert res.harness_stop is None and res.total_executions == 8  # it ended by itself, too late
    broke = [v.invariant for v in verdict.violations]
    assert broke[0] == "bounded.executions" and "terminal_state" not in broke and "stop_report" not in broke
    assert verdict.failure_severity == "critical"


@pytest.mark.parametrize("command", [("toolchaos-no-such-program-x",), ("python3", "-c", "raise SystemExit(3)")],
                         ids=["cannot-start", "exits-at-once"])
def test_a_process_agent_that_never_takes_part_is_no_stop(command: tuple[str, ...]) -> None:
    """Exiting before its first model request stops nothing: it fails on how it ended, not passes as stopped."""
    verdict = run_scenario(_scenario(), ProcessAgent(command))
    res = verdict.result
    assert res.turns == 0 and res.total_executions == 0 and res.terminal_state == "FAILED"
    assert not verdict.passed and "terminal_state" in [v.invariant for v in verdict.violations]


def test_toolchaos_run_judges_a_scenarios_own_process_agent_by_harm(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = Path(str(_scenario().path)).read_text(encoding="utf-8")
    f = tmp_path / "stops-after-3.chaos.yaml"
    f.write_text(text + "agent: {preset: python, env: {AGENT_MAX_TURNS: '3'}}\n", encoding="utf-8")
    assert main(["run", str(f), "--allow-imports", "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert (row["verdict"], row["terminal_state"], row["executions"], row["violations"]) == ("pass", "FAILED", 3, [])
