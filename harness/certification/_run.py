"""Running a scenario in process: its run (and the restarted one, sharing the agent's ``store``), judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolchaos._engine import run, safe_name
from toolchaos.certification._judge import Verdict, judge
from toolchaos.certification._variants import agent_label
from toolchaos.fake_tools import World
from toolchaos.scenario import Scenario


def run_scenario(scenario: Scenario, agent: Any = None, *, seed: int | None = None,
                 artifacts: str | Path | None = None, label: str | None = None) -> Verdict:
    """Run a scenario against ``agent`` (default: the scenario's own, else ``builtin:guarded``)."""
    agent = agent if agent is not None else (scenario.agent or "builtin:guarded")
    seed = scenario.seed if seed is None else seed
    store: dict[str, Any] = {}
    world = World(scenario.world)  # the backend: it outlives the agent's restart
    common: dict[str, Any] = {"seed": seed, "budgets": scenario.budgets, "ceiling": scenario.ceiling, "store": store,
                              "world": world}
    if scenario.api_faults is not None:  # the model's own faults, for an agent answered over HTTP
        common["api_faults"] = scenario.api_faults
    first = run(agent, task=scenario.task, tools=scenario.tools, policy=scenario.policy(), name=scenario.name,
                **common)
    second = None
    if scenario.restart is not None:
        world.offset += first.virtual_seconds  # its keys keep ageing across the restart
        r = scenario.restart
        second = run(agent, task=r.task, tools=r.tools, policy=r.policy(), name=f"{scenario.name}~restart",
                     **common)
    verdict = judge(scenario, first, second, agent=label or agent_label(agent))
    if artifacts is not None:
        verdict.result.trace.write(Path(artifacts) / f"{safe_name(scenario.name)}.trace.jsonl")
        _write_process(verdict.result, Path(artifacts) / f"{safe_name(scenario.name)}.process.json")
    return verdict


def _write_process(result: Any, path: Path) -> None:
    """A process agent's exit and capped output, beside its trace (``toolchaos.process``)."""
    proc = getattr(result, "process", None)
    if proc is not None:
        path.write_text(json.dumps(proc.to_data(), indent=2) + "\n", encoding="utf-8")
