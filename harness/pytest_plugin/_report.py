"""The pytest side of certification reports: ``--chaos-report=DIR`` and ``--chaos-require=LEVEL``.

A pytest plugin module of its own, registered by ``toolchaos.pytest_plugin`` (its
``pytest_plugins``), so the main plugin stays a thin adapter. The scenario item hands
its verdict over with ``record_verdict(item, verdict)``; the entry travels on the test
report (plain JSON data, so it crosses pytest-xdist workers), the controller collects
them and writes the reports at the end of the session.

``--chaos-require=LEVEL`` makes the certification level decide the exit status: a
session whose only failures are chaos scenarios passes when the level is reached, and
any session fails when it is not (no scenario ran counts as not reached). Without it,
pytest's exit status is untouched.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from toolchaos.errors import ReportError
from toolchaos.pytest_plugin._options import OptionGroup, naming, option
from toolchaos.pytest_plugin._settings import read_report_settings, settings_key

if TYPE_CHECKING:  # a plain pytest run never loads the reports, nor the certification runner (YAML, pydantic)
    from toolchaos._internal.events import Event
    from toolchaos.certification._verdict import ScenarioVerdict
    from toolchaos.reports import RunMeta

# For --help without importing the reports (tests/pytest_plugin checks it against toolchaos.reports.LEVELS).
LEVELS_HELP = ("critical: every critical scenario passes; major: every critical and major scenario passes; "
               "all: every scenario passes")

REPORT_ATTR = "toolchaos_scenario"  # the attribute a scenario's call report carries


@dataclass
class _Collector:
    out_dir: Path | None
    require: str | None
    worker: bool
    started: datetime = field(default_factory=lambda: datetime.now().astimezone())
    entries: list[tuple[dict[str, Any], list[Event]]] = field(default_factory=list)
    other_failures: int = 0
    written: dict[str, Path] = field(default_factory=dict)
    error: str | None = None
    baseline: str | None = None  # --chaos-baseline
    since: dict[str, Any] | None = None  # the comparison with the baseline, once made
    certify: bool = False  # --chaos-certify: the verdict line is printed, report directory or not

    @property
    def active(self) -> bool:
        return self.out_dir is not None or self.require is not None or self.baseline is not None or self.certify


collector_key = pytest.StashKey[_Collector]()
_entry_key = pytest.StashKey[list[Any]]()


def add_report_options(group: OptionGroup) -> None:
    """The report options, by their ``--chaos`` names (registered with the others by ``_options.register``)."""
    group.addoption("--chaos-report", default=None, metavar="DIR",
                    help="write the certification report (report.json, report.md, report.html, junit.xml, traces) "
                         "to DIR; report.md is also appended to $GITHUB_STEP_SUMMARY when set")
    group.addoption("--chaos-require", default=None, metavar="LEVEL",
                    help=f"the certification level the exit status requires: {LEVELS_HELP} "
                         "(failures below it are reported as xfail and do not fail the run; not reaching it does)")
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


def pytest_addoption(parser: pytest.Parser) -> None:
    # The options themselves: add_report_options, registered with the others (toolchaos.pytest_plugin._options).
    parser.addini("chaos_prices", "a prices file for the report's estimated cost, as --chaos-prices")
    parser.addini("chaos_price_model", "the model the report prices tokens as, as --chaos-price-model")


def pytest_configure(config: pytest.Config) -> None:
    require = option(config, "require")
    if require is not None:
        from toolchaos.reports import check_level

        try:
            check_level(require)
        except ReportError as exc:
            raise pytest.UsageError(f"{naming(config).flag('require')}: {exc}") from None
    out = option(config, "report")
    col = _Collector(Path(out) if out else None, require, hasattr(config, "workerinput"),
                     baseline=option(config, "baseline"), certify=bool(option(config, "certify")))
    config.stash[collector_key] = col
    if col.active:
        config.pluginmanager.register(_ReportHooks(config, col), "toolchaos-report")


def record_verdict(item: pytest.Item, verdict: ScenarioVerdict) -> None:
    """Called by a scenario item once it has its verdict (a no-op unless reports are on)."""
    col = item.config.stash.get(collector_key, None)
    if col is None or not col.active:
        return
    from toolchaos.reports import scenario_entry

    entry, events = scenario_entry(verdict)
    item.stash[_entry_key] = json.loads(json.dumps([entry, events], default=str))


def test_entry(item: pytest.Item, call: pytest.CallInfo[None]) -> list[Any] | None:
    """A marker or wire test's entry (its last run, judged by the test's outcome), like a scenario's.

    The test's failure is the verdict: the invariants its ``InvariantViolation`` names, or the
    test's own assertion. It counts as a critical scenario of category ``test``.
    """
    funcargs = getattr(item, "funcargs", {})
    chaos = next((funcargs[k] for k in ("chaos", "toolchaos") if hasattr(funcargs.get(k), "results")), None)
    if chaos is None or not chaos.results:
        return None
    from toolchaos._agents import label
    from toolchaos.certification._verdict import ScenarioVerdict
    from toolchaos.invariants._builtin import Violation
    from toolchaos.reports import scenario_entry

    exc = call.excinfo.value if call.excinfo is not None else None
    violations: list[Any] = []
    if exc is not None:
        violations = list(getattr(exc, "violations", None) or []) or [
            Violation("test", "the test's assertions hold", f"{type(exc).__name__}: {str(exc).strip()[:200]}")]
    verdict = ScenarioVerdict(item.nodeid, item.name, "test", "critical", chaos.results[-1], violations,
                              agent=label(chaos.agent))
    entry, events = scenario_entry(verdict)
    return list(json.loads(json.dumps([entry, events], default=str)))


class _ReportHooks:
    """Per-session hooks, registered only with --chaos-report, --chaos-require or --chaos-certify."""

    def __init__(self, config: pytest.Config, col: _Collector) -> None:
        self.config = config
        self.col = col

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "call":
            entry = item.stash.get(_entry_key, None)
            if entry is None and not report.skipped:
                entry = test_entry(item, call)
            if entry is not None:
                setattr(report, REPORT_ATTR, entry)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.col.worker:
            return  # the controller collects what the workers send
        entry = getattr(report, REPORT_ATTR, None)
        if entry is not None:
            self.col.entries.append((entry[0], entry[1]))
        elif report.failed:
            self.col.other_failures += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and not self.col.worker:
            self.col.other_failures += 1

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from toolchaos.reports._meta import now

        self.col.started = now()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from toolchaos.reports import build_report, certified, write_entries

        col = self.col
        if col.worker:
            return
        try:
            meta = _meta(session.config, col)
            if col.out_dir is not None:
                col.written = write_entries(col.entries, meta, col.out_dir)
            if col.baseline is not None:
                col.since = build_report(col.entries, meta)[0]["baseline"]
        except (ReportError, OSError) as exc:
            col.error = str(exc)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        if col.require is None:
            return
        status = session.exitstatus
        if certified([e for e, _ in col.entries], col.require):
            if status == pytest.ExitCode.TESTS_FAILED and col.other_failures == 0:
                session.exitstatus = pytest.ExitCode.OK
        elif status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        from toolchaos.reports import certified, could_not_call, diff_lines, level_reached

        col = self.col
        if col.worker:
            return
        tr = terminalreporter
        if col.error:
            tr.write_line(f"toolchaos: could not write the report: {col.error}", red=True)
            return
        entries = [e for e, _ in col.entries]
        passed = sum(e["verdict"] == "pass" for e in entries)
        require = col.require or "all"
        ok = certified(entries, require)
        tr.section("toolchaos certification", sep="-", green=ok, red=not ok, bold=True)
        problem = could_not_call(entries)
        if not entries:
            tr.write_line("no chaos scenario ran (run with --chaos); nothing is certified")
        elif problem is not None:
            tr.write_line(f"COULD NOT CERTIFY: {problem}", red=True, bold=True)
        else:
            word = "CERTIFIED" if ok else "NOT CERTIFIED"
            tr.write_line(f"{word}: level reached {level_reached(entries)}, required {require}; "
                          f"{passed}/{len(entries)} scenarios passed", green=ok, red=not ok, bold=True)
            if col.require and ok and passed < len(entries):
                tr.write_line(f"failures below level {require} do not fail the run (--chaos-require={require})")
        if col.since is not None:
            lines = [line for line in diff_lines(col.since)[2:] if not line.startswith("CHANGED")]
            tr.write_line("since the baseline: " + lines[0], red=bool(col.since["regressions"]))
            for line in lines[1:]:
                tr.write_line("  " + line)
        if col.written:
            tr.write_line(f"report: {col.written['html']} (also report.md, report.json, junit.xml)")


def _meta(config: pytest.Config, col: _Collector) -> RunMeta:
    from toolchaos.reports import RunMeta
    from toolchaos.reports._meta import now

    settings = config.stash[settings_key]
    agents = {str(e["agent"]) for e, _ in col.entries if e.get("agent")}
    # every scenario ran one agent (perhaps the scenarios' own, not the option's)
    agent = agents.pop() if len(agents) == 1 else settings.agent
    files = [e.get("file") or "" for e, _ in col.entries]
    suite, version = "custom", None
    if files and all(f.startswith("toolchaos_scenarios/certification/") for f in files):
        # Here only, at a certification session's end: the plugin never loads the runner (YAML, pydantic) itself.
        from toolchaos.certification import SUITE_VERSION

        suite, version = "certification", SUITE_VERSION
    more = read_report_settings(config)
    return RunMeta(agent=agent or "builtin:guarded", seed=settings.seed, suite=suite, suite_version=version,
                   started=col.started, ended=now(), require=col.require or "all", agent_version=more.agent_version,
                   baseline=more.baseline, prices=more.prices, price_model=more.price_model)


__all__ = ["add_report_options", "record_verdict"]
