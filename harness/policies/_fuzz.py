"""How the fuzzer draws each built-in policy: the specs it picks from, over the tools of a run.

A policy kind is registered in ``POLICIES`` with ``fuzz=``, one of the functions here (or
None: never drawn). Given the kind's name and the tools, it returns the plain-data specs
(``{name: {params}}``, the ``policy:`` section of a scenario) the strategies draw from,
simplest first: hypothesis shrinks toward the first. Arguments come from each tool's schema
(``example_args``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchaos.fake_tools import FakeTool


def example_args(tool: FakeTool, n: int = 1) -> dict[str, Any]:
    """Plausible arguments for ``tool`` from its schema: every required field, the ``n``-th variant."""
    props = tool.parameters.get("properties", {})
    out: dict[str, Any] = {}
    for name in tool.parameters.get("required", []):
        spec = props.get(name, {})
        t = spec.get("type", "string")
        t = t[0] if isinstance(t, list) else t
        if "enum" in spec:
            out[name] = spec["enum"][0]
        elif t == "integer":
            out[name] = n
        elif t == "number":
            out[name] = 10.0 * n
        elif t == "boolean":
            out[name] = True
        elif t == "object":
            out[name] = {"value": n}
        elif t == "array":
            out[name] = [n]
        else:
            stem = name[:-3] if name.endswith("_id") else name
            out[name] = f"{stem}_{n}" if name.endswith("_id") else f"{stem} {n}"
    return out


def repeating(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """One tool again and again (stubborn, jitter): until it succeeds, then forever."""
    return [{kind: {"tool": t.name, "args": example_args(t), "until": u}} for u in ("success", "never") for t in tools]


def paraphrasing(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """The same search reworded: only tools that take a ``query``."""
    return [{kind: {"tool": t.name, "args": {**example_args(t), "query": "quarterly report"}, "until": "never"}}
            for t in tools if "query" in t.parameters.get("properties", {})]


def alternating(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """A-B-A-B over every ordered pair of distinct tools."""
    return [{kind: {"calls": [{"call": a.name, "args": example_args(a)}, {"call": b.name, "args": example_args(b)}],
                    "until": u}}
            for u in ("success", "never") for a in tools for b in tools if a.name != b.name]


def polling(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """Each tool polled until it answers."""
    return [{kind: {"tool": t.name, "args": example_args(t)}} for t in tools]


def exploring(kind: str, tools: Sequence[FakeTool]) -> list[dict[str, Any]]:
    """Each tool asked three different things."""
    return [{kind: {"tool": t.name, "queries": [example_args(t, i) for i in (1, 2, 3)]}} for t in tools]
