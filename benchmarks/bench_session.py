"""What installing toolchaos costs every pytest session of a user's project that runs no chaos test.

``pytest_session_overhead_s``: the median wall time of ``pytest -q`` on an empty test file with
toolchaos installed, minus the same without it, runs interleaved (10 each; 3 with ``--quick``).
"Installed" loads the pytest plugins that installing toolchaos brings into a venv: its own and
those of its dependencies (respx, Faker, anyio, hypothesis register theirs through entry points
whenever they are installed); "not installed" loads none of them. Plugins of other packages in
this environment (xdist, ...) are left out of both, as a user's own would be in both.
``pytest_session_ratio``: the same two medians as a ratio. ``pytest_session_overhead_plugin_only_s``:
toolchaos's own plugin alone (the part of the overhead toolchaos's code decides; the rest is its
dependencies' plugins importing their packages). ``pytest_session_overhead_plugin_<name>_s``: each
dependency's plugin alone, minus not installed (respx, faker, anyio, hypothesispytest): where the
rest goes. The parts do not add up exactly to the whole: they share pytest's own imports.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from time import perf_counter as real_perf_counter  # outside a run the real clock, virtual time or not


def _closure(name: str) -> set[str]:
    """The distribution and its required distributions (no extras), recursively, as normalised names."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        dist = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if dist in seen:
            continue
        seen.add(dist)
        try:
            requires = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue
        for req in requires:
            if "extra ==" in req:
                continue
            marker_free = req.split(";")[0]
            todo.append(re.split(r"[\s<>=!~\[(]", marker_free.strip(), maxsplit=1)[0])
    return seen


def toolchaos_plugins() -> list[str]:
    """Entry-point names of the pytest plugins toolchaos's install brings (its own and its dependencies')."""
    deps = _closure("toolchaos")
    return sorted(ep.name for ep in metadata.entry_points(group="pytest11")
                  if ep.dist is not None and re.sub(r"[-_.]+", "-", ep.dist.name).lower() in deps)


def _once(folder: Path, plugins: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[a for p in plugins for a in ("-p", p)]]
    t0 = real_perf_counter()
    subprocess.run(args, cwd=folder, env=env, capture_output=True, check=True, timeout=120)
    return real_perf_counter() - t0


def measure(quick: bool) -> dict[str, float]:
    runs = 3 if quick else 10
    plugins = toolchaos_plugins()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_empty.py").write_text("def test_empty():\n    pass\n")
        _once(folder, plugins)  # warm the file cache and the bytecode of both
        _once(folder, [])
        installed, bare, own = [], [], []
        alone: dict[str, list[float]] = {p: [] for p in plugins if p != "toolchaos"}
        for _ in range(runs):  # interleaved: a load spike hits them all
            installed.append(_once(folder, plugins))
            bare.append(_once(folder, []))
            own.append(_once(folder, ["toolchaos"]))
            for name, times in alone.items():
                times.append(_once(folder, [name]))
    with_, without = statistics.median(installed), statistics.median(bare)
    figures = {"pytest_session_overhead_s": with_ - without, "pytest_session_ratio": with_ / without,
               "pytest_session_overhead_plugin_only_s": statistics.median(own) - without}
    for name, times in alone.items():
        figures[f"pytest_session_overhead_plugin_{name}_s"] = statistics.median(times) - without
    return figures
