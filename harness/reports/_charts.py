"""The report's charts, as inline SVG: what the suite did at a glance, and what each loop cost.

- ``category_chart``: the pass rate of each category, a bar per category;
- ``scenario_chart``: the tool executions and side effects of each scenario, two bars a row;
- ``cost_svg``: a scenario's cumulative estimated cost turn by turn (the loop's cost curve:
  a loop that re-sends a growing history costs more every turn).

Every label is laid out apart from the others (the browser test measures that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from toolchaos.reports._cost import usd

CHAR_W = 6.6  # a generous width of a character of the 11px labels
BAR, EFFECT_BAR, PASS, FAIL = "#495057", "#c92a2a", "#2f9e44", "#e03131"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _svg(cls: str, width: float, height: float, label: str, body: Sequence[str]) -> str:
    return (f'<svg class="chart {cls}" xmlns="http://www.w3.org/2000/svg" role="img" width="{_f(width)}" '
            f'height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" aria-label="{_e(label)}">'
            + "".join(body) + "</svg>")


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def category_chart(categories: Sequence[Mapping[str, Any]]) -> str:
    """The pass rate per category: a green bar for the passed share, red for the rest."""
    label_w, bar_w, row = 130, 360, 22
    body = []
    for i, c in enumerate(categories):
        y = 8 + i * row
        applied = int(c["scenarios"]) - int(c.get("not_applicable", 0))  # a rate of the scenarios that applied
        n = max(applied, 1)
        ok = c["passed"] / n * bar_w
        body.append(f'<text x="6" y="{y + 12}">{_e(_clip(str(c["category"]), 18))}</text>'
                    f'<rect class="bar-pass" x="{label_w}" y="{y + 2}" width="{_f(ok)}" height="13" fill="{PASS}"/>'
                    f'<rect class="bar-fail" x="{_f(label_w + ok)}" y="{y + 2}" width="{_f(bar_w - ok)}" height="13" '
                    f'fill="{FAIL}" fill-opacity="0.35"/>'
                    f'<text x="{label_w + bar_w + 8}" y="{y + 12}">{c["passed"]}/{applied} '
                    f'({round(100 * c["passed"] / n)}%)</text><title>{_e(c["category"])}: {c["passed"]} of '
                    f'{applied} applicable passed</title>')
    height = 16 + len(categories) * row
    return _svg("chart-categories", label_w + bar_w + 90, height, "pass rate per category", body)


def scenario_chart(scenarios: Sequence[Mapping[str, Any]]) -> str:
    """Executions (grey) and side effects (red) per scenario, on one scale, the figures at the bar's end."""
    label_w, bar_w, row = 300, 500, 18
    top = max([1, *(s["figures"]["executions"] for s in scenarios), *(s["figures"]["side_effects"] for s in scenarios)])
    body = [f'<text class="muted" x="{label_w}" y="12">executions</text>'
            f'<rect x="{label_w + 74}" y="4" width="10" height="8" fill="{BAR}"/>'
            f'<text class="muted" x="{label_w + 100}" y="12">side effects</text>'
            f'<rect x="{label_w + 180}" y="4" width="10" height="8" fill="{EFFECT_BAR}"/>']
    for i, s in enumerate(scenarios):
        y = 22 + i * row
        ex, fx = s["figures"]["executions"], s["figures"]["side_effects"]
        w1, w2 = ex / top * bar_w, fx / top * bar_w
        body.append(f'<text x="6" y="{y + 11}">{_e(_clip(str(s["id"]), 44))}</text>'
                    f'<rect class="bar-exec" x="{label_w}" y="{y + 1}" width="{_f(w1)}" height="7" fill="{BAR}"/>'
                    f'<rect class="bar-effect" x="{label_w}" y="{y + 8}" width="{_f(w2)}" height="6" '
                    f'fill="{EFFECT_BAR}"/><text x="{_f(label_w + max(w1, w2) + 6)}" y="{y + 11}">{ex} / {fx}</text>'
                    f'<title>{_e(s["id"])}: {ex} executions, {fx} side effects ({_e(s["verdict"])})</title>')
    return _svg("chart-scenarios", label_w + bar_w + 70, 30 + len(scenarios) * row,
                "executions and side effects per scenario", body)


def cost_svg(s: Mapping[str, Any]) -> str:
    """A scenario's cumulative estimated cost over its model turns, with labelled axes."""
    cum: list[float] = list(s["cost"]["cumulative_usd"])
    w, h, left, bottom, right, top = 360.0, 130.0, 64.0, 34.0, 14.0, 14.0
    pw, ph = w - left - right, h - top - bottom
    most = max(cum, default=0.0) or 1.0
    n = len(cum)

    def xy(i: int, v: float) -> str:
        x = left + (pw * i / (n - 1) if n > 1 else pw / 2)
        return f"{_f(x)},{_f(top + ph - v / most * ph)}"

    body = [f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#adb5bd"/>'
            f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#adb5bd"/>',
            f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_e(usd(max(cum, default=0.0)))}</text>',
            f'<text x="{left - 4}" y="{top + ph}" text-anchor="end">$0</text>']
    if n:
        pts = " ".join(xy(i, v) for i, v in enumerate(cum))
        body.append(f'<polyline class="cost-line" points="{pts}" fill="none" stroke="#1c7ed6" stroke-width="2"/>')
        body += [f'<text x="{left}" y="{top + ph + 13}" text-anchor="start">1</text>']
        if n > 1:
            body.append(f'<text x="{left + pw}" y="{top + ph + 13}" text-anchor="end">{n}</text>')
    body.append(f'<text class="muted" x="{_f(left + pw / 2)}" y="{h - 6}" text-anchor="middle">model turn '
                f'(cumulative cost, estimate)</text>')
    return _svg("chart-cost", w, h, f"cumulative cost of {s['id']}", body)
