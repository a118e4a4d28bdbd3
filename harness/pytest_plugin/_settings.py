"""The pytest layer's settings: read once from the command line and the ini file, kept in ``config.stash``.

Precedence, written here and nowhere else: the command line, then the ini file, then the
default. (A marker's or a scenario's own ``agent:`` is applied later, by the item or the
fixture, on top of these.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from toolchaos._internal.limits import check_real_seconds
from toolchaos._internal.shards import Shard
from toolchaos._plumbing.environ import split_names
from toolchaos.errors import UserError
from toolchaos.pytest_plugin import _lazy
from toolchaos.pytest_plugin._options import OptionGroup, naming, option

DEFAULT_AGENT = "builtin:guarded"
REAL_SECONDS_OPTION = "--chaos-real-seconds"
REAL_SECONDS_INI = "chaos_real_seconds"
TOTAL_SECONDS_OPTION = "--chaos-total-seconds"
TOTAL_SECONDS_INI = "chaos_total_seconds"
ISOLATION_OPTION = "--chaos-isolation"
# toolchaos._engine.ISOLATION_MODES, for --help without importing the engine (tests/pytest_plugin checks they agree)
ISOLATION_CHOICES = ("none", "process")
ISOLATION_INI = "chaos_isolation"
PASS_ENV_OPTION = "--chaos-pass-env"
PASS_ENV_INI = "chaos_pass_env"
MAX_TRIALS = 10_000  # toolchaos.scenario.MAX_TRIALS, without loading the scenario loader (a test checks they agree)
# toolchaos._engine.trials's, without loading the engine (a test checks they agree)
DEFAULT_CONCURRENCY, MAX_CONCURRENCY = 4, 64

# For --help without importing the reports (tests/pytest_plugin checks it against toolchaos.reports.LEVELS).
LEVELS_HELP = ("critical: every critical scenario passes; major: every critical and major scenario passes; "
               "all: every scenario passes")


@dataclass(frozen=True)
class Settings:
    enabled: bool
    agent: str
    seed: int
    artifacts: Path | None
    record: bool = False  # --chaos-record: cassettes are recorded from their live model
    certify: bool = False
    cli_agent: str | None = None  # --chaos-agent as given (it wins over a test's or scenario's own agent)
    cli_seed: int | None = None
    fuzz: int | None = None
    marker: str = "chaos"  # the marker (and fixture) of chaos tests in this session ("toolchaos" next to a clash)
    pass_env: tuple[str, ...] = ()  # the caller's variables process agents get (--chaos-pass-env, ini chaos_pass_env)
    trials: int | None = None  # --chaos-trials: every scenario's trial count, over its own `trials:`
    concurrency: int | None = None  # --chaos-concurrency: trials waiting on a live model at once (chaos.trials)


settings_key = pytest.StashKey[Settings]()


def read_settings(config: pytest.Config) -> Settings:
    """The session's settings: ``--chaos-agent`` over ini ``chaos_agent`` over ``builtin:guarded``."""
    cli_agent = option(config, "agent")
    agent = cli_agent or config.getini("chaos_agent") or DEFAULT_AGENT
    raw = option(config, "artifacts")
    artifacts = Path(raw) if raw else None
    certify = bool(option(config, "certify"))
    enabled = bool(option(config) or certify)
    if artifacts is not None and enabled:
        _check_artifacts(artifacts, naming(config).flag("artifacts"))
    seed = option(config, "seed")
    trials = option(config, "trials")
    if trials is not None and not 1 <= trials <= MAX_TRIALS:
        raise pytest.UsageError(f"{naming(config).flag('trials')}: expected a number of trials from 1 to "
                                f"{MAX_TRIALS}, got {trials}")
    concurrency = option(config, "concurrency")
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise pytest.UsageError(f"{naming(config).flag('concurrency')}: expected how many trials may wait on a live "
                                f"model at once, from 1 to {MAX_CONCURRENCY}, got {concurrency} (1 runs them one "
                                f"after the other)")
    return Settings(enabled, str(agent), int(seed or 0), artifacts, bool(option(config, "record")), certify,
                    cli_agent, seed, option(config, "fuzz"), naming(config).prefix, pass_env(config), trials,
                    concurrency)


def pass_env(config: pytest.Config) -> tuple[str, ...]:
    """The names of ini ``chaos_pass_env`` and of every ``--chaos-pass-env``: they add up, unlike other settings.

    The ini file lists what a project's agents always need; the command line adds to it for one
    session (a token on a developer's machine) without repeating the list.
    """
    flag = naming(config).flag("pass-env")
    try:
        from_ini = split_names([str(config.getini(PASS_ENV_INI) or "")], f"ini {PASS_ENV_INI}")
        return split_names([*from_ini, *(option(config, "pass-env") or [])], flag)
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_artifacts(folder: Path, flag: str = "--chaos-artifacts") -> None:
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
        raise pytest.UsageError(f"{flag}={folder}: {problem}; give a directory the traces can be "
                                f"written to")


def real_seconds(config: pytest.Config) -> tuple[float, str] | None:
    """The session's no-progress limit and its source: the command line, else the ini file, else None.

    Both go through the CLI's check (``check_real_seconds``: 0, a negative number, nan, inf or
    not a number), reported as a usage error naming the option and the value.
    """
    return _limit(config, "real-seconds", REAL_SECONDS_INI, "the no-progress limit of each chaos run")


def total_seconds(config: pytest.Config) -> tuple[float, str] | None:
    """The session's total real-time limit and its source, as ``real_seconds``."""
    return _limit(config, "total-seconds", TOTAL_SECONDS_INI, "the total real-time limit of each chaos run")


def _limit(config: pytest.Config, name: str, ini: str, what: str) -> tuple[float, str] | None:
    raw: Any = option(config, name)
    source = naming(config).flag(name)
    if raw is None:
        raw = config.getini(ini)
        source = f"ini option {ini}"
        if not str(raw).strip():
            return None
    try:
        return check_real_seconds(raw, source, what), source
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@dataclass(frozen=True)
class ReportSettings:
    """What a report says beyond the verdicts: the agent's version, the baseline, the prices."""

    agent_version: str | None
    baseline: str | None
    prices: str | None
    price_model: str | None


def add_report_options(group: OptionGroup) -> None:
    """The report options (``_report``), by their ``--chaos`` names (registered with the others by
    ``_options.register``)."""
    group.addoption("--chaos-report", default=None, metavar="DIR",
                    help="write the certification report (report.json, report.md, report.html, junit.xml, traces) "
                         "to DIR; report.md is also appended to $GITHUB_STEP_SUMMARY when set")
    group.addoption("--chaos-require", default=None, metavar="LEVEL",
                    help=f"the certification level the exit status requires: {LEVELS_HELP} "
                         "(failures below it are reported as xfail and do not fail the run; not reaching it does)")
    group.addoption("--chaos-require-pass-k", default=None, metavar="K,P",
                    help="certify only if every critical scenario's pass^K (the chance that K of its trials all "
                         "pass) is at least P, e.g. 3,0.9; run them with at least K trials (--chaos-trials)")
    group.addoption("--chaos-baseline", default=None, metavar="OLD",
                    help="compare with an earlier report (a report.json or its directory): regressions, fixes and "
                         "changed figures in the terminal summary and first in the report")
    group.addoption("--agent-version", default=None, metavar="VERSION",
                    help="the agent's version, shown in the report beside the harness's and the suite's")
    group.addoption("--chaos-prices", default=None, metavar="FILE",
                    help="a prices file for the report's estimated cost (default: ini chaos_prices, else the "
                         "built-in table; see docs/report-schema.md)")
    group.addoption("--chaos-price-model", default=None, metavar="NAME",
                    help="the model the tokens are priced as (default: ini chaos_price_model, else the prices "
                         "file's model, else gpt-4o)")


def add_shard_options(group: OptionGroup) -> None:
    """The shard options (``_shard``), by their ``--chaos`` names (registered with the others by
    ``_options.register``)."""
    group.addoption("--chaos-shard", default=None, metavar="I/N",
                    help="run only shard I of N (1-based) of this session's tests, split the same way in every CI job "
                         "(by a stable hash of each scenario's id or test's node id); merge the shards' reports with "
                         "`toolchaos report merge` (docs/ci-shards.md)")
    group.addoption("--chaos-shard-durations", default=None, metavar="FILE",
                    help="with --chaos-shard: split by the seconds each scenario or test takes, from FILE (JSON: id -> "
                         "seconds; --chaos-store-durations writes it), longest first into the least loaded shard")
    group.addoption("--chaos-store-durations", default=None, metavar="FILE",
                    help="write the seconds each scenario or test of this session took into FILE (JSON; the ids it "
                         "holds that did not run are kept), for --chaos-shard-durations")


def read_report_settings(config: pytest.Config) -> ReportSettings:
    """``--agent-version``, ``--chaos-baseline``, ``--chaos-prices`` over ini ``chaos_prices``,
    ``--chaos-price-model`` over ini ``chaos_price_model``."""
    def pick(name: str, ini: str | None = None) -> str | None:  # a --chaos-NAME option (or --toolchaos-NAME)
        value = option(config, name) or (config.getini(ini) if ini else None)
        return str(value) if value else None

    version = getattr(config.option, "agent_version", None)
    return ReportSettings(str(version) if version else None, pick("baseline"), pick("prices", "chaos_prices"),
                          pick("price-model", "chaos_price_model"))


def isolation_mode(config: pytest.Config) -> str:
    """``--chaos-isolation``, else ini ``chaos_isolation``, else ``process`` under ``--chaos-certify`` on Linux.

    The certification suite judges an agent only by what its runs leave (the trace, the
    ledger), so it loses nothing in a child and is worth the ten or so milliseconds a run costs
    there; a test of one's own often looks at objects the agent changed, which a child's
    copy would keep to itself. Elsewhere, and without ``--chaos-certify``: ``none``.
    docs/isolation.md has the figures.
    """
    raw = check_isolation(config)
    if raw:
        return raw
    return _lazy.default_for_certification() if option(config, "certify") else "none"


def check_isolation(config: pytest.Config) -> str | None:
    """The isolation mode the command line or the ini file names (a usage error for a bad one), else None."""
    raw = option(config, "isolation") or str(config.getini(ISOLATION_INI) or "").strip()
    if not raw:
        return None
    if raw not in ISOLATION_CHOICES:
        raise pytest.UsageError(f"ini {ISOLATION_INI}: expected one of {', '.join(ISOLATION_CHOICES)}, got {raw!r}")
    return str(raw)


@dataclass
class ShardState:
    """``--chaos-shard`` and its split, kept for the report (``_shard`` fills it in, ``_report`` reads it)."""

    shard: Shard | None  # --chaos-shard
    durations: dict[str, float] | None
    store: Path | None
    record: dict[str, Any] | None = None  # the report's shard, once the items are split
    suite: str | None = None  # "certification" when every chaos item of the whole selection is the bundled suite's
    emptied: bool = False  # the selection had items and none fell in this shard
    measured: dict[str, float] = field(default_factory=dict)  # key -> seconds (--chaos-store-durations)
    error: str | None = None


shard_key = pytest.StashKey[ShardState]()


def shard_meta(config: pytest.Config) -> dict[str, Any]:
    """What a report's metadata takes from the shard: ``shard``, and the whole selection's suite (a shard's own
    scenarios would name a part: a shard of the certification suite plus a test of one's own is ``custom``)."""
    state = config.stash.get(shard_key, None)
    if state is None or state.record is None:
        return {}
    return {"shard": state.record, "suite": state.suite}


def is_shard(config: pytest.Config) -> bool:
    """This session is a shard (a shard that got no scenario has no level to reach: the merged report has)."""
    state = config.stash.get(shard_key, None)
    return state is not None and state.shard is not None
