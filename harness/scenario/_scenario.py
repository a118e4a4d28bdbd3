"""A loaded scenario: what the runner, the pytest items and the fuzzer get from a file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos._agents import ProcessAgent
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos.fake_tools import FakeTool
from toolchaos.scenario._spec import ScenarioSpec


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
    line: int = 1  # where the scenario (or its variant) starts
    spec: ScenarioSpec | None = field(default=None, repr=False, compare=False)
    fuzz: Any = None  # a toolchaos.fuzzing.FuzzSpec when the file has a `fuzz:` block
    world: Mapping[str, Any] = field(default_factory=dict)  # collections at the start (plain data)
    useful: Useful | None = None
    api_faults: Any = None  # a toolchaos.wire.ApiFaults when the file has an `api_faults:` block

    @property
    def name(self) -> str:
        """The item name: the id, with ``[variant]`` for a variant."""
        return f"{self.id}[{self.variant}]" if self.variant else self.id

    @property
    def invariants(self) -> list[Any]:
        return [e.invariant for e in self.expect]
