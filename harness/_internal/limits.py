"""Limits: the budgets a runtime should enforce, and the harness's own ceiling and real-time limit."""

from __future__ import annotations

import math
from collections.abc import Callable
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


DEFAULT_REAL_SECONDS = 5.0  # the real-time watchdog's limit when neither the ceiling nor the session sets one
SDK_REAL_SECONDS = 60.0  # toolchaos.wire SDK agents' default: the SDKs build their pydantic models inside the run

# The session's real-time limit (pytest --chaos-real-seconds / ini chaos_real_seconds) and where
# it came from. Process-wide, not per run, because runs reach the engine by paths that never see
# the pytest config: the chaos fixture, YAML items, the certification suite, toolchaos.wire.run, a
# test calling toolchaos.run directly. Read when a run starts, so a Ceiling built before the session
# (a module-level constant in a conftest) still follows it.
_session_real_seconds: tuple[float, str] | None = None


def set_session_real_seconds(seconds: float | None, source: str = "") -> Callable[[], None]:
    """Set the real-time limit of runs whose ceiling names none (``None`` clears it).

    Returns a function that puts the previous limit back (a pytest session registers it as a
    cleanup, so an in-process inner session does not leak its limit into the outer one).
    ``source`` (say ``--chaos-real-seconds``) is named in a watchdog failure, so whoever reads
    it knows which knob to turn. The value is not validated here: callers check user input
    first (``check_real_seconds``; the pytest plugin for its option and ini value), where they
    can report a bad value as a usage error.
    """
    global _session_real_seconds
    previous = _session_real_seconds
    _session_real_seconds = None if seconds is None else (float(seconds), source)

    def restore() -> None:
        global _session_real_seconds
        _session_real_seconds = previous

    return restore


def check_real_seconds(raw: str | float, source: str) -> float:
    """``raw`` as a real-time limit in seconds, or ``ValueError`` naming ``source`` and the value.

    The one rule for the command line's ``--real-seconds`` and pytest's ``--chaos-real-seconds``
    and ini ``chaos_real_seconds``: 0, a negative number, nan, inf or not a number is refused.
    inf too, because the watchdog's deadline also bounds socket timeouts, which must be finite.
    """
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{source}: expected a positive number of seconds (the real-time limit of each "
                         f"chaos run), got {raw!r}")
    return seconds


def session_real_seconds() -> float | None:
    """The session's real-time limit, or ``None`` when the session sets none."""
    current = _session_real_seconds
    return None if current is None else current[0]


@dataclass(frozen=True)
class Ceiling:
    """The harness's own fuse, far above any sane budget: it ends runs, it does not judge them.

    ``real_seconds`` is the real-time watchdog's limit. ``None`` (the default) means "not set
    here": the session's limit (``set_session_real_seconds``, the pytest option
    ``--chaos-real-seconds``), else ``DEFAULT_REAL_SECONDS``. An explicit value always wins.
    """

    max_tool_calls: int = 1000
    max_model_turns: int = 200
    max_refusals: int = 10_000  # a runtime refusing in a loop without asking the model is a runaway too
    real_seconds: float | None = None
    thread_grace: float = 0.1  # real seconds to wait for threads the agent left running when it returned

    def __post_init__(self) -> None:
        check_finite(self)

    def watchdog_limit(self) -> tuple[float, str]:
        """The real-time limit a run under this ceiling gets, and who set it ("" when the ceiling or the default did)."""
        if self.real_seconds is not None:
            return self.real_seconds, ""
        session = _session_real_seconds
        return session if session is not None else (DEFAULT_REAL_SECONDS, "")
