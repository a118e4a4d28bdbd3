"""pytest items for scenario files: one item per scenario (per variant), under ``--chaos``.

``toolchaos.pytest_plugin`` forwards two hooks here and stays a thin adapter:

- ``collect_file``: a file matching the ini option ``chaos_scenario_pattern`` (default
  ``*.chaos.yaml``) becomes a ``ScenarioFile``; its items are named after the scenario
  id (``id[variant]`` for variants). A file that does not load is a collection error
  that shows the file, line, column and the source line, never a harness traceback.
- ``add_certification_suite``: under ``--chaos-certify``, the bundled certification suite
  (installed as the package ``toolchaos_scenarios``) is collected too, wherever pytest
  runs, with node ids ``toolchaos_scenarios/certification/<file>::<id>``.

A failing item renders its own failure (``repr_failure``): the invariant that broke,
expected vs actual, the YAML of that expectation, the trace around the step where it
broke, and the path of the trace file (``--chaos-artifacts=DIR``; without it the trace
of a failing scenario is written under pytest's cache directory).

Which agent runs a scenario: ``--chaos-agent`` on the command line, else the scenario's
own ``agent:``, else the ini option ``chaos_agent``, else ``builtin:guarded``; of any kind
(``toolchaos.adapters.agent_under_test``). A scenario that needs what the agent's kind lacks (its
``needs``, the kind's capabilities) is skipped as N/A, saying why, and reported as N/A. The seed:
``--chaos-seed``, else the scenario's ``seed``. The no-progress limit: the scenario's
``ceiling: {real_seconds: ...}``, else ``--chaos-real-seconds``, else the ini option
``chaos_real_seconds``, else 5 s; the total limit likewise (``total_seconds``). The engine
applies the session's limits to every run whose ceiling sets none: the session's default of
every ``RunSpec``.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from toolchaos._internal.types import ADVISORY
from toolchaos.errors import AgentRefError, FuzzFailed, ScenarioError, ScenarioFailed, printable
from toolchaos.pytest_plugin import _lazy
from toolchaos.pytest_plugin._options import naming, option
from toolchaos.pytest_plugin._settings import DEFAULT_CONCURRENCY, settings_key

if TYPE_CHECKING:  # read through _lazy, on first use: plain `pytest` runs never pay for YAML and pydantic (nor the engine)
    from toolchaos._engine import AgentUnderTest
    from toolchaos.certification import Verdict
    from toolchaos.fuzzing import FuzzReport
    from toolchaos.scenario import Scenario

SCENARIO_PATTERN = "*.chaos.yaml"
PATTERN_INI = "chaos_scenario_pattern"
IMPORTS_INI = "chaos_allow_imports"
SUITE_PREFIX = "toolchaos_scenarios/certification"

verdicts_key = pytest.StashKey[list["Verdict"]]()  # every verdict of this session (this process)
agents_key = pytest.StashKey[dict[str, "AgentUnderTest"]]()  # resolved once per reference, not once per item
ran_key = pytest.StashKey[dict[str, "Verdict"]]()  # items that waited on a live model, run at once, before their turn


def add_ini(parser: pytest.Parser) -> None:
    parser.addini(PATTERN_INI, "file name pattern of chaos scenario files (default *.chaos.yaml)",
                  default=SCENARIO_PATTERN)
    parser.addini(IMPORTS_INI, "let scenario files name Python code as 'module:attr' (custom agent, policy, "
                               "invariant)", type="bool", default=False)


named_suite_key = pytest.StashKey[bool]()  # the command line named certification items by node id


def suite_dir() -> Path | None:
    """The installed certification suite's folder, found without importing the runner (YAML, pydantic)."""
    spec = importlib.util.find_spec("toolchaos_scenarios")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) / "certification" if locations else None


def name_suite_items(config: pytest.Config, args: list[str], chaos_flag: str) -> None:
    """Node ids of the certification suite on the command line (``toolchaos_scenarios/certification/<file>::<id>``,
    as pytest prints them) become the installed files, run under ``--chaos``: a failed item re-runs by its id."""
    if not any(arg.startswith(SUITE_PREFIX + "/") for arg in args):
        return
    root = suite_dir()
    if root is None:
        return
    for i, arg in enumerate(args):
        if arg.startswith(SUITE_PREFIX + "/"):
            args[i] = str(root / arg[len(SUITE_PREFIX) + 1:])
    config.stash[named_suite_key] = True
    if chaos_flag not in args:
        args.append(chaos_flag)


uncollected_key = pytest.StashKey[set[Path]]()  # scenario files a session without --chaos passed over


def collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    config = parent.config
    pattern = str(config.getini(PATTERN_INI) or SCENARIO_PATTERN)  # pytest caches ini values: a dict look-up
    if not fnmatch.fnmatch(file_path.name, pattern):
        return None
    if not config.stash[settings_key].enabled:  # kept for the hint at the end (uncollected_hint)
        if _asked_for(config, file_path):
            config.stash.setdefault(uncollected_key, set()).add(file_path)
        return None
    if config.stash.get(named_suite_key, False):
        root = suite_dir()
        if root is not None and file_path.parent.resolve() == root.resolve():  # a suite item named by its id
            node: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path,
                                                          nodeid=f"{SUITE_PREFIX}/{file_path.name}")
            node.certification = True
            return node
    file: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    return file


def _asked_for(config: pytest.Config, path: Path) -> bool:
    """``path`` is one of the session's arguments or under one: pytest also shows a collector the
    files beside the arguments' parent directories, which the session was not asked to run."""
    here = config.invocation_params.dir
    args = [Path(os.path.abspath(Path(here, arg.split("::", 1)[0]))) for arg in config.args]  # as pytest's own
    return any(path == arg or arg in path.parents for arg in args)


def uncollected_hint(config: pytest.Config) -> str | None:
    """A line for a session without ``--chaos`` that passed over scenario files (else None): without it
    they are silently not run, and a session of nothing but scenarios says only "no tests ran"."""
    found = len(config.stash.get(uncollected_key, ()))
    if not found:
        return None
    pattern = str(config.getini(PATTERN_INI) or SCENARIO_PATTERN)
    files = "1 chaos scenario file" if found == 1 else f"{found} chaos scenario files"
    return f"toolchaos: {files} ({pattern}) not collected: run them with `pytest {naming(config).flag()}`"


def add_certification_suite(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append the bundled certification suite's items (``--chaos-certify``), unless the command line named some."""
    if not config.stash[settings_key].certify or config.stash.get(named_suite_key, False):
        return
    seen = {Path(str(getattr(i, "path", ""))).resolve() for i in items if isinstance(i, ScenarioItem)}
    for f in _lazy.suite_files("certification"):  # YAML and pydantic: only under --chaos-certify
        path = Path(str(f))
        if path.resolve() in seen:
            continue  # already collected from the command line's paths
        node = ScenarioFile.from_parent(session, path=path, nodeid=f"{SUITE_PREFIX}/{path.name}")
        node.certification = True
        items.extend(session.genitems(node))


class ScenarioFile(pytest.File):
    """One scenario file: one item per scenario (one per variant, one per trial)."""

    certification = False

    def collect(self) -> Iterator[ScenarioItem]:
        allow = False if self.certification else bool(self.config.getini(IMPORTS_INI))
        trials = self.config.stash[settings_key].trials  # --chaos-trials, over each scenario's own
        for sc in _lazy.expand_trials(_lazy.load_file(_relative(self.path), allow_imports=allow), trials):
            yield ScenarioItem.from_parent(self, name=sc.name, scenario=sc)  # a trial K > 0: NAME#trial=K

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioError):
            return f"invalid chaos scenario\n{excinfo.value}"
        return super().repr_failure(excinfo)


def _relative(path: Path) -> Path:
    """The path as the user will read it in messages: relative to the working directory when under it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


class ScenarioItem(pytest.Item):
    """One scenario run against the agent under test."""

    def __init__(self, *, scenario: Scenario, **kw: Any) -> None:
        super().__init__(**kw)
        self.scenario = scenario
        self.verdict: Verdict | None = None
        self.fuzz_saved: dict[str, Path] = {}  # each broken invariant's regression scenario, once fuzzing failed
        self.extra_keyword_matches.update({scenario.category, scenario.severity, *scenario.tags})
        self.add_marker(self.config.stash[settings_key].marker)  # `-m chaos` selects scenarios too

    def _agent(self) -> AgentUnderTest:
        settings = self.config.stash[settings_key]  # one precedence rule (see toolchaos.pytest_plugin._settings)
        ref = settings.cli_agent or self.scenario.agent or self.config.getini("chaos_agent") or "builtin:guarded"
        if not isinstance(ref, str):  # a scenario's process agent: its cwd and env are its own, nothing to share
            return _lazy.agent_under_test(ref)
        known = self.config.stash.setdefault(agents_key, {})
        agent = known.get(ref)
        if agent is None:  # resolving imports and recognises the kind (~0.2 ms): once per reference a session
            agent = known[ref] = _lazy.agent_under_test(ref)  # any kind: in-process, SDK, a framework's agent, a process
        return agent

    def _run(self, scenario: Scenario, agent: AgentUnderTest, isolation: str | None = None) -> Verdict:
        settings = self.config.stash[settings_key]
        return _lazy.run_scenario(scenario, agent, seed=settings.cli_seed, artifacts=settings.artifacts,
                                  isolation=isolation)

    def _ran_at_once(self, agent: AgentUnderTest) -> Verdict | None:
        """This item's verdict when it waits on a live model: run at once with the later items of its scenario
        that do (its trials, ``--chaos-concurrency``), each in an isolated child; theirs are kept for their turn."""
        ready = self.config.stash.setdefault(ran_key, {})
        if self.nodeid in ready:
            return ready.pop(self.nodeid)
        concurrency = self.config.stash[settings_key].concurrency or DEFAULT_CONCURRENCY
        # not on an xdist worker: it runs only the items it was given
        if concurrency == 1 or hasattr(self.config, "workerinput") or not _lazy.waits_on_live_model(self.scenario):
            return None
        items = self.session.items
        mine = [it for it in items[items.index(self):] if isinstance(it, ScenarioItem) and it.path == self.path
                and it.scenario.base_name == self.scenario.base_name and it.nodeid not in ready]
        verdicts = _lazy.run_live_at_once([it.scenario for it in mine],
                                          lambda sc, isolation: self._run(sc, agent, isolation), concurrency)
        ready.update({mine[i].nodeid: v for i, v in verdicts.items()})
        return ready.pop(self.nodeid, None)

    def runtest(self) -> None:
        settings = self.config.stash[settings_key]
        agent = self._agent()
        verdict = self._ran_at_once(agent)
        if verdict is None:
            verdict = self._run(self.scenario, agent)
        self.verdict = verdict
        self.config.stash.setdefault(verdicts_key, []).append(verdict)  # the reports take it from self.verdict
        if verdict.not_applicable is not None:  # it needs what the agent's kind lacks: not run, neither pass nor fail
            pytest.skip(f"N/A to {agent.label} (kind {agent.kind}): {verdict.not_applicable}")
        if not verdict.passed:
            if verdict.result.trace.path is None:
                _keep_trace(self.config, verdict)
            _xfail_below_required(self.config, verdict)
            raise ScenarioFailed(verdict)
        examples = settings.fuzz
        # trials vary the seed, not the schedule: the fuzzer varies it once, from trial 0
        if self.scenario.trial == 0 and (self.scenario.fuzz is not None or examples):
            # The fixed schedule held; now vary it. Each shrunk case is saved as a regression
            # scenario, and the failure (FuzzFailed) is rendered by repr_failure.
            from toolchaos.fuzzing import fuzz_scenario  # hypothesis: only when the scenario is fuzzed

            report = fuzz_scenario(self.scenario, self.scenario.fuzz, agent=agent, examples=examples)
            if not report.ok:
                self.fuzz_saved = _save_regressions(self.config, report, self._reproduce)
            report.check()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            return self._rendered(_lazy.render_failure(excinfo.value.verdict))
        if isinstance(excinfo.value, AgentRefError):  # the agent reference: its message, not a traceback
            return f"chaos scenario {self.scenario.name}: {excinfo.value}"
        if isinstance(excinfo.value, FuzzFailed):
            return self._rendered(self._fuzz_failure(excinfo.value.report))
        # Anything else is a traceback, from this item's runtest down: pytest's and pluggy's
        # frames above it (which a test function's traceback never shows) say nothing.
        excinfo.traceback = excinfo.traceback.cut(path=Path(__file__))
        return super().repr_failure(excinfo)

    def _rendered(self, text: str) -> _Rendered:
        if self.config.getoption("tbstyle", "auto") == "line":  # --tb=line: one line, then pytest's own crash line
            text = text.split("\n", 1)[0]
        return _Rendered(printable(text), self.path, self.scenario.line)  # agent text: no escape sequences

    def _fuzz_failure(self, report: FuzzReport) -> str:
        """The invariant, shrunk schedule, saved scenario and command of each failure, in at most
        ``BRIEF_LINES`` lines; everything (the runs, fault coverage, the YAML) with ``-v`` or ``--tb=long``."""
        from toolchaos.fuzzing import BRIEF_LINES  # hypothesis: loaded already, runtest() fuzzed the scenario

        saved = {name: _relative(path) for name, path in self.fuzz_saved.items()}
        again = {name: self._reproduce(path, report.target.agent_ref) for name, path in self.fuzz_saved.items()}
        if self.config.option.verbose > 0 or self.config.getoption("tbstyle", "auto") == "long":
            return report.message(again, saved)
        return report.brief(again, saved, limit=BRIEF_LINES - 2) + (
            "\n\nthe full detail (each run, its fault coverage, the scenario's YAML): pytest -v")

    def _reproduce(self, saved: Path, agent: str) -> str:
        """``toolchaos run`` on the saved scenario, with this session's agent and watchdog limits."""
        limit = _lazy.session_real_seconds()  # a watchdog failure must reproduce under the same limits
        total = _lazy.session_total_seconds()
        extra = (f" --real-seconds {limit:g}" if limit is not None else "") + (
            f" --total-seconds {total:g}" if total is not None else "")
        if bool(self.config.getini(IMPORTS_INI)):  # the scenario may name Python code (an invariant, a policy)
            extra += " --allow-imports"
        return f"reproduce: toolchaos run {shlex.quote(str(_relative(saved)))} --agent {shlex.quote(agent)}{extra}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.scenario.line - 1, f"chaos scenario {self.scenario.name}"


class _Crash:
    """Where a failure happened and its first line: what pytest's one-line summaries print (``reprcrash``)."""

    def __init__(self, path: Path, lineno: int, message: str) -> None:
        self.path, self.lineno, self.message = str(path), lineno, message

    def __str__(self) -> str:  # --tb=line prints it
        return f"{self.path}:{self.lineno}: {self.message}"


class _Rendered:
    """A failure's own text as pytest's failure report.

    A plain string would do, except in the short test summary: pytest prints a string report
    there whole on CI machines (and with -vv), so a failure of fifty lines would print twice.
    With ``reprcrash`` the summary takes its first line, as for a test function's failure.
    Duck-typed (``toterminal``, ``reprcrash``, ``str``) on what pytest reads of a report, so
    no private class of pytest is needed; pytest-xdist sends it to the controller as its text.
    """

    def __init__(self, text: str, path: Path, line: int) -> None:
        self.text = text
        self.reprcrash = _Crash(_relative(path), line, text.split("\n", 1)[0])

    def toterminal(self, tw: Any) -> None:
        for line in self.text.split("\n"):
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def _xfail_below_required(config: pytest.Config, verdict: Verdict) -> None:
    """Under ``--chaos-require=LEVEL`` a failure below the level is an xfail: pytest's tally matches the exit status.
    An advisory failure is one always: no level requires it."""
    level = option(config, "require")
    severity = str(verdict.failure_severity or verdict.severity)
    if severity == ADVISORY:
        pytest.xfail(f"advisory scenario failed, required by no level: {verdict.id}")
    if level is None:
        return
    needed = _lazy.required_severities(str(level))
    if needed is not None and severity not in needed:
        pytest.xfail(f"{severity} scenario failed, below the required level {level} "
                     f"({naming(config).flag('require')}={level}): {verdict.id}")


def _save_regressions(config: pytest.Config, report: FuzzReport,
                      reproduce: Callable[[Path, str], str]) -> dict[str, Path]:
    """Each shrunk case as a scenario file (and its run's trace beside it), by broken invariant.

    Under ``--chaos-artifacts=DIR`` in DIR, else under pytest's cache
    (``.pytest_cache/d/toolchaos-fuzz/``), else in a new temporary directory. The file is named
    after its scenario id and this session's scenario pattern, so ``pytest --chaos`` and
    ``toolchaos run`` both take it as it is. A folder that cannot be written leaves the failure
    without a path: ``-v`` still prints the YAML.
    """
    folder = _regression_folder(config)
    if folder is None:
        return {}
    pattern = str(config.getini(PATTERN_INI) or SCENARIO_PATTERN)
    suffix = pattern[1:] if pattern.startswith("*") and not any(c in pattern[1:] for c in "*?[") else ".chaos.yaml"
    saved: dict[str, Path] = {}
    for failure in report.failures:
        path = folder / f"{failure.id}{suffix}"
        try:
            failure.result.trace.write(folder / f"{failure.id}.trace.jsonl")  # the full detail names it
            with _lazy.open_new(path) as fh:
                fh.write(failure.scenario_yaml(reproduce(path, report.target.agent_ref)).encode())
        except OSError:  # pragma: no cover - a read-only folder: the failure says it was not saved
            continue
        saved[failure.invariant] = path
    return saved


def _regression_folder(config: pytest.Config) -> Path | None:
    artifacts = config.stash[settings_key].artifacts
    if artifacts is not None:
        return artifacts
    cache = getattr(config, "cache", None)
    try:
        if cache is not None:
            return Path(cache.mkdir("toolchaos-fuzz"))
        return Path(tempfile.mkdtemp(prefix="toolchaos-fuzz-"))  # -p no:cacheprovider
    except OSError:  # pragma: no cover - nowhere to write: the failure prints the YAML under -v
        return None


def _keep_trace(config: pytest.Config, verdict: Verdict) -> None:
    """A failing scenario's trace goes under pytest's cache when no artifacts directory was given."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    try:
        folder = Path(cache.mkdir("toolchaos-traces"))
        verdict.result.trace.write(folder / f"{_lazy.safe_name(verdict.id)}.trace.jsonl")
    except OSError:  # pragma: no cover - a read-only cache: the report says the trace was not written
        return
