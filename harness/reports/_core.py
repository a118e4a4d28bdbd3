"""Certification reports: what a release manager reads before an agent ships.

``write_reports(verdicts, meta, out_dir)`` turns scenario verdicts into four files:

- ``report.json``: the machine-readable record (schema: docs/report-schema.md), the
  single source the other three are rendered from;
- ``report.md``: the summary for a pull request or a CI step summary (appended to
  ``$GITHUB_STEP_SUMMARY`` when that variable is set);
- ``report.html``: one self-contained page with a timeline picture of every run;
- ``junit.xml``: one testcase per scenario, the figures as properties;

plus ``traces/<scenario>.trace.jsonl``, the evidence each scenario's entry points to.

**Levels** say how much of the suite an agent survives (see ``LEVELS``): ``critical``
(every critical scenario passes), ``major`` (every critical and major one), ``all``
(every scenario). ``certified(verdicts, level)`` is the gate; a report records the
highest level reached and whether the required one was.

**Determinism**: two reports of the same agent, seed and suite are byte-identical
except for ``started``, ``ended`` and ``duration_seconds``. Scenarios are sorted by id,
paths are relative, and nothing else reads the wall clock.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from toolchaos._engine import safe_name
from toolchaos._internal.events import Event
from toolchaos._internal.trace import Trace
from toolchaos._internal.version import VERSION
from toolchaos.certification._verdict import ScenarioVerdict
from toolchaos.errors import ReportError, did_you_mean
from toolchaos.invariants import _builtin as I
from toolchaos.reports._html import render_html
from toolchaos.reports._junit import render_junit
from toolchaos.reports._markdown import render_markdown

SCHEMA = "toolchaos.report"
SCHEMA_VERSION = 1

LEVEL_ORDER: tuple[str, ...] = ("critical", "major", "all")
SEVERITIES: tuple[str, ...] = ("critical", "major", "minor")
LEVELS: dict[str, str] = {
    "critical": "every critical scenario passes: no runaway loop, duplicate side effect or unbounded run "
                "on the failure modes that cost money or data",
    "major": "every critical and major scenario passes",
    "all": "every scenario passes, minor ones included",
}
DEFAULT_LEVEL = "all"
# Categories in the order the certification suite presents them; others follow alphabetically.
CATEGORY_ORDER: tuple[str, ...] = ("loops", "error_classes", "side_effects", "budgets", "legit", "resume")
STEP_SUMMARY_LIMIT = 900_000  # GitHub refuses step summaries over 1 MiB


# --- levels ------------------------------------------------------------------------------


def check_level(level: str) -> str:
    if level not in LEVEL_ORDER:
        raise ReportError(f"unknown level {level!r}{did_you_mean(str(level), LEVEL_ORDER)}; "
                          f"levels: {', '.join(LEVEL_ORDER)}")
    return level


def _severities(level: str) -> tuple[str, ...] | None:
    """Severities a level requires to pass; ``None`` means every scenario."""
    return {"critical": ("critical",), "major": ("critical", "major"), "all": None}[check_level(level)]


def _rows(items: Iterable[Any]) -> list[tuple[str, bool]]:
    """(severity, passed) from verdicts or report entries."""
    out = []
    for it in items:
        if isinstance(it, Mapping):
            out.append((str(it.get("severity", "")), it.get("verdict") == "pass"))
        else:
            out.append((str(it.severity), _status(it) == "pass"))
    return out


def _meets(rows: Sequence[tuple[str, bool]], level: str) -> bool:
    need = _severities(level)
    if not rows:
        return False  # nothing was tested: nothing is certified
    return all(ok for sev, ok in rows if need is None or sev in need)


def level_reached(verdicts: Iterable[Any]) -> str:
    """The highest level every required scenario of which passes, or ``"none"``."""
    rows = _rows(verdicts)
    reached = "none"
    for level in LEVEL_ORDER:
        if not _meets(rows, level):
            break
        reached = level
    return reached


def certified(verdicts: Iterable[Any], level: str = DEFAULT_LEVEL) -> bool:
    """Does this set of verdicts (or report entries) reach ``level``? An empty set never does."""
    return _meets(_rows(verdicts), level)


# --- run metadata ------------------------------------------------------------------------


def _now() -> datetime:
    # The harness installs freezegun process-wide; outside a run it returns the real time.
    return datetime.now(timezone.utc)


def _iso(value: datetime | str | None) -> str:
    if value is None:
        value = _now()
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class RunMeta:
    """What a report says about the run as a whole (besides the verdicts)."""

    agent: str = ""  # the agent reference, e.g. "builtin:guarded" or "mypkg.agent:run"
    seed: int = 0
    suite: str = "custom"  # the suite's name: "certification" for the bundled one
    suite_version: str | None = None
    started: datetime | str | None = None
    ended: datetime | str | None = None
    require: str = DEFAULT_LEVEL  # the level the run must reach to be certified
    agent_version: str | None = None  # found from the agent's package when not given
    extra: dict[str, Any] = field(default_factory=dict)  # free-form, copied into report.json

    @classmethod
    def of(cls, meta: RunMeta | Mapping[str, Any] | None) -> RunMeta:
        if meta is None:
            return cls()
        if isinstance(meta, RunMeta):
            return meta
        known = set(cls.__dataclass_fields__)
        bad = [k for k in meta if k not in known]
        if bad:
            raise ReportError(f"unknown report metadata {', '.join(map(repr, bad))}; known: {', '.join(sorted(known))}")
        return cls(**dict(meta))


def agent_ref(agent: Any) -> str:
    """A printable reference for an agent given as a reference or a callable."""
    if isinstance(agent, str):
        return agent
    mod = getattr(agent, "__module__", None) or "?"
    name = getattr(agent, "__qualname__", None) or type(agent).__qualname__
    return f"{mod}:{name}"


def agent_version(ref: str) -> str | None:
    """The installed version of the distribution that provides the agent, where there is one."""
    from importlib import metadata

    module = ref.partition(":")[0]
    if module == "builtin" or module.split(".")[0] == "toolchaos":
        try:
            return metadata.version("toolchaos")
        except metadata.PackageNotFoundError:
            return None
    top = module.split(".")[0]
    if ":" not in ref or not top.isidentifier():
        return None
    dists = _distributions().get(top, [])
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            continue
    return None


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> distributions (scanning them costs a second on a big environment: once)."""
    from importlib import metadata

    try:
        return metadata.packages_distributions()
    except Exception:  # pragma: no cover - broken metadata on the path
        return {}


def harness_version() -> str:
    return VERSION


# --- one scenario ------------------------------------------------------------------------


def _status(v: ScenarioVerdict) -> str:
    """pass | fail | error (``error``: the scenario itself broke, e.g. its policy raised)."""
    if v.result.harness_stop in ("policy", "interrupted"):
        return "error"
    return "pass" if v.passed else "fail"


def _inv_name(inv: Any) -> str:
    return str(getattr(inv, "name", None) or type(inv).__name__)


def _inv_params(inv: Any) -> dict[str, Any]:
    params = getattr(inv, "params", None)
    try:
        out = params() if callable(params) else {}
    except Exception:  # pragma: no cover - a custom invariant with a broken params()
        out = {}
    return json.loads(json.dumps(out, default=str, sort_keys=True)) if isinstance(out, Mapping) else {}


def _belongs(violation_name: str, inv_name: str) -> bool:
    return violation_name == inv_name or violation_name.startswith((inv_name + ".", inv_name + "["))


def _expected(inv: Any) -> str:
    if isinstance(inv, I.Bounded):
        parts = []
        if inv.executions is not None:
            parts.append(f"at most {inv.executions} tool executions")
        parts += [f"at most {n} executions of {t}" for t, n in sorted(inv.per_tool.items())]
        if inv.turns is not None:
            parts.append(f"at most {inv.turns} model turns")
        if inv.virtual_seconds is not None:
            parts.append(f"at most {inv.virtual_seconds:g} virtual seconds")
        if inv.tokens is not None:
            parts.append(f"at most {inv.tokens} tokens")
        return "; ".join(parts) or "bounded"
    if isinstance(inv, I.MaxSideEffects):
        return f"at most {inv.n} side effects" + (f" of {inv.tool}" if inv.tool else "")
    if isinstance(inv, I.Idempotent):
        return "each operation key applied at most once"
    if isinstance(inv, I.TerminalState):
        return "one of " + ", ".join(inv.states)
    if isinstance(inv, I.StopReport):
        return "a stop report with " + ", ".join(inv.fields) + " (unless COMPLETED)"
    if isinstance(inv, I.NoExecutionAfterRefusal):
        return "no refused call executed later; no call after the end"
    if isinstance(inv, I.RetryAfterHonoured):
        return "no call before its Retry-After has elapsed"
    if isinstance(inv, I.NoUnchangedResend):
        return "no unchanged resend of a FATAL or PRECONDITION call"
    if isinstance(inv, I.Completed):
        extra = "".join(f"; at least {n} successful calls of {t}" for t, n in sorted(inv.successes.items()))
        return "COMPLETED" + extra
    if isinstance(inv, I.Terminated):
        return "the agent ends the run itself"
    doc = (type(inv).__doc__ or "").strip().splitlines()
    return doc[0] if doc else repr(inv)


def _actual(inv: Any, v: ScenarioVerdict) -> str:
    """What happened, for an invariant that held (a broken one shows its violation)."""
    r = v.result
    if isinstance(inv, I.Bounded):
        parts = []
        if inv.executions is not None:
            parts.append(f"{r.total_executions} tool executions")
        parts += [f"{r.executions.get(t, 0)} executions of {t}" for t in sorted(inv.per_tool)]
        if inv.turns is not None:
            parts.append(f"{r.turns} model turns")
        if inv.virtual_seconds is not None:
            parts.append(f"{r.virtual_seconds:g} virtual seconds")
        if inv.tokens is not None:
            parts.append(f"{r.tokens} tokens")
        return "; ".join(parts) or "held"
    if isinstance(inv, I.MaxSideEffects):
        return f"{r.ledger.applied(inv.tool)} applied"
    if isinstance(inv, I.Idempotent):
        counts = [n for f in r.ledger.effects if f.applied for n in [r.ledger.applied_for(f.tool, f.key)]]
        return f"at most {max(counts)} per key" if counts else "no side effect applied"
    if isinstance(inv, I.TerminalState):
        return r.terminal_state
    if isinstance(inv, I.StopReport):
        return "COMPLETED (no report needed)" if r.terminal_state == "COMPLETED" else "a complete stop report"
    if isinstance(inv, I.Completed):
        got = "; ".join(f"{sum(1 for e in r.trace.tool_events if e['tool'] == t and e['class'] == 'SUCCESS')} "
                        f"successful calls of {t}" for t in sorted(inv.successes))
        return r.terminal_state + (f"; {got}" if got else "")
    if isinstance(inv, I.Terminated):
        return f"ended by the agent ({r.terminal_state})"
    return "held"


def _violation(v: Any) -> dict[str, Any]:
    return {"invariant": v.invariant, "expected": v.expected, "actual": v.actual, "step": v.step, "seq": v.seq}


def _invariants(v: ScenarioVerdict) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    used: set[int] = set()
    for inv in v.expect:
        name = _inv_name(inv)
        broke = [(i, x) for i, x in enumerate(v.violations) if i not in used and _belongs(x.invariant, name)]
        used.update(i for i, _ in broke)
        entry: dict[str, Any] = {"name": name, "params": _inv_params(inv), "passed": not broke,
                                 "expected": _expected(inv), "actual": "", "step": None, "seq": None,
                                 "violations": [_violation(x) for _, x in broke]}
        if broke:
            first = broke[0][1]
            entry.update(expected=first.expected, actual=first.actual, step=first.step, seq=first.seq)
        else:
            entry["actual"] = _actual(inv, v)
        out.append(entry)
    for i, x in enumerate(v.violations):  # broken invariants not in expect (the defaults, when expect is empty)
        if i not in used:
            out.append({"name": x.invariant.split("[")[0].split(".")[0], "params": {}, "passed": False,
                        "expected": x.expected, "actual": x.actual, "step": x.step, "seq": x.seq,
                        "violations": [_violation(x)]})
    return out


def _scenario_file(path: Path | None) -> str | None:
    if path is None:
        return None
    p = Path(path)
    try:
        import importlib

        root = Path(str(importlib.import_module("toolchaos_scenarios").__file__)).resolve().parent
        return "toolchaos_scenarios/" + p.resolve().relative_to(root).as_posix()
    except (ImportError, ValueError, TypeError):
        pass
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def _side_effects(v: ScenarioVerdict) -> dict[str, Any]:
    r = v.result
    out: dict[str, Any] = {}
    side = sorted(n for n, t in r.tools.items() if getattr(t, "side_effect", False))
    side += sorted({f.tool for f in r.ledger.effects} - set(side))
    for tool in side:
        keys = r.ledger.keys(tool)
        out[tool] = {"executions": r.ledger.executions(tool), "applied": r.ledger.applied(tool),
                     "unknown": sum(1 for f in r.ledger.effects if f.tool == tool and f.status == "unknown"),
                     "keys": dict(sorted(keys.items())),
                     "duplicates": sorted(k for k, n in keys.items() if n > 1)}
    return out


def scenario_entry(v: ScenarioVerdict) -> tuple[dict[str, Any], list[Event]]:
    """One scenario's entry in report.json, and its trace events (written beside it).

    The entry is plain JSON data, so it can cross process boundaries (pytest-xdist).
    """
    r = v.result
    events = [dict(e) for e in r.trace.events]
    executions = {name: 0 for name in sorted(r.tools)}
    executions.update(r.executions)
    report = r.stop_report or {}
    entry: dict[str, Any] = {
        "id": v.id,
        "title": v.title,
        "category": v.category,
        "severity": v.severity,
        "verdict": _status(v),
        "file": _scenario_file(v.path),
        "content_hash": v.content_hash or None,
        "task": r.task,
        "seed": r.seed,
        "terminal_state": r.terminal_state,
        "guard": report.get("guard"),
        "reason": report.get("reason"),
        "harness_stop": r.harness_stop,
        "error": r.error.strip().splitlines()[-1] if r.error else None,
        "answer": r.answer,
        "figures": {
            "executions": r.total_executions,
            "model_turns": r.turns,
            "refusals": sum(1 for e in events if e["kind"] == "refusal"),
            "side_effects": r.ledger.applied(),
            "virtual_seconds": round(r.virtual_seconds, 3),
            "tokens": r.tokens,
        },
        "executions": dict(sorted(executions.items())),
        "side_effects": _side_effects(v),
        "effects": [{"seq": f.seq, "tool": f.tool, "key": f.key, "applied": f.applied, "status": f.status}
                    for f in r.ledger.effects],
        "invariants": _invariants(v),
        "stop_report": json.loads(json.dumps(r.stop_report, default=str)) if r.stop_report else None,
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
                                          "errors": 0, "severity": {}})
        c["scenarios"] += 1
        key = {"pass": "passed", "fail": "failed"}.get(s["verdict"], "errors")
        c[key] += 1
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


def _unique_ids(entries: list[tuple[dict[str, Any], list[Event]]]) -> None:
    seen: dict[str, int] = {}
    for entry, _ in entries:
        n = seen[entry["id"]] = seen.get(entry["id"], 0) + 1
        entry["trace"] = f"traces/{safe_name(entry['id'])}{'' if n == 1 else f'-{n}'}.trace.jsonl"


def build_report(entries: Iterable[tuple[dict[str, Any], list[Event]]], meta: RunMeta | Mapping[str, Any]
                 | None = None) -> tuple[dict[str, Any], dict[str, list[Event]]]:
    """report.json's data, and the trace events per trace path, from scenario entries."""
    m = RunMeta.of(meta)
    require = check_level(m.require)
    copies = [(dict(e), ev) for e, ev in entries]  # the caller's entries stay as they were
    items = sorted(copies, key=lambda p: (p[0]["id"], json.dumps(p[0], sort_keys=True, default=str)))
    _unique_ids(items)
    scenarios = [e for e, _ in items]
    traces = {e["trace"]: ev for e, ev in items}
    started, ended = _iso(m.started), _iso(m.ended)
    t0, t1 = _parse_iso(started), _parse_iso(ended)
    reached = level_reached(scenarios)
    totals = {"scenarios": len(scenarios), "passed": sum(s["verdict"] == "pass" for s in scenarios),
              "failed": sum(s["verdict"] == "fail" for s in scenarios),
              "errors": sum(s["verdict"] == "error" for s in scenarios)}
    sev_rows = [(s["severity"], s["verdict"] == "pass") for s in scenarios]
    levels = {}
    for level in LEVEL_ORDER:
        need = _severities(level)
        rows = [ok for sev, ok in sev_rows if need is None or sev in need]
        levels[level] = {"reached": _meets(sev_rows, level), "scenarios": len(rows), "passed": sum(rows),
                         "meaning": LEVELS[level]}
    agent = m.agent or next((s.get("agent") for s in scenarios if s.get("agent")), "") or "?"
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "harness": {"name": "toolchaos", "version": harness_version(), "python": platform.python_version()},
        "agent": {"ref": agent, "version": m.agent_version or agent_version(agent)},
        "seed": m.seed,
        "suite": {"name": m.suite, "version": m.suite_version, "hash": suite_hash(scenarios),
                  "scenarios": len(scenarios)},
        "started": started,
        "ended": ended,
        "duration_seconds": round((t1 - t0).total_seconds(), 3) if t0 and t1 else None,
        "required_level": require,
        "level": reached,
        "certified": _meets(sev_rows, require),
        "levels": levels,
        "totals": totals,
        "categories": categories(scenarios),
        "scenarios": scenarios,
    }
    if m.extra:
        report["extra"] = json.loads(json.dumps(m.extra, default=str, sort_keys=True))
    for s in scenarios:
        s.pop("agent", None)
    return report, traces


def dumps(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_reports(verdicts: Iterable[ScenarioVerdict], meta: RunMeta | Mapping[str, Any] | None, out_dir: str | Path,
                  *, step_summary: bool = True) -> dict[str, Path]:
    """Write report.json, report.md, report.html, junit.xml and the traces into ``out_dir``.

    Returns ``{"json": path, "md": ..., "html": ..., "junit": ..., "traces": dir}``. When
    ``step_summary`` is true and ``$GITHUB_STEP_SUMMARY`` is set, report.md is appended there.
    """
    return write_entries([scenario_entry(v) for v in verdicts], meta, out_dir, step_summary=step_summary)


def write_entries(entries: Iterable[tuple[dict[str, Any], list[Event]]],
                  meta: RunMeta | Mapping[str, Any] | None, out_dir: str | Path, *,
                  step_summary: bool = True) -> dict[str, Path]:
    """``write_reports`` from ``scenario_entry`` results (what crosses process boundaries)."""
    report, traces = build_report(entries, meta)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "traces").mkdir(exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the report directory {out}: {exc.strerror or exc}") from None
    for rel, events in traces.items():
        Trace(events).write(out / rel)
    md = render_markdown(report, traces)
    paths = {
        "json": _write(out / "report.json", dumps(report)),
        "md": _write(out / "report.md", md),
        "html": _write(out / "report.html", render_html(report, traces)),
        "junit": _write(out / "junit.xml", render_junit(report, traces)),
        "traces": out / "traces",
    }
    if step_summary:
        append_step_summary(md)
    return paths


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def append_step_summary(markdown: str, env: Mapping[str, str] | None = None) -> Path | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when it is set; returns the file written."""
    target = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    if len(markdown.encode()) > STEP_SUMMARY_LIMIT:
        cut = markdown.encode()[:STEP_SUMMARY_LIMIT].decode(errors="ignore")
        markdown = cut.rsplit("\n", 1)[0] + "\n\n*(summary truncated; see report.md for the rest)*\n"
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def read_report(path: str | Path) -> dict[str, Any]:
    """Load a report.json, checking that it is one this version can read."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ReportError(f"{path}: not a toolchaos report (no \"schema\": \"{SCHEMA}\")")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(f"{path}: report schema version {data.get('schema_version')!r}; "
                          f"this toolchaos reads version {SCHEMA_VERSION}")
    return data


# --- for commands (toolchaos certify / run) ----------------------------------------------


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--report DIR`` and ``--require LEVEL``, worded the same in every command."""
    parser.add_argument("--report", metavar="DIR",
                        help="write the certification report (report.json, report.md, report.html, junit.xml, "
                             "traces) to DIR; report.md is also appended to $GITHUB_STEP_SUMMARY when set")
    parser.add_argument("--require", metavar="LEVEL", choices=LEVEL_ORDER,
                        help="the level the exit status requires: "
                             + "; ".join(f"{k}: {v.split(':')[0]}" for k, v in LEVELS.items())
                             + " (default: every scenario passes)")


def exit_code(verdicts: Sequence[Any], require: str | None = None) -> int:
    """0 when the required level is reached (default: every scenario passed), else 1."""
    return 0 if certified(verdicts, require or DEFAULT_LEVEL) else 1


def finish_command(args: argparse.Namespace, verdicts: Sequence[ScenarioVerdict],
                   meta: RunMeta | Mapping[str, Any], out: TextIO | None = None) -> int:
    """End of ``toolchaos certify`` / ``run``: write the report if asked, say the level, return the exit code.

    ``meta.require`` is taken from ``args.require`` when that is given.
    """
    m = RunMeta.of(meta)
    require = getattr(args, "require", None)
    if require:
        m.require = require
    if m.ended is None:
        m.ended = _now()
    stream = out if out is not None else sys.stderr
    report_dir = getattr(args, "report", None)
    if report_dir:
        paths = write_reports(verdicts, m, report_dir)
        print(f"report: {paths['html']} (also report.md, report.json, junit.xml)", file=stream)
    level = m.require
    ok = certified(verdicts, level)
    word = "CERTIFIED" if ok else "NOT CERTIFIED"
    print(f"{word}: level reached {level_reached(verdicts)}, required {level}", file=stream)
    return 0 if ok else 1
