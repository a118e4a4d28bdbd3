"""A loaded scenario: what the runner, the pytest items and the fuzzer get from a file."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from toolchaos._agents import ProcessAgent
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.shards import instance_key
from toolchaos.fake_tools import FakeTool
from toolchaos.scenario._spec import MAX_TRIALS, ScenarioSpec


@dataclass(frozen=True)
class Expectation:
    """One invariant of ``expect`` with where it came from (for failure reports)."""

    invariant: Any
    text: str  # its YAML source (or "(implicit) name")
    line: int | None  # 1-based line in the scenario file, None for implicit ones
    phase: str = "run"  # "run" (the whole run), "before" (restart: the first run alone), "each" (every run)
    why: str | None = None  # why the expectation is what it is (its `why:`), shown in reports

    @property
    def name(self) -> str:
        return str(getattr(self.invariant, "name", type(self.invariant).__name__))


@dataclass(frozen=True)
class Useful:
    """The work a scenario needs done (its ``useful:``): what a run's waste is measured against."""

    executions: int
    turns: int
    why: str


@dataclass(frozen=True)
class Restart:
    task: str
    policy: Callable[[], Any]
    tools: tuple[FakeTool, ...]


@dataclass(frozen=True)
class Scenario:
    """A loaded, validated scenario (one item: a file's variants are separate scenarios)."""

    id: str
    title: str
    description: str
    category: str
    severity: str
    tags: tuple[str, ...]
    seed: int
    task: str
    agent: str | ProcessAgent | None  # a reference, or a process agent (its cwd read from the file's folder)
    tools: tuple[FakeTool, ...]
    policy: Callable[[], Any]  # builds a fresh policy for each run
    expect: tuple[Expectation, ...]
    budgets: Budgets | None = None
    ceiling: Ceiling | None = None
    restart: Restart | None = None
    variant: str | None = None
    path: Path | None = None
    content_hash: str = ""
    severity_why: str | None = None  # why it has its severity: an advisory scenario must say
    line: int = 1  # where the scenario (or its variant) starts
    spec: ScenarioSpec | None = field(default=None, repr=False, compare=False)
    fuzz: Any = None  # a toolchaos.fuzzing.FuzzSpec when the file has a `fuzz:` block
    world: Mapping[str, Any] = field(default_factory=dict)  # collections at the start (plain data)
    useful: Useful | None = None
    api_faults: Any = None  # a toolchaos.wire.ApiFaults when the file has an `api_faults:` block
    # What it cannot be judged without, of the agent's kind (toolchaos._agents.NEEDS): declared in its
    # `needs:`, and what its own blocks imply (a restart, a budget of virtual seconds). The source of N/A.
    needs: tuple[str, ...] = ()
    trials: int = 1  # how many times it runs (its `trials:`, or --trials): trial i with seed + i
    trial: int = 0  # which of them this instance is (``expand_trials``); trial 0 is the run without trials

    @property
    def base_name(self) -> str:
        """The scenario's name whatever the trial: the id, with ``[variant]`` for a variant."""
        return f"{self.id}[{self.variant}]" if self.variant else self.id

    @property
    def name(self) -> str:
        """The item name: ``base_name``, with ``#trial=K`` for trial K > 0 (trial 0 is named as without trials)."""
        return instance_key(self.base_name, self.trial)

    @property
    def invariants(self) -> list[Any]:
        return [e.invariant for e in self.expect]



def expand_trials(scenarios: Iterable[Scenario], trials: int | None = None) -> list[Scenario]:
    """Every scenario as its trials: ``trials`` instances each (``None``: each scenario's own ``trials``),
    trial i seeded ``seed + i`` by the runner. Instances already expanded count as their scenario once."""
    if trials is not None and not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"trials must be between 1 and {MAX_TRIALS}, got {trials}")
    out: list[Scenario] = []
    for sc in scenarios:
        if sc.trial != 0:  # an instance of a scenario already in the list: expanded with its trial 0
            continue
        n = sc.trials if trials is None else trials
        out += [replace(sc, trials=n, trial=i) for i in range(n)]
    return out
