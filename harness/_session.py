"""``Chaos``: the run defaults of a test session (agent, seed, artifacts) in one object.

The pytest ``chaos`` fixture returns one, configured from the command line and the
test's ``@pytest.mark.chaos(...)`` arguments, which are this class's own keyword
arguments (one validation path). It works the same without pytest.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolchaos import invariants, policies
from toolchaos._agents import resolve
from toolchaos._engine import ISOLATION_MODES, RunResult, RunSpec, run
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos.fake_tools import FakeTool, catalogue, faults


class Chaos:
    faults = faults
    policies = policies
    invariants = invariants

    def __init__(self, *, agent: Any = "builtin:guarded", seed: int = 0, artifacts: str | Path | None = None,
                 name: str = "run", budgets: Budgets | dict[str, Any] | None = None,
                 ceiling: Ceiling | None = None, record: bool = False, cassettes: str | Path | None = None,
                 isolation: str | None = None) -> None:
        resolve(agent)  # fail now, with the reference in the message, not at the first run
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        if ceiling is not None and not isinstance(ceiling, Ceiling):
            raise TypeError(f"ceiling must be a toolchaos.Ceiling, got {ceiling!r}")
        self.agent = agent
        self.seed = seed
        self.artifacts = Path(artifacts) if artifacts is not None else None
        self.name = name
        self.budgets = budgets
        self.ceiling = ceiling
        if not isinstance(record, bool):
            raise TypeError(f"record must be true or false, got {record!r}")
        self.record = record  # pytest --chaos-record: cassettes are recorded from their live model
        self.cassettes = Path(cassettes) if cassettes is not None else Path("cassettes")
        if isolation is not None and isolation not in ISOLATION_MODES:
            raise TypeError(f"isolation must be one of {', '.join(ISOLATION_MODES)}, got {isolation!r}")
        self.isolation = isolation  # None: the session's (pytest --chaos-isolation)
        self.results: list[RunResult] = []

    def cassette(self, live: Any = None, *, name: str | None = None) -> policies.Policy:
        """The cassette policy of this test: ``cassettes/<name>.cassette.json`` beside the test.

        Recorded from ``live`` (e.g. ``policies.openai_chat(...)``) when the session records
        (``pytest --chaos --chaos-record``, ``Chaos(record=True)``), replayed otherwise.
        """
        path = self.cassettes / f"{name or self.name}.cassette.json"
        return policies.cassette(path, live=live, record=self.record and live is not None)

    def tool(self, name: str, faults: Any = None, **kw: Any) -> FakeTool:
        """A catalogue tool with a fault schedule."""
        return catalogue.get(name, faults, **kw)

    def run(self, *, task: str, tools: Iterable[FakeTool], policy: Any, agent: Any = None, seed: int | None = None,
            expect: Iterable[Any] = (), terminated: bool = True, **kw: Any) -> RunResult:
        """Run the agent (default: the session's) and check ``expect`` invariants, if given.

        With them ``terminated`` is checked too (a crash, the harness ceiling or the watchdog fails
        the test), unless ``terminated=False`` (``RunResult.check``).
        """
        __tracebackhide__ = True
        n = len(self.results) + 1
        name = self.name if n == 1 else f"{self.name}-{n}"
        kw.setdefault("budgets", self.budgets)
        kw.setdefault("ceiling", self.ceiling)
        kw.setdefault("isolation", self.isolation)
        spec = RunSpec.of(task=task, tools=tools, policy=policy, seed=self.seed if seed is None else seed, name=name,
                          artifacts=self.artifacts, **kw)
        result = run(agent if agent is not None else self.agent, spec)
        self.results.append(result)
        complete = getattr(policy, "check_complete", None)  # a replayed cassette: every recorded turn was asked
        if callable(complete):
            complete()
        expect = list(expect)
        if expect:
            result.check(*expect, terminated=terminated)
        return result
