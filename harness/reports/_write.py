"""The report's files: report.json, report.md, report.html, junit.xml and the traces, and the step summary.

``write_reports(verdicts, meta, out_dir)`` builds report.json's data (``_core``) and
renders the other three from it; ``traces/<scenario>.trace.jsonl`` holds the evidence
each entry points to. report.md is also appended to ``$GITHUB_STEP_SUMMARY`` when that
variable is set, cut below GitHub's size limit.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchaos._internal.files import MAX_LOG_BYTES, open_new, read_capped
from toolchaos._internal.trace import Trace
from toolchaos.errors import ReportError
from toolchaos.reports._core import SCHEMA, SCHEMA_VERSION, Entry, build_report, scenario_entry
from toolchaos.reports._html import render_html
from toolchaos.reports._junit import render_junit
from toolchaos.reports._markdown import render_markdown
from toolchaos.reports._meta import RunMeta

if TYPE_CHECKING:
    from toolchaos.certification import ScenarioVerdict

STEP_SUMMARY_LIMIT = 900_000  # GitHub refuses step summaries over 1 MiB


def dumps(report: Mapping[str, Any]) -> str:
    """report.json's text: standard JSON only (a NaN or infinity, which JSON cannot hold, is written as text)."""
    return json.dumps(_finite(report), indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_reports(verdicts: Iterable[ScenarioVerdict], meta: RunMeta | Mapping[str, Any] | None, out_dir: str | Path,
                  *, step_summary: bool = True) -> dict[str, Path]:
    """Write report.json, report.md, report.html, junit.xml and the traces into ``out_dir``.

    Returns ``{"json": path, "md": ..., "html": ..., "junit": ..., "traces": dir}``. When
    ``step_summary`` is true and ``$GITHUB_STEP_SUMMARY`` is set, report.md is appended there.
    """
    return write_entries([scenario_entry(v) for v in verdicts], meta, out_dir, step_summary=step_summary)


def write_entries(entries: Iterable[Entry], meta: RunMeta | Mapping[str, Any] | None, out_dir: str | Path, *,
                  step_summary: bool = True) -> dict[str, Path]:
    """``write_reports`` from ``scenario_entry`` results (what crosses process boundaries)."""
    entries = list(entries)
    report, traces = build_report(entries, meta)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "traces").mkdir(exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the report directory {out}: {exc.strerror or exc}") from None
    refused = _write_traces(out, traces)
    if refused:  # a link planted where a trace goes: those scenarios fail (their evidence is gone), the rest stand
        by_id = {s["id"]: refused[s["trace"]] for s in report["scenarios"] if s["trace"] in refused}
        report, traces = build_report([_refused(e, by_id[e[0]["id"]]) if e[0]["id"] in by_id else e
                                       for e in entries], meta)
        for s in report["scenarios"]:
            if s["id"] in by_id:
                s["trace"] = None  # nothing of ours is there: a reader must not follow the link
        _write_traces(out, {rel: ev for rel, ev in traces.items() if rel not in refused})
    return write_rendered(report, traces, out, step_summary=step_summary)


def write_rendered(report: Mapping[str, Any], traces: Mapping[str, list[Any]], out: Path, *,
                   step_summary: bool = True) -> dict[str, Path]:
    """report.json and its three renderings into ``out``, whose traces are written already (by
    ``write_entries``, or copied from the shards a merge joins)."""
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


def _write_traces(out: Path, traces: Mapping[str, list[Any]]) -> dict[str, str]:
    """Write each trace; those refused (a symbolic link in the way) by their path, with the reason."""
    refused = {}
    for rel, events in traces.items():
        try:
            Trace(events).write(out / rel)
        except OSError as exc:
            refused[rel] = f"{exc.strerror or exc}: {rel}"
    return refused


def _refused(entry: Entry, why: str) -> Entry:
    """A scenario entry whose trace could not be written: failed, saying why."""
    data, events = entry
    data = {**data, "verdict": "fail", "first_broken": "artifacts", "failure_severity": data.get("severity"),
            "trace_refused": why,
            "invariants": [*data.get("invariants", []), {
                "name": "artifacts", "params": {}, "passed": False, "expected": "the run's trace written to the report",
                "actual": f"refused: {why}", "step": None, "seq": None, "why": None,
                "violations": [{"invariant": "artifacts", "expected": "the run's trace written to the report",
                                "actual": f"refused: {why}", "step": None, "seq": None}]}]}
    return data, events


def _write(path: Path, text: str) -> Path:
    # A lone surrogate from agent text: JSON's own escape in report.json (it reads back the same),
    # visible as \udXXX in the others. Never an encoding error that leaves an empty file.
    with open_new(path) as fh:
        fh.write(text.encode("utf-8", "backslashreplace"))
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
    """Load a report.json, checking that it is one this version can read (a regular file, at most 64 MiB)."""
    data = json.loads(read_capped(path, MAX_LOG_BYTES).decode("utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ReportError(f"{path}: not a toolchaos report (no \"schema\": \"{SCHEMA}\")")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(f"{path}: report schema version {data.get('schema_version')!r}; "
                          f"this toolchaos reads version {SCHEMA_VERSION}")
    return data
