"""Running a scenario in process: its run (and the restarted one, sharing the agent's ``store``), judged."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolchaos._agents import kinds, resolve
from toolchaos._engine import RunSpec, run, safe_name
from toolchaos._engine.isolated import reaches_network
from toolchaos._engine.trials import can_run_at_once, check_concurrency, run_at_once
from toolchaos.certification._applicable import not_applicable_to
from toolchaos.certification._judge import Verdict, judge, not_run
from toolchaos.certification._variants import agent_label
from toolchaos.fake_tools import World
from toolchaos.invariants import Violation
from toolchaos.scenario import Scenario


def run_scenario(scenario: Scenario, agent: Any = None, *, seed: int | None = None,
                 artifacts: str | Path | None = None, label: str | None = None,
                 isolation: str | None = None, real_seconds: float | None = None) -> Verdict:
    """Run a scenario against ``agent`` (default: the scenario's own, else ``builtin:guarded``).

    A scenario that needs what the agent's kind lacks (its ``needs``, the kind's capabilities) is
    not run: its verdict is N/A, saying why (``Verdict.not_applicable``).

    A trial of the scenario (``expand_trials``) runs with ``seed + trial``.

    ``isolation``: ``"process"`` runs the agent in a contained child, ``"none"`` here;
    ``real_seconds``: the watchdog's limit, over the scenario's own; unset, the session's
    (``toolchaos.RunSpec``).
    """
    agent = agent if agent is not None else (scenario.agent or "builtin:guarded")
    name = label or agent_label(agent)
    seed = trial_seed(scenario, seed)
    aut = resolve(agent)  # its kind says what it can do, before anything runs
    reason = not_applicable_to(scenario, kinds()[aut.kind])
    if reason is not None:  # N/A from the two declarations alone: nothing runs
        return not_run(scenario, agent=name, kind=aut.kind, reason=reason, seed=seed)
    world = World(scenario.world)  # the backend: it outlives the agent's restart
    first_spec = scenario_spec(scenario, seed=seed, isolation=isolation, world=world, real_seconds=real_seconds)
    first = run(aut, first_spec)
    second = None
    if scenario.restart is not None:
        world.offset += first.virtual_seconds  # its keys keep ageing across the restart
        r = scenario.restart
        second = run(aut, first_spec.with_(task=r.task, tools=tuple(r.tools),
                                           policy=trial_policy(r.policy(), scenario.trial),
                                           name=f"{scenario.name}~restart"))
    verdict = judge(scenario, first, second, agent=name, kind=aut.kind)
    if artifacts is not None:
        try:
            verdict.result.trace.write(Path(artifacts) / f"{safe_name(scenario.name)}.trace.jsonl")
            _write_process(verdict.result, Path(artifacts) / f"{safe_name(scenario.name)}.process.json")
        except OSError as exc:  # a link planted where its trace goes (by an agent?): this scenario fails, not the rest
            verdict.violations.append(artifacts_refused(exc))
    return verdict


def artifacts_refused(exc: OSError) -> Violation:
    """The violation of a scenario whose trace could not be kept: its evidence is gone, so it cannot pass."""
    return Violation("artifacts", "the run's trace written to the artifacts folder",
                     f"refused: {exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}")


def trial_seed(scenario: Scenario, seed: int | None = None) -> int:
    """The seed of this instance: ``seed`` (else the scenario's own) plus its trial index (trial 0: the seed itself)."""
    return (scenario.seed if seed is None else seed) + scenario.trial


def scenario_spec(scenario: Scenario, *, seed: int | None = None, isolation: str | None = None,
                  world: World | None = None, real_seconds: float | None = None) -> RunSpec:
    """The first run of ``scenario`` as a ``RunSpec``: its store and world outlive the agent's restart."""
    return RunSpec.of(task=scenario.task, tools=scenario.tools, policy=trial_policy(scenario.policy(), scenario.trial),
                      seed=scenario.seed if seed is None else seed, budgets=scenario.budgets,
                      ceiling=scenario.ceiling, store={}, world=world if world is not None else World(scenario.world),
                      api_faults=scenario.api_faults, isolation=isolation, real_seconds=real_seconds,
                      name=scenario.name)


def trial_policy(policy: Any, trial: int) -> Any:
    """The policy of trial ``trial``: a cassette's own file for the trial (``Cassette.for_trial``), else as built."""
    for_trial = getattr(policy, "for_trial", None)
    return for_trial(trial) if callable(for_trial) else policy


def waits_on_live_model(scenario: Scenario) -> bool:
    """Whether a run of ``scenario`` waits on a live model: its policy records a cassette from one."""
    return reaches_network(scenario.policy())


def run_live_at_once(scenarios: Sequence[Scenario], run_one: Callable[[Scenario, str], Verdict],
                     concurrency: int) -> dict[int, Verdict]:
    """The verdicts of the scenarios (trials) that wait on a live model, by their index, run at once.

    ``run_one(scenario, "process")`` runs one isolated (``toolchaos._engine.trials``: each in a
    child of its own, ``concurrency`` at most together); the others are left to the caller, to run
    in their turn. Nothing runs here when there are fewer than two, or ``concurrency`` is 1.
    """
    check_concurrency(concurrency)
    live = [i for i, sc in enumerate(scenarios) if waits_on_live_model(sc)]
    if concurrency == 1 or len(live) < 2 or not can_run_at_once():
        return {}
    warm = getattr(getattr(scenarios[live[0]].policy(), "live", None), "warm", None)
    if callable(warm):  # what a first request loads, loaded once here rather than in every child
        warm()
    verdicts = run_at_once([functools.partial(run_one, scenarios[i], "process") for i in live], concurrency)
    return dict(zip(live, verdicts, strict=True))


def _write_process(result: Any, path: Path) -> None:
    """A process agent's exit and capped output, beside its trace (``toolchaos.process``)."""
    proc = getattr(result, "process", None)
    if proc is not None:
        path.write_text(json.dumps(proc.to_data(), indent=2) + "\n", encoding="utf-8")
