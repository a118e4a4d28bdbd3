"""The trace: one event per model turn and per tool call, written as JSON Lines.

Event kinds:
- ``model``: a model turn (the calls it asked for, or its final text, and token usage)
- ``tool``: an executed tool call (normalised arguments, fingerprint, outcome class and
  code, virtual time, effect-ledger count after it)
- ``refusal``: a call the runtime refused before execution (with the guard it named)
- ``skipped``: a call the model asked for that the runtime never executed nor refused
- ``late``: a tool call that arrived after the run had ended (a leftover thread)
- ``end``: how the run ended (terminal state, guard, harness stop, error)

Traces are deterministic: the same seed gives byte-identical files in any process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


class Trace:
    __slots__ = ("events", "path")

    def __init__(self, events: list[dict[str, Any]] | None = None) -> None:
        self.events: list[dict[str, Any]] = events if events is not None else []
        self.path: Path | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] in kinds]

    @property
    def tool_events(self) -> list[dict[str, Any]]:
        return self.of_kind("tool")

    @property
    def model_events(self) -> list[dict[str, Any]]:
        return self.of_kind("model")

    def jsonl(self) -> str:
        return "".join(_encode(e) + "\n" for e in self.events)

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.jsonl(), encoding="utf-8")
        self.path = p
        return p

    @classmethod
    def read(cls, path: str | Path) -> Trace:
        with Path(path).open(encoding="utf-8") as fh:
            t = cls([json.loads(line) for line in fh if line.strip()])
        t.path = Path(path)
        return t

    def table(self, around: int | None = None, radius: int = 6, width: int = 48) -> str:
        """A readable table of events; ``around`` centres it on one event's ``seq``."""
        events = self.events
        if around is not None:
            idx = next((i for i, e in enumerate(events) if e.get("seq") == around), len(events) - 1)
            lo, hi = max(0, idx - radius), min(len(events), idx + radius + 1)
            rows, marked = events[lo:hi], around
            head = [] if lo == 0 else [f"  ... {lo} earlier events"]
            tail = [] if hi == len(events) else [f"  ... {len(events) - hi} later events"]
        else:
            rows, marked, head, tail = events, None, [], []
        return "\n".join(head + render_rows(rows, marked, width) + tail)


_COLS = ("seq", "step", "t", "kind", "tool", "args", "outcome", "exec", "effects")


def _cell(e: dict[str, Any], col: str, width: int) -> str:
    kind = e["kind"]
    if col == "t":
        return f"{e.get('t', 0):.1f}s"
    if col == "tool":
        if kind == "model":
            return ", ".join(c["tool"] for c in e.get("calls", [])) or "(final answer)"
        return str(e.get("tool", ""))
    if col == "args":
        if kind == "model":
            text = e.get("final")
            return _clip(json.dumps(text) if text is not None else f"{len(e.get('calls', []))} call(s)", width)
        if kind == "end":
            return _clip(str(e.get("reason") or e.get("error") or ""), width)
        return _clip(_encode(e.get("args", {})), width)
    if col == "outcome":
        if kind == "tool":
            return f"{e['class']}/{e['code']}"
        if kind == "refusal":
            return f"REFUSED {e.get('guard') or ''}".strip()
        if kind == "end":
            return str(e.get("state"))
        if kind == "model":
            return f"{e.get('tokens_in', 0)}+{e.get('tokens_out', 0)} tok"
        return str(kind).upper()
    if col == "exec":
        return {"tool": "yes", "refusal": "no", "skipped": "no", "late": "LATE"}.get(kind, "")
    if col == "effects":
        v = e.get("effects")
        return "" if v is None else str(v)
    return str(e.get(col, ""))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_rows(rows: Iterable[dict[str, Any]], marked: int | None = None, width: int = 48) -> list[str]:
    table = [list(_COLS)] + [[_cell(e, c, width) for c in _COLS] for e in rows]
    marks = ["  "] + [">>" if e.get("seq") == marked else "  " for e in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(_COLS))]
    return [m + " " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for m, r in zip(marks, table)]
