"""Fault-schedule fuzzing: find the schedule that breaks an agent, shrink it, print it as a scenario.

``fuzz(agent, tools=..., policy=...)`` draws fault schedules for the tools (and, if asked,
the model's behaviour too), runs the agent on each, and checks the invariants that must
hold whatever the tools answer (``must_hold``):

- the agent ends the run itself, within a bound on executions and model turns;
- no operation's side effect is applied twice;
- the run ends in a terminal state, with a stop report when it did not complete;
- nothing executes after the runtime refused it or after the run ended.

It does not ask for the task to complete: under an arbitrary schedule, giving up is a
correct answer; looping, duplicating a payment or ending without a report is not.

When an invariant breaks, hypothesis shrinks the case (fewer faulty calls, simpler
faults, a simpler policy) and the report prints the minimal case as a complete YAML
scenario to save under ``scenarios/`` as a regression, with the seed to reproduce it.
Distinct invariants are distinct failures: each shrinks on its own.

Reproduction, as with hypothesis itself:

- **Example database**: a failing case is saved (under ``.hypothesis/``, keyed by the
  fuzz target: agent, tools, policy, task, options) and replays first on the next run.
- **CI** (env ``CI`` set, or ``ci=True``): like hypothesis's ``ci`` profile, the run is
  derandomised (the seed comes from the target, so every CI run explores the same
  cases), uses no database, and prints the reproduction blob; ``fuzz(..., blob=...)``
  replays exactly that case.
- Outside CI hypothesis draws a fresh seed per run, which the report names;
  ``fuzz(..., seed=...)`` repeats that exploration (like hypothesis's ``@seed``, an
  explicit seed runs without the database).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, reproduce_failure, settings
from hypothesis import __version__ as _hypothesis_version
from hypothesis import seed as _hseed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.internal.reflection import function_digest
from toolchaos import invariants as inv
from toolchaos._agents import AgentUnderTest, label, resolve
from toolchaos._engine import RunResult, RunSpec, run
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.types import TERMINAL_STATES
from toolchaos.errors import FuzzFailed, FuzzSpecError, did_you_mean, render_violations
from toolchaos.fake_tools import FakeTool
from toolchaos.policies import POLICIES
from toolchaos.strategies import (
    FaultPlan,
    ScheduleCodec,
    SpecPolicy,
    _fault_kinds,
    _Flat,
    _Pick,
    _policy_kinds,
    _policy_pick,
    describe_fault,
    tool_data,
)

DEFAULT_BOUND = 50
DEFAULT_EXAMPLES = 100
MAX_EXAMPLES = 10_000  # a fuzz block's examples: each is a run; more would be a hang, not a test
MAX_COUNT = 1_000_000  # any other count in a fuzz block
BRIEF_LINES = 60  # a failure's default report under pytest: -v shows the full detail

# What a broken invariant no registry knows (a custom ``Invariant`` subclass) counts as in a regression
# scenario; a registered one declares its own (``INVARIANTS``: category=, severity=).
_UNREGISTERED = {"category": "custom", "severity": "major"}


def must_hold(bound: int = DEFAULT_BOUND, budgets: Budgets | None = None) -> list[inv.Invariant]:
    """The invariants that hold under any fault schedule (the default of ``fuzz``).

    ``bound`` caps tool executions and model turns; a ``budgets`` limit lowers it.
    """
    executions = turns = bound
    if budgets is not None:
        if budgets.max_executions is not None:
            executions = min(executions, budgets.max_executions)
        if budgets.max_steps is not None:
            turns = min(turns, budgets.max_steps)
    return [inv.terminated(), inv.bounded(executions=executions, turns=turns), inv.idempotent(),
            inv.terminal_state(*TERMINAL_STATES), inv.stop_report(), inv.no_execution_after_refusal()]


# --- plain-data spellings (YAML): each kind's own, through its registry -------------------


def invariant_data(invariant: inv.Invariant) -> Any:
    """An invariant as a scenario ``expect:`` entry: ``name``, or ``{name: params}``."""
    kind = inv.INVARIANTS.of(invariant)
    if kind is None:  # a custom Invariant subclass: its name and params, as the base class writes them
        return inv.Invariant.to_data(invariant)
    return kind.data(invariant)


def policy_data(policy: Any) -> dict[str, Any]:
    """A built-in policy as a scenario ``policy:`` section; ``TypeError`` for a custom one."""
    if isinstance(policy, SpecPolicy):
        return dict(policy.spec)
    if isinstance(policy, Fresh):
        if policy.data is None:
            return policy_data(policy.build())
        return dict(policy.data) if isinstance(policy.data, Mapping) else {str(policy.data): None}
    if isinstance(policy, Mapping):
        return dict(policy)
    if POLICIES.of(policy) is None:
        raise TypeError(f"no plain-data spelling for policy {policy!r}: use a built-in policy to get a YAML scenario")
    return dict(POLICIES.to_data(policy))


# --- the failure and the report -------------------------------------------------------------


@dataclass
class FuzzFailure:
    """The minimal failing case for one broken invariant."""

    invariant: str
    violations: list[inv.Violation]
    result: RunResult
    plan: FaultPlan
    policy: Any
    run_seed: int
    target: FuzzTarget
    seed: int | None = None  # hypothesis seed of the exploration that found it
    blob: str | None = None  # hypothesis reproduction blob (printed in CI)

    @property
    def faulty_calls(self) -> int:
        return self.plan.faulty_calls

    @property
    def id(self) -> str:
        """The regression scenario's id: the invariant and a digest of the case (``fuzz-idempotent-41d18763``)."""
        digest = hashlib.sha256(repr((self.invariant, self.plan, self.policy, self.run_seed,
                                      self.target.task)).encode()).hexdigest()[:8]
        return f"fuzz-{self.invariant.replace('_', '-')}-{digest}"

    @property
    def schedule(self) -> str:
        """The shrunk schedule in words: ``charge_payment call 1 empty; fetch_invoice call 2 timeout(...)``."""
        return "; ".join(f"{tool.name} call {n} {describe_fault(f)}"
                         for tool in self.plan.tools for n, f in self.plan.rules(tool.name)) or "no faulty call"

    def counts_as(self) -> dict[str, str]:
        """The regression scenario's ``category`` and ``severity``: what the broken invariant's registration declares."""
        kind = inv.INVARIANTS.get(self.invariant)
        if kind is None:
            return dict(_UNREGISTERED)
        return {"category": kind.extra["category"], "severity": kind.extra["severity"]}

    def scenario(self) -> dict[str, Any]:
        """The minimal case as a scenario mapping (what ``yaml`` prints)."""
        t = self.target
        first = self.violations[0]
        data: dict[str, Any] = {
            "id": self.id,
            "title": f"Fuzz regression: {self.invariant} broke ({self.schedule})",
            **self.counts_as(),
            "description": f"Found by fuzzing {t.agent_ref}: {first.headline()}",
            "seed": self.run_seed,
            "task": t.task,
            "tools": self.plan.as_data(),
            "policy": policy_data(self.policy),
        }
        if t.world:
            data["world"] = dict(t.world)
        if t.budgets is not None:
            data["budgets"] = {k: v for k, v in vars(t.budgets).items() if v is not None}
        goals = [i for i in t.invariants if isinstance(i, inv.Goal)]
        if goals:  # the scenario's goal: its field again, so terminal_state leaves COMPLETED to it as before
            data["goal"] = goals[0].params()
        data["expect"] = [invariant_data(i) for i in t.invariants if not isinstance(i, inv.Goal)]
        return data

    @property
    def yaml(self) -> str:
        """The minimal case as a complete YAML scenario, ready to save under scenarios/."""
        return self.scenario_yaml()

    def scenario_yaml(self, reproduce: str | None = None) -> str:
        """``yaml``, its header naming ``reproduce`` (a command that runs the saved file) instead of ``fuzz(...)``."""
        head = [f"# Regression found by `toolchaos` fuzzing against {self.target.agent_ref}:",
                f"#   {self.violations[0].headline()}",
                f"# {self.faulty_calls} faulty call(s) after shrinking; {reproduce or self.reproduce()}"]
        body = yaml.safe_dump(self.scenario(), sort_keys=False, allow_unicode=True, width=110, default_flow_style=None)
        return "\n".join(head) + "\n" + body

    def reproduce(self) -> str:
        if self.blob:
            return f"reproduce: fuzz(..., blob={self.blob!r}); the exploration: fuzz(..., seed={self.seed})"
        if self.seed is not None:
            return f"reproduce: fuzz(..., seed={self.seed}) (run seed {self.run_seed})"
        return f"run seed {self.run_seed}"

    def message(self, reproduce: str | None = None, saved: Path | None = None) -> str:
        """The full detail: the run, its trace, and the scenario to save (or where it was saved, ``saved``).

        ``reproduce``: the command that runs the saved scenario; by default the ``fuzz(...)`` call
        that finds the case again (the run's own seed alone does not: its schedule was drawn).
        """
        again = reproduce or self.reproduce()
        lines = [f"fuzzing {self.target.agent_ref} broke {self.invariant} "
                 f"(shrunk to {self.faulty_calls} faulty call(s)):",
                 render_violations(self.result, self.violations,
                                   reproduce=again if again.startswith("reproduce:") else None),
                 "", f"saved as {saved}:" if saved else "Save this scenario under scenarios/ as a regression:",
                 "", self.scenario_yaml(reproduce)]
        return "\n".join(lines)

    def brief(self, *, trace: bool, reproduce: str | None = None, saved: Path | None = None) -> list[str]:
        """The few lines a failure needs: what broke, the shrunk schedule (and policy, when it was drawn),
        the trace around the break if ``trace``, where the regression scenario is and how to run it."""
        first = self.violations[0]
        lines = [f"{self.invariant} broke (shrunk to {self.faulty_calls} faulty call(s)):",
                 f"  {first.headline()}"]
        lines += [f"  also: {v.headline()}" for v in self.violations[1:3]]
        lines.append(f"  schedule: {self.schedule}")
        if self.target.policy_varies:
            lines.append(f"  policy: {_inline(self.policy)}")
        if trace and first.seq is not None:
            lines.append(f"  trace around event #{first.seq}:")
            lines += ["  " + row for row in self.result.trace.table(around=first.seq, radius=3).splitlines()]
        lines.append(f"  regression scenario: {saved}" if saved else "  regression scenario: not saved (its YAML: -v)")
        lines.append(f"  {reproduce or self.reproduce()}")
        return lines


@dataclass
class FuzzReport:
    target: FuzzTarget
    examples: int  # runs made (including shrinking and replays)
    seed: int | None
    failures: list[FuzzFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def failure(self, invariant: str | None = None) -> FuzzFailure | None:
        for f in self.failures:
            if invariant is None or f.invariant == invariant:
                return f
        return None

    def message(self, reproduce: Mapping[str, str] | None = None, saved: Mapping[str, Path] | None = None) -> str:
        """Every failure in full; ``reproduce`` and ``saved``, by invariant: see ``FuzzFailure.message``."""
        if self.ok:
            return f"fuzzing {self.target.agent_ref}: {self.examples} runs, no invariant broke (seed {self.seed})"
        again, where = reproduce or {}, saved or {}
        return "\n\n".join([self._head(), *(f.message(again.get(f.invariant), where.get(f.invariant))
                                             for f in self.failures)])

    def brief(self, reproduce: Mapping[str, str] | None = None, saved: Mapping[str, Path] | None = None,
              *, limit: int = BRIEF_LINES) -> str:
        """What broke, in at most ``limit`` lines: each failure's invariant, schedule, saved scenario and
        command, with the trace around the first break when it fits; ``message()`` has the full detail."""
        again, where = reproduce or {}, saved or {}

        def block(f: FuzzFailure, trace: bool) -> list[str]:
            return ["", *f.brief(trace=trace, reproduce=again.get(f.invariant), saved=where.get(f.invariant))]

        lines = [self._head()]
        for i, f in enumerate(self.failures):
            lines += block(f, trace=i == 0)
        if len(lines) <= limit:
            return "\n".join(lines)
        lines = [self._head()]  # many distinct failures: no trace, and those that fit, then a count
        for i, f in enumerate(self.failures):
            more = block(f, trace=False)
            if len(lines) + len(more) + 2 > limit:
                return "\n".join([*lines, "", f"... and {len(self.failures) - i} more failure(s): -v shows each"])
            lines += more
        return "\n".join(lines)

    def _head(self) -> str:
        return (f"fuzzing {self.target.agent_ref}: {len(self.failures)} distinct failure(s) in {self.examples} runs"
                f" (seed {self.seed})")

    def check(self) -> FuzzReport:
        """Raise ``FuzzFailed`` when an invariant broke."""
        __tracebackhide__ = True
        if self.failures:
            raise FuzzFailed(self)
        return self


def _inline(policy: Any) -> str:
    """A drawn policy on one line, as its YAML spelling when it has one."""
    try:
        data = policy_data(policy)
    except TypeError:
        return repr(policy)
    return yaml.safe_dump(data, default_flow_style=True, width=10_000, sort_keys=False).strip()


# --- the target ------------------------------------------------------------------------------


@dataclass
class FuzzTarget:
    """What to fuzz: the agent, the tools and whose schedules vary, the policy, the invariants."""

    agent: Any
    tools: Sequence[FakeTool]
    policy: Any  # a policy, a spec mapping, a strategy of policies, or "vary"
    task: str = "Complete the task with the tools."
    vary: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    max_calls: int = 6
    default_kinds: Sequence[str] = ()
    max_faults: int | None = None
    policy_kinds: Sequence[str] | None = None
    budgets: Budgets | None = None
    ceiling: Ceiling | None = None
    invariants: Sequence[inv.Invariant] = ()
    bound: int = DEFAULT_BOUND
    run_seed: int = 0
    vary_seed: bool = False
    name: str = "fuzz"
    world: Mapping[str, Any] = field(default_factory=dict)  # the collections every case starts from
    agent_fn: AgentUnderTest = field(init=False, repr=False)  # the agent with the run of its kind

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        if not self.invariants:
            self.invariants = must_hold(self.bound, self.budgets)
        self.agent_fn = resolve(self.agent)  # any kind: an SDK loop or a framework's agent too

    @property
    def agent_ref(self) -> str:
        """How messages name the agent: the reference as given (an ``AgentUnderTest``'s own label), else
        ``module:qualname``."""
        if isinstance(self.agent, AgentUnderTest):  # pytest and the CLI hand the agent in resolved: its label is
            return self.agent.label                  # the user's reference (``myapp.agent:run``), not the wrapper's
        return label(self.agent)

    @property
    def policy_varies(self) -> bool:
        """Each case draws its own policy (``policy="vary"`` or a strategy): a failure names the one it drew."""
        return isinstance(self.policy_choice(), (_Pick, st.SearchStrategy))

    def policy_choice(self) -> Any:
        """What each case's policy comes from: drawn (a strategy, or the built-in policies'
        one choice) when the policy varies, else the one policy every case runs."""
        p = self.policy
        if isinstance(p, st.SearchStrategy):
            return p
        if isinstance(p, str) and p == "vary":
            return _policy_pick(self.tools, self.policy_kinds)
        if isinstance(p, Mapping):
            return SpecPolicy(p)
        return p

    def key(self) -> bytes:
        """Identifies the target in the example database (same target, same saved cases)."""
        try:
            tools = repr([(t.name, tool_data(t)) for t in self.tools])
        except TypeError:
            tools = repr([t.name for t in self.tools])
        policy = self.policy
        try:
            pol = repr(policy_data(policy))
        except TypeError:
            pol = repr(policy) if not callable(policy) else getattr(policy, "__qualname__", repr(type(policy)))
        parts = (self.agent_ref, tools, pol, self.task, self.vary, self.kinds, self.max_calls, self.default_kinds,
                 self.max_faults, self.policy_kinds, self.budgets, [repr(i) for i in self.invariants],
                 self.run_seed, self.vary_seed, *([repr(self.world)] if self.world else []))
        return hashlib.sha256(repr(parts).encode()).digest()[:16]

    def run_case(self, plan: FaultPlan, policy: Any, seed: int) -> tuple[RunResult, list[inv.Violation]]:
        if isinstance(policy, Fresh):
            policy = policy.build()
        spec = RunSpec.of(task=self.task, tools=plan.tools, policy=policy, seed=seed, budgets=self.budgets,
                          ceiling=self.ceiling, name=self.name, world=self.world)
        result = run(self.agent_fn, spec)
        return result, inv.check_all(result, self.invariants)


# --- the example database, namespaced per target -----------------------------------------------


class _Namespaced(ExampleDatabase):
    """One shared example database, with each fuzz target's keys under its own prefix."""

    def __init__(self, inner: ExampleDatabase, prefix: bytes) -> None:
        super().__init__()
        self.inner, self.prefix = inner, b"toolchaos.fuzz." + prefix.hex().encode() + b"."

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self.prefix + key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(self.prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self.prefix + src, self.prefix + dest, value)

    def __repr__(self) -> str:
        return f"_Namespaced({self.inner!r}, {self.prefix!r})"


def _database(database: Any) -> ExampleDatabase | None:
    if database is None or database is False:
        return None
    if isinstance(database, ExampleDatabase):
        return database
    if isinstance(database, (str, Path)):
        return DirectoryBasedExampleDatabase(str(database))
    default = settings.default.database if settings.default is not None else None
    return default if default is not None else DirectoryBasedExampleDatabase(".hypothesis/examples")


def in_ci() -> bool:
    """True when env ``CI`` is set (to anything but an empty string, 0 or false)."""
    value = os.environ.get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


# No explain phase: it traces every line of every later run (seconds per run of an agent).
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


class _Broken(Exception):
    """Raised inside the fuzzed test for a broken invariant; one subclass per invariant."""


_BROKEN: dict[str, type[_Broken]] = {}


def _broken(invariant: str) -> type[_Broken]:
    # Hypothesis tells failures apart by exception type and origin: one type per invariant
    # makes each broken invariant a distinct failure, shrunk on its own.
    if invariant not in _BROKEN:
        _BROKEN[invariant] = type(f"Broke_{invariant}", (_Broken,), {})
    return _BROKEN[invariant]


def _base(name: str) -> str:
    return re.split(r"[.\[]", name, maxsplit=1)[0]


_BLOB = re.compile(r"@reproduce_failure\('[^']*', b'([^']*)'\)")


def _notes(exc: BaseException) -> list[str]:
    out = list(getattr(exc, "__notes__", []) or [])
    for sub in getattr(exc, "exceptions", ()) or ():
        out += _notes(sub)
    return out


_Case = tuple[FaultPlan, Any, int, RunResult, list[inv.Violation]]  # plan, policy, run seed, result, violations


def fuzz_target(target: FuzzTarget, *, examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
                ci: bool | None = None, database: Any = "default", blob: str | None = None,
                on_example: Callable[[RunResult], None] | None = None) -> FuzzReport:
    """Fuzz a ``FuzzTarget``; see ``fuzz`` for the parameters."""
    ci = in_ci() if ci is None else ci
    key = target.key()
    if ci and seed is None:
        seed = int.from_bytes(key[:8], "big")  # derandomised: the same cases on every CI run
    # An explicit seed repeats one exploration and (as with hypothesis's @seed) uses no
    # database; without one, hypothesis draws a fresh seed and replays saved failures first.
    db = None if (ci or seed is not None) else _database(database)
    last: dict[str, _Case] = {}
    count = [0]

    def fuzz_case(plan: FaultPlan, policy: Any, run_seed: int) -> None:
        count[0] += 1
        result, violations = target.run_case(plan, policy, run_seed)
        if on_example is not None:
            on_example(result)
        if violations:
            name = _base(violations[0].invariant)
            last[name] = (plan, policy, run_seed, result, violations)
            raise _broken(name)(violations[0].headline())

    test = _hypothesis_test(target, fuzz_case, examples=examples, seed=seed, ci=ci,
                            database=_Namespaced(db, key) if db is not None else None, blob=blob)
    report = FuzzReport(target, 0, seed)
    try:
        with _heap_frozen():
            test()
    except BaseException as exc:  # one _Broken, or a group of them (several distinct failures)
        failures = _failures(exc, last, target, seed, keep_blobs=ci or blob is not None)
        if failures is None:
            raise
        report.failures = failures
    report.examples = count[0]
    if report.seed is None:  # the seed hypothesis drew: fuzz(..., seed=...) repeats this exploration
        report.seed = getattr(test, "_hypothesis_internal_use_generated_seed", None)
        for f in report.failures:
            f.seed = report.seed
    return report


def _hypothesis_test(target: FuzzTarget, fuzz_case: Callable[[FaultPlan, Any, int], None], *, examples: int,
                     seed: int | None, ci: bool, database: ExampleDatabase | None,
                     blob: str | None) -> Callable[[], None]:
    """``fuzz_case`` as a hypothesis test over the target's plans, policies and run seeds.

    Everything that varies is drawn as one flat tuple, one argument of the test: each
    argument and each level of nested strategies costs hypothesis per example, and a
    constant (the policy, the run seed) is not drawn at all. The choices are the same as
    ``fault_schedules`` beside ``policies`` would make, so shrinking works on them alike;
    the built-in ones are asked of hypothesis as bare choices (``strategies._Flat``).
    """
    codec = ScheduleCodec.shared(target.tools, vary=target.vary, kinds=target.kinds, max_calls=target.max_calls,
                                 default_kinds=target.default_kinds, max_faults=target.max_faults)
    parts: list[Any] = list(codec.parts)
    policy = target.policy_choice()
    drawn_policy = isinstance(policy, (_Pick, st.SearchStrategy))
    if drawn_policy:
        parts.append(policy)
    if target.vary_seed:
        parts.append(st.integers(0, 2**16 - 1))
    n = len(codec.parts)

    def case(drawn: tuple[Any, ...]) -> None:
        fuzz_case(codec.decode(drawn[:n]), drawn[n] if drawn_policy else policy,
                  drawn[-1] if target.vary_seed else target.run_seed)

    test = given(_Flat(parts))(case)
    test = settings(max_examples=examples, deadline=None, database=database, derandomize=ci,
                    print_blob=ci or blob is not None, suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=True, verbosity=Verbosity.quiet, phases=_PHASES)(test)
    # Hypothesis keys saved examples by the test's source, read with inspect on each call
    # (~0.4 ms); ``case`` is the same code for every target, so its key is worked out once
    # (the very key hypothesis would compute; _Namespaced keeps the targets apart).
    test._hypothesis_internal_database_key = _case_key(case)  # type: ignore[attr-defined]
    if seed is not None:
        test = _hseed(seed)(test)
    if blob is not None:
        test = reproduce_failure(_hypothesis_version, blob.encode())(test)
    return test


@contextlib.contextmanager
def _heap_frozen() -> Iterator[None]:
    """The objects that exist before a fuzz call left out of the collector's full passes during it.

    Every few hundred examples the examples' objects (hypothesis's and the runs') set off a full
    collection, which walks the whole heap: every module, class and function imported, ~70,000
    objects, 40 to 70 ms each time here, ~150 us an example. None of those objects is the fuzz
    loop's garbage, so ``gc.freeze`` sets them aside for the call and ``gc.unfreeze`` puts them back
    in the oldest generation after it; objects made during the call are collected as before. A
    heap someone else froze (a pre-fork server) is left as it is.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


_CASE_KEY: dict[object, bytes] = {}


def _case_key(case: Callable[..., None]) -> bytes:
    code = case.__code__
    key = _CASE_KEY.get(code)
    if key is None:
        key = _CASE_KEY[code] = function_digest(case)
    return key


def _failures(exc: BaseException, last: Mapping[str, _Case], target: FuzzTarget, seed: int | None,
              keep_blobs: bool) -> list[FuzzFailure] | None:
    """The minimal case of each broken invariant hypothesis reports (None: ``exc`` is something else)."""
    errors: list[BaseException] = list(getattr(exc, "exceptions", None) or [exc])
    if not all(isinstance(e, _Broken) for e in errors):
        return None
    blobs = _BLOB.findall("\n".join(_notes(exc)))
    out = []
    for i, err in enumerate(errors):
        name = type(err).__name__.removeprefix("Broke_")
        plan, policy, run_seed, result, violations = last[name]
        found_blob = blobs[i] if i < len(blobs) and keep_blobs else None
        out.append(FuzzFailure(name, violations, result, plan, policy, run_seed, target, seed, found_blob))
    return out


def fuzz(agent: Any, *, tools: Iterable[FakeTool], policy: Any = "vary", task: str = "Complete the task with the tools.",
         examples: int = DEFAULT_EXAMPLES, vary: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
         max_calls: int = 6, default_kinds: Sequence[str] = (), max_faults: int | None = None,
         policy_kinds: Sequence[str] | None = None, budgets: Budgets | Mapping[str, Any] | None = None,
         ceiling: Ceiling | None = None, invariants: Sequence[inv.Invariant] = (), bound: int = DEFAULT_BOUND,
         run_seed: int = 0, vary_seed: bool = False, seed: int | None = None, ci: bool | None = None,
         database: Any = "default", blob: str | None = None, name: str = "fuzz") -> FuzzReport:
    """Fuzz the fault schedules of ``tools`` against ``agent``; returns a ``FuzzReport`` (``.check()`` raises).

    - ``policy``: the model's behaviour: a policy, a spec mapping (``{"stubborn": {...}}``),
      a hypothesis strategy of policies, or ``"vary"`` (default: ``strategies.policies(tools)``).
    - ``vary`` / ``kinds`` / ``max_calls`` / ``default_kinds`` / ``max_faults``: see
      ``strategies.fault_schedules``.
    - ``invariants``: what must hold (default ``must_hold(bound, budgets)``).
    - ``examples``: how many cases to try (hypothesis ``max_examples``).
    - ``seed``: the exploration seed (default: fresh, or derived from the target in CI);
      ``ci``: force CI behaviour on or off (default: env ``CI``); ``database``: where found
      cases are kept (``"default"``: hypothesis's, a path, an ``ExampleDatabase`` or None);
      ``blob``: replay exactly the case of a reproduction blob printed in CI.
    """
    if budgets is not None and not isinstance(budgets, Budgets):
        budgets = Budgets(**dict(budgets))
    target = FuzzTarget(agent, list(tools), policy, task, vary, kinds, max_calls, default_kinds, max_faults,
                        policy_kinds, budgets, ceiling, invariants, bound, run_seed, vary_seed, name)
    return fuzz_target(target, examples=examples, seed=seed, ci=ci, database=database, blob=blob)


# --- scenarios: the ``fuzz:`` block ---------------------------------------------------------

FUZZ_KEYS = ("vary", "kinds", "examples", "max_calls", "max_faults", "default_kinds", "policy", "policy_kinds",
             "check", "bound", "vary_seed")
CHECKS = ("must_hold", "scenario", "both")


@dataclass(frozen=True)
class FuzzSpec:
    """A scenario's ``fuzz:`` block: which schedules vary, how, how many examples, what must hold.

    ```yaml
    fuzz:
      vary: [charge_payment]        # tools whose schedules vary (default: all)
      kinds: [timeout, transient]   # fault kinds drawn (default: all but paginated)
      examples: 200                 # default 100; --chaos-fuzz=N overrides
      max_calls: 6                  # scheduled calls per tool
      max_faults: 3                 # at most this many faulty calls (default: no limit)
      default_kinds: []             # kinds later calls may take (default: always ok)
      policy: scenario              # scenario (its policy) | vary (drawn behaviours)
      policy_kinds: [stubborn]      # with policy: vary, which behaviours
      check: must_hold              # must_hold | scenario (its expect) | both
      bound: 50                     # executions and turns for must_hold (budgets lower it)
      vary_seed: false              # draw the run seed too
    ```
    """

    vary: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    examples: int = DEFAULT_EXAMPLES
    max_calls: int = 6
    max_faults: int | None = None
    default_kinds: tuple[str, ...] = ()
    policy: str = "scenario"
    policy_kinds: tuple[str, ...] | None = None
    check: str = "must_hold"
    bound: int = DEFAULT_BOUND
    vary_seed: bool = False

    @classmethod
    def from_data(cls, data: Any, tools: Sequence[str] | None = None) -> FuzzSpec:
        """Validate a ``fuzz:`` block; ``FuzzSpecError`` names the offending key (``fuzz.kinds[1]``)."""
        if data is None or data is True:
            return cls()
        if not isinstance(data, Mapping):
            raise FuzzSpecError("fuzz", f"expected a mapping of options ({', '.join(FUZZ_KEYS)}), got {data!r}")
        for k in data:
            if k not in FUZZ_KEYS:
                raise FuzzSpecError(f"fuzz.{k}", f"unknown key{did_you_mean(str(k), FUZZ_KEYS)} "
                                                 f"(known: {', '.join(FUZZ_KEYS)})")

        def names(key: str, known: Sequence[str] | None, what: str) -> tuple[str, ...] | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list):
                raise FuzzSpecError(f"fuzz.{key}", f"expected a list of {what}, got {value!r}")
            for i, v in enumerate(value):
                if not isinstance(v, str) or (known is not None and v not in known):
                    raise FuzzSpecError(f"fuzz.{key}[{i}]", f"unknown {what} {v!r}{did_you_mean(str(v), known or [])}"
                                                            f" (known: {', '.join(known or [])})")
            return tuple(value)

        def integer(key: str, minimum: int, default: Any, maximum: int = MAX_COUNT) -> Any:
            value = data.get(key, default)
            if value is None and default is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
                raise FuzzSpecError(f"fuzz.{key}", f"expected an integer from {minimum} to {maximum:,}, got "
                                                   f"{value!r}")
            return value

        def choice(key: str, known: Sequence[str], default: str) -> str:
            value = data.get(key, default)
            if value not in known:
                raise FuzzSpecError(f"fuzz.{key}", f"expected one of {', '.join(known)}, got {value!r}"
                                                   f"{did_you_mean(str(value), known)}")
            return str(value)

        vary_seed = data.get("vary_seed", False)
        if not isinstance(vary_seed, bool):
            raise FuzzSpecError("fuzz.vary_seed", f"expected true or false, got {vary_seed!r}")
        return cls(vary=names("vary", tools, "tool"), kinds=names("kinds", _fault_kinds(), "fault kind"),
                   examples=integer("examples", 1, DEFAULT_EXAMPLES, MAX_EXAMPLES), max_calls=integer("max_calls", 1, 6),
                   max_faults=integer("max_faults", 1, None),
                   default_kinds=names("default_kinds", _fault_kinds(), "fault kind") or (),
                   policy=choice("policy", ("scenario", "vary"), "scenario"),
                   policy_kinds=names("policy_kinds", _policy_kinds(), "policy kind"),
                   check=choice("check", CHECKS, "must_hold"), bound=integer("bound", 1, DEFAULT_BOUND),
                   vary_seed=vary_seed)


def scenario_target(scenario: Any, spec: FuzzSpec | None = None, *, agent: Any = None) -> FuzzTarget:
    """A ``FuzzTarget`` from a loaded scenario (``toolchaos.scenario.Scenario``) and its ``fuzz:`` block."""
    spec = spec or FuzzSpec()
    agent = agent if agent is not None else (scenario.agent or "builtin:guarded")
    invariants: list[inv.Invariant] = []
    if spec.check in ("must_hold", "both"):
        invariants += must_hold(spec.bound, scenario.budgets)
    if spec.check in ("scenario", "both"):
        # not faults_fired: the fuzzer draws its own schedules, so the scenario's rules are not the ones that run
        invariants += [i for i in scenario.invariants if not isinstance(i, inv.FaultsFired)
                       and not any(repr(i) == repr(j) for j in invariants)]
    raw = getattr(getattr(scenario, "spec", None), "policy", None)
    policy: Any = "vary" if spec.policy == "vary" else Fresh(scenario.policy, _plain(raw))
    return FuzzTarget(agent, list(scenario.tools), policy, scenario.task, spec.vary, spec.kinds, spec.max_calls,
                      spec.default_kinds, spec.max_faults, spec.policy_kinds, scenario.budgets, scenario.ceiling,
                      invariants, spec.bound, scenario.seed, spec.vary_seed, f"{scenario.name}~fuzz", scenario.world)


class Fresh:
    """A policy built afresh for every run (a scenario's policy builder), with its YAML spelling."""

    def __init__(self, build: Callable[[], Any], data: Any = None) -> None:
        self.build = build
        self.data = data
        self.name = str(getattr(build(), "name", "policy"))

    def __repr__(self) -> str:
        return f"policy({self.data!r})" if self.data is not None else f"<fresh policy {self.name}>"


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def fuzz_scenario(scenario: Any, spec: FuzzSpec | Mapping[str, Any] | None = None, *, agent: Any = None,
                  examples: int | None = None, seed: int | None = None, ci: bool | None = None,
                  database: Any = "default", blob: str | None = None) -> FuzzReport:
    """Fuzz a loaded scenario's fault schedules (``examples`` overrides the block's: ``--chaos-fuzz=N``)."""
    if not isinstance(spec, FuzzSpec):
        spec = FuzzSpec.from_data(spec, [t.name for t in scenario.tools])
    target = scenario_target(scenario, spec, agent=agent)
    return fuzz_target(target, examples=examples or spec.examples, seed=seed, ci=ci, database=database, blob=blob)
