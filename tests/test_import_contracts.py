"""The import contracts (pyproject.toml, [tool.importlinter]) hold, and break on the imports they forbid.

Each case lays the package as ``.ci/linktree`` does (``toolchaos`` = harness/, with
``toolchaos.fake_tools`` = fake_tools/) into a temporary folder, with one module changed
or added, and runs ``lint-imports`` on it: an upward import, a cycle, a package left out
of the layers or a forbidden import must make it fail, naming the contract and the import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lay_package(root: Path, changes: dict[str, str]) -> Path:
    """``root/toolchaos`` linked to the sources, except ``changes`` (path in the package -> text)."""
    entries = {p.name: p for p in (REPO / "harness").iterdir()} | {"fake_tools": REPO / "fake_tools"}
    _mirror(entries, root / "toolchaos", "", changes)
    return root


def _mirror(entries: dict[str, Path], dest: Path, prefix: str, changes: dict[str, str]) -> None:
    dest.mkdir()
    for name, source in entries.items():
        rel = prefix + name
        if rel in changes:
            (dest / name).write_text(changes[rel], encoding="utf-8")
        elif any(c.startswith(rel + "/") for c in changes):  # a changed module below: copy the folder as links
            _mirror({p.name: p for p in source.iterdir()}, dest / name, rel + "/", changes)
        else:
            (dest / name).symlink_to(source)
    for rel, text in changes.items():  # new modules
        name = rel.removeprefix(prefix)
        if rel.startswith(prefix) and "/" not in name and name not in entries:
            (dest / name).write_text(text, encoding="utf-8")


def lint(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    args = [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(REPO / "pyproject.toml")]
    for contract in contracts:
        args += ["--contract", contract]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def source(rel: str) -> str:
    entry, _, rest = rel.partition("/")
    base = REPO / "fake_tools" if entry == "fake_tools" else REPO / "harness" / entry
    return (base / rest if rest else base).read_text(encoding="utf-8")


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    res = lint(lay_package(tmp_path, {}))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


BREAKS = {
    "an upward import": (
        "layers", {"_internal/types.py": source("_internal/types.py") + "\nimport toolchaos.cli\n"},
        "toolchaos._internal.types -> toolchaos.cli"),
    "an upward import inside a function": (
        "layers", {"invariants/_builtin.py": source("invariants/_builtin.py")
                   + "\n\ndef _late() -> None:\n    from toolchaos._engine import run  # noqa: F401\n"},
        "toolchaos.invariants._builtin -> toolchaos._engine"),
    "an upward import for annotations only": (
        "layers", {"logs/__init__.py": source("logs/__init__.py")
                   + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from toolchaos import policies\n"},
        "toolchaos.logs -> toolchaos.policies"),
    "an import between siblings of a layer": (
        "layers", {"_agents/naive.py": source("_agents/naive.py") + "\nimport toolchaos.invariants\n"},
        "toolchaos._agents.naive -> toolchaos.invariants"),
    "a module placed in no layer": (
        "layers", {"extra.py": '"""Not in the contract."""\n'}, "toolchaos.extra"),
    "a cycle inside a package": (
        "acyclic", {"cli/_run.py": source("cli/_run.py") + "\nfrom toolchaos.cli import _replay  # noqa: E402\n"},
        "No cycles are allowed in toolchaos.cli"),
    "fake_tools importing the rest of toolchaos": (
        "fake-tools", {"fake_tools/_ledger.py": source("fake_tools/_ledger.py")
                       + "\nfrom toolchaos._internal import clock  # noqa: E402\n"},
        "toolchaos.fake_tools._ledger -> toolchaos._internal.clock"),
    "a module importing the facade": (
        "facade", {"reports/_junit.py": source("reports/_junit.py") + "\nfrom toolchaos import __version__\n"},
        "toolchaos.reports._junit -> toolchaos"),
}


@pytest.mark.parametrize(("contract", "changes", "named"), BREAKS.values(), ids=BREAKS.keys())
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, contract: str, changes: dict[str, str],
                                                named: str) -> None:
    res = lint(lay_package(tmp_path, changes), contract)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 broken" in res.stdout and named in res.stdout, res.stdout
