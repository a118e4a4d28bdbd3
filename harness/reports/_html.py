"""report.html: one self-contained page (no network, no external file) with a timeline per run.

The comparison with a baseline (when given) comes first, then the summary, the charts
(``_charts``) and the table of scenarios. The timeline is an inline SVG as wide as the page,
one column per trace event in order, one lane per participant:

- **model** lane: a dot per model turn that asked for tool calls, a diamond for a final
  answer; the turn numbers above it, as many as fit apart;
- one lane per **tool**: a mark per executed call whose shape and colour say its outcome
  class (``class_shape``: SUCCESS a block, RETRYABLE a triangle up, PRECONDITION a block
  with its top cut, FATAL a triangle down, PENDING a notched block); a grey crossed block
  for a call the runtime refused before execution; a dashed outline for a call asked for
  but never handled; purple for a call after the end;
- **effects** lane: a square where a side effect really happened (the ledger), red
  when that operation key had already been applied (a duplicate);
- a red dashed line where an invariant broke, its label in the first row above the lanes
  where it touches no other, and a black line at the end with the terminal state.

The columns are event order, not time: agents do many things at the same virtual instant,
and a retry storm at t=0 would collapse into one pixel. The time axis under them is
labelled in virtual seconds. Every mark has a ``<title>`` (hover text) with the event's
details.

A tiny inline script marks the page with what the browser actually laid out, on ``<html>``:
``data-timelines-drawn`` (timelines with a non-empty box), ``data-charts``, ``data-axes``
(time ticks), ``data-labels`` and ``data-label-overlaps`` (pairs of SVG labels whose boxes
intersect, with ``data-overlap-examples``), ``data-index-columns`` (the scenario table's column
headers), ``data-index-shown`` (those in view without scrolling) and ``data-index-reachable``
(those within its scrolling box's range), which the project's browser test reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from toolchaos._internal.events import Event
from toolchaos._internal.trace import Trace
from toolchaos.reports._charts import category_chart, cost_svg, scenario_chart
from toolchaos.reports._cost import usd
from toolchaos.reports._markdown import (
    advisory,
    advisory_text,
    agent_text,
    applicable_text,
    cost_text,
    coverage_line,
    coverage_totals,
    ended_line,
    first_break,
    fixes_text,
    isolation_line,
    na_count,
    not_applicable_by_reason,
    scenario_cost_text,
    shard_text,
    short,
    waste_line,
    waste_totals,
    where,
)
from toolchaos.reports._trials import required_text

CLASS_COLOURS = {"SUCCESS": "#2f9e44", "RETRYABLE": "#f76707", "PRECONDITION": "#e6a700", "FATAL": "#e03131",
                 "PENDING": "#1c7ed6"}
REFUSAL, SKIPPED, LATE, MODEL, EFFECT, DUP, BREAK = ("#6c757d", "#868e96", "#ae3ec9", "#343a40", "#212529",
                                                      "#c92a2a", "#c92a2a")
LABEL_W, LANE_H, BOTTOM, RIGHT = 118, 22, 34, 150
MAX_TRACE_ROWS = 400

CSS = """
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--ok:#2f9e44;--bad:#c92a2a;--warn:#e67700;--bg2:#f8f9fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);
 margin:0 auto;max-width:1180px;padding:24px}
h1{font-size:22px;margin:0 0 12px}h2{font-size:18px;margin:28px 0 10px}h3{font-size:16px;margin:0 0 6px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--bg2);border:1px solid var(--line);padding:8px;overflow:auto;max-height:480px}
table{border-collapse:collapse;margin:8px 0 12px}th,td{border:1px solid var(--line);padding:4px 8px;
 text-align:left;vertical-align:top}th{background:var(--bg2)}td.n{text-align:right}
.summary{border:2px solid var(--line);border-radius:8px;padding:16px 20px}
.summary.certified{border-color:var(--ok)}.summary.not-certified{border-color:var(--bad)}
.verdict{font-size:20px;font-weight:700;margin:0 0 10px}
.certified .verdict{color:var(--ok)}.not-certified .verdict{color:var(--bad)}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:0 0 8px}dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0}
.badge{display:inline-block;min-width:44px;text-align:center;border-radius:4px;padding:0 6px;color:#fff;
 font-size:12px;font-weight:700;margin-right:6px}
.badge.pass{background:var(--ok)}.badge.fail{background:var(--bad)}.badge.error{background:var(--warn)}
.badge.na{background:var(--muted)}
.yes{color:var(--ok);font-weight:700}.no{color:var(--bad);font-weight:700}
article.scenario{border:1px solid var(--line);border-left:6px solid var(--ok);border-radius:6px;
 padding:12px 16px;margin:14px 0}
article.scenario.fail{border-left-color:var(--bad)}article.scenario.error{border-left-color:var(--warn)}
article.scenario.na{border-left-color:var(--muted)}
.muted{color:var(--muted)}.scroll{overflow-x:auto}
td.why{color:var(--muted);font-size:.9em}p.waste.high{color:var(--warn)}
svg.timeline{display:block;margin:8px 0}svg text{font:11px system-ui,sans-serif;fill:#343a40}
svg .lane-bg{fill:#f8f9fa}svg .axis{stroke:#adb5bd}
tr.broke td{background:#fff5f5}
table.invariants td:first-child,table.invariants td:nth-child(4){white-space:nowrap}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0 10px;font-size:12px}
.legend .key{display:inline-flex;align-items:center;gap:5px}
svg.timeline{width:100%;height:auto}.timeline-box{width:100%}
.cost-row{display:flex;flex-wrap:wrap;gap:8px 20px;align-items:flex-start}.cost-row p{flex:1;min-width:280px}
.charts{display:flex;flex-wrap:wrap;gap:12px 32px}.charts figure{margin:0}
.charts figcaption{font-weight:600;margin-bottom:4px}
td.sid{min-width:240px}td.sid .desc{color:var(--muted);font-size:.85em}table.index{font-size:13px}
table.index th,table.index td{padding:4px 6px}
p.description{font-style:italic}
.baseline{border:2px solid var(--line);border-radius:8px;padding:8px 16px;margin-bottom:16px}
.baseline.regressed{border-color:var(--bad)}
"""

SCRIPT = """
(function(){var n=0,svgs=document.querySelectorAll('svg.timeline');
for(var i=0;i<svgs.length;i++){var s=svgs[i];var b=s.getBBox();
if(b.width>0&&b.height>0&&s.querySelectorAll('.ev').length>0){n++;s.setAttribute('data-drawn','true');}}
var root=document.documentElement;root.setAttribute('data-timelines-drawn',String(n));
var all=document.querySelectorAll('svg'),bad=[],labels=0;
for(var j=0;j<all.length;j++){var t=all[j].querySelectorAll('text'),r=[];
for(var k=0;k<t.length;k++){var q=t[k].getBoundingClientRect();if(q.width>0){r.push([q,t[k].textContent]);}}
labels+=r.length;
for(var a=0;a<r.length;a++){for(var c=a+1;c<r.length;c++){var p=r[a][0],o=r[c][0];
if(p.left<o.right-0.5&&o.left<p.right-0.5&&p.top<o.bottom-0.5&&o.top<p.bottom-0.5){bad.push(r[a][1]+' / '+r[c][1]);}}}}
root.setAttribute('data-labels',String(labels));root.setAttribute('data-label-overlaps',String(bad.length));
root.setAttribute('data-overlap-examples',bad.slice(0,5).join(' | '));
root.setAttribute('data-charts',String(document.querySelectorAll('svg.chart').length));
root.setAttribute('data-axes',String(document.querySelectorAll('svg.timeline .time-axis .tick').length));
var ix=document.querySelector('table.index');if(ix){var box=ix.parentElement,br=box.getBoundingClientRect(),
ox=getComputedStyle(box).overflowX,scrolls=ox==='auto'||ox==='scroll',hs=ix.querySelectorAll('th'),
names=[],shown=[],reach=[];
for(var m=0;m<hs.length;m++){var h=hs[m].getBoundingClientRect(),name=hs[m].textContent;names.push(name);
if(h.left>=br.left-0.5&&h.right<=br.right+0.5){shown.push(name);}
if(h.left>=br.left-0.5&&(h.right<=br.right+0.5||(scrolls&&h.right<=br.left+box.scrollWidth+0.5))){reach.push(name);}}
root.setAttribute('data-index-columns',names.join('|'));root.setAttribute('data-index-shown',shown.join('|'));
root.setAttribute('data-index-reachable',reach.join('|'));}})();
"""


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def breakable(name: Any) -> str:
    """``name`` escaped, with a line-break opportunity after each dot and underscore: an invariant
    name (``bounded.virtual_seconds``), an end state (``STOPPED_LOOP_GUARD``) may wrap in a narrow
    table column instead of widening the table past the page."""
    return re.sub(r"([._])", r"\1<wbr>", e(name))


def anchor(sid: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in sid)


# --- the timeline ------------------------------------------------------------------------


def _event_title(ev: Mapping[str, Any]) -> str:
    head = f"#{ev.get('seq')} step {ev.get('step')} t={ev.get('t', 0):g}s"
    kind = ev["kind"]
    if kind == "model":
        if ev.get("calls"):
            asked = ", ".join(f"{c['tool']}({json.dumps(c.get('args', {}), sort_keys=True)})" for c in ev["calls"])
            return f"{head} model asks: {asked} [{ev.get('tokens_in', 0)}+{ev.get('tokens_out', 0)} tokens]"
        return f"{head} model answers: {ev.get('final')!r} [{ev.get('tokens_in', 0)}+{ev.get('tokens_out', 0)} tokens]"
    args = json.dumps(ev.get("args", {}), sort_keys=True)
    if len(args) > 160:
        args = args[:159] + "…"
    if kind == "tool":
        eff = f" (side effects of {ev['tool']} so far: {ev['effects']})" if ev.get("effects") is not None else ""
        ra = f" retry_after={ev['retry_after']:g}s" if ev.get("retry_after") else ""
        return f"{head} {ev['tool']}{args} -> {ev.get('class')}/{ev.get('code')}{ra}{eff}"
    if kind == "refusal":
        return f"{head} REFUSED {ev['tool']}{args} by {ev.get('guard')}: {ev.get('reason')}"
    if kind == "skipped":
        return f"{head} {ev['tool']} asked for, never executed nor refused"
    if kind == "late":
        return f"{head} {ev['tool']}{args} called after the run ended"
    if kind == "side":
        return f"{head} side request ({ev.get('why')}), answered without the policy: {ev.get('answer')!r}"
    if kind == "end":
        return f"{head} end: {ev.get('state')} {ev.get('reason') or ev.get('error') or ''}".rstrip()
    return head


VIEW_W = 1120  # the timeline's drawing width; the SVG scales to the page (width 100%)
CHAR_W = 6.6  # a generous width of one character of the 11px labels: laid out apart, they never touch
ROW_H = 15  # a row of invariant labels above the lanes (11px text is about 13px high)
TURN_ROW = 18  # the row of turn numbers above the model lane


def text_width(text: str) -> float:
    return len(text) * CHAR_W + 2


@dataclass(frozen=True)
class _Layout:
    """Where things go in one timeline: a column per event (the end apart), a lane per participant."""

    body: list[Mapping[str, Any]]  # the events drawn as columns: all but the end
    lanes: list[str]  # model, each tool, effects
    label_rows: int  # rows of invariant labels above the lanes
    col: float  # a column's width

    @property
    def top(self) -> int:
        return 6 + self.label_rows * ROW_H + TURN_ROW

    @property
    def lane_y(self) -> dict[str, int]:
        return {name: self.top + i * LANE_H for i, name in enumerate(self.lanes)}

    @property
    def index(self) -> dict[Any, int]:
        return {ev.get("seq"): i for i, ev in enumerate(self.body)}

    @property
    def bottom(self) -> int:
        return self.top + len(self.lanes) * LANE_H

    @property
    def width(self) -> float:
        return float(VIEW_W)

    @property
    def height(self) -> int:
        return self.bottom + BOTTOM + 8

    @property
    def endx(self) -> float:
        return LABEL_W + len(self.body) * self.col + 2

    @property
    def half(self) -> float:
        """Half a block's width (a wide column keeps a narrow block: the gaps show the order)."""
        return min(max(self.col - 2.0, 2.0), 24.0) / 2

    def x(self, i: int) -> float:
        return LABEL_W + i * self.col + self.col / 2


def _lanes_of(s: Mapping[str, Any], body: Sequence[Mapping[str, Any]]) -> list[str]:
    tools: list[str] = []
    for ev in body:
        if ev.get("tool") and ev["kind"] != "model" and ev["tool"] not in tools:
            tools.append(ev["tool"])
    tools += [t for t in s.get("executions", {}) if t not in tools]
    return ["model", *tools] + (["effects"] if s.get("side_effects") or s.get("effects") else [])


def _layout(s: Mapping[str, Any], events: Sequence[Event]) -> _Layout:
    body: list[Mapping[str, Any]] = [ev for ev in events if ev["kind"] != "end"]
    col = (VIEW_W - LABEL_W - RIGHT) / max(len(body), 1)  # the columns fill the width
    lay = _Layout(body=body, lanes=_lanes_of(s, body), label_rows=1, col=col)
    rows = max((row for _, _, _, row in _break_labels(lay, s.get("invariants", []))), default=0) + 1
    return _Layout(body=body, lanes=lay.lanes, label_rows=rows, col=col)


def _lanes(lay: _Layout) -> list[str]:
    """Every other lane shaded, and each lane's label."""
    out = []
    for i, name in enumerate(lay.lanes):
        y = lay.lane_y[name]
        if i % 2 == 0:
            out.append(f'<rect class="lane-bg" x="0" y="{y}" width="{_f(lay.width)}" height="{LANE_H}"/>')
        label = name if len(name) <= 17 else name[:16] + "…"
        out.append(f'<text class="lane-label" x="6" y="{y + 15}">{e(label)}</text>')
    return out


def _model_mark(lay: _Layout, cx: float, ev: Mapping[str, Any], title: str) -> str:
    """A dot for a turn that asked for tool calls, a diamond for a final answer."""
    my = lay.lane_y["model"] + LANE_H / 2
    r = max(min(lay.col / 2 - 1, 5.0), 1.5)
    if ev.get("calls"):
        return f'<circle class="ev ev-model" cx="{_f(cx)}" cy="{_f(my)}" r="{_f(r)}" fill="{MODEL}">{title}</circle>'
    d = r + 1
    pts = f"{_f(cx)},{_f(my - d)} {_f(cx + d)},{_f(my)} {_f(cx)},{_f(my + d)} {_f(cx - d)},{_f(my)}"
    return f'<polygon class="ev ev-final" points="{pts}" fill="{MODEL}">{title}</polygon>'


def class_shape(cls: str, x0: float, y0: float, w: float, h: float) -> str:
    """The outline of an outcome class's mark in a box: told apart by shape, not by colour alone.

    SUCCESS a full block, RETRYABLE a triangle pointing up (try again), PRECONDITION a block
    with its top cut (a wall), FATAL a triangle pointing down, PENDING a block with a notch
    (not yet); an unknown class a plain block.
    """
    x1, y1, xm = x0 + w, y0 + h, x0 + w / 2
    pts = {
        "RETRYABLE": [(xm, y0), (x1, y1), (x0, y1)],
        "FATAL": [(x0, y0), (x1, y0), (xm, y1)],
        "PRECONDITION": [(x0, y0 + h * 0.35), (x1, y0 + h * 0.35), (x1, y1), (x0, y1)],
        "PENDING": [(x0, y0), (x1, y0), (x1, y1), (xm, y0 + h * 0.6), (x0, y1)],
    }.get(cls, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
    return " ".join(f"{_f(px)},{_f(py)}" for px, py in pts)


def _tool_mark(lay: _Layout, cx: float, ev: Mapping[str, Any], title: str) -> str | None:
    """A block in the tool's lane: executed (shape and colour by class), refused (crossed), never handled, late."""
    kind, half = ev["kind"], lay.half
    y0 = lay.lane_y[ev["tool"]] + 4
    h = LANE_H - 8
    rect = f'x="{_f(cx - half)}" y="{y0}" width="{_f(2 * half)}" height="{h}"'
    if kind == "tool":
        cls = str(ev.get("class"))
        colour = CLASS_COLOURS.get(cls, "#adb5bd")
        pts = class_shape(cls, cx - half, y0, 2 * half, h)
        return f'<polygon class="ev ev-tool cls-{e(cls)}" points="{pts}" fill="{colour}">{title}</polygon>'
    if kind == "refusal":
        cross = ""
        if half >= 3:
            cross = (f'<path d="M{_f(cx - half + 1)},{y0 + 1}L{_f(cx + half - 1)},{y0 + h - 1}M{_f(cx + half - 1)},'
                     f'{y0 + 1}L{_f(cx - half + 1)},{y0 + h - 1}" stroke="#fff" stroke-width="1.5"/>')
        return f'<g class="ev ev-refusal"><rect {rect} fill="{REFUSAL}"/>{cross}{title}</g>'
    if kind == "skipped":
        return f'<rect class="ev ev-skipped" {rect} fill="none" stroke="{SKIPPED}" stroke-dasharray="2,2">{title}</rect>'
    if kind == "late":
        return f'<rect class="ev ev-late" {rect} fill="{LATE}">{title}</rect>'
    if kind == "side":  # in its model API's lane: a request the wire answered itself, no turn
        return f'<rect class="ev ev-side" {rect} fill="none" stroke="{SKIPPED}">{title}</rect>'
    return None


def _event_marks(lay: _Layout) -> list[str]:
    out = []
    for i, ev in enumerate(lay.body):
        title = f"<title>{e(_event_title(ev))}</title>"
        if ev["kind"] == "model":
            out.append(_model_mark(lay, lay.x(i), ev, title))
        elif ev.get("tool") in lay.lane_y:
            mark = _tool_mark(lay, lay.x(i), ev, title)
            if mark is not None:
                out.append(mark)
    return out


def _turn_numbers(lay: _Layout) -> list[str]:
    """The model turn's number above each model mark, as many as fit without touching."""
    out, right = [], 0.0
    y = lay.top - 4
    for i, ev in enumerate(lay.body):
        if ev["kind"] != "model":
            continue
        label, cx = str(ev.get("step")), lay.x(i)
        w = text_width(label)
        if cx - w / 2 < right + 3:
            continue
        right = cx + w / 2
        out.append(f'<text class="turn" x="{_f(cx)}" y="{y}" text-anchor="middle">{e(label)}</text>')
    if out:
        out.insert(0, f'<text class="turn muted" x="6" y="{y}">turn</text>')
    return out


def _effect_marks(lay: _Layout, effects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Side effects that really happened (the ledger), duplicates in red; replays by the API hollow."""
    if "effects" not in lay.lane_y:
        return []
    out = []
    seen: dict[tuple[str, str], int] = {}
    ey = lay.lane_y["effects"] + LANE_H / 2
    index = lay.index
    side = max(min(lay.col - 3, 9.0), 2.0)
    for f in effects:
        if f.get("replayed") and f["seq"] in index:  # answered from its key: nothing happened again
            cx = lay.x(index[f["seq"]])
            out.append(f'<rect class="ev ev-replay" x="{_f(cx - side / 2)}" y="{_f(ey - side / 2)}" '
                       f'width="{_f(side)}" height="{_f(side)}" fill="none" stroke="{EFFECT}"><title>#{f["seq"]} '
                       f'{e(f["tool"])}: replayed by the API, not applied again: operation {e(f["key"])}</title></rect>')
        if not f["applied"] or f["seq"] not in index:
            continue
        k = (f["tool"], f["key"])
        seen[k] = seen.get(k, 0) + 1
        dup = seen[k] > 1
        colour = DUP if dup else EFFECT
        what = f"duplicate #{seen[k]} of operation" if dup else "side effect applied: operation"
        known = " (the caller could not know: timeout)" if f["status"] == "unknown" else ""
        cx = lay.x(index[f["seq"]])
        out.append(f'<rect class="ev ev-effect{" dup" if dup else ""}" x="{_f(cx - side / 2)}" y="{_f(ey - side / 2)}" '
                   f'width="{_f(side)}" height="{_f(side)}" fill="{colour}"><title>#{f["seq"]} {e(f["tool"])}: '
                   f'{e(what)} {e(f["key"])}{e(known)}</title></rect>')
    return out


def _break_labels(lay: _Layout, invariants: Sequence[Mapping[str, Any]]) -> list[tuple[float, str, list[str], int]]:
    """(line x, label, names, row) of each break: a label goes in the first row where it touches no other."""
    index, n = lay.index, len(lay.body)
    breaks: dict[int, list[str]] = {}
    for inv in invariants:
        for v in inv.get("violations", []):
            i = index.get(v.get("seq"), n)  # the end event, or no event: at the end line
            breaks.setdefault(i, []).append(v["invariant"])
    rows: list[float] = []  # the right end of the last label in each row
    out = []
    for i, names in sorted(breaks.items()):
        bx = lay.x(i) if i < n else lay.endx
        label = "✕ " + ", ".join(dict.fromkeys(names))
        w = text_width(label)
        x0 = bx + 3 if bx + 3 + w < lay.width else bx - 3 - w  # to the line's left when it would run off
        row = next((r for r, right in enumerate(rows) if right + 6 < x0), len(rows))
        if row == len(rows):
            rows.append(0.0)
        rows[row] = x0 + w
        out.append((bx, label, names, row))
    return out


def _break_marks(lay: _Layout, invariants: Sequence[Mapping[str, Any]]) -> list[str]:
    """A red dashed line where invariants broke, labelled with their names, labels apart."""
    out = []
    for bx, label, names, row in _break_labels(lay, invariants):
        ly = 6 + (row + 1) * ROW_H - 2
        tx, anchor_attr = (bx + 3, "") if bx + 3 + text_width(label) < lay.width else (bx - 3, ' text-anchor="end"')
        out.append(f'<g class="break"><line x1="{_f(bx)}" y1="{ly + 2}" x2="{_f(bx)}" y2="{lay.bottom}" '
                   f'stroke="{BREAK}" stroke-width="1.5" stroke-dasharray="4,3"/><text class="break-label" '
                   f'x="{_f(tx)}" y="{ly}"{anchor_attr} style="fill:{BREAK}">{e(label)}</text><title>invariant broke '
                   f'here: {e(", ".join(names))}</title></g>')
    return out


def _end_mark(lay: _Layout, s: Mapping[str, Any], end: Mapping[str, Any] | None) -> str:
    """A black line at the end with the terminal state and the virtual time."""
    state = end.get("state") if end else s.get("terminal_state")
    endx, bottom, top = lay.endx, lay.bottom, lay.top
    return (f'<g class="end"><line x1="{_f(endx)}" y1="{top}" x2="{_f(endx)}" y2="{bottom}" stroke="#212529" '
            f'stroke-width="2"/><text x="{_f(endx + 4)}" y="{top + 14}">{e(state)}</text>'
            f'<text x="{_f(endx + 4)}" y="{top + 28}" class="muted">{_f(s["figures"]["virtual_seconds"])} s</text>'
            f'<title>{e(_event_title(end) if end else state)}</title></g>')


def _axis(lay: _Layout) -> list[str]:
    """The time axis: virtual seconds under the columns, as many ticks as fit apart, and its title."""
    body, bottom = lay.body, lay.bottom
    out = [f'<g class="time-axis"><line class="axis" x1="{LABEL_W}" y1="{bottom + 2}" x2="{_f(lay.endx)}" '
           f'y2="{bottom + 2}"/>']
    right, last = -100.0, ""
    for i, ev in enumerate(body):
        tx, label = lay.x(i), _f(float(ev.get("t", 0)))
        w = text_width(label)
        if label == last or tx - w / 2 < right + 10:
            continue  # the same instant, or no room: the next new time gets the tick
        right, last = tx + w / 2, label
        out.append(f'<line class="axis" x1="{_f(tx)}" y1="{bottom + 2}" x2="{_f(tx)}" y2="{bottom + 6}"/>'
                   f'<text class="tick" x="{_f(tx)}" y="{bottom + 17}" text-anchor="middle">{label}</text>')
    out.append(f'<text class="axis-title muted" x="{LABEL_W}" y="{bottom + 31}">virtual time (seconds); one column '
               f'per trace event, in order →</text></g>')
    return out


def timeline_svg(s: Mapping[str, Any], events: Sequence[Event]) -> str:
    """The timeline picture of one run as an inline SVG element, as wide as the page."""
    lay = _layout(s, events)
    end = next((ev for ev in reversed(events) if ev["kind"] == "end"), None)
    n = len(lay.body)
    head = (f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" role="img" width="100%" '
            f'viewBox="0 0 {_f(lay.width)} {lay.height}" data-events="{n}" '
            f'aria-label="timeline of {e(s["id"])}: {n} events">')
    return "".join([head, *_lanes(lay), *_turn_numbers(lay), *_event_marks(lay),
                    *_effect_marks(lay, s.get("effects", [])), *_break_marks(lay, s.get("invariants", [])),
                    _end_mark(lay, s, end), *_axis(lay), "</svg>"])


def legend() -> str:
    """The key to the timelines: HTML that wraps on narrow screens, one tiny SVG per mark."""
    items: list[tuple[str, str]] = [(c.title(), f'<polygon points="{class_shape(c, 0, 3, 10, 12)}" fill="{col}"/>')
                                    for c, col in CLASS_COLOURS.items()]
    items += [
        ("Refused", f'<rect x="0" y="3" width="10" height="12" fill="{REFUSAL}"/>'),
        ("Never handled", f'<rect x="0" y="3" width="10" height="12" fill="none" stroke="{SKIPPED}" '
                          f'stroke-dasharray="2,2"/>'),
        ("Model turn", f'<circle cx="5" cy="9" r="4.5" fill="{MODEL}"/>'),
        ("Final answer", f'<polygon points="5,3 11,9 5,15 -1,9" fill="{MODEL}"/>'),
        ("Side effect", f'<rect x="1" y="5" width="8" height="8" fill="{EFFECT}"/>'),
        ("Duplicate effect", f'<rect x="1" y="5" width="8" height="8" fill="{DUP}"/>'),
        ("Invariant broke", f'<line x1="5" y1="0" x2="5" y2="18" stroke="{BREAK}" stroke-width="1.5" '
                            f'stroke-dasharray="4,3"/>'),
    ]
    parts = [f'<span class="key"><svg xmlns="http://www.w3.org/2000/svg" width="12" height="18" viewBox="-1 0 13 18" '
             f'aria-hidden="true">{mark}</svg>{e(label)}</span>' for label, mark in items]
    return f'<div class="legend" aria-label="legend">{"".join(parts)}</div>'


# --- the page ----------------------------------------------------------------------------


def _summary(report: Mapping[str, Any]) -> str:
    ok = report["certified"]
    agent, suite, harness, t = report["agent"], report["suite"], report["harness"], report["totals"]
    verdict = (f"CERTIFIED for {applicable_text(t)}, at level {report['level']} (required: "
               f"{report['required_level']})" if ok else
               f"NOT CERTIFIED: {applicable_text(t, passed=True)}; required level {report['required_level']}, "
               f"reached {report['level']}")
    if report.get("could_not_certify"):  # nothing was judged: not a level reached "none"
        verdict = f"COULD NOT CERTIFY: {report['could_not_certify']}"
    rows = [
        ("Agent", f"<code>{e(agent['ref'])}</code>{' ' + e(agent_text(agent)) if agent_text(agent) else ''}"),
        ("Suite", f"{e(suite['name'])}{' ' + e(suite['version']) if suite.get('version') else ''}, "
                  f"{suite['scenarios']} scenarios, <code>{e(suite['hash'][:19])}</code>"),
        ("Seed", e(report["seed"])),
        *([("Shard", e(shard_text(report["shard"])))] if report.get("shard") else []),
        ("Result", f"{t['passed']} passed, {t['failed']} failed, {t['errors']} errors{na_count(t)}"),
        ("Harness", f"toolchaos {e(harness['version'])}, Python {e(harness['python'])}"),
        ("Run", f"{e(report['started'])} to {e(report['ended'])}"),
        *([("Waste", e(waste_totals(report["waste"])))] if report["waste"]["graded"] else []),
        ("Cost", e(cost_text(report["cost"]))),
        ("Fault coverage", e(coverage_totals(report["coverage"]))
         + "".join(f"<br><span class=muted>never fired: {e(t)}</span>" for t in report["coverage"]["never_fired"])),
    ]
    out = [f'<section id="summary" class="summary {"certified" if ok else "not-certified"}" '
           f'data-certified="{str(ok).lower()}" data-level="{e(report["level"])}" '
           f'data-required="{e(report["required_level"])}">',
           f'<p class="verdict">{"✔" if ok else "✘"} {e(verdict)}</p>', '<dl class="meta">']
    out += [f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows]
    out += ["</dl>", "<h2>Levels</h2>",
            "<table class=\"levels\"><tr><th>Level</th><th>Meaning</th><th>Passed</th><th>Reached</th></tr>"]
    for name, lv in report["levels"].items():
        req = " (required)" if name == report["required_level"] else ""
        out.append(f"<tr><td><b>{e(name)}</b>{req}</td><td>{e(lv['meaning'])}</td>"
                   f"<td class=\"n\">{lv['passed']}/{lv['scenarios']}</td>"
                   f"<td>{'<span class=yes>yes</span>' if lv['reached'] else '<span class=no>no</span>'}</td></tr>")
    out += ["</table>", *_advisory(report), "<h2>By category</h2>",
            "<table class=\"categories\"><tr><th>Category</th><th>Scenarios</th><th>Passed</th><th>Failed</th>"
            "<th>Critical</th><th>Major</th><th>Minor</th></tr>"]
    for c in report["categories"]:
        sev = [f"{c['severity'][k]['passed']}/{c['severity'][k]['scenarios']}" if k in c["severity"] else "–"
               for k in ("critical", "major", "minor")]
        failed = c["failed"] + c["errors"]
        na = f" ({c['not_applicable']} N/A)" if c.get("not_applicable") else ""
        out.append(f"<tr><td>{e(c['category'])}</td><td class=n>{c['scenarios']}{na}</td><td class=n>{c['passed']}</td>"
                   f"<td class=n>{'<b class=no>' + str(failed) + '</b>' if failed else '0'}</td>"
                   + "".join(f"<td class=n>{x}</td>" for x in sev) + "</tr>")
    out += ["</table>", *_trials(report), *_not_applicable(report), "</section>"]
    return "\n".join(out)


def _trials(report: Mapping[str, Any]) -> list[str]:
    """The scenarios run as trials: passes, the Wilson interval, pass^k and pass@k for every k (none: nothing)."""
    stats = report.get("trials") or []
    if not stats:
        return []
    req = required_text(report)
    out = ['<h2 id="trials">Trials</h2>',
           '<p class="muted">A scenario run as n trials (trial i with seed + i) passes only if every trial passes. '
           "pass^k: the chance that k trials all pass; pass@k: that at least one of k passes (unbiased estimates "
           f"from the n).{' Required: ' + e(req) + '.' if req else ''}</p>",
           '<div class="scroll"><table class="trials"><tr><th>Scenario</th><th>Severity</th><th>Passed</th>'
           "<th>Verdict</th><th>Pass rate (95% Wilson)</th><th>k</th><th>pass^k</th><th>pass@k</th></tr>"]
    for st in stats:
        lo, hi = st["wilson_95"]
        ks = " ".join(str(k) for k in range(1, st["trials"] + 1))
        hat = " ".join(f"{x:.3f}" for x in st["pass_hat_k"])
        at = " ".join(f"{x:.3f}" for x in st["pass_at_k"])
        out.append(f'<tr><td><code>{e(st["id"])}</code></td><td>{e(st["severity"])}</td>'
                   f'<td class=n>{st["passed"]}/{st["trials"]}</td>'
                   f'<td><span class="badge {_css(st["verdict"])}">{e(st["verdict"].upper())}</span></td>'
                   f'<td class=n>{st["passed"] / st["trials"]:.2f} [{lo:.2f}, {hi:.2f}]</td>'
                   f"<td class=n>{ks}</td><td class=n>{hat}</td><td class=n>{at}</td></tr>")
    return [*out, "</table></div>"]


def _not_applicable(report: Mapping[str, Any]) -> list[str]:
    """The scenarios that did not apply to the agent's kind, by reason (none: nothing)."""
    by_reason = not_applicable_by_reason(report)
    if not by_reason:
        return []
    n = sum(len(ids) for ids in by_reason.values())
    out = [f'<h2 id="not-applicable">Not applicable ({n})</h2>',
           "<p>Not run: each needs what the agent's kind cannot do (the scenario's <code>needs</code>, the kind's "
           "capabilities); neither passed nor failed.</p>", "<ul class=\"not-applicable\">"]
    out += [f"<li>{', '.join(f'<code>{e(sid)}</code>' for sid in ids)}: {e(why)}</li>" for why, ids in by_reason.items()]
    return [*out, "</ul>"]


def _index(report: Mapping[str, Any]) -> str:
    out = ["<h2>Scenarios</h2>", "<div class=\"scroll\"><table class=\"index\"><tr><th>Verdict</th>"
           "<th>Scenario (description)</th><th>Category</th>"
           "<th>Severity</th><th>First broken</th><th>End state</th><th>Executions</th><th>Side effects</th>"
           "<th>Tokens</th><th>Cost</th><th>Waste</th></tr>"]
    for s in _ordered(report["scenarios"]):
        f = s["figures"]
        grade = s.get("grade")
        broke = f"<code>{breakable(s['first_broken'])}</code>" if s.get("first_broken") else ""
        out.append(f"<tr><td><span class=\"badge {_css(s['verdict'])}\">{e(s['verdict'].upper())}</span></td>"
                   f"<td class=sid><a href=\"#{anchor(s['id'])}\"><code>{e(s['id'])}</code></a>"
                   f"<div class=desc>{e(short(s.get('description')))}</div></td><td>{breakable(s['category'])}</td>"
                   f"<td>{e(s['severity'])}</td><td class=broke>{broke}</td><td>{breakable(s['terminal_state'] or '')}</td>"
                   f"<td class=n>{f['executions']}</td><td class=n>{f['side_effects']}</td>"
                   f"<td class=n>{f['tokens']:,}</td><td class=n>{e(usd(s['cost']['usd']))}</td>"
                   f"<td>{e(grade['level']) if grade else ''}</td></tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _charts(report: Mapping[str, Any]) -> str:
    return ('<h2>At a glance</h2><div class="charts" id="charts">'
            f'<figure><figcaption>Pass rate per category</figcaption>{category_chart(report["categories"])}</figure>'
            '<figure><figcaption>Executions / side effects per scenario</figcaption>'
            f'{scenario_chart([s for s in report["scenarios"] if s["verdict"] != NA])}</figure></div>')


def _baseline(d: Mapping[str, Any] | None) -> str:
    """What changed since the baseline report, first on the page."""
    if not d:
        return ""
    old, n = d["old"], len(d["regressions"])
    who = f"<code>{e(old['agent'])}</code>" + (f" {e(old['version'])}" if old.get("version") else "")
    out = [f'<section id="baseline" class="baseline{" regressed" if n else ""}" data-regressions="{n}" '
           f'data-fixes="{len(d["fixes"])}"><h2>Since the baseline</h2>',
           f"<p>Compared with {who} (level {e(old['level'])}, {old['passed']}/{old['scenarios']} passed): "
           f"<b>{n} regression{'' if n == 1 else 's'}</b>, {fixes_text(len(d['fixes']))}, {len(d['added'])} added, "
           f"{len(d['removed'])} removed, {len(d['changed'])} with changed figures.</p>"]
    moves = [("regression", "no", m) for m in d["regressions"]] + [("fixed", "yes", m) for m in d["fixes"]]
    if moves:
        out.append("<table class=\"moves\"><tr><th>Change</th><th>Scenario</th><th>Was</th><th>Now</th>"
                   "<th>Broken invariant</th></tr>")
        out += [f"<tr><td class={css}>{word}</td><td><code>{e(m['id'])}</code></td><td>{e(m['old'])}</td>"
                f"<td>{e(m['new'])}</td><td><code>{e(m['first_broken'])}</code></td></tr>" for word, css, m in moves]
        out.append("</table>")
    if d["changed"]:
        out.append(f"<details><summary>Changed figures ({len(d['changed'])})</summary><table><tr><th>Scenario</th>"
                   "<th>Figure</th><th>Was</th><th>Now</th></tr>")
        out += [f"<tr><td><code>{e(c['id'])}</code></td><td>{e(k)}</td><td class=n>{e(a)}</td><td class=n>{e(b)}</td>"
                "</tr>" for c in d["changed"] for k, (a, b) in c["figures"].items()]
        out.append("</table></details>")
    out.append("</section>")
    return "\n".join(out)


def _ordered(scenarios: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Failures and errors first, then passes, then the scenarios that did not apply."""
    rank = {"pass": 1, NA: 2}
    return sorted(scenarios, key=lambda s: rank.get(s["verdict"], 0))


NA = "n/a"


def _css(verdict: str) -> str:
    """A verdict as a CSS class name (``n/a`` has a slash)."""
    return "na" if verdict == NA else verdict


def _md_inline(text: str) -> str:
    """ended_line() is Markdown (bold); render its ** as <b>."""
    parts = e(text).split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def _invariant_rows(invariants: Sequence[Mapping[str, Any]]) -> list[str]:
    """One row per invariant that held, one per violation of one that broke."""
    out = []
    for inv in invariants:
        for vi in inv["violations"] or [None]:
            if vi is None:
                name, exp, act, at = inv["name"], inv["expected"], inv["actual"], where(inv)
                css, mark = "held", "<span class=yes>✔</span>"
            else:
                name, exp, act = vi["invariant"], vi["expected"], vi["actual"]
                at = f"step {vi['step']}, event #{vi['seq']}" if vi.get("seq") is not None else "end of run"
                css, mark = "broke", "<span class=no>✘</span>"
            why = inv.get("why") if vi is None or vi is inv["violations"][0] else None
            out.append(f"<tr class=\"{css}\"><td>{mark} <code>{e(name)}</code></td>"
                       f"<td>{e(exp)}</td><td>{e(act)}</td><td>{e(at)}</td><td class=why>{e(why or '')}</td></tr>")
    return out


def _side_effects(side_effects: Mapping[str, Mapping[str, Any]]) -> list[str]:
    if not side_effects:
        return []
    items = "; ".join(f"{e(t)}: {d['applied']} applied of {d['executions']} executions"
                      f"{f', {n} replayed by the API' if (n := d.get('replayed')) else ''}"
                      f"{', duplicates: ' + e(', '.join(d['duplicates'])) if d['duplicates'] else ''}"
                      for t, d in side_effects.items())
    return [f"<p>Side effects (ledger): {items}</p>"]


def _trace_details(s: Mapping[str, Any], events: Sequence[Event]) -> list[str]:
    """The trace table: whole, or around the first break (else the end) when it is long."""
    if not events:
        return []
    if len(events) > MAX_TRACE_ROWS:
        seq = first_break(s)
        table = Trace(list(events)).table(around=seq if seq is not None else events[-1].get("seq"), radius=40)
    else:
        table = Trace(list(events)).table(around=None)
    return [f"<details><summary>Trace ({len(events)} events; file <code>{e(s['trace'])}</code>)</summary>"
            f"<pre>{e(table)}</pre></details>"]


def _advisory(report: Mapping[str, Any]) -> list[str]:
    """The advisory scenarios' tally beside the levels, and which failed: reported apart, required by none."""
    text = advisory_text(report)
    if text is None:
        return []
    failed = report["advisory"]["failed"]
    links = ", ".join(f'<a href="#{anchor(sid)}"><code>{e(sid)}</code></a>' for sid in failed)
    return [f'<p class="advisory">{e(text)}{"; failed: " + links if failed else ""}.</p>']


def _scenario(s: Mapping[str, Any], events: Sequence[Event]) -> str:
    v = s["verdict"]
    out = [f'<article class="scenario {_css(v)}" id="{anchor(s["id"])}" data-id="{e(s["id"])}" '
           f'data-verdict="{e(v)}">',
           f'<h3><span class="badge {_css(v)}">{e(v.upper())}</span><code>{e(s["id"])}</code>: {e(s["title"])}</h3>',
           f'<p class="muted">{e(s["category"])}, {e(s["severity"])}'
           f'{", file " + e(s["file"]) if s.get("file") else ""}</p>']
    if v == NA:  # nothing ran: why, and nothing else
        out += [f"<p>Not applicable, not run: {e((s.get('not_applicable') or {}).get('reason'))}.</p>", "</article>"]
        return "\n".join(out)
    out.append(f"<p>{_md_inline(ended_line(s))}.</p>")
    if advisory(s):
        out.append(f'<p class="advisory">Advisory, required by no level: {e(s.get("severity_why"))}</p>')
    if s.get("description"):
        out.append(f'<p class="description">{e(s["description"])}</p>')
    if s.get("reason"):
        out.append(f"<p>Stop reason: {e(s['reason'])}</p>")
    if s.get("error"):
        out.append(f"<p>Error: <code>{e(s['error'])}</code></p>")
    if isolation_line(s):
        out.append(f"<p class=\"muted\">{e(isolation_line(s))}.</p>")
    if s.get("grade"):
        out.append(f"<p class=\"waste {e(s['grade']['level'])}\">{e(waste_line(s['grade']))}.</p>")
    out.append(f'<div class="timeline-box">{timeline_svg(s, events)}</div>')
    out.append(f'<div class="cost-row">{cost_svg(s)}<p class="cost">{e(scenario_cost_text(s))}.<br>'
               f'{e(coverage_line(s["coverage"]))}.</p></div>')
    out.append("<table class=\"invariants\"><tr><th>Invariant</th><th>Expected</th><th>Actual</th><th>Where</th>"
               "<th>Why</th></tr>")
    out += _invariant_rows(s["invariants"])
    out.append("</table>")
    out += _side_effects(s["side_effects"])
    if s.get("stop_report"):
        out.append("<details><summary>Stop report</summary><pre>"
                   f"{e(json.dumps(s['stop_report'], indent=2, ensure_ascii=False))}</pre></details>")
    out += _trace_details(s, events)
    out.append("</article>")
    return "\n".join(out)


def render_html(report: Mapping[str, Any], traces: Mapping[str, Sequence[Event]]) -> str:
    ok = report["certified"]
    word = "COULD NOT CERTIFY" if report.get("could_not_certify") else "CERTIFIED" if ok else "NOT CERTIFIED"
    title = f"toolchaos report: {report['agent']['ref']}: {word}"
    scenarios = "\n".join(_scenario(s, traces.get(s["trace"] or "", [])) for s in _ordered(report["scenarios"]))
    return "\n".join([
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<h1>toolchaos certification report</h1>",
        _baseline(report.get("baseline")),
        _summary(report),
        _charts(report),
        _index(report),
        "<h2>Timelines</h2>",
        f'<p class="muted">One column per trace event, in order, virtual seconds under them, model turns numbered '
        f'above; an outcome class has a shape as well as a colour; hover a mark for its details.</p>{legend()}',
        scenarios,
        f'<footer class="muted"><p>{e(report["schema"])} v{report["schema_version"]}; '
        f'report.json holds the same data.</p></footer>',
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
        "",
    ])
