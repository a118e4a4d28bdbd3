"""Limits: the budgets a runtime should enforce, and the harness's own ceiling and the watchdog's limits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def check_finite(owner: Any) -> None:
    """``ValueError`` for a NaN or infinite bound of a limits dataclass: NaN passes every comparison, so it
    would bound nothing. (A loop over the fields, no keyword dict: every run builds one of these.)"""
    for name in owner.__dataclass_fields__:
        value = getattr(owner, name)
        if value.__class__ is float and not math.isfinite(value):
            raise ValueError(f"{type(owner).__name__}: {name} must be a finite number, got {value!r}")


@dataclass(frozen=True)
class Budgets:
    """Limits the agent's runtime should enforce (handed to it as ``tools.budgets``)."""

    max_steps: int | None = None  # model turns
    max_executions: int | None = None  # tool executions
    max_seconds: float | None = None  # virtual wall-clock seconds
    max_tokens: int | None = None  # input + output tokens over the run

    def __post_init__(self) -> None:
        check_finite(self)

    def get(self, name: str, default: Any = None) -> Any:
        value = getattr(self, name, None)
        return default if value is None else value


DEFAULT_REAL_SECONDS = 5.0  # the watchdog's no-progress limit when neither the ceiling nor the session sets one
SDK_REAL_SECONDS = 60.0  # toolchaos.wire SDK agents' default: the SDKs build their pydantic models inside the run
SERVE_REAL_SECONDS = 300.0  # a served run's default (process agents, toolchaos serve): a real agent elsewhere is slow
TOTAL_FACTOR = 3.0  # the total real-time limit, when nothing sets it: this many times the no-progress limit

def check_real_seconds(raw: str | float, source: str, what: str = "the no-progress limit of each chaos run") -> float:
    """``raw`` as a limit in real seconds, or ``ValueError`` naming ``source``, ``what`` it limits and the value.

    The one rule for the command line's ``--real-seconds`` and ``--total-seconds``, pytest's
    ``--chaos-real-seconds`` and ``--chaos-total-seconds`` and their ini options: 0, a negative
    number, nan, inf or not a number is refused. inf too, because the watchdog's deadline also
    bounds socket timeouts, which must be finite.
    """
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{source}: expected a positive number of seconds ({what}), got {raw!r}")
    return seconds


@dataclass(frozen=True)
class Ceiling:
    """The harness's own fuse, far above any sane budget: it ends runs, it does not judge them.

    The watchdog's two limits, in real seconds: ``real_seconds``, how long the run may go without
    progress while it could run (a machine's load or a stopped process does not count), and
    ``total_seconds``, how long it may take in all (default: ``TOTAL_FACTOR`` times
    ``real_seconds``). ``None`` (the default) means "not set here": the session's (the pytest
    options ``--chaos-real-seconds`` and ``--chaos-total-seconds``), else the agent kind's
    default. A run's own ``RunSpec`` settings win over these, and these over the session's.
    """

    max_tool_calls: int = 1000
    max_model_turns: int = 200
    max_refusals: int = 10_000  # a runtime refusing in a loop without asking the model is a runaway too
    real_seconds: float | None = None
    thread_grace: float = 0.1  # real seconds to wait for threads the agent left running when it returned
    total_seconds: float | None = None

    def __post_init__(self) -> None:
        check_finite(self)
