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
                       + "\nfrom toolchaos._plumbing import clock  # noqa: E402\n"},
        "toolchaos.fake_tools._ledger -> toolchaos._plumbing.clock"),
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


# --- the architecture's figures (.ci/figures, run by .ci/imports) ------------------------------------------

FIGURES = REPO / ".ci" / "figures"


def figures(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(FIGURES), str(root)], cwd=root, capture_output=True, text=True,
                          timeout=120)


def test_the_package_keeps_the_figures(tmp_path: Path) -> None:
    res = figures(lay_package(tmp_path, {}))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "imports past another package's facade: 0" in res.stdout
    assert "functions above cyclomatic complexity 20: 0" in res.stdout
    late = int(res.stdout.split("function-level imports of own modules: ")[1].split()[0])
    assert 0 < late <= 20


def _appended(rel: str, text: str, line: int = 1) -> tuple[dict[str, str], str]:
    """``rel`` with ``text`` appended, and where the ``line``-th line of ``text`` lands (file:line)."""
    old = source(rel)
    old += "" if old.endswith("\n") else "\n"
    return {rel: old + text}, f"toolchaos/{rel}:{old.count(chr(10)) + line}"


def _many_late_imports(n: int) -> str:
    return "".join(f"def late_{i}() -> None:\n    from toolchaos import errors  # noqa: F401  only when called\n\n"
                   for i in range(n))


def _complex_function(branches: int) -> str:
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(branches))
    return f"def tangled(x: int) -> int:\n{body}    return -1\n"


FIGURE_BREAKS = {
    "a function-level import without a reason": (
        _appended("reports/_junit.py", "def _late() -> None:\n    from toolchaos.errors import ReportError\n", 2),
        "function-level import without a reason", "toolchaos.errors"),
    "a reason that is only a linter's directive": (
        _appended("reports/_junit.py", "def _late() -> None:\n    from toolchaos import errors  # noqa: F401\n", 2),
        "function-level import without a reason", "toolchaos.errors"),
    "an import of another package's private module": (
        _appended("reports/_junit.py", "from toolchaos.invariants._builtin import check_all\n"),
        "import past a facade", "toolchaos.invariants._builtin, a private module of toolchaos.invariants"),
    "a private module imported by name from its package": (
        _appended("scenario/_goal.py", "from toolchaos.wire import _server\n"),
        "import past a facade", "toolchaos.wire._server, a private module of toolchaos.wire"),
    "a private module of an underscore package": (
        _appended("kinds/sdk.py", "from toolchaos._agents._registry import of_type\n"),
        "import past a facade", "toolchaos._agents._registry, a private module of toolchaos._agents"),
    "a relative import past a facade, for annotations only": (
        _appended("forensics/_scan.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                        "    from ..logs._files import open_bytes\n", 4),
        "import past a facade", "toolchaos.logs._files, a private module of toolchaos.logs"),
    "a function above complexity 20": (
        _appended("reports/_junit.py", _complex_function(20)),
        "function too complex", "tangled has cyclomatic complexity 21"),
}


@pytest.mark.parametrize(("planted", "rule", "named"), FIGURE_BREAKS.values(), ids=FIGURE_BREAKS.keys())
def test_a_planted_offence_breaks_the_figures(tmp_path: Path, planted: tuple[dict[str, str], str], rule: str,
                                              named: str) -> None:
    changes, where = planted
    res = figures(lay_package(tmp_path, changes))
    assert res.returncode == 1, res.stdout + res.stderr
    offences = res.stdout.splitlines()
    assert offences == [line for line in offences if line.startswith(where)] and len(offences) == 1, res.stdout
    assert f"{where}: {rule}: " in offences[0] and named in offences[0], offences[0]


def test_too_many_function_level_imports_break_the_figures(tmp_path: Path) -> None:
    res = figures(lay_package(tmp_path, {"extra.py": _many_late_imports(21)}))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "too many function-level imports: " in res.stdout and "toolchaos/extra.py:2" in res.stdout, res.stdout
    assert "function-level import without a reason" not in res.stdout  # each planted one says why


def test_a_module_within_its_package_may_import_its_private_modules(tmp_path: Path) -> None:
    changes, _ = _appended("invariants/__init__.py", "from toolchaos.invariants._builtin import check_all as _c\n")
    changes.update(_appended("_agents/naive.py", "from toolchaos._agents._registry import of_type as _o\n")[0])
    res = figures(lay_package(tmp_path, changes))
    assert res.returncode == 0, res.stdout + res.stderr
