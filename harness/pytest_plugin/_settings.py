"""The pytest layer's settings: read once from the command line and the ini file, kept in ``config.stash``.

Precedence, written here and nowhere else: the command line, then the ini file, then the
default. (A marker's or a scenario's own ``agent:`` is applied later, by the item or the
fixture, on top of these.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from toolchaos._engine import ISOLATION_MODES, default_for_certification
from toolchaos._internal.limits import check_real_seconds

DEFAULT_AGENT = "builtin:guarded"
REAL_SECONDS_OPTION = "--chaos-real-seconds"
REAL_SECONDS_INI = "chaos_real_seconds"
ISOLATION_OPTION = "--chaos-isolation"
ISOLATION_INI = "chaos_isolation"


@dataclass(frozen=True)
class Settings:
    enabled: bool
    agent: str
    seed: int
    artifacts: Path | None
    record: bool = False  # --chaos-record: cassettes are recorded from their live model


settings_key = pytest.StashKey[Settings]()


def read_settings(config: pytest.Config) -> Settings:
    """The session's settings: ``--chaos-agent`` over ini ``chaos_agent`` over ``builtin:guarded``."""
    opt = config.option
    agent = opt.chaos_agent or config.getini("chaos_agent") or DEFAULT_AGENT
    artifacts = Path(opt.chaos_artifacts) if opt.chaos_artifacts else None
    enabled = bool(opt.chaos or opt.chaos_certify)
    if artifacts is not None and enabled:
        _check_artifacts(artifacts)
    return Settings(enabled, str(agent), int(opt.chaos_seed or 0), artifacts,
                    bool(getattr(opt, "chaos_record", False)))


def _check_artifacts(folder: Path) -> None:
    """One usage error at the start of the session for a folder traces cannot be written to, not one per test."""
    problem = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        problem = "it exists and is not a directory"
    except (OSError, ValueError) as exc:
        problem = f"it cannot be created ({getattr(exc, 'strerror', None) or exc})"
    else:
        if not folder.is_dir():
            problem = "it is not a directory"
        elif not os.access(folder, os.W_OK | os.X_OK):
            problem = "it is not writable"
    if problem:
        raise pytest.UsageError(f"--chaos-artifacts={folder}: {problem}; give a directory the traces can be "
                                f"written to")


def real_seconds(config: pytest.Config) -> tuple[float, str] | None:
    """The session's real-time limit and its source: the command line, else the ini file, else None.

    Both go through the CLI's check (``check_real_seconds``: 0, a negative number, nan, inf or
    not a number), reported as a usage error naming the option and the value.
    """
    raw: Any = config.option.chaos_real_seconds
    source = REAL_SECONDS_OPTION
    if raw is None:
        raw = config.getini(REAL_SECONDS_INI)
        source = f"ini option {REAL_SECONDS_INI}"
        if not str(raw).strip():
            return None
    try:
        return check_real_seconds(raw, source), source
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@dataclass(frozen=True)
class ReportSettings:
    """What a report says beyond the verdicts: the agent's version, the baseline, the prices."""

    agent_version: str | None
    baseline: str | None
    prices: str | None
    price_model: str | None


def read_report_settings(config: pytest.Config) -> ReportSettings:
    """``--agent-version``, ``--chaos-baseline``, ``--chaos-prices`` over ini ``chaos_prices``,
    ``--chaos-price-model`` over ini ``chaos_price_model``."""
    opt = config.option

    def pick(option: str, ini: str | None = None) -> str | None:
        value = getattr(opt, option, None) or (config.getini(ini) if ini else None)
        return str(value) if value else None

    return ReportSettings(pick("agent_version"), pick("chaos_baseline"), pick("chaos_prices", "chaos_prices"),
                          pick("chaos_price_model", "chaos_price_model"))


def isolation_mode(config: pytest.Config) -> str:
    """``--chaos-isolation``, else ini ``chaos_isolation``, else ``process`` under ``--chaos-certify`` on Linux.

    The certification suite judges an agent only by what its runs leave (the trace, the
    ledger), so it loses nothing in a child and is worth the ten or so milliseconds a run costs
    there; a test of one's own often looks at objects the agent changed, which a child's
    copy would keep to itself. Elsewhere, and without ``--chaos-certify``: ``none``.
    docs/isolation.md has the figures.
    """
    raw = config.option.chaos_isolation or str(config.getini(ISOLATION_INI) or "").strip()
    if raw:
        if raw not in ISOLATION_MODES:
            raise pytest.UsageError(f"ini {ISOLATION_INI}: expected one of {', '.join(ISOLATION_MODES)}, got {raw!r}")
        return str(raw)
    return default_for_certification() if config.option.chaos_certify else "none"
