"""``--chaos-shard=I/N``: this session runs one shard of its tests, the same split in every CI job.

A pytest plugin module of its own, registered by ``toolchaos.pytest_plugin`` (its ``pytest_plugins``).
After every other plugin has selected and ordered the session's items (``-k``, ``-m``, node ids, the
certification suite that ``--chaos-certify`` adds), the items are split by their instance key (a
scenario's id, another test's node id: ``toolchaos._internal.shards``) and the others deselected, so
each job runs its part once and every test runs in exactly one job. ``--chaos-shard-durations=FILE``
splits by the seconds each key takes instead of by hash; ``--chaos-store-durations=FILE`` writes the
seconds this session measured into that file.

The options are declared with the others (``_settings.add_shard_options``) and the split is kept in
``config.stash`` (``_settings.ShardState``). The report (``--chaos-report``) records the shard, the
partition's digest and the suite as the whole selection names it (``_settings.shard_meta``), so
``toolchaos report merge`` can join the shards' reports into the unsharded run's. Under pytest-xdist
the workers collect and split (each the same way); the controller learns the split from them when
they finish.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from toolchaos._internal.shards import Shard, instance_key, partition, read_durations, store_durations
from toolchaos.pytest_plugin._items import ScenarioItem, suite_dir
from toolchaos.pytest_plugin._options import naming, option
from toolchaos.pytest_plugin._settings import ShardState, settings_key, shard_key

KEY_ATTR = "toolchaos_shard_key"  # what a test's report carries, for --chaos-store-durations
WORKER_KEY = "toolchaos_shard"  # the record a pytest-xdist worker hands its controller


def pytest_configure(config: pytest.Config) -> None:
    flag = naming(config).flag
    raw, durations_file = option(config, "shard"), option(config, "shard-durations")
    store = option(config, "store-durations")
    if durations_file and raw is None:
        raise pytest.UsageError(f"{flag('shard-durations')} goes with {flag('shard')}=I/N")
    try:
        shard = Shard.parse(raw, flag("shard")) if raw is not None else None
        durations = read_durations(durations_file, flag("shard-durations")) if durations_file else None
        if store and Path(store).exists():  # a bad file is said now, not after the session
            read_durations(store, flag("store-durations"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    state = ShardState(shard, durations, Path(store) if store else None)
    config.stash[shard_key] = state
    if shard is not None or store:
        config.pluginmanager.register(_ShardHooks(config, state), "toolchaos-shard")


def item_key(item: pytest.Item) -> str:
    """The instance key of an item: a scenario's id (as its report entry and ``toolchaos certify`` name it),
    else the test's node id (as a chaos test's report entry names it)."""
    return instance_key(item.scenario.name if isinstance(item, ScenarioItem) else item.nodeid)


def _suite(config: pytest.Config, items: list[pytest.Item]) -> str:
    """``certification`` when every chaos item is the bundled suite's, as a report's entries would say."""
    marker = config.stash[settings_key].marker  # chaos tests carry it, those that use the fixture too
    chaos = [i for i in items if isinstance(i, ScenarioItem) or i.get_closest_marker(marker) is not None]
    root = suite_dir()
    bundled = root is not None and all(isinstance(i, ScenarioItem) and i.path.resolve().parent == root.resolve()
                                       for i in chaos)
    return "certification" if chaos and bundled else "custom"


class _ShardHooks:
    """Per-session hooks, registered only with --chaos-shard or --chaos-store-durations."""

    def __init__(self, config: pytest.Config, state: ShardState) -> None:
        self.config = config
        self.state = state

    @pytest.hookimpl(trylast=True)  # after -k, -m and every plugin that selects: the split is of what runs
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        state = self.state
        if state.shard is None:
            return
        keyed = [(i, item_key(i)) for i in items]
        split = partition((k for _, k in keyed), state.shard.total, state.durations)
        keep = [i for i, k in keyed if split.shard_of(k) == state.shard.index]
        drop = [i for i, k in keyed if split.shard_of(k) != state.shard.index]
        state.record, state.suite = split.record(state.shard.index), _suite(config, items)
        state.emptied = bool(items) and not keep
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)
        if hasattr(config, "workerinput"):  # the controller collects nothing: it learns the split from a worker
            config.workeroutput[WORKER_KEY] = {  # type: ignore[attr-defined]
                "record": state.record, "suite": state.suite, "emptied": state.emptied}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:  # pytest-xdist: a worker finished
        sent = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if sent and self.state.record is None:  # every worker split the same items the same way: one says it all
            self.state.record, self.state.suite, self.state.emptied = sent["record"], sent["suite"], sent["emptied"]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report = yield
        if self.state.store is not None:
            setattr(report, KEY_ATTR, item_key(item))  # crosses pytest-xdist workers with the report
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = getattr(report, KEY_ATTR, None)
        if key is not None and not hasattr(self.config, "workerinput"):
            self.state.measured[key] = self.state.measured.get(key, 0.0) + float(report.duration)

    @pytest.hookimpl(tryfirst=True)  # before the report's gate (toolchaos.pytest_plugin._report) reads the status
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if hasattr(self.config, "workerinput"):
            return
        if state.emptied and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # N larger than what there is to split: nothing here, not a failure
        if state.store is not None and state.measured:
            try:
                store_durations(state.store, state.measured, naming(self.config).flag("store-durations"))
            except ValueError as exc:
                state.error = str(exc)
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    @pytest.hookimpl(trylast=True)  # under the certification's verdict line
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if state.error:
            terminalreporter.write_line(f"toolchaos: {state.error}", red=True)
        elif state.record is not None:
            r = state.record
            terminalreporter.write_line(f"toolchaos: shard {r['index']}/{r['total']} of {r['instances']} instances "
                                        f"(by {r['by']}); merge the shards' reports with `toolchaos report merge`")
