"""The trace: a run's events in order, written as JSON Lines, and the readable table.

The events themselves (their kinds, keys and key order) are defined in
``toolchaos._internal.events``. Traces are deterministic: the same seed gives
byte-identical files in any process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from toolchaos._internal.events import Event, ModelEvent, ToolEvent
from toolchaos._internal.files import open_new
from toolchaos.errors import printable

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode

ARGS_WIDTH = 96  # a table's arguments column: whole up to here, then the key fields whole and the rest shortened
KEY_FIELD = re.compile(r"(^|_)(ids?|keys?|amount|amounts|total|price|quantity|currency|account|to|email)$|idempot",
                       re.IGNORECASE)
_SHORT = 12  # what is left of a value that is not a key field, when the arguments do not fit


class Trace:
    __slots__ = ("events", "path")

    def __init__(self, events: list[Event] | None = None) -> None:
        self.events: list[Event] = events if events is not None else []
        self.path: Path | None = None

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of_kind(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e["kind"] in kinds]

    @property
    def tool_events(self) -> list[ToolEvent]:
        return [e for e in self.events if e["kind"] == "tool"]

    @property
    def model_events(self) -> list[ModelEvent]:
        return [e for e in self.events if e["kind"] == "model"]

    def jsonl(self) -> str:
        return "".join(_encode(e) + "\n" for e in self.events)

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        # A lone surrogate (agent text that is not valid Unicode) is written as JSON's own escape,
        # \udXXX, which reads back as the same string: the file stays valid, nothing is lost.
        with open_new(p) as fh:  # never through a symbolic link planted in a shared artifacts directory
            fh.write(self.jsonl().encode("utf-8", "backslashreplace"))
        self.path = p
        return p

    @classmethod
    def read(cls, path: str | Path) -> Trace:
        with Path(path).open(encoding="utf-8") as fh:
            t = cls([json.loads(line) for line in fh if line.strip()])
        t.path = Path(path)
        return t

    def table(self, around: int | None = None, radius: int = 6, width: int = ARGS_WIDTH) -> str:
        """A readable table of events; ``around`` centres it on one event's ``seq``.

        Arguments are shown whole up to ``width`` characters, and beyond it the key fields (amounts,
        ids, idempotency and other keys) stay whole while the rest is shortened; the effects column
        says what each event applied (``+1``) and, after it, the tool's total so far.
        """
        events = self.events
        if around is not None:
            idx = next((i for i, e in enumerate(events) if e.get("seq") == around), len(events) - 1)
            lo, hi = max(0, idx - radius), min(len(events), idx + radius + 1)
            rows, marked = events[lo:hi], around
            head = [] if lo == 0 else [f"  ... {lo} earlier events"]
            tail = [] if hi == len(events) else [f"  ... {len(events) - hi} later events"]
        else:
            rows, marked, head, tail = events, None, [], []
        return "\n".join(head + render_rows(rows, marked, width, applied=_applied(events)) + tail)


_COLS = ("seq", "step", "t", "kind", "tool", "args", "outcome", "exec", "effects")


def _t_cell(e: Event, width: int) -> str:
    return f"{e['t']:.1f}s"


def _tool_cell(e: Event, width: int) -> str:
    if e["kind"] == "model":
        return ", ".join(c["tool"] for c in e["calls"]) or "(final answer)"
    return str(e.get("tool", ""))




def is_key_field(name: str) -> bool:
    """An argument a reader must see whole: an amount, an id, an idempotency or other key, a recipient."""
    return bool(KEY_FIELD.search(name))


def args_text(args: Mapping[str, object], width: int = ARGS_WIDTH) -> str:
    """A call's arguments as compact JSON: whole when they fit, else the key fields whole and first."""
    whole = _encode(args)
    if len(whole) <= width or not isinstance(args, Mapping):
        return whole
    keys = {k: v for k, v in args.items() if is_key_field(str(k))}
    rest = {k: _shortened(v) for k, v in args.items() if k not in keys}
    text = _encode({**keys, **rest})
    if len(text) <= width or not keys:
        return _clip(text, max(width, len(_encode(keys)) + 2))
    return _encode(keys)[:-1] + (",…}" if rest else "}")  # every key field whole, the rest left out


def _shortened(value: object) -> object:
    if isinstance(value, str) and len(value) > _SHORT:
        return value[:_SHORT - 1] + "…"
    if isinstance(value, (dict, list)) and len(_encode(value)) > _SHORT:
        return "…"
    return value


def _args_cell(e: Event, width: int) -> str:
    if e["kind"] == "model":
        text = e["final"]
        return _clip(json.dumps(text) if text is not None else f"{len(e['calls'])} call(s)", width)
    if e["kind"] == "end":
        return _clip(str(e["reason"] or e["error"] or ""), width)
    if e["kind"] == "side":
        return _clip(json.dumps(e["answer"], ensure_ascii=False), width)
    args = e.get("args", {})
    return args_text(args, width) if isinstance(args, Mapping) else _clip(_encode(args), width)


def _outcome_cell(e: Event, width: int) -> str:
    if e["kind"] == "tool":
        return f"{e['class']}/{e['code']}"
    if e["kind"] == "refusal":
        return f"REFUSED {e['guard'] or ''}".strip()
    if e["kind"] == "end":
        return str(e["state"])
    if e["kind"] == "model":
        return f"{e['tokens_in']}+{e['tokens_out']} tok"
    if e["kind"] == "side":
        return f"SIDE {e['why']}"
    return e["kind"].upper()


_EXEC = {"tool": "yes", "refusal": "no", "skipped": "no", "late": "LATE"}


def _exec_cell(e: Event, width: int) -> str:
    return _EXEC.get(e["kind"], "")


def _applied(events: Iterable[Event]) -> dict[int, int]:
    """seq -> the side effects that event applied (the trace's ``effects`` is the tool's running total)."""
    last: dict[str, int] = {}
    out: dict[int, int] = {}
    for e in events:
        if e["kind"] == "tool" and e["effects"] is not None:
            total, tool = e["effects"], e["tool"]
            out[e["seq"]] = total - last.get(tool, 0)
            last[tool] = total
    return out


# A function per column that is not the event's own value (seq, step, kind are).
_CELLS: dict[str, Callable[[Event, int], str]] = {"t": _t_cell, "tool": _tool_cell, "args": _args_cell,
                                                  "outcome": _outcome_cell, "exec": _exec_cell}


def _cell(e: Event, col: str, width: int, applied: Mapping[int, int] | None) -> str:
    if col == "effects":  # what this event applied, then the tool's total
        total = e.get("effects")
        if total is None:
            return ""
        new = applied.get(e["seq"]) if applied is not None else None
        return str(total) if new is None else f"+{new} ({total})"
    cell = _CELLS.get(col)
    return cell(e, width) if cell is not None else str(e.get(col, ""))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_rows(rows: Iterable[Event], marked: int | None = None, width: int = ARGS_WIDTH,
                applied: Mapping[int, int] | None = None) -> list[str]:
    """The table's lines; ``applied`` (seq -> effects applied by that event) makes the effects column per event."""
    rows = list(rows)
    applied = _applied(rows) if applied is None else applied
    table = [list(_COLS)] + [[printable(_cell(e, c, width, applied)) for c in _COLS] for e in rows]
    marks = ["  "] + [">>" if e.get("seq") == marked else "  " for e in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(_COLS))]
    return [m + " " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for m, r in zip(marks, table)]
