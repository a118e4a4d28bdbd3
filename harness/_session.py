"""``Chaos``: the run defaults of a test session (agent, seed, artifacts) in one object.

The pytest ``chaos`` fixture returns one, configured from the command line and the
test's ``@pytest.mark.chaos(...)`` arguments, which are this class's own keyword
arguments (one validation path). It works the same without pytest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolchaos import invariants, policies
from toolchaos._agents import resolve
from toolchaos._engine import ISOLATION_MODES, RunResult, RunSpec, run
from toolchaos._engine.trials import (
    DEFAULT_CONCURRENCY,
    MAX_TRIALS,
    can_run_at_once,
    check_concurrency,
    run_at_once,
)
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.shards import instance_key
from toolchaos.fake_tools import FakeTool, catalogue, faults


class Chaos:
    faults = faults
    policies = policies
    invariants = invariants

    def __init__(self, *, agent: Any = "builtin:guarded", seed: int = 0, artifacts: str | Path | None = None,
                 name: str = "run", budgets: Budgets | dict[str, Any] | None = None,
                 ceiling: Ceiling | None = None, record: bool = False, cassettes: str | Path | None = None,
                 isolation: str | None = None, trials: int | None = None, concurrency: int | None = None) -> None:
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
        if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int)
                                   or not 1 <= trials <= MAX_TRIALS):
            raise TypeError(f"trials must be a whole number from 1 to {MAX_TRIALS}, got {trials!r}")
        self.trials_count = trials  # None: one (pytest --chaos-trials)
        try:
            self.concurrency = check_concurrency(DEFAULT_CONCURRENCY if concurrency is None else concurrency)
        except ValueError as exc:
            raise TypeError(str(exc)) from None
        self.results: list[RunResult] = []

    def cassette(self, live: Any = None, *, name: str | None = None) -> policies.Policy:
        """The cassette policy of this test: ``cassettes/<name>.cassette.json`` beside the test.

        Recorded from ``live`` (e.g. ``policies.openai_chat(...)``) when the session records
        (``pytest --chaos --chaos-record``, ``Chaos(record=True)``), replayed otherwise.
        """
        path = self.cassettes / f"{name or self.name}.cassette.json"
        return policies.cassette(path, live=live, record=self.record and live is not None)

    def trials(self, *, task: str, tools: Iterable[FakeTool], live: Any = None, n: int | None = None,
               agent: Any = None, seed: int | None = None, expect: Iterable[Any] = (), terminated: bool = True,
               **kw: Any) -> list[RunResult]:
        """Run the task as ``n`` trials (default: the session's, pytest ``--chaos-trials``, else 1), each answered
        by a cassette of its own, recorded from ``live`` when the session records; the results in trial order.

        Trial i runs with seed ``seed + i`` and its cassette is ``cassettes/<name>.trial-<i>.cassette.json``
        (trial 0: ``<name>.cassette.json``, as ``cassette``'s). Recording, the trials wait on the live model,
        so they run at once, each in an isolated child with its own virtual clock and watchdog, at most
        ``concurrency`` together (pytest ``--chaos-concurrency``; ``toolchaos._engine.trials``). Replaying,
        they run one after the other, offline, and give the traces the recording gave. ``expect`` is
        checked on every trial, as ``run`` checks it.
        """
        __tracebackhide__ = True
        count = n if n is not None else self.trials_count or 1
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TRIALS:
            raise TypeError(f"n must be a whole number of trials from 1 to {MAX_TRIALS}, got {count!r}")
        base, tools = self.seed if seed is None else seed, list(tools)
        # every trial's cassette now (trial i: <name>.trial-<i>.cassette.json): a missing one fails before any runs
        cassettes: list[Any] = [self.cassette(live, name=self.name if i == 0 else f"{self.name}.trial-{i}")
                                for i in range(count)]
        at_once = self._at_once(cassettes, live)
        if at_once:
            kw["isolation"] = "process"  # one virtual clock per process: trials side by side need a child each
        kw.setdefault("budgets", self.budgets)
        kw.setdefault("ceiling", self.ceiling)
        kw.setdefault("isolation", self.isolation)

        def trial(i: int) -> RunResult:
            spec = RunSpec.of(task=task, tools=tools, policy=cassettes[i], seed=base + i,
                              name=instance_key(self.name, i), artifacts=self.artifacts, **kw)
            return run(agent if agent is not None else self.agent, spec)

        jobs = [functools.partial(trial, i) for i in range(count)]
        results = run_at_once(jobs, self.concurrency if at_once else 1)
        self.results.extend(results)
        for c in cassettes:  # replayed: every recorded turn was asked
            c.check_complete()
        expect = list(expect)
        for result in results if expect else []:
            result.check(*expect, terminated=terminated)
        return results

    def _at_once(self, cassettes: list[Any], live: Any) -> bool:
        """Whether the trials run side by side: they wait on the live model (recording), and may."""
        waits = any(getattr(c, "reaches_network", False) for c in cassettes)
        if not (waits and self.concurrency > 1 and len(cassettes) > 1 and can_run_at_once()):
            return False
        warm = getattr(live, "warm", None)
        if callable(warm):  # what a first request loads, loaded once here rather than in every child
            warm()
        return True

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
