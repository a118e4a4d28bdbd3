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
(``toolchaos.adapters.agent_under_test``). The seed:
``--chaos-seed``, else the scenario's ``seed``. The real-time limit: the scenario's
``ceiling: {real_seconds: ...}``, else ``--chaos-real-seconds``, else the ini option
``chaos_real_seconds``, else 5 s (the engine applies the session's limit to every run whose
ceiling sets none: ``toolchaos._internal.limits.set_session_real_seconds``).
"""

from __future__ import annotations

import fnmatch
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from toolchaos.errors import AgentRefError, ScenarioError, ScenarioFailed, printable
from toolchaos.pytest_plugin._options import naming, option
from toolchaos.pytest_plugin._settings import settings_key

if TYPE_CHECKING:  # loaded on first use: plain `pytest` runs never pay for YAML and pydantic (nor the engine)
    from toolchaos._engine import AgentUnderTest
    from toolchaos.certification import Verdict
    from toolchaos.scenario import Scenario

SCENARIO_PATTERN = "*.chaos.yaml"
PATTERN_INI = "chaos_scenario_pattern"
IMPORTS_INI = "chaos_allow_imports"
SUITE_PREFIX = "toolchaos_scenarios/certification"

verdicts_key = pytest.StashKey[list["Verdict"]]()  # every verdict of this session (this process)
agents_key = pytest.StashKey[dict[str, "AgentUnderTest"]]()  # resolved once per reference, not once per item


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


def collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    config = parent.config
    if not config.stash[settings_key].enabled:
        return None
    pattern = str(config.getini(PATTERN_INI) or SCENARIO_PATTERN)
    if not fnmatch.fnmatch(file_path.name, pattern):
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


def add_certification_suite(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append the bundled certification suite's items (``--chaos-certify``), unless the command line named some."""
    if not config.stash[settings_key].certify or config.stash.get(named_suite_key, False):
        return
    from toolchaos.certification import suite_files  # YAML and pydantic: only under --chaos-certify

    seen = {Path(str(getattr(i, "path", ""))).resolve() for i in items if isinstance(i, ScenarioItem)}
    for f in suite_files("certification"):
        path = Path(str(f))
        if path.resolve() in seen:
            continue  # already collected from the command line's paths
        node = ScenarioFile.from_parent(session, path=path, nodeid=f"{SUITE_PREFIX}/{path.name}")
        node.certification = True
        items.extend(session.genitems(node))


class ScenarioFile(pytest.File):
    """One scenario file: one item per scenario (one per variant)."""

    certification = False

    def collect(self) -> Iterator[ScenarioItem]:
        from toolchaos.scenario import load_file  # YAML and pydantic: only once a scenario file is collected

        allow = False if self.certification else bool(self.config.getini(IMPORTS_INI))
        for sc in load_file(_relative(self.path), allow_imports=allow):
            yield ScenarioItem.from_parent(self, name=sc.name, scenario=sc)

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
        self.extra_keyword_matches.update({scenario.category, scenario.severity, *scenario.tags})
        self.add_marker(self.config.stash[settings_key].marker)  # `-m chaos` selects scenarios too

    def _agent(self) -> AgentUnderTest:
        from toolchaos.adapters import agent_under_test

        settings = self.config.stash[settings_key]  # one precedence rule (see toolchaos.pytest_plugin._settings)
        ref = settings.cli_agent or self.scenario.agent or self.config.getini("chaos_agent") or "builtin:guarded"
        if not isinstance(ref, str):  # a scenario's process agent: its cwd and env are its own, nothing to share
            return agent_under_test(ref)
        known = self.config.stash.setdefault(agents_key, {})
        agent = known.get(ref)
        if agent is None:  # resolving imports and recognises the kind (~0.2 ms): once per reference a session
            agent = known[ref] = agent_under_test(ref)  # any kind: in-process, SDK, a framework's agent, a process
        return agent

    def runtest(self) -> None:
        from toolchaos.certification import run_scenario  # YAML and pydantic: only when a scenario runs

        settings = self.config.stash[settings_key]
        agent = self._agent()
        verdict = run_scenario(self.scenario, agent, seed=settings.cli_seed, artifacts=settings.artifacts)
        self.verdict = verdict
        self.config.stash.setdefault(verdicts_key, []).append(verdict)
        # not at import time: pytest imports its plugin modules itself (pytest_plugins), and warns if one is loaded first
        from toolchaos.pytest_plugin._report import record_verdict

        record_verdict(self, verdict)
        if not verdict.passed:
            if verdict.result.trace.path is None:
                _keep_trace(self.config, verdict)
            _xfail_below_required(self.config, verdict)
            raise ScenarioFailed(verdict)
        examples = settings.fuzz
        if self.scenario.fuzz is not None or examples:
            # The fixed schedule held; now vary it. A failure is an AssertionError whose
            # message carries the shrunk case as a complete YAML scenario.
            from toolchaos.fuzzing._core import fuzz_scenario  # hypothesis: only when the scenario is fuzzed

            fuzz_scenario(self.scenario, self.scenario.fuzz, agent=agent, examples=examples).check()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            from toolchaos.certification import render_failure  # loaded already: runtest() ran the scenario

            return printable(render_failure(excinfo.value.verdict))  # agent text: no escape sequences
        if isinstance(excinfo.value, AgentRefError):  # the agent reference: its message, not a traceback
            return f"chaos scenario {self.scenario.name}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.scenario.line - 1, f"chaos scenario {self.scenario.name}"


def _xfail_below_required(config: pytest.Config, verdict: Verdict) -> None:
    """Under ``--chaos-require=LEVEL`` a failure below the level is an xfail: pytest's tally matches the exit status."""
    from toolchaos.reports._levels import required_severities

    level = option(config, "require")
    if level is None:
        return
    needed = required_severities(str(level))
    severity = str(verdict.failure_severity or verdict.severity)
    if needed is not None and severity not in needed:
        pytest.xfail(f"{severity} scenario failed, below the required level {level} "
                     f"({naming(config).flag('require')}={level}): {verdict.id}")


def _keep_trace(config: pytest.Config, verdict: Verdict) -> None:
    """A failing scenario's trace goes under pytest's cache when no artifacts directory was given."""
    from toolchaos._engine import safe_name

    cache = getattr(config, "cache", None)
    if cache is None:
        return
    try:
        folder = Path(cache.mkdir("toolchaos-traces"))
        verdict.result.trace.write(folder / f"{safe_name(verdict.id)}.trace.jsonl")
    except OSError:  # pragma: no cover - a read-only cache: the report says the trace was not written
        return
