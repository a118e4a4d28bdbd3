"""report.json's data: one entry per scenario verdict, and the whole report built from them.

``scenario_entry(verdict)`` turns a verdict into plain JSON data and its trace events (so
it can cross process boundaries: pytest-xdist workers); ``build_report(entries, meta)``
sorts the entries by id, gives each its trace path and adds the levels, totals and
categories: the single source report.md, report.html and junit.xml are rendered from
(schema: docs/report-schema.md). Paths are relative; the timestamps are ``RunMeta``'s
(``_meta`` is the reports' only reader of the wall clock).
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchaos import invariants as I
from toolchaos._agents import Capabilities, kinds, missing
from toolchaos._engine import safe_name
from toolchaos._internal.events import Event
from toolchaos._internal.types import ADVISORY, SEVERITIES, WASTE_LEVELS, report_value
from toolchaos.invariants import fault_coverage
from toolchaos.reports._cost import PriceTable, price_table, scenario_cost, suite_cost
from toolchaos.reports._diff import diff_reports, load_report
from toolchaos.reports._levels import (
    LEVEL_ORDER,
    LEVELS,
    NOT_APPLICABLE,
    Row,
    check_level,
    could_not_call,
    level_reached,
    meets,
    not_applicable,
    required,
    required_severities,
    rows,
    verdict_status,
)
from toolchaos.reports._meta import RunMeta, agent_commit, agent_version, harness_version, iso, parse_iso
from toolchaos.reports._trials import gated, trial_entry, trial_stats

if TYPE_CHECKING:
    from toolchaos.certification import ScenarioVerdict

SCHEMA = "toolchaos.report"
SCHEMA_VERSION = 5  # 5: trials, required_pass_k, a scenario's trial;
# shard (a shard's level and totals cover its part of the suite only); needs, not_applicable
# (verdict n/a: a scenario needing what the agent's kind lacks), totals.applicable, agent_kind's capabilities;
# figures.side_requests (side requests are no longer model turns); advisory, severity_why (the level
# all requires no advisory scenario);
# 4: foreign_attempts
# (none recorded means none); 3: agent commit, description, first_broken, tokens, cost, coverage, baseline; 2: grade, waste

# Categories in the order the certification suite presents them; others follow alphabetically.
CATEGORY_ORDER: tuple[str, ...] = ("loops", "error_classes", "side_effects", "budgets", "legit", "resume")

_BUNDLED = Path(str(resources.files("toolchaos_scenarios"))).resolve()  # the bundled suites, installed with toolchaos
Entry = tuple[dict[str, Any], list[Event]]  # a scenario's report.json entry and its trace events


# --- one scenario ------------------------------------------------------------------------


def _inv_name(inv: Any) -> str:
    return str(getattr(inv, "name", None) or type(inv).__name__)


def _inv_params(inv: Any) -> dict[str, Any]:
    params = getattr(inv, "params", None)
    out = params() if callable(params) else {}
    return json.loads(json.dumps(out, default=str, sort_keys=True)) if isinstance(out, Mapping) else {}


def _belongs(violation_name: str, inv_name: str) -> bool:
    return violation_name == inv_name or violation_name.startswith((inv_name + ".", inv_name + "["))


def _violation(v: Any) -> dict[str, Any]:
    return {"invariant": v.invariant, "expected": v.expected, "actual": v.actual, "step": v.step, "seq": v.seq,
            "severity": getattr(v, "severity", None)}


def _invariants(v: ScenarioVerdict) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    used: set[int] = set()
    for n, inv in enumerate(v.expect):
        name = _inv_name(inv)
        broke = [(i, x) for i, x in enumerate(v.violations) if i not in used and _belongs(x.invariant, name)]
        used.update(i for i, _ in broke)
        entry: dict[str, Any] = {"name": name, "params": _inv_params(inv), "passed": not broke,
                                 "expected": I.expected_text(inv), "actual": "", "step": None, "seq": None,
                                 "violations": [_violation(x) for _, x in broke],
                                 "why": v.whys[n] if n < len(v.whys) else None}
        if broke:
            first = broke[0][1]
            entry.update(expected=first.expected, actual=first.actual, step=first.step, seq=first.seq)
        else:
            entry["actual"] = I.actual_text(inv, v.result)
        out.append(entry)
    for i, x in enumerate(v.violations):  # broken invariants not in expect (the defaults, when expect is empty)
        if i not in used:
            out.append({"name": x.invariant.split("[")[0].split(".")[0], "params": {}, "passed": False,
                        "expected": x.expected, "actual": x.actual, "step": x.step, "seq": x.seq,
                        "violations": [_violation(x)], "why": None})
    return out


def _scenario_file(path: Path | None) -> str | None:
    """A scenario file as report.json names it: under the bundled package, else the working directory."""
    if path is None:
        return None
    p = Path(path).resolve()
    for root, prefix in ((_BUNDLED, "toolchaos_scenarios/"), (Path.cwd().resolve(), "")):
        if p.is_relative_to(root):
            return prefix + p.relative_to(root).as_posix()
    return Path(path).as_posix()


def _side_effects(v: ScenarioVerdict) -> dict[str, Any]:
    r = v.result
    out: dict[str, Any] = {}
    side = sorted(n for n, t in r.tools.items() if getattr(t, "side_effect", False))
    side += sorted({f.tool for f in r.ledger.effects} - set(side))
    for tool in side:
        keys = r.ledger.keys(tool)
        out[tool] = {"executions": r.ledger.executions(tool), "applied": r.ledger.applied(tool),
                     "replayed": r.ledger.replayed(tool),
                     "unknown": sum(1 for f in r.ledger.effects if f.tool == tool and f.status == "unknown"),
                     "keys": dict(sorted(keys.items())),
                     "duplicates": sorted(k for k, n in keys.items() if n > 1)}
    return out


def _agent_kind(r: Any) -> dict[str, Any]:
    """The kind of agent that ran and what that kind can do (``toolchaos.kinds``; None each: a kind not known here)."""
    name = getattr(r, "agent_kind", "in-process")
    found = kinds().get(name)
    caps = asdict(found.capabilities) if found is not None else {f.name: None for f in fields(Capabilities)}
    return {"name": name, **caps}


def _not_applicable(v: ScenarioVerdict, needs: Sequence[str]) -> dict[str, Any] | None:
    """Why the scenario did not apply to the agent's kind: the kind, what it lacks of the scenario's needs, in words."""
    reason = getattr(v, "not_applicable", None)
    if reason is None:
        return None
    kind = getattr(v.result, "agent_kind", "in-process")
    found = kinds().get(kind)
    return {"kind": kind, "lacking": [n.name for n in missing(needs, found)] if found is not None else list(needs),
            "reason": reason}


def _figures(r: Any, events: Sequence[Any]) -> dict[str, Any]:
    """A run's counts as report.json's ``figures`` give them."""
    return {
        "executions": r.total_executions,
        # of them, transport retries: a call executed again with no model turn between (its ``attempt``)
        "transport_retries": sum(1 for e in r.trace.tool_events if "attempt" in e),
        "model_turns": r.turns,
        "side_requests": r.side_requests,  # answered by the wire itself (titles, loop checks): not model turns
        "refusals": sum(1 for e in events if e["kind"] == "refusal"),
        "side_effects": r.ledger.applied(),
        "virtual_seconds": round(r.virtual_seconds, 3),
        "tokens": r.tokens,
    }


def scenario_entry(v: ScenarioVerdict) -> tuple[dict[str, Any], list[Event]]:
    """One scenario's entry in report.json, and its trace events (written beside it).

    The entry is plain JSON data, so it can cross process boundaries (pytest-xdist).
    """
    r = v.result
    events = [dict(e) for e in r.trace.events]
    executions = {name: 0 for name in sorted(r.tools)}
    executions.update(r.executions)
    scenario = getattr(v, "scenario", None)  # a judged verdict knows its scenario (a bare ScenarioVerdict does not)
    needs = list(getattr(scenario, "needs", ()) or ())
    na = _not_applicable(v, needs)
    entry: dict[str, Any] = {
        "id": v.id,
        "title": v.title,
        "description": str(getattr(scenario, "description", "") or "") or None,
        "category": v.category,
        "severity": v.severity,
        "severity_why": getattr(scenario, "severity_why", None),  # why it has its severity (advisory: must say)
        "verdict": verdict_status(v),
        "failure_severity": v.failure_severity,  # what the failure counts as for levels (a false COMPLETED: major)
        "file": _scenario_file(v.path),
        "content_hash": v.content_hash or None,
        "task": r.task,
        "seed": r.seed,
        "trial": trial_entry(scenario),  # which trial of which scenario (scenario, index, of), else null
        "needs": needs,  # what the scenario cannot be judged without, of the agent's kind
        "not_applicable": na,  # why it did not apply to the agent's kind (then it did not run), else null
        "terminal_state": None if na else r.terminal_state,
        "guard": report_value(r.stop_report, "guard"),
        "reason": report_value(r.stop_report, "reason"),
        "harness_stop": r.harness_stop,
        "watchdog": dict(r.watchdog) if r.watchdog else None,  # which limit ended the run, and its seconds
        "error": r.error.strip().splitlines()[-1] if r.error else None,
        "first_broken": v.violations[0].invariant if v.violations else None,
        "answer": r.answer,
        "figures": _figures(r, events),
        "tokens": {"input": sum(u.input_tokens for u in r.usage), "output": sum(u.output_tokens for u in r.usage),
                   "per_turn": [[u.input_tokens, u.output_tokens] for u in r.usage]},
        "cost": None,  # set by build_report, which knows the prices
        "executions": dict(sorted(executions.items())),
        "side_effects": _side_effects(v),
        "effects": [{"seq": f.seq, "tool": f.tool, "key": f.key, "applied": f.applied, "status": f.status,
                     "replayed": f.replayed} for f in r.ledger.effects],
        "invariants": _invariants(v),
        "grade": v.grade.as_dict() if v.grade else None,
        "coverage": fault_coverage(r),
        "stop_report": json.loads(json.dumps(r.stop_report, default=str)) if r.stop_report else None,
        # how the run executed: "process" (a contained child) or "none", and why it stayed here under process
        "isolation": {"mode": r.isolation, "reason": r.isolation_reason},
        "agent_kind": _agent_kind(r),
        "foreign_attempts": list(getattr(r, "foreign", None) or []),
        "trace": None,  # set when written: a path relative to the report directory
        "agent": v.agent,  # moved to the report's top level by build_report
    }
    return entry, json.loads(json.dumps(events, default=str))


# --- the whole report --------------------------------------------------------------------


def _category_key(cat: str) -> tuple[int, str]:
    return (CATEGORY_ORDER.index(cat) if cat in CATEGORY_ORDER else len(CATEGORY_ORDER), cat)


def categories(scenarios: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by: dict[str, dict[str, Any]] = {}
    for s in scenarios:
        c = by.setdefault(s["category"], {"category": s["category"], "scenarios": 0, "passed": 0, "failed": 0,
                                          "errors": 0, "not_applicable": 0, "severity": {}})
        c["scenarios"] += 1
        key = {"pass": "passed", "fail": "failed", NOT_APPLICABLE: "not_applicable"}.get(s["verdict"], "errors")
        c[key] += 1
        if key == "not_applicable":  # a severity's count is of the scenarios that applied
            continue
        sev = c["severity"].setdefault(s["severity"], {"scenarios": 0, "passed": 0})
        sev["scenarios"] += 1
        sev["passed"] += s["verdict"] == "pass"
    for c in by.values():
        c["severity"] = {k: c["severity"][k] for k in sorted(c["severity"], key=_severity_key)}
    return [by[k] for k in sorted(by, key=_category_key)]


def _severity_key(sev: str) -> tuple[int, str]:
    return (SEVERITIES.index(sev) if sev in SEVERITIES else len(SEVERITIES), sev)


def suite_hash(scenarios: Sequence[Mapping[str, Any]]) -> str:
    """A content hash of the suite: every scenario's id and file hash."""
    text = "\n".join(f"{s['id']}\x00{s.get('content_hash') or ''}" for s in sorted(scenarios, key=lambda s: s["id"]))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _unique_ids(entries: list[Entry]) -> None:
    seen: dict[str, int] = {}
    for entry, _ in entries:
        if entry.get("verdict") == NOT_APPLICABLE:  # it did not run: no trace
            entry["trace"] = None
            continue
        n = seen[entry["id"]] = seen.get(entry["id"], 0) + 1
        entry["trace"] = f"traces/{safe_name(entry['id'])}{'' if n == 1 else f'-{n}'}.trace.jsonl"


def _sorted_copies(entries: Iterable[Entry]) -> list[Entry]:
    """The entries by id, each a copy (the caller's stay as they were) with its trace path."""
    copies = [(dict(e), ev) for e, ev in entries]
    items = sorted(copies, key=lambda p: (p[0]["id"], json.dumps(p[0], sort_keys=True, default=str)))
    _unique_ids(items)
    return items


def _totals(scenarios: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    na = sum(s["verdict"] == NOT_APPLICABLE for s in scenarios)
    return {"scenarios": len(scenarios), "applicable": len(scenarios) - na,
            "passed": sum(s["verdict"] == "pass" for s in scenarios),
            "failed": sum(s["verdict"] == "fail" for s in scenarios),
            "errors": sum(s["verdict"] == "error" for s in scenarios), "not_applicable": na}


def _waste(scenarios: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many scenarios wasted nothing, little or much beyond their useful work, and the waste in all."""
    grades = [s["grade"] for s in scenarios if s.get("grade")]
    out = {"graded": len(grades), **{level: sum(g["level"] == level for g in grades) for level in WASTE_LEVELS}}
    for what in ("executions", "turns", "tokens"):
        out[f"wasted_{what}"] = sum(g[f"wasted_{what}"] for g in grades)
    return out


def _levels(sev_rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Every level: reached or not, and how many of the scenarios it requires passed."""
    out = {}
    for level in LEVEL_ORDER:
        need = required_severities(level)
        counted = [ok for sev, ok in sev_rows if required(sev, need)]
        out[level] = {"reached": meets(sev_rows, level), "scenarios": len(counted), "passed": sum(counted),
                      "meaning": LEVELS[level]}
    return out


def _advisory(scenarios: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The advisory scenarios, apart from every level: how many applied, passed, and each failure with its id."""
    judged = [s for s in scenarios if s["severity"] == ADVISORY and s["verdict"] != NOT_APPLICABLE]
    return {"scenarios": len(judged), "passed": sum(s["verdict"] == "pass" for s in judged),
            "failed": [s["id"] for s in judged if s["verdict"] != "pass"],
            "meaning": "reported apart, required by no level: each scenario's severity_why says why"}


def _agent(m: RunMeta, scenarios: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The agent the report is about: the metadata's, else the one the scenarios ran; its version and commit."""
    ref = m.agent or next((s.get("agent") for s in scenarios if s.get("agent")), "") or "?"
    return {"ref": ref, "version": m.agent_version or agent_version(ref), "commit": m.agent_commit or agent_commit(ref)}


def _coverage(scenarios: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The suite's fault coverage: the declared rules that fired, those that never did, the faults met per tool."""
    tools: dict[str, dict[str, Any]] = {}
    for s in scenarios:
        for name, row in s["coverage"]["tools"].items():
            t = tools.setdefault(name, {"calls": 0, "executions": 0, "faults": {}})
            t["calls"] += row["calls"]
            t["executions"] += row["executions"]
            for kind, n in row["faults"].items():
                t["faults"][kind] = t["faults"].get(kind, 0) + n
    for t in tools.values():
        t["faults"] = dict(sorted(t["faults"].items()))
    return {"declared": sum(s["coverage"]["declared"] for s in scenarios),
            "fired": sum(s["coverage"]["fired"] for s in scenarios),
            "never_fired": [f"{s['id']}: {text}" for s in scenarios for text in s["coverage"]["never_fired"]],
            "tools": dict(sorted(tools.items()))}


def _prices(m: RunMeta) -> PriceTable:
    return price_table(m.prices, m.price_model)


def _priced(scenarios: Sequence[dict[str, Any]], table: PriceTable) -> None:
    for s in scenarios:
        s["cost"] = scenario_cost(s["tokens"], s.get("grade"), table)


def _duration(started: str, ended: str) -> float | None:
    t0, t1 = parse_iso(started), parse_iso(ended)
    return round((t1 - t0).total_seconds(), 3) if t0 and t1 else None


def build_report(entries: Iterable[Entry], meta: RunMeta | Mapping[str, Any] | None = None, *,
                 prices: PriceTable | None = None) -> tuple[dict[str, Any], dict[str, list[Event]]]:
    """report.json's data, and the trace events per trace path, from scenario entries.

    ``prices``: the price table itself, over the metadata's prices file (a merge of shards prices
    as they did, without their file).
    """
    m = RunMeta.of(meta)
    require = check_level(m.require)
    items = _sorted_copies(entries)
    scenarios = [e for e, _ in items]
    table = prices if prices is not None else _prices(m)
    _priced(scenarios, table)
    started, ended = iso(m.started), iso(m.ended)
    sev_rows = rows(scenarios)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "harness": {"name": "toolchaos", "version": harness_version(), "python": platform.python_version()},
        "agent": _agent(m, scenarios),
        "seed": m.seed,
        "suite": {"name": m.suite, "version": m.suite_version, "hash": suite_hash(scenarios),
                  "scenarios": len(scenarios)},
        "shard": dict(m.shard) if m.shard else None,  # a shard's totals and level are its part's, not the suite's
        "started": started,
        "ended": ended,
        "duration_seconds": _duration(started, ended),
        "required_level": require,
        "level": level_reached(scenarios),
        "certified": gated(scenarios, require, m.require_pass_k, partial=bool(m.shard)),  # and pass^K, required
        "required_pass_k": None if m.require_pass_k is None else {"k": m.require_pass_k[0],
                                                                    "p": m.require_pass_k[1]},
        "could_not_certify": could_not_call(scenarios),  # why nothing could be judged, else null
        # the scenarios that did not apply to the agent's kind, each with why: the certificate names them
        "not_applicable": [{"id": sid, "reason": why} for sid, why in not_applicable(scenarios)],
        "levels": _levels(sev_rows),
        "advisory": _advisory(scenarios),  # required by no level, so reported apart
        "totals": _totals(scenarios),
        "waste": _waste(scenarios),
        "cost": suite_cost(scenarios, table),
        "coverage": _coverage(scenarios),
        "baseline": None,  # set below when a baseline report is given
        "categories": categories(scenarios),
        "trials": trial_stats(scenarios),  # per scenario run as trials: pass@k, pass^k, the Wilson interval
        "scenarios": scenarios,
    }
    if m.baseline:
        report["baseline"] = diff_reports(load_report(m.baseline), report)
    if m.extra:
        report["extra"] = json.loads(json.dumps(m.extra, default=str, sort_keys=True))
    for s in scenarios:
        s.pop("agent", None)  # moved to the report's top level
    return report, {e["trace"]: ev for e, ev in items if e["trace"] is not None}
