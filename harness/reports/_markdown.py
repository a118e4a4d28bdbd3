"""report.md: the certification summary as it reads in a pull request or a CI step summary.

Rendered from report.json's data (``toolchaos.reports._core.build_report``) and the trace events,
so it says nothing the JSON does not. GitHub-flavoured Markdown: tables, ``<details>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolchaos._internal.events import Event
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import WASTE_LEVELS

MARK = {"pass": "✅", "fail": "❌", "error": "⚠️"}


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def code(value: Any) -> str:
    text = cell(value).replace("`", "'")
    return f"`{text}`" if text else ""


def headline(report: Mapping[str, Any]) -> str:
    req, level = report["required_level"], report["level"]
    if report.get("could_not_certify"):  # nothing was judged: not a level reached "none"
        return f"⚠️ **COULD NOT CERTIFY**: {cell(report['could_not_certify'])}"
    if report["certified"]:
        return f"✅ **CERTIFIED** at level **{level}** (required: {req})"
    return f"❌ **NOT CERTIFIED**: required level **{req}**, reached **{level}**"


def ended_line(s: Mapping[str, Any]) -> str:
    f = s["figures"]
    ex = ", ".join(f"{t}={n}" for t, n in s["executions"].items() if n) or "none"
    guard = f" (guard: {s['guard']})" if s.get("guard") else ""
    stop = f"; harness stop: {s['harness_stop']}" if s.get("harness_stop") else ""
    return (f"ended **{s['terminal_state']}**{guard} after {f['model_turns']} model turns and "
            f"{f['executions']} tool executions ({ex}); {f['refusals']} refused; {f['side_effects']} side effects; "
            f"{f['virtual_seconds']:g} s virtual{stop}")


def _n(count: int, what: str) -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"


def waste_line(grade: Mapping[str, Any] | None) -> str:
    """A scenario's waste grade in words ("" for a scenario that does not say what its useful work is)."""
    if not grade:
        return ""
    useful = f"the useful {_n(grade['useful_executions'], 'execution')} in {_n(grade['useful_turns'], 'turn')}"
    if grade["level"] == "none":
        return f"Waste: none beyond {useful}"
    return (f"Waste: {grade['level']}, {_n(grade['wasted_executions'], 'execution')}, "
            f"{_n(grade['wasted_turns'], 'turn')} and {_n(grade['wasted_tokens'], 'token')} beyond {useful}")


def waste_totals(waste: Mapping[str, Any]) -> str:
    """The report's waste summary in words."""
    levels = ", ".join(f"{waste[level]} {level}" for level in WASTE_LEVELS)
    return (f"{levels} of {waste['graded']} graded; {_n(waste['wasted_executions'], 'execution')} and "
            f"{_n(waste['wasted_tokens'], 'token')} beyond the useful work in all")


def where(inv: Mapping[str, Any]) -> str:
    if inv.get("seq") is None:
        return "end of run" if not inv["passed"] else ""
    return f"step {inv['step']}, event #{inv['seq']}"


def first_break(s: Mapping[str, Any]) -> int | None:
    seqs = [i["seq"] for i in s["invariants"] if not i["passed"] and i.get("seq") is not None]
    return min(seqs) if seqs else None


def _severity_cell(c: Mapping[str, Any], sev: str) -> str:
    row = c["severity"].get(sev)
    return f"{row['passed']}/{row['scenarios']}" if row else "–"


def render_markdown(report: Mapping[str, Any], traces: Mapping[str, Sequence[Event]]) -> str:
    suite, agent, harness = report["suite"], report["agent"], report["harness"]
    t = report["totals"]
    out = [f"## toolchaos certification: {report['agent']['ref']}", "", headline(report), ""]
    version = f" {agent['version']}" if agent.get("version") else ""
    suite_v = f" {suite['version']}" if suite.get("version") else ""
    out += [
        "| | |", "|---|---|",
        f"| Agent | {code(agent['ref'])}{cell(version)} |",
        f"| Suite | {cell(suite['name'])}{cell(suite_v)}, {suite['scenarios']} scenarios, {code(suite['hash'][:19])} |",
        f"| Seed | {report['seed']} |",
        f"| Result | {t['passed']} passed, {t['failed']} failed, {t['errors']} errors |",
        *([f"| Waste | {cell(waste_totals(report['waste']))} |"] if report["waste"]["graded"] else []),
        f"| Harness | toolchaos {cell(harness['version'])}, Python {cell(harness['python'])} |",
        f"| Run | {cell(report['started'])} to {cell(report['ended'])} |",
        "",
        "### Levels", "",
        "| Level | Meaning | Passed | Reached |", "|---|---|---|---|",
    ]
    for name, lv in report["levels"].items():
        req = " (required)" if name == report["required_level"] else ""
        out.append(f"| **{name}**{req} | {cell(lv['meaning'])} | {lv['passed']}/{lv['scenarios']} | "
                   f"{'✅' if lv['reached'] else '❌'} |")
    out += ["", "### By category", "",
            "| Category | Scenarios | Passed | Failed | Critical | Major | Minor |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for c in report["categories"]:
        failed = c["failed"] + c["errors"]
        out.append(f"| {cell(c['category'])} | {c['scenarios']} | {c['passed']} | {'**' if failed else ''}{failed}"
                   f"{'**' if failed else ''} | {_severity_cell(c, 'critical')} | {_severity_cell(c, 'major')} | "
                   f"{_severity_cell(c, 'minor')} |")
    failures = [s for s in report["scenarios"] if s["verdict"] != "pass"]
    out += ["", f"### Failures ({len(failures)})" if failures else "### Failures", ""]
    if not failures:
        out += ["None: every scenario passed.", ""]
    for s in failures:
        out += _failure(s, traces.get(s["trace"] or "", []))
    out += ["<details><summary>All scenarios</summary>", "",
            "| Scenario | Category | Severity | Verdict | End state | Executions | Side effects | Virtual time | Waste |",
            "|---|---|---|---|---|---:|---:|---:|---|"]
    for s in report["scenarios"]:
        f = s["figures"]
        out.append(f"| {code(s['id'])} | {cell(s['category'])} | {cell(s['severity'])} | "
                   f"{MARK.get(s['verdict'], '')} {s['verdict']} | {cell(s['terminal_state'])} | {f['executions']} | "
                   f"{f['side_effects']} | {f['virtual_seconds']:g} s | {cell(_waste_cell(s.get('grade')))} |")
    out += ["", "</details>", ""]
    return "\n".join(out)


def _waste_cell(grade: Mapping[str, Any] | None) -> str:
    if not grade:
        return ""
    if grade["level"] == "none":
        return "none"
    return f"{grade['level']}: +{grade['wasted_executions']} exec, +{grade['wasted_tokens']:,} tok"


def _counts_as(s: Mapping[str, Any]) -> str:
    """A failure that counts as less than its scenario's severity: a reporting failure (a false COMPLETED)."""
    sev = s.get("failure_severity")
    if not sev or sev == s["severity"]:
        return ""
    return f", failing as **{cell(sev)}**: a reporting failure (COMPLETED claimed, the goal not met)"


def _failure(s: Mapping[str, Any], events: Sequence[Event]) -> list[str]:
    out = [f"#### {MARK.get(s['verdict'], '')} {code(s['id'])}: {cell(s['title'])}", "",
           f"*{cell(s['category'])}, {cell(s['severity'])}*{_counts_as(s)}; {ended_line(s)}.", ""]
    if s.get("reason"):
        out += [f"Stop reason: {cell(s['reason'])}", ""]
    if s.get("error"):
        out += [f"Error: {code(s['error'])}", ""]
    if s.get("grade"):
        out += [f"{cell(waste_line(s['grade']))}.", ""]
    out += ["| Invariant | Expected | Actual | Where | Why |", "|---|---|---|---|---|"]
    for inv in s["invariants"]:
        names = [v["invariant"] for v in inv["violations"]] or [inv["name"]]
        out.append(f"| {'✅' if inv['passed'] else '❌'} {code(names[0])} | {cell(inv['expected'])} | "
                   f"{cell(inv['actual'])} | {cell(where(inv))} | {cell(inv.get('why'))} |")
        for v in inv["violations"][1:]:
            at = f"step {v['step']}, event #{v['seq']}" if v.get("seq") is not None else "end of run"
            out.append(f"| ❌ {code(v['invariant'])} | {cell(v['expected'])} | {cell(v['actual'])} | {cell(at)} | |")
    dup = {t: d["duplicates"] for t, d in s["side_effects"].items() if d["duplicates"]}
    if dup:
        parts = []
        for t, keys in dup.items():
            counts = s["side_effects"][t]["keys"]
            parts.append(f"{code(t)}: " + ", ".join(f"{code(k)} applied {counts[k]} times" for k in keys))
        out += ["", "Duplicate side effects: " + "; ".join(parts)]
    replays = {t: d["replayed"] for t, d in s["side_effects"].items() if d.get("replayed")}
    if replays:  # not duplicates: the API answered them from their key, nothing happened again
        out += ["", "Replayed by the API (not applied again): "
                + "; ".join(f"{code(t)}: {n} time{'s' if n != 1 else ''}" for t, n in replays.items())]
    out.append("")
    if events:
        seq = first_break(s)
        title = f"Trace around event #{seq}" if seq is not None else "Trace (last events)"
        table = Trace(list(events)).table(around=seq if seq is not None else events[-1].get("seq"), radius=5)
        out += [f"<details><summary>{title}; full trace: {code(s['trace'])}</summary>", "", "```text", table, "```",
                "", "</details>", ""]
    return out
