"""The reports as a terminal table with details per session, or as one JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchaos.forensics._report import Cycle, SessionReport, seconds

_HEAD = ("session", "calls", "unique", "repeat", "top", "cycle", "no-progress", "gap", "tokens/turn", "verdict")


def render_table(reports: Sequence[SessionReport]) -> str:
    """The terminal report: one summary row per session, then the details of each session."""
    rows = [_HEAD, *(_summary(r) for r in reports)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEAD))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in reports:
        lines += _details(r)
    return "\n".join(lines)


def _summary(r: SessionReport) -> tuple[str, ...]:
    return (
        _clip(r.session, 36), f"{r.calls}" + (f"+{r.refused}r" if r.refused else ""),
        f"{'~' if r.approximate else ''}{r.unique}", f"{r.repeat_rate:.0%}",
        f"{r.top[0].count}x" if r.top else "-", _cycle_cell(r.cycle),
        str(r.longest_no_progress), seconds(r.interval_median) if r.interval_median is not None else "-",
        f"{r.tokens.per_turn:+g}" if r.tokens else "-", r.verdict.upper() if r.verdict != "healthy" else r.verdict)


def _details(r: SessionReport) -> list[str]:
    lines = ["", f"{r.session} ({r.format}, {r.source})", f"  verdict      {r.verdict}: {r.reason}",
             f"  calls        {r.calls} executed, {r.refused} refused, {r.polls} polls, {r.turns} model turns",
             f"  unique       {'~' if r.approximate else ''}{r.unique} fingerprint(s); repeat rate "
             f"{r.repeat_rate:.1%}"]
    lines += [f"  repeated     {t.count}x {t.text()} ({t.fp})" for t in r.top[:3]]
    if r.cycle and r.cycle.period == 2:
        lines.append(f"  A-B cycle    {r.cycle.a} <-> {r.cycle.b}: {r.cycle.calls} calls alternating")
    elif r.cycle:
        lines.append(f"  cycle        {' -> '.join(r.cycle.steps)} (period {r.cycle.period}): "
                     f"{r.cycle.calls} calls going round")
    lines.append(f"  no progress  longest streak {r.longest_no_progress} calls")
    lines.append(_intervals_line(r))
    if r.tokens:
        ratio = f", x{r.tokens.ratio:g}" if r.tokens.ratio else ""
        lines.append(f"  tokens       {r.tokens.first} -> {r.tokens.last} input tokens over {r.tokens.turns} turns "
                     f"({r.tokens.per_turn:+g} per turn{ratio})")
    if r.state:
        lines.append(f"  ended        {r.state}{f' (guard: {r.guard})' if r.guard else ''}")
    return lines


def _intervals_line(r: SessionReport) -> str:
    if r.interval_median is None:
        return "  intervals    n/a (the log has no times)"
    spread = f"{r.interval_spread:.2f}" if r.interval_spread is not None else "n/a"
    return f"  intervals    median {seconds(r.interval_median)}, spread {spread} over {seconds(r.duration)}"


def _cycle_cell(cycle: Cycle | None) -> str:
    """Calls in the longest cycle; ``/p3`` marks a round longer than A-B."""
    if cycle is None:
        return "-"
    return str(cycle.calls) if cycle.period == 2 else f"{cycle.calls}/p{cycle.period}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def as_json(reports: Sequence[SessionReport], files: Sequence[str] = (), events: int = 0) -> dict[str, Any]:
    """One JSON object: the files, the events read, every session's report and the verdict counts."""
    verdicts = [r.verdict for r in reports]
    return {"files": list(files), "events": events, "sessions": [r.as_dict() for r in reports],
            "summary": {v: verdicts.count(v) for v in ("looping", "suspicious", "healthy")}}
