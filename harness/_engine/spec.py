"""``RunSpec``: every setting of one run, in one frozen value, validated once.

Every way into a run builds one and hands it down: ``toolchaos.run`` (its keywords are sugar
for a ``RunSpec``), the chaos fixture, a scenario's run, the fuzzer, ``toolchaos.wire``, the
command line and ``serve``. What a run's caller leaves unset comes from the session's defaults,
read here and nowhere else: how runs execute (``isolation``) and the watchdog's two limits
(``real_seconds``, without progress; ``total_seconds``, in all). The pytest plugin and the
command line set those defaults for their session (``session_defaults``); the engine reads only
the spec it is handed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from toolchaos._internal.limits import DEFAULT_REAL_SECONDS, TOTAL_FACTOR, Budgets, Ceiling
from toolchaos._plumbing.environ import check_names
from toolchaos.errors import UserError
from toolchaos.fake_tools import EffectLedger, FakeTool, World

__all__ = ["ISOLATION_MODES", "RunSpec", "session_defaults"]

ISOLATION_MODES = ("none", "process")


@dataclass(slots=True)
class _Defaults:
    """What a run's caller did not set, for this session (one per process)."""

    isolation: str = "none"
    real_seconds: float | None = None
    source: str = ""  # the option that set real_seconds, named in a watchdog failure
    pass_env: tuple[str, ...] = ()  # the caller's variables every process agent of the session gets
    total_seconds: float | None = None
    total_source: str = ""  # the option that set total_seconds


_session = _Defaults()


def session_defaults(*, isolation: str | None = None, real_seconds: float | None = None,
                     source: str = "", pass_env: Iterable[str] | None = None, total_seconds: float | None = None,
                     total_source: str = "") -> Callable[[], None]:
    """Set the session's defaults for runs that leave them unset; returns a function that puts the previous back.

    Only the hosts of a session call it: the pytest plugin (``--chaos-isolation``,
    ``--chaos-real-seconds``, ``--chaos-total-seconds``) and the command line, so that a run
    reached by any path (a test calling ``toolchaos.run`` itself, a YAML item, the certification
    suite) follows the session. ``source`` names the option that set ``real_seconds`` (the
    no-progress limit), ``total_source`` the one that set ``total_seconds`` (the total real-time
    limit): a watchdog failure says which knob to turn. ``pass_env``: names of the caller's
    variables every process agent gets (``--chaos-pass-env``).
    """
    previous = replace(_session)
    if isolation is not None:
        _session.isolation = _mode(isolation)
    if real_seconds is not None:
        _session.real_seconds, _session.source = float(real_seconds), source
    if total_seconds is not None:
        _session.total_seconds, _session.total_source = float(total_seconds), total_source
    if pass_env is not None:
        _session.pass_env = check_names(pass_env)

    def restore() -> None:
        _session.isolation, _session.real_seconds, _session.source, _session.pass_env = (
            previous.isolation, previous.real_seconds, previous.source, previous.pass_env)
        _session.total_seconds, _session.total_source = previous.total_seconds, previous.total_source

    return restore


def session_isolation() -> str:
    """How runs that do not say execute in this session."""
    return _session.isolation


def session_real_seconds() -> float | None:
    """The session's no-progress limit, or None when the session sets none."""
    return _session.real_seconds


def session_total_seconds() -> float | None:
    """The session's total real-time limit, or None when the session sets none."""
    return _session.total_seconds


def _mode(isolation: str) -> str:
    if isolation not in ISOLATION_MODES:
        raise UserError(f"isolation: expected one of {', '.join(ISOLATION_MODES)}, got {isolation!r}",
                        field="isolation")
    return isolation


_NO_BUDGETS, _NO_CEILING = Budgets(), Ceiling()


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run's settings. Build it with what you know; the rest comes from the session.

    - ``task``, ``tools``, ``policy``: what the agent is asked, what it may call, who answers as the model.
    - ``seed``: every draw of the run (payloads, jitter, probabilistic faults) follows it.
    - ``budgets``: what the agent's runtime should enforce (``tools.budgets``); ``ceiling``: the
      harness's own fuse.
    - ``store``, ``world``, ``ledger``: state that outlives the run (a restart finds it).
    - ``api_faults``: model-API faults, for an agent whose model is answered over HTTP.
    - ``isolation``: ``"process"`` (the agent in a contained child) or ``"none"``; unset, the session's.
    - ``real_seconds``: the watchdog's limit without progress (real seconds the run could run:
      a machine's load or a stopped process does not count); unset, the ceiling's, else the
      session's, else the agent kind's default. ``total_seconds``: the watchdog's limit on the
      run's real time in all; unset, the ceiling's, else the session's, else ``TOTAL_FACTOR``
      times the no-progress limit.
    - ``artifacts``: a directory for the trace (``<name>.trace.jsonl``); ``name``: the run's name.
    - ``pass_env``: names of the caller's environment variables a process agent gets, beyond its
      allowlist (``toolchaos._plumbing.environ``); the session's names are added to the run's.
    """

    task: str
    tools: tuple[FakeTool, ...]
    policy: Any
    seed: int = 0
    budgets: Budgets = _NO_BUDGETS
    ceiling: Ceiling = _NO_CEILING
    store: MutableMapping[str, Any] | None = None
    world: World | Mapping[str, Any] | None = None
    ledger: EffectLedger | None = None
    api_faults: Any = None
    isolation: str = ""  # "" = the session's
    real_seconds: float | None = None
    artifacts: Path | None = None
    name: str = "run"
    stays_because: str | None = None  # process isolation was asked for, and why this run stays here
    limit_source: str = ""  # who set real_seconds ("" : the caller, the ceiling or a default)
    pass_env: tuple[str, ...] = ()
    total_seconds: float | None = None
    total_source: str = ""  # who set total_seconds ("" : the caller, the ceiling or the default)

    def __post_init__(self) -> None:
        if not isinstance(self.task, str):
            raise UserError(f"task: expected a string, got {self.task!r}", field="task")
        if self.tools.__class__ is not tuple:
            object.__setattr__(self, "tools", tuple(self.tools))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise UserError(f"seed: expected an integer, got {self.seed!r}", field="seed")
        if self.budgets.__class__ is not Budgets:
            object.__setattr__(self, "budgets", _budgets(self.budgets))
        if self.ceiling is None:
            object.__setattr__(self, "ceiling", _NO_CEILING)
        elif not isinstance(self.ceiling, Ceiling):
            raise UserError(f"ceiling: expected a toolchaos.Ceiling, got {self.ceiling!r}", field="ceiling")
        object.__setattr__(self, "isolation", _mode(self.isolation) if self.isolation else _session.isolation)
        self._resolve_real_seconds()
        self._resolve_total_seconds()
        object.__setattr__(self, "pass_env", check_names((*check_names(self.pass_env), *_session.pass_env)))
        if self.artifacts is not None and not isinstance(self.artifacts, Path):
            object.__setattr__(self, "artifacts", Path(self.artifacts))

    def _resolve_real_seconds(self) -> None:
        seconds, source = self.real_seconds, self.limit_source
        if seconds is None:
            seconds = self.ceiling.real_seconds
        if seconds is None and _session.real_seconds is not None:
            seconds, source = _session.real_seconds, _session.source
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not math.isfinite(seconds) or seconds <= 0):
            raise UserError(f"real_seconds: expected a positive number of seconds, got {seconds!r}",
                            field="real_seconds")
        object.__setattr__(self, "real_seconds", None if seconds is None else float(seconds))
        object.__setattr__(self, "limit_source", source)

    def _resolve_total_seconds(self) -> None:
        seconds, source = self.total_seconds, self.total_source
        if seconds is None:
            seconds = self.ceiling.total_seconds
        if seconds is None and _session.total_seconds is not None:
            seconds, source = _session.total_seconds, _session.total_source
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                    or not math.isfinite(seconds) or seconds <= 0):
            raise UserError(f"total_seconds: expected a positive number of seconds (the run's total real-time "
                            f"limit), got {seconds!r}", field="total_seconds")
        object.__setattr__(self, "total_seconds", None if seconds is None else float(seconds))
        object.__setattr__(self, "total_source", source)

    @classmethod
    def of(cls, *, task: str, tools: Iterable[FakeTool], policy: Any, seed: int = 0,
           budgets: Budgets | Mapping[str, Any] | None = None, ceiling: Ceiling | None = None,
           store: MutableMapping[str, Any] | None = None, world: World | Mapping[str, Any] | None = None,
           ledger: EffectLedger | None = None, api_faults: Any = None, isolation: str | None = None,
           real_seconds: float | None = None, artifacts: str | Path | None = None, name: str = "run",
           pass_env: Iterable[str] = (), total_seconds: float | None = None) -> RunSpec:
        """The keyword form every entry point shares (``None`` where the caller leaves a setting unset)."""
        return cls(task, tools, policy, seed, budgets or _NO_BUDGETS,  # type: ignore[arg-type]
                   ceiling or _NO_CEILING, store, world, ledger, api_faults, isolation or "", real_seconds,
                   Path(artifacts) if artifacts is not None else None, name,
                   pass_env=tuple(pass_env) if not isinstance(pass_env, str) else (pass_env,),
                   total_seconds=total_seconds)

    def watchdog_limit(self, default: float = DEFAULT_REAL_SECONDS) -> tuple[float, str]:
        """The no-progress limit of this run, and who set it ("" for the caller, the ceiling or ``default``)."""
        return (self.real_seconds, self.limit_source) if self.real_seconds is not None else (default, "")

    def total_limit(self, default: float = DEFAULT_REAL_SECONDS) -> tuple[float, str]:
        """The total real-time limit of this run, and who set it (unset: ``TOTAL_FACTOR`` times the no-progress limit)."""
        if self.total_seconds is not None:
            return self.total_seconds, self.total_source
        return round(self.watchdog_limit(default)[0] * TOTAL_FACTOR, 6), ""

    def staying(self, reason: str) -> RunSpec:
        """This run in this process: asked to be isolated, it says why it is not (``RunResult.isolation_reason``)."""
        if self.isolation != "process":
            return self
        return replace(self, isolation="none", stays_because=self.stays_because or reason)

    def with_(self, **changes: Any) -> RunSpec:
        """A copy with ``changes`` (validated again)."""
        return replace(self, **changes)


def _budgets(value: Any) -> Budgets:
    if value is None:
        return _NO_BUDGETS
    if isinstance(value, Budgets):
        return value
    if isinstance(value, Mapping):
        return Budgets(**dict(value))
    raise UserError(f"budgets: expected a toolchaos.Budgets or a mapping, got {value!r}", field="budgets")
