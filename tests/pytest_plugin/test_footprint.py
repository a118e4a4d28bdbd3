"""A session that runs no chaos test loads nothing heavy of toolchaos, and --help stays accurate without importing it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HEAVY = ("freezegun", "pydantic", "yaml", "hypothesis", "respx", "httpx", "faker", "toolchaos._engine",
         "toolchaos._agents", "toolchaos.reports", "toolchaos._session", "toolchaos.adapters")

SESSION = """
import json, sys
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]])
print(json.dumps({"code": int(code), "modules": sorted(sys.modules)}))
"""


def _session(tmp_path: Path, *args: str, plugin: str = "toolchaos") -> dict[str, object]:
    """A session of one plain test with one plugin alone: toolchaos's, or the one named."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # that plugin alone: the other plugins' imports are theirs
    out = subprocess.run([sys.executable, "-c", SESSION, "-p", plugin, *args], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    data: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def test_a_session_without_chaos_loads_nothing_heavy(tmp_path: Path) -> None:
    data = _session(tmp_path)
    assert data["code"] == 0
    modules = [str(m) for m in data["modules"]]  # type: ignore[attr-defined]
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == [], heavy


def test_a_chaos_session_loads_virtual_time(tmp_path: Path) -> None:
    data = _session(tmp_path, "--chaos")
    assert data["code"] == 0 and "freezegun" in data["modules"]  # type: ignore[operator]


def test_the_help_lists_every_agent_kind_and_level() -> None:
    from toolchaos._agents import KINDS, PRESETS
    from toolchaos._engine import ISOLATION_MODES
    from toolchaos.pytest_plugin import AGENT_KINDS, PRESET_NAMES
    from toolchaos.pytest_plugin._settings import ISOLATION_CHOICES, LEVELS_HELP
    from toolchaos.reports import LEVELS

    assert tuple(AGENT_KINDS) == tuple(KINDS)
    assert tuple(PRESET_NAMES) == tuple(PRESETS)
    assert sorted(ISOLATION_CHOICES) == sorted(ISOLATION_MODES)
    assert [part.split(":")[0] for part in LEVELS_HELP.split("; ")] == list(LEVELS)
    for part in LEVELS_HELP.split("; "):
        level, text = part.split(": ", 1)
        assert LEVELS[level].startswith(text), (level, text)


# --- docs/pytest.md's footprint table and its opt-out, checked as printed ------------------------

PYTEST_DOC = Path(__file__).resolve().parents[2] / "docs" / "pytest.md"


@dataclass(frozen=True)
class Row:
    plugin: str  # the entry point's name
    modules: tuple[str, ...]  # what the row says the plugin loads in every session
    opt_out: str | None  # the flag that switches it off; None for toolchaos's own


def _footprint_section() -> str:
    text = PYTEST_DOC.read_text(encoding="utf-8")
    start = text.index("\n## Footprint\n")
    return text[start:text.index("\n## ", start + 1)]


def documented_plugins() -> list[Row]:
    rows = []
    for line in _footprint_section().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        plugin = re.match(r"`([\w.]+)`", cells[0])
        assert plugin is not None and len(cells) == 4, line
        modules = tuple(m for m in re.findall(r"`([^`]+)`", cells[1]) if re.fullmatch(r"[a-z_][\w.]*", m))
        flag = re.fullmatch(r"`(-p no:[\w.]+)`", cells[3])
        rows.append(Row(plugin.group(1), modules, flag.group(1) if flag else None))
    return rows


def documented_opt_out() -> list[str]:
    """The section's ``addopts`` line, split as pytest splits it."""
    block = re.search(r"```toml\n(.*?)```", _footprint_section(), flags=re.S)
    assert block is not None
    addopts = re.search(r'^addopts = "([^"]*)"$', block.group(1), flags=re.M)
    assert addopts is not None, block.group(1)
    return shlex.split(addopts.group(1))


def _toolchaos_plugins() -> set[str]:
    """Entry-point names of the pytest plugins toolchaos's install brings: its own and its dependencies'."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    deps: set[str] = set()
    todo = [Requirement("toolchaos")]
    while todo:
        req = todo.pop()
        if canonicalize_name(req.name) in deps:
            continue
        deps.add(canonicalize_name(req.name))
        try:
            requires = metadata.distribution(req.name).requires or []
        except metadata.PackageNotFoundError:
            continue
        todo += [d for d in map(Requirement, requires) if d.marker is None or d.marker.evaluate({"extra": ""})]
    return {ep.name for ep in metadata.entry_points(group="pytest11")
            if ep.dist is not None and canonicalize_name(ep.dist.name) in deps}


def _loaded(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_the_table_names_every_plugin_toolchaos_brings_and_the_line_switches_each_off() -> None:
    rows = documented_plugins()
    assert {r.plugin for r in rows} >= _toolchaos_plugins() | {"randomly"}
    assert all(r.modules for r in rows), rows
    line = documented_opt_out()
    flags = [" ".join(line[i:i + 2]) for i in range(0, len(line), 2)]
    assert sorted(flags) == sorted(f"-p no:{r.plugin}" for r in rows if r.opt_out), line
    assert all(r.opt_out == f"-p no:{r.plugin}" for r in rows if r.opt_out)
    assert [r.plugin for r in rows if r.opt_out is None] == ["toolchaos"]


@pytest.mark.parametrize("row", documented_plugins(), ids=lambda r: r.plugin)
def test_each_plugin_of_the_table_loads_what_its_row_says(row: Row, tmp_path: Path) -> None:
    """The other half of the opt-out test: with the plugin on, its modules are there to be removed."""
    from importlib import metadata

    if not any(ep.name == row.plugin for ep in metadata.entry_points(group="pytest11")):
        pytest.skip(f"the plugin {row.plugin} is not installed")
    modules = [str(m) for m in _session(tmp_path, plugin=row.plugin)["modules"]]  # type: ignore[attr-defined]
    assert [m for m in row.modules if not _loaded(modules, m)] == []


AUTOLOADED = """
import json, sys
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]])
print(json.dumps({"code": int(code), "modules": sorted(sys.modules),
                  "toolchaos": "toolchaos.pytest_plugin" in sys.modules}))
"""


def test_the_documented_opt_out_removes_what_each_plugin_loads(tmp_path: Path) -> None:
    """A user's project with the doc's ``[tool.pytest.ini_options]`` block as its pyproject.toml, every
    installed plugin autoloaded as in the user's venv, pytest-randomly included: the session has none
    of the table's modules, and toolchaos's own plugin is still loaded. The installed plugins the
    table does not name (xdist, ...) are a user's own and switched off here, as they would be in both."""
    from importlib import metadata

    block = re.search(r"```toml\n(.*?)```", _footprint_section(), flags=re.S)
    assert block is not None
    (tmp_path / "pyproject.toml").write_text(block.group(1))
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    rows = documented_plugins()
    others = sorted({ep.name for ep in metadata.entry_points(group="pytest11")} - {r.plugin for r in rows})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    out = subprocess.run([sys.executable, "-c", AUTOLOADED, *[a for n in others for a in ("-p", f"no:{n}")]],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["code"] == 0 and data["toolchaos"], out.stdout[-2000:]
    left = {r.plugin: [m for m in r.modules if _loaded(data["modules"], m)] for r in rows if r.opt_out}
    assert left == {r.plugin: [] for r in rows if r.opt_out}


def test_chaos_work_needs_none_of_the_dependencies_own_plugins(pytester: pytest.Pytester) -> None:
    """docs/pytest.md tells a user who wants the lightest session to switch these plugins off: toolchaos
    uses respx, Faker and hypothesis as libraries, never through their plugins' fixtures or hooks."""
    from chaos_samples import PAY_SCENARIO
    from test_chaos_wire import TESTS

    off = documented_opt_out()
    names = [flag.removeprefix("no:") for flag in off if flag.startswith("no:")]
    pytester.makefile(".chaos.yaml", pay=PAY_SCENARIO)
    pytester.makepyfile(test_sdk=TESTS, test_off=f"""
def test_the_plugins_are_off(request):
    assert not [n for n in {names!r} if request.config.pluginmanager.has_plugin(n)]
""")
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive", "--chaos-fuzz=60", *off)
    # passed: the plugins-off check and the wire test that completes; failed: the wire test that
    # loops and the payment scenario whose duplicate charge the fuzzing finds
    res.assert_outcomes(passed=2, failed=2)
    res.stdout.fnmatch_lines(["*idempotent*", "*invariant bounded.turns broke*"])


@pytest.mark.parametrize("flag", ["--chaos-agent=REF", "--chaos-require=LEVEL"])
def test_help_still_shows_the_options(pytester: pytest.Pytester, flag: str) -> None:
    pytester.runpytest("--help").stdout.fnmatch_lines([f"*{flag}*"])


def test_the_agent_option_shows_the_process_forms(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: no name broken at a hyphen
    text = pytester.runpytest("--help").stdout.str()
    assert "'preset:NAME' (NAME: codex, claude-code," in text and "'cmd:COMMAND LINE'" in text
    assert "langgraph), or a program" in text, "'process:module:attr' is not a reference: not listed as a KIND"


DOOR = """
import json, sys
from toolchaos.pytest_plugin import _lazy
probes = [hasattr(_lazy, name) for name in ("__wrapped__", "_mock_name", "__path__")]
before = sorted(m for m in ("toolchaos._engine", "freezegun", "yaml") if m in sys.modules)
engine = _lazy.safe_name("a b")
middle = sorted(m for m in ("toolchaos._engine", "freezegun", "yaml") if m in sys.modules)
loader = _lazy.load_file.__module__
after = sorted(m for m in ("toolchaos._engine", "freezegun", "yaml") if m in sys.modules)
try:
    _lazy.no_such_name
    missing = None
except AttributeError as e:
    missing = str(e)
print(json.dumps({"probes": probes, "before": before, "middle": middle, "after": after, "missing": missing}))
"""


def test_the_plugin_door_loads_the_engine_then_the_scenario_loader_on_first_use() -> None:
    """``_lazy``: a probe loads nothing (pytest probes every attribute of a plugin module for fixtures), the
    engine's names load the engine's side alone, a scenario name the scenario loader (YAML, pydantic)."""
    out = subprocess.run([sys.executable, "-c", DOOR], capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["probes"] == [False, False, False] and data["before"] == []
    assert data["middle"] == ["freezegun", "toolchaos._engine"]
    assert data["after"] == ["freezegun", "toolchaos._engine", "yaml"]
    assert "no_such_name" in data["missing"]
