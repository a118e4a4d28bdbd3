"""report.md: the certification summary as it reads in a pull request or a CI step summary.

Rendered from report.json's data (``toolchaos.reports._core.build_report``) and the trace events,
so it says nothing the JSON does not. GitHub-flavoured Markdown: tables, ``<details>``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolchaos._internal.events import Event
from toolchaos._internal.trace import Trace
from toolchaos._internal.types import ADVISORY, WASTE_LEVELS
from toolchaos.errors import printable
from toolchaos.reports._cost import usd
from toolchaos.reports._trials import required_text, shown_ks

MARK = {"pass": "✅", "fail": "❌", "error": "⚠️", "n/a": "➖"}


# Agent-supplied text (titles, tool names, reasons, errors) reaches GitHub's renderer, also through
# $GITHUB_STEP_SUMMARY: no raw HTML (``<img onerror>``, ``</details>``), no Markdown it did not mean
# (emphasis, links, a ``|`` that splits a table cell), no control characters.
_MARKDOWN = re.compile(r"([\\`*\[\]~|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")  # "_" inside a word never formats


def _line(value: Any) -> str:
    text = "" if value is None else str(value)
    return printable(text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " "))


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell (and anywhere in a line): HTML and Markdown escaped."""
    return _MARKDOWN.sub(r"\\\g<0>", html.escape(_line(value), quote=False))


def code(value: Any) -> str:
    """A code span: shown literally (no HTML, no Markdown inside it), one line, no backtick to close it."""
    text = _line(value).replace("`", "'").replace("|", "\\|")
    return f"`{text}`" if text else ""


def fenced(text: str, info: str = "text") -> list[str]:
    """A fenced block no line of ``text`` can close (its fence is longer than any run of backticks in it)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, printable(text), fence]


def headline(report: Mapping[str, Any]) -> str:
    req, level = report["required_level"], report["level"]
    if report.get("could_not_certify"):  # nothing was judged: not a level reached "none"
        return f"⚠️ **COULD NOT CERTIFY**: {cell(report['could_not_certify'])}"
    if report["certified"]:
        return f"✅ **CERTIFIED** for {applicable_text(report['totals'])}, at level **{level}** (required: {req})"
    return (f"❌ **NOT CERTIFIED**: {applicable_text(report['totals'], passed=True)}; required level **{req}**, "
            f"reached **{level}**")


def applicable_text(t: Mapping[str, Any], passed: bool = False) -> str:
    """``N of M applicable scenarios`` (N passed), and whether all applied: the certificate's count."""
    applicable, total = t.get("applicable", t["scenarios"]), t["scenarios"]
    every = "all applicable" if applicable == total else f"N/A: {total - applicable}"
    return f"{t['passed']} of {applicable} applicable scenarios{' passed' if passed else ''} ({every})"


def not_applicable_by_reason(report: Mapping[str, Any]) -> dict[str, list[str]]:
    """The ids of the scenarios that did not apply to the agent's kind, by reason, in report order."""
    by_reason: dict[str, list[str]] = {}
    for na in report.get("not_applicable") or []:
        by_reason.setdefault(str(na["reason"]), []).append(str(na["id"]))
    return by_reason


def not_applicable_section(report: Mapping[str, Any]) -> list[str]:
    """The scenarios that did not apply to the agent's kind, by reason (none: nothing)."""
    by_reason = not_applicable_by_reason(report)
    if not by_reason:
        return []
    n = sum(len(ids) for ids in by_reason.values())
    out = [f"### Not applicable ({n})", "",
           "Not run: each needs what the agent's kind cannot do (the scenario's `needs`, the kind's capabilities); "
           "neither passed nor failed.", ""]
    out += [f"- {', '.join(map(code, ids))}: {cell(why)}" for why, ids in by_reason.items()]
    return [*out, ""]


def shard_text(shard: Mapping[str, Any]) -> str:
    """A shard's report says so: its level and totals are its part's (``toolchaos report merge`` joins them)."""
    return (f"{shard['index']} of {shard['total']} (by {shard['by']}, {shard['instances']} instances in all): "
            "this report covers this shard's part of the suite; the certificate is the merged report's "
            "(toolchaos report merge)")


def shard_row(report: Mapping[str, Any]) -> list[str]:
    """The summary table's row of a shard's report (none for a whole run's)."""
    return [f"| Shard | {cell(shard_text(report['shard']))} |"] if report.get("shard") else []


def na_count(t: Mapping[str, Any]) -> str:
    """``, K not applicable`` for a report with scenarios that did not apply ("" otherwise)."""
    return f", {t['not_applicable']} not applicable" if t.get("not_applicable") else ""


def ended_line(s: Mapping[str, Any]) -> str:
    f = s["figures"]
    ex = ", ".join(f"{cell(t)}={n}" for t, n in s["executions"].items() if n) or "none"
    guard = f" (guard: {cell(s['guard'])})" if s.get("guard") else ""
    stop = f"; harness stop: {cell(s['harness_stop'])}" if s.get("harness_stop") else ""
    side = f" (and {f['side_requests']} side requests)" if f.get("side_requests") else ""
    return (f"ended **{cell(s['terminal_state'])}**{guard} after {f['model_turns']} model turns{side} and "
            f"{f['executions']} tool executions ({ex}); {f['refusals']} refused; {f['side_effects']} side effects; "
            f"{f['virtual_seconds']:g} s virtual{stop}")


def isolation_line(s: Mapping[str, Any]) -> str | None:
    """Why the run stayed in this process although the session asked for process isolation; None otherwise."""
    reason = (s.get("isolation") or {}).get("reason")  # a report written before the key existed has none
    return f"Ran in process under process isolation: {reason}" if reason else None


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


def agent_text(agent: Mapping[str, Any]) -> str:
    """The agent's version and commit in words ("" when neither is known)."""
    parts = [str(agent["version"])] if agent.get("version") else []
    if agent.get("commit"):
        parts.append(f"commit {str(agent['commit'])[:12]}")
    return ", ".join(parts)


def cost_text(cost: Mapping[str, Any]) -> str:
    """The suite's estimated cost in words, with the prices it rests on."""
    return (f"{usd(cost['usd'])} for {cost['tokens_input']:,} input and {cost['tokens_output']:,} output tokens "
            f"(estimate: priced as {cost['model']} at ${cost['input_per_million']:g}/${cost['output_per_million']:g} "
            f"per million in/out, {cost['source']} prices dated {cost['dated']}); "
            f"{usd(cost['wasted_usd_failing'])} of it wasted beyond the useful work in failing scenarios")


def coverage_totals(cov: Mapping[str, Any]) -> str:
    if not cov["declared"]:
        return "no fault rule declared"
    never = len(cov["never_fired"])
    return f"{cov['fired']} of {cov['declared']} declared fault rules fired" + (
        f"; {never} never did" if never else "")


def coverage_line(cov: Mapping[str, Any]) -> str:
    """A scenario's fault coverage in one line: per tool the faults met, the rules that fired and did not."""
    tools = "; ".join(f"{t}: {r['executions']}/{r['calls']} executed ("
                      + (", ".join(f"{k} x{n}" for k, n in r["faults"].items()) or "none") + ")"
                      for t, r in cov["tools"].items() if r["calls"])
    rules = ", ".join(f"{r['tool']} faults[{r['rule']}] x{r['fired']}" for r in cov["rules"])
    out = f"Fault coverage: {tools or 'no tool called'}"
    if cov["declared"]:
        out += f"; rules fired {cov['fired']}/{cov['declared']} ({rules})"
    if cov["never_fired"]:
        out += "; never fired: " + "; ".join(cov["never_fired"])
    return out


def short(text: str | None, most: int = 110) -> str:
    """The first line of a text, cut at a word near ``most`` characters."""
    line = (text or "").strip().split("\n")[0]
    return line if len(line) <= most else line[:most].rsplit(" ", 1)[0] + "…"


def fixes_text(n: int) -> str:
    return f"{n} fix{'' if n == 1 else 'es'}"


def baseline_section(d: Mapping[str, Any]) -> list[str]:
    """What changed since the baseline report: first in report.md and the step summary."""
    old = d["old"]
    who = f"{code(old['agent'])}" + (f" {cell(old['version'])}" if old.get("version") else "")
    n = len(d["regressions"])
    out = ["### Since the baseline", "",
           f"Compared with {who} (level {cell(old['level'])}, {old['passed']}/{old['scenarios']} passed): "
           f"{'**' if n else ''}{_n(n, 'regression')}{'**' if n else ''}, {fixes_text(len(d['fixes']))}"
           f", {len(d['added'])} added, {len(d['removed'])} removed, {len(d['changed'])} with changed figures.", ""]
    moves = [("❌ regression", m) for m in d["regressions"]] + [("✅ fixed", m) for m in d["fixes"]]
    if moves:
        out += ["| Change | Scenario | Was | Now | Broken invariant |", "|---|---|---|---|---|"]
        out += [f"| {word} | {code(m['id'])} | {m['old']} | {m['new']} | {code(m['first_broken'])} |"
                for word, m in moves]
        out.append("")
    if d["added"] or d["removed"]:
        out += [f"Added: {', '.join(map(code, d['added'])) or 'none'}; removed: "
                f"{', '.join(map(code, d['removed'])) or 'none'}.", ""]
    if d["changed"]:
        out += [f"<details><summary>Changed figures ({len(d['changed'])})</summary>", "",
                "| Scenario | Executions | Side effects | Tokens | Cost |", "|---|---:|---:|---:|---:|"]
        for c in d["changed"]:
            f = c["figures"]
            cells = [_moved(f.get(k), k == "cost_usd") for k in ("executions", "side_effects", "tokens", "cost_usd")]
            out.append(f"| {code(c['id'])} | " + " | ".join(cells) + " |")
        out += ["", "</details>", ""]
    return out


def _moved(pair: list[Any] | None, money: bool) -> str:
    if not pair:
        return ""
    a, b = pair
    return f"{usd(a)} → {usd(b)}" if money else f"{a:,} → {b:,}"


def _severity_cell(c: Mapping[str, Any], sev: str) -> str:
    row = c["severity"].get(sev)
    return f"{row['passed']}/{row['scenarios']}" if row else "–"


def trials_section(report: Mapping[str, Any]) -> list[str]:
    """The scenarios run as trials: passes, the Wilson interval, pass^k and pass@k (every k in a details block)."""
    stats = report.get("trials") or []
    if not stats:
        return []
    ks = sorted({k for st in stats for k in shown_ks(st["trials"])})
    req = required_text(report)
    out = ["", "### Trials", "",
           "A scenario run as n trials (trial i with seed + i) passes only if every trial passes. pass^k: the chance "
           "that k trials all pass; pass@k: that at least one of k passes (unbiased estimates from the n)."
           + (f" Required: {req}." if req else ""), "",
           "| Scenario | Severity | Passed | Verdict | Pass rate (95% Wilson) | "
           + " | ".join(f"pass^{k}" for k in ks) + " | " + " | ".join(f"pass@{k}" for k in ks) + " |",
           "|---|---|---:|---|---|" + "---:|" * (2 * len(ks))]
    for st in stats:
        lo, hi = st["wilson_95"]
        got = [(st["pass_hat_k"][k - 1], st["pass_at_k"][k - 1]) if k <= st["trials"] else None for k in ks]
        out.append(f"| {code(st['id'])} | {cell(st['severity'])} | {st['passed']}/{st['trials']} | "
                   f"{MARK.get(st['verdict'], '')} {st['verdict']} | {st['passed'] / st['trials']:.2f} "
                   f"[{lo:.2f}, {hi:.2f}] | " + " | ".join("–" if g is None else f"{g[0]:.3f}" for g in got) + " | "
                   + " | ".join("–" if g is None else f"{g[1]:.3f}" for g in got) + " |")
    out += ["", "<details><summary>pass^k and pass@k for every k</summary>", ""]
    for st in stats:
        out += [f"- {code(st['id'])} pass^k: " + ", ".join(f"{x:.3f}" for x in st["pass_hat_k"]),
                f"- {code(st['id'])} pass@k: " + ", ".join(f"{x:.3f}" for x in st["pass_at_k"])]
    return [*out, "", "</details>"]


def render_markdown(report: Mapping[str, Any], traces: Mapping[str, Sequence[Event]]) -> str:
    suite, agent, harness = report["suite"], report["agent"], report["harness"]
    t = report["totals"]
    out = [f"## toolchaos certification: {cell(report['agent']['ref'])}", "", headline(report), ""]
    if report.get("baseline"):
        out += baseline_section(report["baseline"])
    version = f" {agent_text(agent)}" if agent_text(agent) else ""
    suite_v = f" {suite['version']}" if suite.get("version") else ""
    out += [
        "| | |", "|---|---|",
        f"| Agent | {code(agent['ref'])}{cell(version)} |",
        f"| Suite | {cell(suite['name'])}{cell(suite_v)}, {suite['scenarios']} scenarios, {code(suite['hash'][:19])} |",
        f"| Seed | {report['seed']} |",
        *shard_row(report),
        f"| Result | {t['passed']} passed, {t['failed']} failed, {t['errors']} errors"
        f"{na_count(t)} |",
        *([f"| Waste | {cell(waste_totals(report['waste']))} |"] if report["waste"]["graded"] else []),
        f"| Cost | {cell(cost_text(report['cost']))} |",
        f"| Fault coverage | {cell(coverage_totals(report['coverage']))} |",
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
    out += _advisory_row(report)
    out += ["", "### By category", "",
            "| Category | Scenarios | Passed | Failed | Critical | Major | Minor |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for c in report["categories"]:
        failed = c["failed"] + c["errors"]
        na = f" ({c['not_applicable']} N/A)" if c.get("not_applicable") else ""
        out.append(f"| {cell(c['category'])} | {c['scenarios']}{na} | {c['passed']} | {'**' if failed else ''}{failed}"
                   f"{'**' if failed else ''} | {_severity_cell(c, 'critical')} | {_severity_cell(c, 'major')} | "
                   f"{_severity_cell(c, 'minor')} |")
    out += trials_section(report)
    failures = [s for s in report["scenarios"] if s["verdict"] not in ("pass", "n/a") and not advisory(s)]
    out += ["", f"### Failures ({len(failures)})" if failures else "### Failures", ""]
    if not failures:
        out += [_no_failures(report), ""]
    for s in failures:
        out += _failure(s, traces.get(s["trace"] or "", []))
    out += _advisory_section(report, traces)
    out += not_applicable_section(report)
    out += ["<details><summary>All scenarios</summary>", "",
            "| Scenario | Category | Severity | Verdict | First broken | End state | Executions | Side effects | "
            "Tokens | Cost | Virtual time | Waste | Description |",
            "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for s in report["scenarios"]:
        f = s["figures"]
        out.append(f"| {code(s['id'])} | {cell(s['category'])} | {cell(s['severity'])} | "
                   f"{MARK.get(s['verdict'], '')} {s['verdict']} | {code(s.get('first_broken'))} | "
                   f"{cell(s['terminal_state'])} | {f['executions']} | {f['side_effects']} | {f['tokens']:,} | "
                   f"{usd(s['cost']['usd'])} | {f['virtual_seconds']:g} s | {cell(_waste_cell(s.get('grade')))} | "
                   f"{cell(short(s.get('description')))} |")
    out += ["", "</details>", ""]
    return "\n".join(out)


def advisory(s: Mapping[str, Any]) -> bool:
    """An advisory scenario: reported apart, required by no level."""
    return s.get("severity") == ADVISORY


def advisory_text(report: Mapping[str, Any]) -> str | None:
    """``N of M advisory scenarios passed (required by no level)``, or None when the run had none."""
    adv = report.get("advisory") or {}
    if not adv.get("scenarios"):
        return None
    return f"{adv['passed']} of {adv['scenarios']} advisory scenarios passed (required by no level)"


def _advisory_row(report: Mapping[str, Any]) -> list[str]:
    """A row of no level under the levels: what the advisory scenarios came to (none ran: no row)."""
    if advisory_text(report) is None:
        return []
    adv = report["advisory"]
    return [f"| advisory | {cell(adv['meaning'])} | {adv['passed']}/{adv['scenarios']} | – |"]


def _no_failures(report: Mapping[str, Any]) -> str:
    """What the failures section says when no scenario a level requires failed."""
    if (report.get("advisory") or {}).get("failed"):
        return "None that a level requires: the advisory failures are listed apart below."
    return "None: every applicable scenario passed." if report.get("not_applicable") else "None: every scenario passed."


def _advisory_section(report: Mapping[str, Any], traces: Mapping[str, Sequence[Event]]) -> list[str]:
    """The advisory results apart from the failures: each failure in full, with why it is advisory."""
    text = advisory_text(report)
    if text is None:
        return []
    out = [f"### Advisory ({report['advisory']['scenarios']})", "", f"{text}.", ""]
    for s in report["scenarios"]:
        if advisory(s) and s["verdict"] not in ("pass", "n/a"):
            out += _failure(s, traces.get(s["trace"] or "", []))
            out += [f"*Advisory:* {cell(s.get('severity_why'))}", ""]
    return out


def scenario_cost_text(s: Mapping[str, Any]) -> str:
    t, c = s["tokens"], s["cost"]
    wasted = f", {usd(c['wasted_usd'])} of it beyond the useful work" if c.get("wasted_usd") else ""
    return (f"Tokens: {t['input']:,} in + {t['output']:,} out over {len(t['per_turn'])} turns; "
            f"estimated cost {usd(c['usd'])}{wasted}")


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
    out += _failure_notes(s)
    out += ["| Invariant | Expected | Actual | Where | Why |", "|---|---|---|---|---|"]
    for inv in s["invariants"]:
        out += _invariant_rows(inv)
    out += _side_effect_lines(s)
    out.append("")
    if events:
        out += _trace_excerpt(s, events)
    return out


def _failure_notes(s: Mapping[str, Any]) -> list[str]:
    """A failure's paragraphs before its invariants: description, cost, coverage, and what the run said
    of its end (stop reason, error, isolation, waste), each only when the scenario has it."""
    out = [f"> {cell(short(s['description'], 400))}", ""] if s.get("description") else []
    out += [f"{cell(scenario_cost_text(s))}.", "", f"{cell(coverage_line(s['coverage']))}.", ""]
    if s.get("reason"):
        out += [f"Stop reason: {cell(s['reason'])}", ""]
    if s.get("error"):
        out += [f"Error: {code(s['error'])}", ""]
    if isolation_line(s):
        out += [f"{cell(isolation_line(s))}.", ""]
    if s.get("grade"):
        out += [f"{cell(waste_line(s['grade']))}.", ""]
    return out


def _invariant_rows(inv: Mapping[str, Any]) -> list[str]:
    """An invariant's row in a failure's table, then one row per further violation of it."""
    names = [v["invariant"] for v in inv["violations"]] or [inv["name"]]
    rows = [f"| {'✅' if inv['passed'] else '❌'} {code(names[0])} | {cell(inv['expected'])} | "
            f"{cell(inv['actual'])} | {cell(where(inv))} | {cell(inv.get('why'))} |"]
    for v in inv["violations"][1:]:
        at = f"step {v['step']}, event #{v['seq']}" if v.get("seq") is not None else "end of run"
        rows.append(f"| ❌ {code(v['invariant'])} | {cell(v['expected'])} | {cell(v['actual'])} | {cell(at)} | |")
    return rows


def _side_effect_lines(s: Mapping[str, Any]) -> list[str]:
    """The side effects applied more than once, and those the API replayed from their key (not applied again)."""
    out: list[str] = []
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
    return out


def _trace_excerpt(s: Mapping[str, Any], events: Sequence[Event]) -> list[str]:
    """The trace around the first broken invariant (else its last events), folded, with the full trace's name."""
    seq = first_break(s)
    title = f"Trace around event #{seq}" if seq is not None else "Trace (last events)"
    table = Trace(list(events)).table(around=seq if seq is not None else events[-1].get("seq"), radius=5)
    return [f"<details><summary>{title}; full trace: {code(s['trace'])}</summary>", "", *fenced(table),
            "", "</details>", ""]
