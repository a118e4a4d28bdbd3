"""A session that runs no chaos test loads nothing heavy of toolchaos, and --help stays accurate without importing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("freezegun", "pydantic", "yaml", "hypothesis", "respx", "httpx", "faker", "toolchaos._engine",
         "toolchaos._agents", "toolchaos.reports", "toolchaos._session", "toolchaos.adapters")

SESSION = """
import json, sys
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "toolchaos", *sys.argv[1:]])
print(json.dumps({"code": int(code), "modules": sorted(sys.modules)}))
"""


def _session(tmp_path: Path, *args: str) -> dict[str, object]:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # toolchaos alone: the other plugins' imports are theirs
    out = subprocess.run([sys.executable, "-c", SESSION, *args], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, check=True)
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
    from toolchaos._agents import KINDS
    from toolchaos._engine import ISOLATION_MODES
    from toolchaos.pytest_plugin import AGENT_KINDS
    from toolchaos.pytest_plugin._report import LEVELS_HELP
    from toolchaos.pytest_plugin._settings import ISOLATION_CHOICES
    from toolchaos.reports import LEVELS

    assert tuple(AGENT_KINDS) == tuple(KINDS)
    assert sorted(ISOLATION_CHOICES) == sorted(ISOLATION_MODES)
    assert [part.split(":")[0] for part in LEVELS_HELP.split("; ")] == list(LEVELS)
    for part in LEVELS_HELP.split("; "):
        level, text = part.split(": ", 1)
        assert LEVELS[level].startswith(text), (level, text)


DEPENDENCY_PLUGINS = ("respx", "faker", "anyio", "hypothesispytest")


def test_chaos_work_needs_none_of_the_dependencies_own_plugins(pytester: pytest.Pytester) -> None:
    """docs/pytest.md tells a user who wants the lightest session to switch these four off: toolchaos
    uses respx, Faker and hypothesis as libraries, never through their plugins' fixtures or hooks."""
    from chaos_samples import PAY_SCENARIO
    from test_chaos_wire import TESTS

    pytester.makefile(".chaos.yaml", pay=PAY_SCENARIO)
    pytester.makepyfile(test_sdk=TESTS, test_off=f"""
def test_the_four_plugins_are_off(request):
    assert not [n for n in {DEPENDENCY_PLUGINS!r} if request.config.pluginmanager.has_plugin(n)]
""")
    off = [a for name in DEPENDENCY_PLUGINS for a in ("-p", f"no:{name}")]
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive", "--chaos-fuzz=60", "-p", "no:randomly", *off)
    # passed: the plugins-off check and the wire test that completes; failed: the wire test that
    # loops and the payment scenario whose duplicate charge the fuzzing finds
    res.assert_outcomes(passed=2, failed=2)
    res.stdout.fnmatch_lines(["*idempotent*", "*invariant bounded.turns broke*"])


@pytest.mark.parametrize("flag", ["--chaos-agent=REF", "--chaos-require=LEVEL"])
def test_help_still_shows_the_options(pytester: pytest.Pytester, flag: str) -> None:
    pytester.runpytest("--help").stdout.fnmatch_lines([f"*{flag}*"])
