"""Two reports compared: what a release changed, scenario by scenario.

``diff_reports(old, new)`` lists the **regressions** (passed before, not now), the **fixes**
(failed or errored before, pass now), the scenarios added and removed, and per scenario the
figures that changed (tool executions, side effects, tokens, estimated cost). A scenario that did not
apply on either side (``n/a``: an agent of another kind) is neither a regression nor a fix. It reads report
data (``load_report`` takes a report.json or the directory holding one); ``toolchaos diff``
prints it and a report written with a baseline carries it (``baseline`` in report.json) and
shows it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolchaos._internal.files import MAX_LOG_BYTES, read_capped
from toolchaos.errors import ReportError

READABLE_VERSIONS = (2, 3, 4, 5)  # the report schema versions a diff can read (the figures it compares are in both)
FIGURES = ("executions", "side_effects", "tokens", "cost_usd")


def load_report(path: str | Path) -> dict[str, Any]:
    """A report's data from a report.json or a report directory; a located error otherwise."""
    import json

    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    if not p.exists():
        raise ReportError(f"no report at {path} (give a report.json or the directory holding one)")
    try:
        data = json.loads(read_capped(p, MAX_LOG_BYTES).decode("utf-8"))  # a device or FIFO is refused, not read
    except OSError as exc:
        raise ReportError(f"cannot read the report {p}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportError(f"{p}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != "toolchaos.report":
        raise ReportError(f"{p}: not a toolchaos report (no \"schema\": \"toolchaos.report\")")
    if data.get("schema_version") not in READABLE_VERSIONS:
        raise ReportError(f"{p}: report schema version {data.get('schema_version')!r}; a diff reads versions "
                          f"{', '.join(map(str, READABLE_VERSIONS))}")
    return data


def _figures(s: Mapping[str, Any]) -> dict[str, float | int | None]:
    f = s.get("figures", {})
    cost = s.get("cost") or {}
    return {"executions": f.get("executions"), "side_effects": f.get("side_effects"), "tokens": f.get("tokens"),
            "cost_usd": cost.get("usd")}


def _first_broken(s: Mapping[str, Any]) -> str | None:
    if s.get("first_broken") is not None:
        return str(s["first_broken"])
    broke = [v for inv in s.get("invariants", []) for v in inv.get("violations", [])]
    return str(broke[0]["invariant"]) if broke else s.get("error")


def _who(report: Mapping[str, Any]) -> dict[str, Any]:
    agent = report.get("agent", {})
    return {"agent": agent.get("ref"), "version": agent.get("version"), "commit": agent.get("commit"),
            "started": report.get("started"), "suite_hash": report.get("suite", {}).get("hash"),
            "level": report.get("level"), "passed": report.get("totals", {}).get("passed"),
            "scenarios": report.get("totals", {}).get("scenarios")}


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Regressions, fixes, added and removed scenarios, and changed figures, from two reports' data."""
    before = {s["id"]: s for s in old.get("scenarios", [])}
    after = {s["id"]: s for s in new.get("scenarios", [])}
    regressions, fixes, changed = [], [], []
    for sid in sorted(before.keys() & after.keys()):
        a, b = before[sid], after[sid]
        if "n/a" in (a["verdict"], b["verdict"]):  # not run on one side (another kind of agent): nothing to compare
            continue
        move = {"id": sid, "old": a["verdict"], "new": b["verdict"], "severity": b.get("severity"),
                "first_broken": _first_broken(b if b["verdict"] != "pass" else a)}
        if a["verdict"] == "pass" and b["verdict"] != "pass":
            regressions.append(move)
        elif a["verdict"] != "pass" and b["verdict"] == "pass":
            fixes.append(move)
        fa, fb = _figures(a), _figures(b)
        moved = {k: [fa[k], fb[k]] for k in FIGURES if fa[k] is not None and fb[k] is not None and fa[k] != fb[k]}
        if moved:
            changed.append({"id": sid, "figures": moved})
    return {"old": _who(old), "new": _who(new), "regressions": regressions, "fixes": fixes,
            "added": sorted(after.keys() - before.keys()), "removed": sorted(before.keys() - after.keys()),
            "changed": changed}


def has_changes(d: Mapping[str, Any]) -> bool:
    return any(d[k] for k in ("regressions", "fixes", "added", "removed", "changed"))


def _fig(name: str, value: Any) -> str:
    return f"${value:,.4f}" if name == "cost_usd" else f"{value:,}"


def diff_lines(d: Mapping[str, Any]) -> list[str]:
    """The diff as plain text lines (what ``toolchaos diff`` prints)."""
    old, new = d["old"], d["new"]
    out = [f"old: {old['agent']} {old.get('version') or ''} level {old['level']}, "
           f"{old['passed']}/{old['scenarios']} passed".replace("  ", " "),
           f"new: {new['agent']} {new.get('version') or ''} level {new['level']}, "
           f"{new['passed']}/{new['scenarios']} passed".replace("  ", " ")]
    if old.get("suite_hash") != new.get("suite_hash"):
        out.append("note: the suites differ (their hashes do); added and removed scenarios are listed")
    n, f = len(d["regressions"]), len(d["fixes"])
    out.append(f"{n} regression{'' if n == 1 else 's'}, {f} fix{'' if f == 1 else 'es'}, {len(d['added'])} added, "
               f"{len(d['removed'])} removed, {len(d['changed'])} with changed figures")
    out += [f"REGRESSION {m['id']} ({m.get('severity')}): {m['old']} -> {m['new']}: {m['first_broken']}"
            for m in d["regressions"]]
    out += [f"FIXED      {m['id']}: {m['old']} -> {m['new']} (was: {m['first_broken']})" for m in d["fixes"]]
    out += [f"ADDED      {sid}" for sid in d["added"]] + [f"REMOVED    {sid}" for sid in d["removed"]]
    for c in d["changed"]:
        figs = ", ".join(f"{k} {_fig(k, a)} -> {_fig(k, b)}" for k, (a, b) in c["figures"].items())
        out.append(f"CHANGED    {c['id']}: {figs}")
    return out
