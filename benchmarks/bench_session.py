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
``pytest_session_overhead_randomly_faker_s`` (only where pytest-randomly is installed, as it is
in the project's dev extra): what Faker costs a session through pytest-randomly, which imports it
whenever it is importable, ``-p no:faker`` or not: pytest-randomly's plugin alone, minus the same
with Faker made unimportable. Each figure also as ``..._cpu_s``: the same from the CPU time (user
and system) of the session's process, which a loaded machine stretches much less than wall time
(on an idle one the two agree). docs/pytest.md's table quotes these figures.
"""

from __future__ import annotations

import os
import re
import resource
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


# pytest, with the modules named in its arguments before ``--`` made unimportable (None in sys.modules)
LAUNCHER = """import sys
cut = sys.argv.index("--")
sys.modules.update(dict.fromkeys(sys.argv[1:cut]))
import pytest
raise SystemExit(pytest.main(sys.argv[cut + 1:]))
"""


def _once(folder: Path, plugins: list[str], unimportable: tuple[str, ...] = ()) -> tuple[float, float]:
    """One session: its wall time and the CPU time (user + system) of its process."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = [sys.executable, "-c", LAUNCHER, *unimportable, "--", "-q", "-p", "no:cacheprovider",
            *[a for p in plugins for a in ("-p", p)]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = real_perf_counter()
    subprocess.run(args, cwd=folder, env=env, capture_output=True, check=True, timeout=120)
    wall = real_perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _variants(plugins: list[str]) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    """Each session measured: its plugins and the modules made unimportable."""
    variants: dict[str, tuple[list[str], tuple[str, ...]]] = {
        "installed": (plugins, ()), "bare": ([], ()), "own": (["toolchaos"], ())}
    variants.update({name: ([name], ()) for name in plugins if name != "toolchaos"})
    if any(ep.name == "randomly" for ep in metadata.entry_points(group="pytest11")):
        variants["randomly"] = (["randomly"], ())
        variants["randomly-no-faker"] = (["randomly"], ("faker",))
    return variants


def _figures(median: dict[str, float], plugins: list[str], unit: str) -> dict[str, float]:
    bare = median["bare"]
    figures = {f"pytest_session_overhead{unit}": median["installed"] - bare,
               f"pytest_session_overhead_plugin_only{unit}": median["own"] - bare}
    for name in plugins:
        if name != "toolchaos":
            figures[f"pytest_session_overhead_plugin_{name}{unit}"] = median[name] - bare
    if "randomly" in median:
        figures[f"pytest_session_overhead_randomly_faker{unit}"] = median["randomly"] - median["randomly-no-faker"]
    return figures


def measure(quick: bool) -> dict[str, float]:
    runs = 3 if quick else 10
    plugins = toolchaos_plugins()
    variants = _variants(plugins)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_empty.py").write_text("def test_empty():\n    pass\n")
        _once(folder, plugins)  # warm the file cache and the bytecode of both
        _once(folder, [])
        for _ in range(runs):  # interleaved: a load spike hits them all
            for name, (loaded, unimportable) in variants.items():
                samples[name].append(_once(folder, loaded, unimportable))
    wall = {name: statistics.median(w for w, _ in runs_) for name, runs_ in samples.items()}
    cpu = {name: statistics.median(c for _, c in runs_) for name, runs_ in samples.items()}
    return {**_figures(wall, plugins, "_s"), **_figures(cpu, plugins, "_cpu_s"),
            "pytest_session_ratio": wall["installed"] / wall["bare"]}
