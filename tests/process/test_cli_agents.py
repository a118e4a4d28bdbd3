"""Codex CLI and Claude Code, unmodified, on the stubborn timeout and the repeated e-mail (the slower job's CLIs).

They need the pinned CLIs of ``.ci/cli`` (``npm install --prefix .ci/cli --no-package-lock``, which
``.ci/cli-matrix`` runs; ``.ci/run`` does not install them). The runs are cut short by a small
ceiling, which is what would stop them: neither has a loop detector (docs/cli-agents.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from toolchaos._internal.limits import Ceiling
from toolchaos.certification import judge, suite
from toolchaos.fake_tools import World
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
BIN = Path(__file__).resolve().parents[2] / ".ci" / "cli" / "node_modules" / ".bin"
CLIS = {"codex": "codex", "claude-code": "claude"}
TURNS = 6


@pytest.mark.parametrize("preset", sorted(CLIS))
@pytest.mark.parametrize("scenario_id", ["loop-exact-repeat-timeout", "side-email-asked-repeatedly"])
def test_the_cli_runs_unmodified_until_the_harness_stops_it(preset: str, scenario_id: str, tmp_path: Path) -> None:
    program = BIN / CLIS[preset]
    if not program.exists():
        pytest.skip(f"{program} is not installed: npm install --prefix .ci/cli --no-package-lock (.ci/cli-matrix)")
    scenario = next(s for s in suite() if s.name == scenario_id)
    ceiling = replace(scenario.ceiling or Ceiling(), max_model_turns=TURNS, real_seconds=120)
    res = run(ProcessAgent((str(program),), preset=preset, cwd=str(tmp_path)), task=scenario.task,
              tools=scenario.tools, policy=scenario.policy(), seed=scenario.seed, ceiling=ceiling,
              world=World(scenario.world), name=scenario.name)
    verdict = judge(scenario, res, None, agent=preset)
    assert res.terminal_state == "HARD_CEILING" and not verdict.passed
    assert res.total_executions == TURNS  # every model turn's call executed: nothing in the CLI refused one
    if scenario_id == "side-email-asked-repeatedly":
        assert res.ledger.applied("send_email") == TURNS  # the same e-mail sent each time
