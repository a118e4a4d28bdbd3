"""Fault coverage of a run: which tools were called, which faults answered them, which declared rules fired.

A pass is only as good as the faults it met: a declared rule that never answered a call tested
nothing (``faults_fired`` fails such a run; coverage says it for every run, passing or not, and
counts how often each rule and each fault answered). Read from the run's own record: the fault
schedules of its tools, the calls each rule answered (``rule_hits``) and the trace's tool events.
"""

from __future__ import annotations

from typing import Any

from toolchaos.invariants._builtin import FinishedRun

_ASKED = ("tool", "refusal", "skipped", "late")  # the events of a call the model asked for


def fault_coverage(result: FinishedRun) -> dict[str, Any]:
    """Per tool: calls asked for, executions, the faults that answered (kind -> count); every declared
    rule with the calls it answered; and the totals (``declared``, ``fired``, ``never_fired``)."""
    tools: dict[str, dict[str, Any]] = {}
    for name in sorted(result.tools):
        tools[name] = {"calls": 0, "executions": 0, "faults": {}}
    for ev in result.trace.events:
        tool = ev.get("tool") if ev["kind"] in _ASKED else None
        if tool not in tools:
            continue
        row = tools[str(tool)]
        row["calls"] += 1
        if ev["kind"] == "tool":
            row["executions"] += 1
            kind = str(ev["outcome"])
            row["faults"][kind] = row["faults"].get(kind, 0) + 1
    for row in tools.values():
        row["faults"] = dict(sorted(row["faults"].items()))
    rules = []
    for name, definition in sorted(result.tools.items()):
        hits = result.rule_hits.get(name, {})
        rules += [{"tool": name, "rule": i, "text": rule.describe(), "fired": hits.get(i, 0)}
                  for i, rule in enumerate(definition.schedule.rules)]
    never = [f"{r['tool']} faults[{r['rule']}] ({r['text']})" for r in rules if not r["fired"]]
    return {"tools": tools, "rules": rules, "declared": len(rules), "fired": len(rules) - len(never),
            "never_fired": never}


def coverage_text(cov: dict[str, Any]) -> list[str]:
    """The coverage in a few lines, for a failure's text."""
    lines = []
    for name, row in cov["tools"].items():
        faults = ", ".join(f"{k} x{n}" for k, n in row["faults"].items()) or "none"
        lines.append(f"  {name}: {row['calls']} calls, {row['executions']} executed; answered by: {faults}")
    if cov["declared"]:
        lines.append(f"  fault rules: {cov['fired']} of {cov['declared']} fired"
                     + "".join(f"; {r['tool']} faults[{r['rule']}] x{r['fired']}" for r in cov["rules"] if r["fired"]))
        lines += [f"  never fired: {text}" for text in cov["never_fired"]]
    return lines
