"""The pytest side of certification reports: ``--chaos-report=DIR`` and ``--chaos-require=LEVEL``.

A pytest plugin module of its own, registered by ``toolchaos.pytest_plugin`` (its
``pytest_plugins``), so the main plugin stays a thin adapter. A scenario item's verdict
(``ScenarioItem.verdict``), or one handed over with ``record_verdict(item, verdict)``,
becomes the item's entry; the entry travels on the test report (plain JSON data, so it
crosses pytest-xdist workers), the controller collects them and writes the reports at the
end of the session.

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
from toolchaos.pytest_plugin import _lazy
from toolchaos.pytest_plugin._items import ScenarioItem
from toolchaos.pytest_plugin._options import naming, option
from toolchaos.pytest_plugin._settings import is_shard, read_report_settings, settings_key, shard_meta

if TYPE_CHECKING:  # read through _lazy: a plain pytest run loads neither the reports nor the certification runner
    from toolchaos._internal.events import Event
    from toolchaos.certification import ScenarioVerdict
    from toolchaos.reports import RunMeta

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
    pass_k: tuple[int, float] | None = None  # --chaos-require-pass-k=K,P: critical scenarios' pass^K >= P
    unjudged: str | None = None  # why --chaos-require-pass-k could not judge (K above a scenario's trials)

    @property
    def active(self) -> bool:
        return (self.out_dir is not None or self.require is not None or self.baseline is not None or self.certify
                or self.pass_k is not None)

    @property
    def gating(self) -> bool:
        """The certificate decides the exit status: --chaos-require or --chaos-require-pass-k was given."""
        return self.require is not None or self.pass_k is not None


collector_key = pytest.StashKey[_Collector]()
_entry_key = pytest.StashKey[list[Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    # The options themselves: add_report_options, registered with the others (toolchaos.pytest_plugin._options).
    parser.addini("chaos_prices", "a prices file for the report's estimated cost, as --chaos-prices")
    parser.addini("chaos_price_model", "the model the report prices tokens as, as --chaos-price-model")


def pytest_configure(config: pytest.Config) -> None:
    require = option(config, "require")
    if require is not None:
        try:
            _lazy.check_level(require)
        except ReportError as exc:
            raise pytest.UsageError(f"{naming(config).flag('require')}: {exc}") from None
    out = option(config, "report")
    raw_pass_k = option(config, "require-pass-k")
    try:  # the reports load only when it is given: a session without it does not pay for them
        pass_k = _lazy.parse_pass_k(raw_pass_k, naming(config).flag("require-pass-k")) if raw_pass_k else None
    except ReportError as exc:
        raise pytest.UsageError(str(exc)) from None
    col = _Collector(Path(out) if out else None, require, hasattr(config, "workerinput"),
                     baseline=option(config, "baseline"), certify=bool(option(config, "certify")), pass_k=pass_k)
    config.stash[collector_key] = col
    if col.active:
        config.pluginmanager.register(_ReportHooks(config, col), "toolchaos-report")


def record_verdict(item: pytest.Item, verdict: ScenarioVerdict) -> None:
    """A verdict as ``item``'s entry in the reports (a no-op unless reports are on); a scenario item's own
    verdict is taken without it, when its report is made."""
    col = item.config.stash.get(collector_key, None)
    if col is None or not col.active:
        return
    item.stash[_entry_key] = _entry(verdict)


def _entry(verdict: ScenarioVerdict) -> list[Any]:
    """The verdict's report entry and its run's events, as plain JSON data (it crosses pytest-xdist workers)."""
    entry, events = _lazy.scenario_entry(verdict)
    return list(json.loads(json.dumps([entry, events], default=str)))


def test_entry(item: pytest.Item, call: pytest.CallInfo[None]) -> list[Any] | None:
    """A marker or wire test's entry (its last run, judged by the test's outcome), like a scenario's.

    The test's failure is the verdict: the invariants its ``InvariantViolation`` names, or the
    test's own assertion. It counts as a critical scenario of category ``test``.
    """
    funcargs = getattr(item, "funcargs", {})
    chaos = next((funcargs[k] for k in ("chaos", "toolchaos") if hasattr(funcargs.get(k), "results")), None)
    if chaos is None or not chaos.results:
        return None
    exc = call.excinfo.value if call.excinfo is not None else None
    violations: list[Any] = []
    if exc is not None:
        violations = list(getattr(exc, "violations", None) or []) or [
            _lazy.Violation("test", "the test's assertions hold", f"{type(exc).__name__}: {str(exc).strip()[:200]}")]
    verdict = _lazy.ScenarioVerdict(item.nodeid, item.name, "test", "critical", chaos.results[-1], violations,
                                    agent=_lazy.label(chaos.agent))
    return _entry(verdict)


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
            if entry is None and isinstance(item, ScenarioItem) and item.verdict is not None:
                entry = _entry(item.verdict)  # also when the scenario failed, or was an xfail below --chaos-require
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
        self.col.started = _lazy.now()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        col = self.col
        if col.worker:
            return
        try:
            meta = _meta(session.config, col)
            if col.out_dir is not None:
                col.written = _lazy.write_entries(col.entries, meta, col.out_dir)
            if col.baseline is not None:
                col.since = _lazy.build_report(col.entries, meta)[0]["baseline"]
        except (ReportError, OSError) as exc:
            col.error = str(exc)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        try:  # K above a critical scenario's trials: no certificate, and said (the report says not certified)
            if col.pass_k is not None and not is_shard(session.config):
                _lazy.pass_k_shortfalls([e for e, _ in col.entries], col.pass_k)
        except ReportError as exc:
            col.unjudged = str(exc)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not col.gating or (not col.entries and is_shard(session.config)):
            return  # a shard without scenarios has no level to reach: the merged report has
        status = session.exitstatus
        if _lazy.gated([e for e, _ in col.entries], col.require or "all", col.pass_k, is_shard(session.config)):
            if status == pytest.ExitCode.TESTS_FAILED and col.other_failures == 0:
                session.exitstatus = pytest.ExitCode.OK
        elif status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        col = self.col
        if col.worker:
            return
        tr = terminalreporter
        if col.error:
            tr.write_line(f"toolchaos: could not write the report: {col.error}", red=True)
            return
        if col.unjudged:
            tr.write_line(f"COULD NOT CERTIFY: {col.unjudged}", red=True, bold=True)
            return
        entries = [e for e, _ in col.entries]
        require = col.require or "all"
        shard = shard_meta(config).get("shard")
        ok = _lazy.gated(entries, require, col.pass_k, shard is not None) or (shard is not None and not entries)
        tr.section("toolchaos certification", sep="-", green=ok, red=not ok, bold=True)
        self._verdict(tr, entries, require, shard, ok)
        if col.since is not None:
            lines = [line for line in _lazy.diff_lines(col.since)[2:] if not line.startswith("CHANGED")]
            tr.write_line("since the baseline: " + lines[0], red=bool(col.since["regressions"]))
            for line in lines[1:]:
                tr.write_line("  " + line)
        if col.written:
            tr.write_line(f"report: {col.written['html']} (also report.md, report.json, junit.xml)")

    def _verdict(self, tr: Any, entries: list[dict[str, Any]], require: str, shard: dict[str, Any] | None,
                 ok: bool) -> None:
        """The certificate's lines: the verdict, or why there is none."""
        problem = _lazy.could_not_call(entries)
        passed = sum(e["verdict"] == "pass" for e in entries)
        if not entries and shard is not None:
            tr.write_line(f"shard {shard['index']}/{shard['total']}: no chaos scenario fell in this shard")
        elif not entries:
            tr.write_line("no chaos scenario ran (run with --chaos); nothing is certified")
        elif problem is not None:
            tr.write_line(f"COULD NOT CERTIFY: {problem}", red=True, bold=True)
        else:
            for line in _lazy.not_applicable_lines(entries):  # named, by reason, before the certificate
                tr.write_line(line)
            if self.col.pass_k is not None and shard is None:  # what --chaos-require-pass-k found short
                for short in _lazy.pass_k_shortfalls(entries, self.col.pass_k):
                    tr.write_line(f"PASS^K SHORT: {short}", red=True)
            line = _lazy.certificate(entries, require, self.col.pass_k, ok)
            if shard is not None:  # a part of the suite: its level is no certificate, the merged report's is
                line = (f"SHARD {shard['index']}/{shard['total']} {'PASSED' if ok else 'FAILED'}: level reached "
                        f"{_lazy.level_reached(entries)}, required {require}; {passed}/{len(entries)} scenarios passed")
            tr.write_line(line, green=ok, red=not ok, bold=True)
            if self.col.require and ok and passed < len(_lazy.applicable(entries)):
                tr.write_line(f"failures below level {require} do not fail the run (--chaos-require={require})")


def _meta(config: pytest.Config, col: _Collector) -> RunMeta:
    settings = config.stash[settings_key]
    agents = {str(e["agent"]) for e, _ in col.entries if e.get("agent")}
    # every scenario ran one agent (perhaps the scenarios' own, not the option's)
    agent = agents.pop() if len(agents) == 1 else settings.agent
    files = [e.get("file") or "" for e, _ in col.entries]
    suite, version = "custom", None
    if files and all(f.startswith("toolchaos_scenarios/certification/") for f in files):
        # the certification runner (YAML, pydantic) for its version: at a certification session's end only
        suite, version = "certification", _lazy.SUITE_VERSION
    sharded = shard_meta(config)
    if sharded:  # the suite the whole selection is, which one shard's scenarios may not show
        suite = sharded["suite"]
        version = _lazy.SUITE_VERSION if suite == "certification" else None
    more = read_report_settings(config)
    return _lazy.RunMeta(agent=agent or "builtin:guarded", seed=settings.seed, suite=suite, suite_version=version,
                         started=col.started, ended=_lazy.now(), require=col.require or "all",
                         agent_version=more.agent_version, baseline=more.baseline, prices=more.prices,
                         price_model=more.price_model, shard=sharded.get("shard"), require_pass_k=col.pass_k)


__all__ = ["record_verdict"]
