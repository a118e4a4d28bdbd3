"""What a report says about the run as a whole: ``RunMeta``, timestamps and versions.

The wall clock is read here and nowhere else in the reports (``now``): two reports of
the same agent, seed and suite differ only in ``started``, ``ended`` and ``duration_seconds``.
"""

from __future__ import annotations

import functools
import importlib.util
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from toolchaos._internal.version import VERSION
from toolchaos.errors import ReportError
from toolchaos.reports._levels import DEFAULT_LEVEL


def now() -> datetime:
    # The harness installs freezegun process-wide; outside a run it returns the real time.
    return datetime.now(UTC)


def iso(value: datetime | str | None) -> str:
    """A timestamp as report.json writes it: UTC, whole seconds, ``Z``; ``None`` is now."""
    if value is None:
        value = now()
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class RunMeta:
    """What a report says about the run as a whole (besides the verdicts)."""

    agent: str = ""  # the agent reference, e.g. "builtin:guarded" or "mypkg.agent:run"
    seed: int = 0
    suite: str = "custom"  # the suite's name: "certification" for the bundled one
    suite_version: str | None = None
    started: datetime | str | None = None
    ended: datetime | str | None = None
    require: str = DEFAULT_LEVEL  # the level the run must reach to be certified
    agent_version: str | None = None  # found from the agent's package when not given
    agent_commit: str | None = None  # found from the agent's git working tree when not given
    baseline: str | None = None  # a report (file or directory) to compare with: regressions and fixes on top
    prices: str | None = None  # a prices file overriding the built-in price table
    price_model: str | None = None  # the model the runs are priced as
    extra: dict[str, Any] = field(default_factory=dict)  # free-form, copied into report.json
    # the shard this run is of a suite split across jobs (toolchaos._internal.shards: Partition.record), else None
    shard: dict[str, Any] | None = None
    # (K, P): certified only if every critical scenario's pass^K >= P (toolchaos.reports._trials), else None
    require_pass_k: tuple[int, float] | None = None

    @classmethod
    def of(cls, meta: RunMeta | Mapping[str, Any] | None) -> RunMeta:
        if meta is None:
            return cls()
        if isinstance(meta, RunMeta):
            return meta
        known = set(cls.__dataclass_fields__)
        bad = [k for k in meta if k not in known]
        if bad:
            raise ReportError(f"unknown report metadata {', '.join(map(repr, bad))}; known: {', '.join(sorted(known))}")
        return cls(**dict(meta))


def _module_of(ref: str) -> str | None:
    """The agent's module: ``pkg.mod`` of ``pkg.mod:attr`` or ``KIND:pkg.mod:attr``; None for a built-in."""
    parts = ref.split(":")
    module = parts[-2] if len(parts) >= 2 else ""
    if parts[0] == "builtin" or not module or module.split(".")[0] == "toolchaos":
        return None  # the harness's own reference agents: toolchaos's version is not theirs
    return module if all(p.isidentifier() for p in module.split(".")) else None


def agent_version(ref: str) -> str | None:
    """The installed version of the distribution that provides the agent, where there is one.

    None for the built-in reference agents: they are part of the harness, whose version the
    report shows apart, and showing it as the agent's would read as the agent's release.
    """
    module = _module_of(ref)
    if module is None:
        return None
    top = module.split(".")[0]
    if ":" not in ref or not top.isidentifier():
        return None
    return next((v for v in map(_version, _distributions().get(top, [])) if v is not None), None)


def agent_commit(ref: str) -> str | None:
    """The git commit of the working tree the agent's module lives in, read from ``.git`` (no git, no network)."""
    module = _module_of(ref)
    if module is None:
        return None
    try:
        spec = importlib.util.find_spec(module.split(".")[0])  # a top-level name: finding it imports nothing
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec and spec.origin and spec.origin not in ("built-in", "frozen") else None
    if origin is None and spec is not None and spec.submodule_search_locations:
        origin = next(iter(spec.submodule_search_locations), None)
    if origin is None or _installed(Path(origin)):
        return None
    return git_commit(Path(origin))


def _installed(path: Path) -> bool:
    """Under the standard library or site-packages: an installed copy, whatever repository it sits in
    (a Python built by pyenv lives in pyenv's git clone; that commit is not the agent's)."""
    roots = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    resolved = path.resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in roots if root)


def git_commit(path: Path) -> str | None:
    """The commit checked out in the git working tree holding ``path``, or None; reads files only."""
    for folder in [path, *path.parents]:
        dot = folder / ".git"
        if dot.exists():
            return _head(_git_dir(dot))
    return None


def _git_dir(dot: Path) -> Path:
    if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text.partition(":")[2].strip())
            return target if target.is_absolute() else (dot.parent / target)
    return dot


def _head(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if _is_sha(head) else None  # a detached HEAD
    ref = head.partition(":")[2].strip()
    common = git_dir
    if (git_dir / "commondir").is_file():  # a linked worktree keeps its branches in the main repository
        common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
    for base in dict.fromkeys((git_dir, common)):
        try:
            sha = (base / ref).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if _is_sha(sha):
            return sha
    return _packed(common / "packed-refs", ref)


def _packed(path: Path, ref: str) -> str | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        sha, _, name = line.partition(" ")
        if name.strip() == ref and _is_sha(sha):
            return sha
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> distributions (scanning them costs a second on a big environment: once)."""
    try:
        return metadata.packages_distributions()
    except Exception:  # pragma: no cover - another package's broken metadata: the report says no version
        return {}


def harness_version() -> str:
    return VERSION
