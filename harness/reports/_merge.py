"""Shards joined: the reports of a suite split across CI jobs, merged into one report and one verdict.

``merge_reports(dirs, out_dir)`` reads each shard's report directory (report.json and its traces,
as ``pytest --chaos-shard=I/N --chaos-report=DIR`` or ``toolchaos certify --shard I/N --report DIR``
wrote it), checks that they are the shards of one run, and writes one report (report.json,
report.md, report.html, junit.xml, traces) identical to the unsharded run's apart from the timings
(``started``, ``ended``, ``duration_seconds``).

How, without a rule for every field (the report grows): the scenarios are the shards' own entries,
untouched (nothing in one scenario's entry depends on another's). The top-level fields are rebuilt
from all of them by ``build_report``, as the unsharded run built them. A field that cannot be
rebuilt from the entries (the harness that ran, a field of the run's metadata) is found by
rebuilding each shard's own report and comparing: such a field must be the same in every shard
and is taken from them. The baseline comparison joins the shards' (each compared its own part).

Refused as a ``ReportError`` naming the cause and the directories: a directory without a report, a
report that is no shard, shards of different agents, seeds, suites, harnesses, required levels or
partitions, a shard missing or given twice, a scenario in two shards, a trace missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos._internal.files import MAX_LOG_BYTES, open_new, read_capped
from toolchaos.errors import ReportError
from toolchaos.reports._core import Entry, _duration, build_report
from toolchaos.reports._cost import PriceTable
from toolchaos.reports._diff import _who, diff_reports, load_report
from toolchaos.reports._meta import RunMeta
from toolchaos.reports._write import dumps, read_report, write_rendered

TIMINGS = ("started", "ended", "duration_seconds")
# Rebuilt or joined apart: the timings, the scenarios (the shards' own), the shard, the baseline.
_APART = {*TIMINGS, "scenarios", "shard", "baseline"}
TRACE_PATH = re.compile(r"traces/[^/\\\x00]+\.trace\.jsonl")
_MISSING = object()


@dataclass
class _Shard:
    """One shard's report directory, read."""

    where: str  # the directory as given
    report: dict[str, Any]
    traces: dict[str, bytes] = field(default_factory=dict)  # trace path -> the file's bytes

    @property
    def index(self) -> int:
        return int(self.report["shard"]["index"])

    @property
    def empty(self) -> bool:
        return not self.report["scenarios"]

    def entries(self) -> list[Entry]:
        """The scenarios as ``build_report`` takes them (their events are not needed for the totals)."""
        return [(s, []) for s in self.report["scenarios"]]


def _events(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def _read(where: str) -> _Shard:
    folder = Path(where)
    if folder.name == "report.json" and folder.is_file():
        folder = folder.parent
    if not (folder / "report.json").is_file():
        raise ReportError(f"{where}: no report.json there; give the report directory each shard wrote "
                          "(pytest --chaos-report=DIR, toolchaos certify --report DIR)")
    shard = _Shard(where, read_report(folder / "report.json"))
    if not shard.report.get("shard"):
        raise ReportError(f"{where}: not a shard: its report.json has no shard (it ran without --chaos-shard or "
                          "--shard); a merge joins the reports of one sharded run")
    for s in shard.report["scenarios"]:
        rel = s.get("trace")
        if rel is None:  # the shard could not write it (a link was in the way): its entry says so
            continue
        if not isinstance(rel, str) or not TRACE_PATH.fullmatch(rel):
            raise ReportError(f"{where}: scenario {s.get('id')!r} names its trace as {rel!r}; a report's traces "
                              "are traces/<id>.trace.jsonl")
        try:
            shard.traces[rel] = read_capped(folder / rel, MAX_LOG_BYTES)
        except OSError as exc:
            raise ReportError(f"{where}: the trace of scenario {s['id']!r} cannot be read ({exc.strerror or exc}: "
                              f"{rel}); upload each shard's whole report directory, traces/ included") from None
    return shard


# --- the checks ----------------------------------------------------------------------------


def _same(shards: Sequence[_Shard], what: str, value: Callable[[_Shard], Any], hint: str = "") -> None:
    """Every shard's ``value`` is the same, or a refusal naming each value and the directories that have it."""
    groups: dict[str, list[str]] = {}
    for sh in shards:
        groups.setdefault(json.dumps(value(sh), sort_keys=True, default=str), []).append(sh.where)
    if len(groups) > 1:
        said = " vs ".join(f"{text} ({', '.join(dirs)})" for text, dirs in groups.items())
        raise ReportError(f"cannot merge: the shards differ in {what}: {said}{hint}")


def _check(shards: Sequence[_Shard]) -> None:
    ran = [sh for sh in shards if not sh.empty]  # a shard that ran nothing says nothing of the agent
    _same(ran, "agent", lambda sh: sh.report["agent"])
    _same(shards, "seed", lambda sh: sh.report["seed"])
    _same(shards, "suite", lambda sh: {k: sh.report["suite"].get(k) for k in ("name", "version")})
    _same(shards, "harness", lambda sh: sh.report["harness"])
    _same(shards, "required level", lambda sh: sh.report["required_level"])
    _same(shards, "required pass^k", lambda sh: sh.report.get("required_pass_k"))
    _same(shards, "shard count", lambda sh: sh.report["shard"]["total"])
    _same(shards, "partition", lambda sh: {k: v for k, v in sh.report["shard"].items() if k != "index"},
          "; they split different selections (-k, paths), suites or durations files: run every shard "
          "with the same command but I")
    _same(shards, "extra", lambda sh: sh.report.get("extra"))
    _complete(shards)
    _disjoint(shards)


def _complete(shards: Sequence[_Shard]) -> None:
    total = int(shards[0].report["shard"]["total"])
    by_index: dict[int, list[str]] = {}
    for sh in shards:
        by_index.setdefault(sh.index, []).append(sh.where)
    twice = {i: dirs for i, dirs in by_index.items() if len(dirs) > 1}
    if twice:
        i, dirs = min(twice.items())
        raise ReportError(f"cannot merge: shard {i}/{total} is given twice ({', '.join(dirs)})")
    missing = [f"{i}/{total}" for i in range(1, total + 1) if i not in by_index]
    if missing:
        given = ", ".join(f"{i}/{total} in {dirs[0]}" for i, dirs in sorted(by_index.items()))
        raise ReportError(f"cannot merge: shard {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                          f"missing (given: {given}); merge the reports of all {total} shards")


def _disjoint(shards: Sequence[_Shard]) -> None:
    seen: dict[str, str] = {}
    for sh in shards:
        for sid in dict.fromkeys(s["id"] for s in sh.report["scenarios"]):
            if sid in seen:
                raise ReportError(f"cannot merge: scenario {sid!r} ran in two shards ({seen[sid]}, {sh.where}); "
                                  "the shards did not split one suite the same way")
            seen[sid] = sh.where


# --- the merged report ----------------------------------------------------------------------


def _prices(report: Mapping[str, Any]) -> PriceTable:
    """The price table the shards priced with, from their report (no prices file needed here)."""
    c = report["cost"]
    return PriceTable(c["model"], {c["model"]: (c["input_per_million"], c["output_per_million"])},
                      c["dated"], c["source"])


def _meta(report: Mapping[str, Any], started: str, ended: str) -> RunMeta:
    return RunMeta(agent=report["agent"]["ref"], seed=report["seed"], suite=report["suite"]["name"],
                   suite_version=report["suite"].get("version"), started=started, ended=ended,
                   require=report["required_level"], agent_version=report["agent"].get("version"),
                   agent_commit=report["agent"].get("commit"), extra=dict(report.get("extra") or {}),
                   require_pass_k=_pass_k(report.get("required_pass_k")))


def _pass_k(required: Mapping[str, Any] | None) -> tuple[int, float] | None:
    """The shards' ``--require-pass-k``, as they recorded it: the merge gates on the whole suite's trials."""
    return None if required is None else (int(required["k"]), float(required["p"]))


def _built(entries: Iterable[Entry], meta: RunMeta, table: PriceTable) -> dict[str, Any]:
    """``build_report``'s data as report.json holds it (JSON's types: what the shards' files read back as)."""
    data: dict[str, Any] = json.loads(dumps(build_report(entries, meta, prices=table)[0]))
    return data


def _carried(shards: Sequence[_Shard], table: PriceTable) -> dict[str, Any]:
    """The top-level fields the entries do not rebuild: the same in every shard, taken from them."""
    odd: list[str] = []
    for sh in shards:
        meta = _meta(sh.report, sh.report["started"], sh.report["ended"])
        meta.shard = sh.report["shard"]  # what a shard's gate knows: its part (some trials of a scenario)
        rebuilt = _built(sh.entries(), meta, table)
        odd += [k for k, v in sh.report.items() if k not in _APART and rebuilt.get(k, _MISSING) != v and k not in odd]
    for key in odd:
        _same(shards, f"{key} (a field the scenarios do not rebuild)", _field(key))
    return {k: shards[0].report[k] for k in odd if k in shards[0].report}


def _field(key: str) -> Callable[[_Shard], Any]:
    return lambda sh: sh.report.get(key)


def _joined_baseline(shards: Sequence[_Shard], merged: Mapping[str, Any]) -> dict[str, Any] | None:
    """The shards' comparisons with one baseline, joined: each compared its part of the suite."""
    parts = [sh.report.get("baseline") for sh in shards]
    if all(p is None for p in parts):
        return None
    _same(shards, "baseline", lambda sh: (sh.report.get("baseline") or {}).get("old"),
          "; give every shard the same baseline, or none (toolchaos report merge --baseline compares anew)")
    given = [p for p in parts if p is not None]
    joined: dict[str, Any] = {"old": given[0]["old"], "new": _who(merged)}
    for key in given[0]:
        if key not in joined:
            joined[key] = _joined(shards, key, [p.get(key) for p in given])
    return joined


def _joined(shards: Sequence[_Shard], key: str, values: list[Any]) -> Any:
    """One list of the baseline comparison, from each shard's: scenario ids or per-scenario moves."""
    if key == "removed":  # removed from the whole suite: absent from every shard's part
        return sorted(set.intersection(*(set(v) for v in values)))
    if not all(isinstance(v, list) for v in values):  # not per scenario: the same in every shard
        _same(shards, f"baseline {key}", lambda sh: (sh.report.get("baseline") or {}).get(key))
        return values[0]
    if all(isinstance(x, str) for v in values for x in v):  # ids (added): each in one shard
        return sorted({x for v in values for x in v})
    return sorted((x for v in values for x in v), key=lambda x: str(x.get("id")))  # moves: by scenario, as diffed


def merged_report(dirs: Sequence[str | Path], baseline: str | Path | None = None
                  ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The merged report's data and its trace files (path -> bytes), or a ``ReportError``."""
    if not dirs:
        raise ReportError("no shard to merge: give the report directories of every shard")
    shards = [_read(str(d)) for d in dirs]
    _check(shards)
    first = next((sh for sh in shards if not sh.empty), shards[0])
    table = _prices(first.report)
    started = min(sh.report["started"] for sh in shards)
    ended = max(sh.report["ended"] for sh in shards)
    built = _built([e for sh in shards for e in sh.entries()], _meta(first.report, started, ended), table)
    built.update(_carried(shards, table))
    built.update(agent=first.report["agent"], shard=None, duration_seconds=_duration(started, ended),
                 scenarios=sorted((s for sh in shards for s in sh.report["scenarios"]), key=lambda s: s["id"]))
    built["baseline"] = (diff_reports(load_report(baseline), built) if baseline is not None
                         else _joined_baseline(shards, built))
    order = [*first.report, *(k for k in built if k not in first.report)]  # the layout the unsharded run writes
    report = {k: built[k] for k in order if k in built}
    traces = {rel: data for sh in shards for rel, data in sh.traces.items()}
    return report, traces


def merge_reports(dirs: Sequence[str | Path], out_dir: str | Path, *, baseline: str | Path | None = None,
                  step_summary: bool = True) -> dict[str, Path]:
    """Merge the report directories of every shard of one run into ``out_dir``.

    Writes report.json, report.md, report.html, junit.xml and the traces, and returns their
    paths as ``write_reports`` does. ``baseline``: compare the merged report with that report
    (else the shards' own comparisons are joined). A ``ReportError`` says why shards cannot merge.
    """
    report, files = merged_report(dirs, baseline)
    out = Path(out_dir)
    inside = [str(d) for d in dirs if _same_dir(Path(d), out)]
    if inside:
        raise ReportError(f"--out {out_dir} is a shard's own directory ({inside[0]}); write the merge elsewhere")
    try:
        (out / "traces").mkdir(parents=True, exist_ok=True)
        for rel, data in files.items():
            with open_new(out / rel) as fh:
                fh.write(data)
    except OSError as exc:
        raise ReportError(f"cannot write the merged report to {out}: {exc.strerror or exc}") from None
    return write_rendered(report, {rel: _events(data) for rel, data in files.items()}, out, step_summary=step_summary)


def _same_dir(shard: Path, out: Path) -> bool:
    folder = shard.parent if shard.name == "report.json" else shard
    try:
        return folder.resolve() == out.resolve()
    except OSError:  # pragma: no cover - an unreadable path: not the same as one we can write
        return False
