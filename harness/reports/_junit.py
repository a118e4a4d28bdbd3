"""junit.xml: one testcase per scenario, the figures as properties.

CI systems (GitHub, GitLab, Jenkins, Azure) show it as a test run: a failed scenario is
a ``<failure>`` whose message is the first broken invariant and whose text is the
evidence (every broken invariant, the end state, the trace around the break). Testcases
carry no ``time``: scenarios run on virtual time, and real durations would make two
reports of the same run differ.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from toolchaos._internal.events import Event
from toolchaos._internal.trace import Trace
from toolchaos.errors import printable

# Characters XML 1.0 cannot hold, not even as a character reference (a NUL in a tool name would
# make the file unparseable): shown as \xNN / \uNNNN. Escape sequences are removed as on a terminal.
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escaped(m: re.Match[str]) -> str:
    ch = m.group()
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def _x(value: Any) -> str:
    text = "" if value is None else str(value)
    return _BAD_XML.sub(_escaped, printable(text) if "\x1b" in text or "\x9b" in text else text)


def _props(parent: ET.Element, items: Sequence[tuple[str, Any]]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in items:
        ET.SubElement(props, "property", name=_x(name), value=_x("" if value is None else value))


def _suite_properties(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [("agent", report["agent"]["ref"]), ("agent_version", report["agent"].get("version")),
            ("agent_commit", report["agent"].get("commit")), ("cost_usd", report["cost"]["usd"]),
            ("priced_as", report["cost"]["model"]),
            ("seed", report["seed"]), ("suite", report["suite"]["name"]),
            ("suite_version", report["suite"].get("version")), ("suite_hash", report["suite"]["hash"]),
            ("harness_version", report["harness"]["version"]), ("required_level", report["required_level"]),
            ("level", report["level"]), ("certified", str(report["certified"]).lower()),
            ("applicable", report["totals"].get("applicable", report["totals"]["scenarios"])),
            ("not_applicable", report["totals"].get("not_applicable", 0)),
            *([("shard", f"{report['shard']['index']}/{report['shard']['total']}")] if report.get("shard") else [])]


def _case_properties(s: Mapping[str, Any]) -> list[tuple[str, Any]]:
    f = s["figures"]
    return [("title", s["title"]), ("category", s["category"]), ("severity", s["severity"]),
            ("terminal_state", s["terminal_state"]), ("guard", s.get("guard")),
            ("executions", f["executions"]), ("model_turns", f["model_turns"]),
            ("refusals", f["refusals"]), ("side_effects", f["side_effects"]),
            ("virtual_seconds", f"{f['virtual_seconds']:g}"), ("tokens", f["tokens"]),
            ("tokens_input", s["tokens"]["input"]), ("tokens_output", s["tokens"]["output"]),
            ("cost_usd", s["cost"]["usd"]), ("first_broken", s.get("first_broken")),
            ("fault_rules_fired", f"{s['coverage']['fired']}/{s['coverage']['declared']}"),
            *((f"executions.{tool}", n) for tool, n in s["executions"].items()),
            *((f"side_effects.{tool}", d["applied"]) for tool, d in s["side_effects"].items()),
            *_waste_properties(s.get("grade")),
            ("trace", s["trace"]), ("file", s.get("file")), ("content_hash", s.get("content_hash"))]


def _waste_properties(grade: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    if not grade:
        return []
    return [("waste", grade["level"]), ("wasted_executions", grade["wasted_executions"]),
            ("wasted_tokens", grade["wasted_tokens"])]


def _message(s: Mapping[str, Any], first: Mapping[str, Any] | None) -> str:
    """The failure's one line: why the scenario could not run, or its first broken invariant."""
    if s["verdict"] == "error":
        return f"the scenario could not run: {s.get('error') or s.get('harness_stop')}"
    if first:
        return f"{first['invariant']}: expected {first['expected']}; actual: {first['actual']}"
    return "failed"  # pragma: no cover - a failed verdict always has a violation


def _evidence(s: Mapping[str, Any], broke: Sequence[Mapping[str, Any]], events: Sequence[Event]) -> str:
    """The failure's text: every broken invariant, the end state, the trace around the first break."""
    f = s["figures"]
    lines = [f"{v['invariant']} broke" + (f" at step {v['step']} (trace event #{v['seq']})"
                                          if v.get("seq") is not None else "")
             + f": expected {v['expected']}; actual: {v['actual']}" for v in broke]
    lines.append(f"ended {s['terminal_state']}" + (f" (guard: {s['guard']})" if s.get("guard") else "")
                 + f"; executions: {f['executions']}; model turns: {f['model_turns']}; "
                 f"side effects: {f['side_effects']}; virtual time: {f['virtual_seconds']:g}s")
    if s.get("error"):
        lines.append(f"error: {s['error']}")
    if events:
        first = broke[0] if broke else None
        seq = first["seq"] if first and first.get("seq") is not None else events[-1].get("seq")
        lines += [f"trace around event #{seq} (file {s['trace']}):", Trace(list(events)).table(around=seq, radius=5)]
    return "\n".join(lines)


def _testcase(suite: ET.Element, suite_name: str, s: Mapping[str, Any], events: Sequence[Event]) -> None:
    case = ET.SubElement(suite, "testcase", classname=_x(f"{suite_name}.{s['category']}"), name=_x(s["id"]))
    if s["verdict"] == "n/a":  # it did not run: a skipped testcase, saying why (no figures: there are none)
        _props(case, [("title", s["title"]), ("category", s["category"]), ("severity", s["severity"]),
                      ("needs", ", ".join(s.get("needs") or [])), ("file", s.get("file")),
                      ("content_hash", s.get("content_hash"))])
        ET.SubElement(case, "skipped", message=_x(f"N/A: {(s.get('not_applicable') or {}).get('reason')}"))
        return
    _props(case, _case_properties(s))
    if s["verdict"] == "pass":
        return
    broke = [v for inv in s["invariants"] for v in inv["violations"]]
    first = broke[0] if broke else None
    tag = "error" if s["verdict"] == "error" else "failure"
    node = ET.SubElement(case, tag, message=_x(_message(s, first)), type=_x(first["invariant"] if first else s["verdict"]))
    node.text = _x(_evidence(s, broke, events))


def render_junit(report: Mapping[str, Any], traces: Mapping[str, Sequence[Event]]) -> str:
    t = report["totals"]
    suite_name = _x(f"toolchaos.{report['suite']['name']}")
    root = ET.Element("testsuites", name="toolchaos certification", tests=str(t["scenarios"]),
                      failures=str(t["failed"]), errors=str(t["errors"]))
    suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(t["scenarios"]), failures=str(t["failed"]),
                          errors=str(t["errors"]), skipped=str(t.get("not_applicable", 0)),
                          timestamp=_x(report["started"]))
    if report.get("duration_seconds") is not None:  # the session's real duration; testcases carry none
        for node in (root, suite):
            node.set("time", f"{report['duration_seconds']:.3f}")
    _props(suite, _suite_properties(report))
    for s in report["scenarios"]:
        _testcase(suite, suite_name, s, traces.get(s["trace"] or "", []))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
