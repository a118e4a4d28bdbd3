"""What a report says about the run as a whole: ``RunMeta``, timestamps and versions.

The wall clock is read here and nowhere else in the reports (``now``): two reports of
the same agent, seed and suite differ only in ``started``, ``ended`` and ``duration_seconds``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from toolchaos._internal.version import VERSION
from toolchaos.errors import ReportError
from toolchaos.reports._levels import DEFAULT_LEVEL


def now() -> datetime:
    # The harness installs freezegun process-wide; outside a run it returns the real time.
    return datetime.now(timezone.utc)


def iso(value: datetime | str | None) -> str:
    """A timestamp as report.json writes it: UTC, whole seconds, ``Z``; ``None`` is now."""
    if value is None:
        value = now()
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


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
    extra: dict[str, Any] = field(default_factory=dict)  # free-form, copied into report.json

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


def agent_version(ref: str) -> str | None:
    """The installed version of the distribution that provides the agent, where there is one."""
    module = ref.partition(":")[0]
    if module == "builtin" or module.split(".")[0] == "toolchaos":
        return _version("toolchaos")
    top = module.split(".")[0]
    if ":" not in ref or not top.isidentifier():
        return None
    return next((v for v in map(_version, _distributions().get(top, [])) if v is not None), None)


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
