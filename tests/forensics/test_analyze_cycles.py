"""Loop forensics: cycles of period 2, 3 and 4 (A-B-A-B, search -> read -> summarize -> ...)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos import policies, run
from toolchaos.fake_tools import catalogue
from toolchaos.forensics import (
    MAX_PERIOD,
    Analysis,
    Session,
    SessionReport,
    Thresholds,
    analyze,
    as_json,
    render_table,
)

ROUND3 = ["search", "read_document", "summarize"]
ROUND4 = ["search", "read_document", "summarize", "critique"]


def session(names: list[str], sig: bytes = b"ok") -> Session:
    """A session making these calls in order; a call's fingerprint is its tool name."""
    s = Session("s")
    for i, name in enumerate(names):
        s.tool(name.encode(), float(i), sig, name)
    return s


def rounds(steps: list[str], calls: int) -> list[str]:
    return [steps[i % len(steps)] for i in range(calls)]


@pytest.mark.parametrize("steps", [ROUND3, ROUND4], ids=["period3", "period4"])
def test_a_longer_cycle_is_found_with_its_period_steps_and_length(steps: list[str]) -> None:
    r = session(rounds(steps, 12)).report()
    assert r.cycle is not None
    assert (r.cycle.calls, r.cycle.period, r.cycle.steps, r.cycle.steps_fp) == (12, len(steps), steps, steps)
    assert (r.cycle.a, r.cycle.b) == ("search", "read_document")  # the round's first two steps, as before
    assert r.verdict == "looping"  # no call repeats loop_repeats times: the cycle alone makes the verdict
    assert f"cycle {' -> '.join(steps)} (period {len(steps)}) for 12 calls" in r.reason


@pytest.mark.parametrize("steps", [ROUND3, ROUND4], ids=["period3", "period4"])
def test_a_longer_cycle_is_looping_from_loop_cycle_calls(steps: list[str]) -> None:
    th = Thresholds()
    short = session(rounds(steps, th.loop_cycle - 1)).report(th)
    assert short.cycle is not None and short.cycle.calls == th.loop_cycle - 1
    assert short.verdict == "suspicious" and f"(period {len(steps)}) for {th.loop_cycle - 1} calls" in short.reason
    long = session(rounds(steps, th.loop_cycle)).report(th)
    assert long.verdict == "looping" and f"(period {len(steps)}) for {th.loop_cycle} calls" in long.reason


def test_a_b_is_still_reported_as_period_2_in_the_a_b_wording() -> None:
    r = session(rounds(["search", "read_document"], 10)).report()
    assert r.cycle is not None
    assert (r.cycle.calls, r.cycle.period, r.cycle.steps) == (10, 2, ["search", "read_document"])
    assert "A-B cycle search <-> read_document for 10 calls" in r.reason
    assert "A-B cycle    search <-> read_document: 10 calls alternating" in render_table([r])


def test_a_b_a_b_is_not_misread_as_period_4() -> None:
    r = session(rounds(["A", "B"], 12)).report()
    assert r.cycle is not None and (r.cycle.calls, r.cycle.period, r.cycle.steps) == (12, 2, ["A", "B"])


def test_a_plain_repeat_is_not_a_cycle() -> None:
    r = session(["A"] * 12).report()
    assert r.cycle is None
    assert r.verdict == "looping" and "cycle" not in r.reason  # looping for the repeat, not a cycle


def test_legitimate_progress_has_no_cycle() -> None:
    r = session(["A", "B", "C", "D", "E", "F"]).report()
    assert r.cycle is None and r.verdict == "healthy"


@pytest.mark.parametrize("before, after", [(5, 3), (3, 5)], ids=["longest-first", "longest-last"])
def test_a_broken_cycle_reports_its_longest_run(before: int, after: int) -> None:
    r = session([*rounds(ROUND3, 3 * before), "other", *rounds(ROUND3, 3 * after)]).report()
    assert r.cycle is not None
    assert (r.cycle.calls, r.cycle.period, r.cycle.steps) == (15, 3, ROUND3)


def test_a_run_that_stopped_does_not_resume_later() -> None:
    # C ends the A-B run; B C B is a new, shorter run, not the old one going on
    r = session(["A", "B", "A", "B", "C", "B"]).report()
    assert r.cycle is not None and (r.cycle.calls, r.cycle.steps) == (4, ["A", "B"])


def test_a_round_that_revisits_a_step_is_one_4_step_cycle() -> None:
    # search, read, search, summarize: "search" comes back every 2 calls, the round every 4
    r = session(rounds(["search", "read_document", "search", "summarize"], 12)).report()
    assert r.cycle is not None and r.cycle.period == 4
    assert r.cycle.calls == 11  # the run is recognised from the first read_document on
    assert r.cycle.steps == ["read_document", "search", "summarize", "search"]


def test_the_state_stays_bounded() -> None:
    s = session(rounds(ROUND4, 1000) + [f"q{i}" for i in range(1000)])
    assert len(s.hist) == MAX_PERIOD
    assert s.longest_cycle()[0] == 1000


def test_the_report_shows_longer_cycles_in_text_and_json() -> None:
    r = session(rounds(ROUND3, 12)).report()
    text = render_table([r])
    assert text.splitlines()[0].split()[5] == "cycle" and " 12/p3 " in text.splitlines()[1]
    assert "cycle        search -> read_document -> summarize (period 3): 12 calls going round" in text
    (data,) = json.loads(json.dumps(as_json([r])))["sessions"]
    assert data["cycle"] == {"calls": 12, "a": "search", "b": "read_document", "a_fp": "search",
                             "b_fp": "read_document", "period": 3, "steps": ROUND3, "steps_fp": ROUND3}


def _cycle_of(path: Path) -> tuple[SessionReport, list[int]]:
    """The one session of a trace, and the line numbers that went through ``json.loads``."""
    a = Analysis()
    slow: list[int] = []
    original = a._slow

    def counted(line: bytes, source: str, n: int) -> None:
        slow.append(n)
        original(line, source, n)

    a._slow = counted  # type: ignore[method-assign]
    a.add_path(path)
    (r,) = a.reports()
    return r, slow


def test_the_scanner_and_the_json_fallback_both_see_longer_cycles(tmp_path: Path) -> None:
    calls = [("search", {"query": "refund"}), ("read_document", {"doc_id": "d9"}), ("list_records", {})]
    result = run("builtin:naive", task="t", tools=[catalogue.get(name) for name, _ in calls],
                 policy=policies.alternate(calls), name="cycle3")
    fast_path = result.trace.write(tmp_path / "cycle3.trace.jsonl")
    slow_path = tmp_path / "reordered.jsonl"  # the same events, keys in another order: every line parsed
    slow_path.write_text("".join(json.dumps(dict(reversed(list(json.loads(x).items())))) + "\n"
                                 for x in fast_path.read_text().splitlines()))
    fast, fast_slow_lines = _cycle_of(fast_path)
    slow, slow_lines = _cycle_of(slow_path)
    assert not fast_slow_lines and slow_lines
    assert fast.cycle is not None and fast.cycle.period == 3 and fast.cycle.calls == fast.calls
    assert fast.cycle.steps == ["search", "read_document", "list_records"]
    assert fast.cycle == slow.cycle


def test_analyze_reads_a_longer_cycle_from_an_imported_log(tmp_path: Path) -> None:
    messages: list[dict[str, object]] = [{"role": "user", "content": "Find the refund policy."}]
    for i, name in enumerate(rounds(ROUND3, 9)):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name,
                                                           "input": {"doc": "d9"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                      "content": "nothing new"}]})
    p = tmp_path / "anthropic.json"
    p.write_text(json.dumps({"model": "m", "messages": messages}))
    (r,) = analyze([p])
    assert r.cycle is not None and (r.cycle.calls, r.cycle.period, r.cycle.steps) == (9, 3, ROUND3)
    assert r.verdict == "looping"
