"""The pytest plugin: a thin adapter over the harness (options, marker, fixture).

- ``--chaos`` turns chaos testing on; without it chaos tests are skipped with a reason
  that says how to run them.
- ``@pytest.mark.chaos(agent=..., seed=..., budgets=..., ceiling=...)``: the marker's
  arguments are ``toolchaos.Chaos``'s own, validated by the same code.
- ``chaos`` fixture: a ``toolchaos.Chaos`` for the test, its runs named after the test; ``chaos.wire(...)``
  is a context manager for SDK agents (the block is the agent: ``toolchaos.wire.session``).
- ``--chaos-agent=REF`` (ini ``chaos_agent``): an agent of any kind (``toolchaos.adapters.agent_under_test``),
  ``--chaos-seed=N``,
  ``--chaos-artifacts=DIR`` (each run's trace as ``DIR/<test-id>.trace.jsonl``),
  ``--chaos-trials=N`` and ``--chaos-concurrency=N`` (trials recorded from a live model, ``chaos.trials`` or a
  scenario's, run at once, N at most, each in an isolated child; ``toolchaos._engine.trials``).
- ``--chaos-real-seconds=S`` (ini ``chaos_real_seconds``): the watchdog's no-progress limit
  for every run of the session whose test or scenario sets no ``real_seconds`` of its own;
  ``--chaos-total-seconds=S`` (ini ``chaos_total_seconds``): its total real-time limit (no
  ``total_seconds`` of their own)
  (the session's default of every run: ``toolchaos.RunSpec``).
- ``--chaos-isolation=process|none`` (ini ``chaos_isolation``): each run's agent in a
  contained child process, or in this one (default: ``process`` under ``--chaos-certify`` on
  Linux, else ``none``; ``toolchaos._engine.isolated``, docs/isolation.md).
- ``--chaos-pass-env=NAME[,NAME...]`` (repeatable; ini ``chaos_pass_env``, the names add up):
  variables of this environment that process agents get as they are; they get none of it
  otherwise beyond a short allowlist (PATH, the locale, TZ, TMPDIR; docs/process-agents.md).
- Scenario files (ini ``chaos_scenario_pattern``, default ``*.chaos.yaml``) are collected
  under ``--chaos``, one item per scenario; ``--chaos-certify`` adds the bundled
  certification suite (implies ``--chaos``); ini ``chaos_allow_imports`` lets scenario
  files name Python code. See ``toolchaos.pytest_plugin._items``.
- ``--chaos-shard=I/N`` (``--chaos-shard-durations=FILE``, ``--chaos-store-durations=FILE``): one shard of the
  session's tests, split the same way in every CI job; ``toolchaos report merge`` joins the shards' reports.
  See ``toolchaos.pytest_plugin._shard``.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from toolchaos._internal.limits import DEFAULT_REAL_SECONDS, SDK_REAL_SECONDS, SERVE_REAL_SECONDS, TOTAL_FACTOR
from toolchaos.pytest_plugin import _items as _yaml_items
from toolchaos.pytest_plugin import _lazy, _options
from toolchaos.pytest_plugin._options import OptionGroup
from toolchaos.pytest_plugin._settings import (
    DEFAULT_CONCURRENCY,
    ISOLATION_CHOICES,
    ISOLATION_INI,
    ISOLATION_OPTION,
    MAX_CONCURRENCY,
    PASS_ENV_INI,
    PASS_ENV_OPTION,
    REAL_SECONDS_INI,
    REAL_SECONDS_OPTION,
    TOTAL_SECONDS_INI,
    TOTAL_SECONDS_OPTION,
    add_report_options,
    add_shard_options,
    check_isolation,
    isolation_mode,
    read_settings,
    real_seconds,
    settings_key,
    total_seconds,
)

if TYPE_CHECKING:  # pytest loads this module in every session where toolchaos is installed: the engine,
    # the agents and virtual time (freezegun) load only once a chaos test or scenario needs them
    from toolchaos._session import Chaos

# The agent kinds and the process-agent presets, for --help without importing the agents
# (tests/pytest_plugin checks them against _agents.KINDS and _agents.PRESETS).
AGENT_KINDS = ("in-process", "sdk", "openai-agents", "pydantic-ai", "langgraph", "process")
PRESET_NAMES = ("codex", "claude-code", "gemini-cli", "opencode", "node-openai", "node-anthropic", "openai-agents-js",
                "vercel-ai", "python")

# Certification reports (--chaos-report, --chaos-require) and shards (--chaos-shard) live in their own modules.
pytest_plugins = ["toolchaos.pytest_plugin._report", "toolchaos.pytest_plugin._shard"]

SKIP_REASON = "chaos test: run it with `pytest --chaos`"


def add_options(group: OptionGroup) -> None:
    """The main options, by their ``--chaos`` names (``_options`` registers them under this session's prefix)."""
    group.addoption("--chaos", action="store_true", default=False,
                    help="run chaos tests (@pytest.mark.chaos tests and chaos scenarios)")
    group.addoption("--chaos-agent", default=None, metavar="REF",
                    help="agent under test: 'builtin:NAME', 'package.module:attr' (an in-process or SDK agent, or "
                         "a framework's agent object, recognised), 'KIND:package.module:attr' (KIND: "
                         f"{', '.join(k for k in AGENT_KINDS if k != 'process')}), or a program in its own process "
                         f"(the serve extra): 'preset:NAME' (NAME: {', '.join(PRESET_NAMES)}) or 'cmd:COMMAND LINE'; "
                         "it wins over a test's or scenario's own agent "
                         "(default: the test's or scenario's agent, else ini chaos_agent, else builtin:guarded)")
    group.addoption("--chaos-seed", type=int, default=None, metavar="N", help="seed for every chaos run (default 0)")
    group.addoption("--chaos-trials", type=int, default=None, metavar="N",
                    help="run every chaos scenario N times, trial i with seed + i (items NAME#trial=I; trial 0 is "
                         "the run without trials); a scenario passes only if every trial passes; the report gives "
                         "pass^k and pass@k (default: each scenario's trials, else 1); also how many trials "
                         "chaos.trials(...) runs")
    group.addoption("--chaos-concurrency", type=int, default=None, metavar="N",
                    help="trials that wait on a live model (chaos.trials under --chaos-record; a scenario whose "
                         "policy records a cassette from one) run at once, each in an isolated child with its own "
                         "virtual clock and watchdog, at most N together "
                         f"(1 to {MAX_CONCURRENCY}; default {DEFAULT_CONCURRENCY}: a few requests at a time keep an "
                         "entry-tier API key under its rate limit; a 429 or 503 is asked again after its Retry-After)")
    group.addoption("--chaos-fuzz", type=int, default=None, metavar="N",
                    help="also fuzz every scenario's fault schedules with N examples "
                         "(scenarios with a fuzz: block are fuzzed anyway, with their own count)")
    group.addoption("--chaos-artifacts", default=None, metavar="DIR",
                    help="write each run's trace to DIR/<test-or-scenario-id>.trace.jsonl")
    group.addoption("--chaos-record", action="store_true", default=False,
                    help="record the cassettes of chaos tests (chaos.cassette(live)) from their live model, "
                         "instead of replaying them; nothing is recorded without it")
    group.addoption("--chaos-certify", action="store_true", default=False,
                    help="also run the bundled certification suite (implies --chaos) and print the verdict line")
    # A string, not type=float: the ini value goes through the same check (_real_seconds).
    group.addoption(REAL_SECONDS_OPTION, default=None, metavar="SECONDS",
                    help="no-progress limit of each chaos run: the watchdog ends an agent that makes no progress "
                         "(no model request, tool call or event) for SECONDS while it could run (time it waited for "
                         "a CPU or was stopped does not count) as a failure (WATCHDOG); a scenario's or "
                         "test's own ceiling real_seconds "
                         f"wins (default: ini {REAL_SECONDS_INI}, else {DEFAULT_REAL_SECONDS:g} seconds; "
                         f"{SDK_REAL_SECONDS:g} for toolchaos.wire SDK agents, {SERVE_REAL_SECONDS:g} for agents in a "
                         "process of their own)")
    group.addoption(TOTAL_SECONDS_OPTION, default=None, metavar="SECONDS",
                    help="total limit of each chaos run: the watchdog ends a run that goes on for SECONDS of real "
                         "time in all, progress or not, as a failure (WATCHDOG); a scenario's or test's own ceiling "
                         f"total_seconds wins (default: ini {TOTAL_SECONDS_INI}, else {TOTAL_FACTOR:g} times the "
                         f"no-progress limit)")
    group.addoption(ISOLATION_OPTION, default=None, choices=ISOLATION_CHOICES,
                    help="where each run's agent executes: 'process' (a forked child in its own process group and "
                         "PID namespace, loopback-only network where the platform allows it, killed at the "
                         "watchdog's limits; see docs/isolation.md) or 'none' (in this process) (default: ini "
                         f"{ISOLATION_INI}, else 'process' with --chaos-certify on Linux, 'none' otherwise)")
    group.addoption(PASS_ENV_OPTION, action="append", default=None, metavar="NAME[,NAME...]",
                    help="give process agents (cmd:, preset:) these variables of this environment as they are; "
                         "they get none of it otherwise beyond an allowlist (PATH, the locale, TZ, TMPDIR) "
                         f"(repeatable; added to ini {PASS_ENV_INI}; see docs/process-agents.md)")


def pytest_addoption(parser: pytest.Parser) -> None:
    # The command-line options wait for every plugin (pytest_load_initial_conftests): ini names cannot clash.
    parser.addini(ISOLATION_INI, f"as {ISOLATION_OPTION}", default="")
    parser.addini(PASS_ENV_INI, f"names of variables process agents get, separated by commas or spaces, as "
                                f"{PASS_ENV_OPTION} (the two add up)", default="")
    parser.addini("chaos_agent", "agent under test for chaos runs, as --chaos-agent",
                  default="builtin:guarded")
    parser.addini(REAL_SECONDS_INI, f"no-progress limit in seconds of each chaos run, as {REAL_SECONDS_OPTION} "
                                    f"(default {DEFAULT_REAL_SECONDS:g}; {SDK_REAL_SECONDS:g} for toolchaos.wire SDK "
                                    "agents)", default="")
    parser.addini(TOTAL_SECONDS_INI, f"total real-time limit in seconds of each chaos run, as {TOTAL_SECONDS_OPTION} "
                                     f"(default {TOTAL_FACTOR:g} times the no-progress limit)", default="")
    _yaml_items.add_ini(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Register the options now that every installed plugin has registered its own (see ``_options``)."""
    names = _options.register(early_config, parser, [add_options, add_report_options, add_shard_options])
    _yaml_items.name_suite_items(early_config, args, names.flag())


def pytest_configure(config: pytest.Config) -> None:
    names = _options.naming(config)
    for marker in {names.prefix, _options.FALLBACK}:
        config.addinivalue_line(
            "markers", f"{marker}(agent=None, seed=None, budgets=None, ceiling=None, isolation=None): a toolchaos "
                       f"chaos test, run only with {names.flag()}; the arguments are toolchaos.Chaos's own")
    if names.fallback and not hasattr(config, "workerinput"):  # once: the controller, not each xdist worker
        config.issue_config_time_warning(pytest.PytestConfigWarning(_options.clash_message(names)), stacklevel=2)
    settings = read_settings(config)
    config.stash[settings_key] = settings
    config.pluginmanager.register(_CollectionHooks(), "toolchaos-collection")
    limit, total = real_seconds(config), total_seconds(config)
    if settings.enabled and _xdist_controller(config):
        check_isolation(config)  # a bad value is one usage error here, not one per worker
        return  # the controller runs no test: its workers set their own defaults
    if limit is not None or total is not None or settings.enabled or settings.pass_env:
        # The session's defaults for every run that leaves them unset (RunSpec): runs reach the
        # engine by paths that never see this config (the chaos fixture, scenario items,
        # toolchaos.wire.run, toolchaos.run called from a test). The cleanup puts the previous
        # defaults back, so an in-process inner session does not leak.
        config.add_cleanup(_lazy.session_defaults(isolation=isolation_mode(config) if settings.enabled else None,
                                                  real_seconds=None if limit is None else limit[0],
                                                  source="" if limit is None else limit[1],
                                                  pass_env=settings.pass_env or None,
                                                  total_seconds=None if total is None else total[0],
                                                  total_source="" if total is None else total[1]))
    if settings.enabled:
        _lazy.clock.install()  # once, before any test measures time (see toolchaos._plumbing.clock)


def _xdist_controller(config: pytest.Config) -> bool:
    """The pytest-xdist controller of a distributed session: it runs no test, its workers do.

    So it loads neither the engine nor virtual time, which it would load on the path of every
    worker's start (the workers start after its configuration). The test is pytest-xdist's
    own for creating its distributed session (``dist`` not ``no``, execution environments given).
    """
    option = config.option
    return (not hasattr(config, "workerinput") and getattr(option, "dist", "no") != "no"
            and bool(getattr(option, "tx", None)) and not getattr(option, "collectonly", False))


def chaos_marker(item: pytest.Item) -> pytest.Mark | None:
    """The item's toolchaos marker: ``toolchaos`` always, ``chaos`` unless another plugin owns it."""
    settings = item.config.stash[settings_key]
    mark = item.get_closest_marker(_options.FALLBACK)
    if mark is None and settings.marker == _options.PRIMARY:
        mark = item.get_closest_marker(_options.PRIMARY)
    return mark


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return _yaml_items.collect_file(file_path, parent)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    hint = _yaml_items.uncollected_hint(config)
    if hint is not None:
        terminalreporter.write_line(hint, yellow=True)


class _CollectionHooks:
    """Registered at configure time, after every plugin: so its wrapper runs before theirs (pytest-randomly
    shuffles the certification items too; -k / -m deselection sees the markers and skips)."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> Generator[None, None, None]:
        _mark_and_gate(session, config, items)
        yield


def _mark_and_gate(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    _yaml_items.add_certification_suite(session, config, items)
    settings = config.stash[settings_key]
    fixtures = {_options.FALLBACK} if settings.marker != _options.PRIMARY else {_options.PRIMARY, _options.FALLBACK}
    for item in items:  # a test that uses the fixture is a chaos test: `-m chaos` selects it (wire tests too)
        if chaos_marker(item) is None and fixtures & set(getattr(item, "fixturenames", ())):
            item.add_marker(settings.marker)
    if settings.enabled:
        return
    skip = pytest.mark.skip(reason=_skip_reason(config))
    for item in items:
        if chaos_marker(item) is not None:
            item.add_marker(skip)


def _skip_reason(config: pytest.Config) -> str:
    return f"chaos test: run it with `pytest {_options.naming(config).flag()}`"


@pytest.fixture
def chaos(request: pytest.FixtureRequest) -> Chaos:
    """A ``toolchaos.Chaos`` for this test: agent, seed and artifacts from the command line and marker.

    Agent precedence (one rule, as for scenarios): ``--chaos-agent``, then the marker's ``agent=``,
    then ini ``chaos_agent``, then ``builtin:guarded``.
    """
    return _chaos_for(request)


@pytest.fixture(name="toolchaos")
def toolchaos_fixture(request: pytest.FixtureRequest) -> Chaos:
    """The ``chaos`` fixture under the name that never clashes (use it next to a plugin that owns ``chaos``)."""
    return _chaos_for(request)


def _chaos_for(request: pytest.FixtureRequest) -> Chaos:
    settings = request.config.stash[settings_key]
    if not settings.enabled:
        pytest.skip(_skip_reason(request.config))
    marker = chaos_marker(request.node)
    kwargs: dict[str, Any] = {"agent": settings.agent, "seed": settings.seed, "artifacts": settings.artifacts,
                              "name": _lazy.safe_name(request.node.nodeid), "record": settings.record,
                              "cassettes": request.node.path.parent / "cassettes", "trials": settings.trials,
                              "concurrency": settings.concurrency}
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.chaos takes keyword arguments only "
                                    f"(agent=, seed=, budgets=, ceiling=)")
        kwargs.update({k: v for k, v in marker.kwargs.items() if v is not None})
    if settings.cli_agent:  # the command line wins over the marker (the one precedence rule: _settings)
        kwargs["agent"] = settings.cli_agent
    try:
        kwargs["agent"] = _any_kind(kwargs["agent"], request.config)
        return _lazy.PytestChaos(**kwargs)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"{request.node.nodeid}: bad @pytest.mark.chaos arguments: {exc}") from None


def _any_kind(agent: Any, config: pytest.Config) -> Any:
    """An agent of another kind (SDK, a framework's) as an ``AgentUnderTest``; an in-process one as given.

    A reference is resolved once a session, as for scenario items: resolving imports it and reads
    its signature to recognise the kind (~0.2 ms), which every test that takes the fixture paid.
    """
    if isinstance(agent, str):
        known = config.stash.setdefault(_yaml_items.agents_key, {})
        resolved = known.get(agent)
        if resolved is None:
            resolved = known[agent] = _lazy.agent_under_test(agent)
    else:
        resolved = _lazy.agent_under_test(agent)
    return agent if resolved.kind == _lazy.IN_PROCESS else resolved
