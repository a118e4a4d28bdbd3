"""Loop forensics: per-session figures, verdicts, the streaming scanner, bounded memory."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from toolchaos import policies, run
from toolchaos.fake_tools import catalogue
from toolchaos.fake_tools import faults as F
from toolchaos.forensics import (
    MAX_TRACKED,
    Analysis,
    Session,
    Thresholds,
    analyze,
    as_json,
    render_table,
)

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INCIDENT = ROOT / "scenarios" / "examples" / "05-incident.trace.jsonl"


def by_session(paths: list[Path], **kw: object) -> dict[str, object]:
    return {r.session: r for r in analyze(paths, **kw)}  # type: ignore[arg-type]


def test_the_incident_trace_is_looping() -> None:
    (r,) = analyze([INCIDENT])
    assert (r.calls, r.unique, r.turns) == (40, 1, 40)
    assert r.repeat_rate == pytest.approx(0.975)
    assert r.top[0].count == 40 and r.top[0].tool == "fetch_invoice" and r.top[0].args == '{"invoice_id":"inv_1"}'
    assert r.longest_no_progress == 39
    assert r.interval_median == pytest.approx(30.0) and r.interval_spread == 0.0
    assert r.tokens is not None and r.tokens.first < r.tokens.last and r.tokens.per_turn > 0
    assert r.state == "FAILED"
    assert r.verdict == "looping" and "repeated 40 times" in r.reason


def test_each_imported_format_gets_a_verdict() -> None:
    reports = {r.session: r for r in analyze(sorted(LOGS.iterdir()))}
    assert reports["conv_42"].verdict == "looping"  # otel: 12 identical calls 4 ms apart
    assert "4.0ms" in reports["conv_42"].reason
    assert reports["anthropic.json"].verdict == "looping"
    assert reports["anthropic.json"].cycle is not None and reports["anthropic.json"].cycle.calls == 8
    assert {reports["anthropic.json"].cycle.a, reports["anthropic.json"].cycle.b} == {"search", "read_document"}
    assert reports["openai_chat.json"].verdict == "suspicious"
    assert reports["openai_responses.json"].verdict == "healthy"  # a 503, then a retry that worked
    assert reports["0xabc1"].verdict == "healthy" and reports["0xabc1"].repeat_rate == 0


def _trace(tmp_path: Path, name: str, policy: object, faults: object = None, agent: str = "builtin:naive") -> Path:
    tool = catalogue.get("fetch_invoice", faults)
    others = [catalogue.get("search"), catalogue.get("get_job_status"), catalogue.get("list_records")]
    result = run(agent, task="t", tools=[tool, *others], policy=policy, name=name)
    return result.trace.write(tmp_path / f"{name}.trace.jsonl")


def test_legitimate_repetition_is_not_looping(tmp_path: Path) -> None:
    paging = _trace(tmp_path, "paging", policies.paginate("list_records"))
    polling = _trace(tmp_path, "polling", policies.poll_until("get_job_status", {"job_id": "j"}),
                     agent="builtin:guarded")
    explore = _trace(tmp_path, "explore", policies.explore("search", [{"query": f"q{i}"} for i in range(12)]))
    reports = {r.session.split("#")[0]: r for r in analyze([paging, polling, explore])}
    assert all(r.verdict == "healthy" for r in reports.values()), {k: v.reason for k, v in reports.items()}
    assert reports["explore"].unique == 12 and reports["explore"].longest_no_progress == 0


def test_polls_neither_make_nor_break_a_streak() -> None:
    s = Session("s")
    for i in range(30):
        s.tool(b"job", i * 15.0, b'"PENDING","code":"processing"')
    s.tool(b"job", 450.0, b'"SUCCESS","code":"ok"')
    r = s.report()
    assert r.polls == 30 and r.longest_no_progress == 0
    assert r.verdict != "looping"


def test_a_b_cycles_and_streaks_are_counted_exactly() -> None:
    s = Session("s")
    for i in range(10):
        s.tool(b"A" if i % 2 == 0 else b"B", float(i), b"ok")
    s.tool(b"C", 10.0, b"ok")
    r = s.report()
    assert r.cycle is not None and (r.cycle.calls, r.cycle.a_fp, r.cycle.b_fp) == (10, "A", "B")
    assert r.longest_no_progress == 8  # the first A and B were new; C is new again
    assert r.verdict == "looping" and "A-B cycle" in r.reason


def test_a_changed_answer_is_progress() -> None:
    s = Session("s")
    for i in range(12):
        s.tool(b"status", float(i), b"v%d" % (i // 3))  # the answer changes every third call
    r = s.report()
    assert r.longest_no_progress == 2
    assert r.verdict == "suspicious"  # repeats, but converging


def test_thresholds_are_configurable() -> None:
    (r,) = analyze([INCIDENT], thresholds=Thresholds(loop_repeats=100, loop_streak=100))
    assert r.verdict == "suspicious"


def test_token_growth_is_suspicious_when_calls_repeat() -> None:
    s = Session("s")
    for i in range(6):
        s.model(100 * 2 ** i)
        s.tool(b"q%d" % (i % 5), float(i), b"ok")
    r = s.report()
    assert r.tokens is not None and r.tokens.ratio == 32 and r.tokens.per_turn == 620
    assert r.verdict == "suspicious" and "input tokens grew x32" in r.reason
    explore = Session("e")
    for i in range(6):
        explore.model(100 * 2 ** i)
        explore.tool(b"q%d" % i, float(i), b"ok")
    assert explore.report().verdict == "healthy"  # growth while finding new things is what exploring costs


def test_gzip_traces_and_the_slow_path_agree_with_the_fast_one(tmp_path: Path) -> None:
    lines = INCIDENT.read_text().splitlines()
    gz = tmp_path / "incident.jsonl.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    reordered = tmp_path / "reordered.jsonl"  # same events, keys in another order: every line parsed as JSON
    reordered.write_text("".join(json.dumps(dict(reversed(list(json.loads(x).items())))) + "\n" for x in lines))
    fast, zipped, slow = (analyze([p])[0].as_dict() for p in (INCIDENT, gz, reordered))
    for d in (fast, zipped, slow):
        d.pop("source")
    assert fast == zipped == slow


def test_bad_lines_are_errors_naming_the_line(tmp_path: Path) -> None:
    from toolchaos.logs import LogFormatError

    p = tmp_path / "t.jsonl"
    p.write_text(INCIDENT.read_text().splitlines()[0] + "\n{broken\n")
    with pytest.raises(LogFormatError, match=r"t.jsonl: line 2: toolchaos: not valid JSON"):
        analyze([p])


def test_memory_stays_bounded_with_many_unique_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolchaos.forensics._session as mod

    monkeypatch.setattr(mod, "MAX_TRACKED", 200)
    s = Session("s")
    for i in range(5000):
        s.tool(b"loop" if i % 2 else b"u%d" % i, i * 0.001, b"ok")
    r = s.report()
    assert len(s.counts) <= 200 and r.approximate
    assert 2300 <= r.unique <= 2700  # HyperLogLog estimate of the 2,501 distinct fingerprints
    assert r.top[0].fp == "loop" and r.top[0].count > 2000  # a lower bound, still the top
    assert MAX_TRACKED == 50_000


def test_the_interval_sample_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolchaos.forensics._session as mod

    monkeypatch.setattr(mod, "GAP_SAMPLE", 64)
    s = Session("s")
    for i in range(10_000):
        s.tool(b"x", i * 0.5, b"ok")
    assert len(s.gaps) < 64
    assert s.report().interval_median == pytest.approx(0.5)


def test_render_and_json_outputs() -> None:
    reports = analyze([INCIDENT, LOGS / "otel_spans.jsonl"])
    text = render_table(reports)
    assert text.splitlines()[0].split()[:3] == ["session", "calls", "unique"]
    assert "LOOPING" in text and "verdict      looping" in text and "intervals    median 30.0s" in text
    data = as_json(reports, ["a"], 99)
    assert data["summary"] == {"looping": 1, "suspicious": 0, "healthy": 1}
    assert json.loads(json.dumps(data))["sessions"][0]["top"][0]["count"] == 40


def test_a_large_trace_streams_in_flat_memory(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_analyze import generate
    finally:
        sys.path.pop(0)
    p = tmp_path / "big.jsonl"
    assert generate(p, 40_000) == 40_000
    a = Analysis()
    a.add_path(p)
    assert a.events == 40_000
    reports = {r.session: r for r in a.reports()}
    loop = reports["incident#0"]
    assert loop.verdict == "looping" and loop.calls == 19_980 and loop.interval_median == pytest.approx(0.001)
    assert all(len(s.counts) <= 20 for s in a.sessions.values())


def test_a_run_trace_written_by_the_engine_reads_on_the_fast_path(tmp_path: Path) -> None:
    p = _trace(tmp_path, "timeouts", policies.stubborn("fetch_invoice", {"invoice_id": "i"}),
               [{"calls": [1, 4], "outcome": F.timeout(5)}])
    a = Analysis()
    slow: list[int] = []
    original = a._slow
    a._slow = lambda line, source, n: (slow.append(n), original(line, source, n))  # type: ignore[method-assign]
    a.add_path(p)
    assert not slow
    (r,) = a.reports()
    assert r.calls == 5 and r.longest_no_progress == 3  # 4 timeouts, then the answer changed
