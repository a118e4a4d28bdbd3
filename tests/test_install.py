"""A real install (a wheel, not the editable checkout) sits next to a user's project that has
its own ``harness`` and ``fake_tools`` packages: the folder names this repository uses must not
leak into site-packages, or they would shadow the user's code (or be shadowed by it).

The wheel is built without build isolation and installed without dependencies into a fresh venv
that sees the current environment's packages, so nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "harness", "fake_tools", "scenarios")  # what the build reads

USER_PROJECT = {
    "pytest.ini": "[pytest]\npythonpath = .\ntestpaths = tests\n",
    "harness/__init__.py": '"""The user\'s own harness."""\nOWNER = "user"\n',
    "fake_tools/__init__.py": '"""The user\'s own fake tools."""\nOWNER = "user"\n',
    "tests/test_own.py": '''
import fake_tools
import harness
import pytest
import toolchaos


def test_its_own_packages_are_imported():
    assert (harness.OWNER, fake_tools.OWNER) == ("user", "user")
    assert "site-packages" in toolchaos.__file__


@pytest.mark.chaos
def test_the_installed_plugin_runs_a_chaos_test(chaos):
    policy = chaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}])
    result = chaos.run(task="t", tools=[chaos.tool("search")], policy=policy)
    assert result.terminal_state == "COMPLETED"
''',
}


def _run(*cmd: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "VIRTUAL_ENV")}
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _wheel(tmp: Path) -> Path:
    """Build from a copy: a build in the checkout would write build/ and egg-info beside the editable install."""
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", src,
         cwd=tmp)
    (wheel,) = (tmp / "dist").glob("toolchaos-*.whl")
    return wheel


def _venv(tmp: Path) -> Path:
    """A venv whose dependencies are the current environment's (a venv's own site-packages included)."""
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip()
    # A path line in a .pth only extends sys.path: the .pth files there (the editable install's
    # finder among them) are not processed, so `toolchaos` can only come from the wheel.
    (Path(purelib) / "current-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


@pytest.mark.slow
def test_a_wheel_installs_next_to_a_project_with_its_own_harness_and_fake_tools(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        record = zf.read("toolchaos-0.1.0.dist-info/RECORD").decode()
    top = {line.split("/", 1)[0] for line in record.splitlines() if line}
    assert top == {"toolchaos", "toolchaos_scenarios", "toolchaos-0.1.0.dist-info"}
    assert {"toolchaos/__init__.py", "toolchaos/fake_tools/__init__.py"} <= {line.split(",")[0] for line in
                                                                            record.splitlines()}

    python = _venv(tmp_path)
    # --ignore-installed: where the suite itself runs from an installed (not editable) toolchaos, pip would
    # find that copy through the .pth and install nothing; it must install the wheel and touch nothing else.
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", "--no-deps", "--no-index",
         "--ignore-installed", wheel,
         cwd=tmp_path)
    project = tmp_path / "project"
    for name, text in USER_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)

    out = _run(python, "-m", "pytest", "--chaos", "-p", "no:cacheprovider", cwd=project)
    assert "2 passed" in out.stdout, out.stdout[-3000:]
    imported = _run(python, "-c", "import toolchaos, toolchaos.fake_tools; print(toolchaos.fake_tools.__file__)",
                    cwd=project).stdout
    assert str(python.parent.parent) in imported  # the venv's copy, not the checkout


def test_every_package_of_the_source_is_in_the_wheels_list() -> None:
    """setuptools' ``packages`` is a written list: a package left out of it imports from a clone and is
    missing from every install (the slow install tests above would say so, once, minutes later)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    roots = {"toolchaos": ROOT / "harness", "toolchaos.fake_tools": ROOT / "fake_tools",
             "toolchaos_scenarios": ROOT / "scenarios"}
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                rel = init.parent.relative_to(folder).parts
                found.add(".".join((name, *rel)))
    found |= {"toolchaos._agents.scripts", "toolchaos_scenarios.certification", "toolchaos_scenarios.examples"}
    assert sorted(found - listed) == [], "add these to [tool.setuptools] packages in pyproject.toml"
