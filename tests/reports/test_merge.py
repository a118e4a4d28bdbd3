"""Shards merged (toolchaos.reports.merge_reports): the unsharded run's report, or a refusal that says why.

The shards are made as a CI job makes them, with ``toolchaos certify --shard I/N --report DIR``; the
refusals edit a copy of a shard's report.json where no command can make the mismatch (a seed).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_timings import assert_same_report
from toolchaos.cli import main
from toolchaos.errors import ReportError
from toolchaos.reports import merge_reports, read_report


def certify(out: Path, *args: str) -> int:
    return main(["certify", "--isolation", "none", "--report", str(out), *args])


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The loop scenarios against the naive agent (failures, so the verdicts matter): whole, and in three shards."""
    root = tmp_path_factory.mktemp("loops")
    assert certify(root / "whole", "--agent", "builtin:naive", "-k", "loop-*") == 1
    for i in (1, 2, 3):
        assert certify(root / f"shard-{i}", "--agent", "builtin:naive", "-k", "loop-*", "--shard", f"{i}/3") in (0, 1)
    return root


def shards(root: Path) -> list[Path]:
    return [root / f"shard-{i}" for i in (1, 2, 3)]


def edited(tmp_path: Path, source: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of a shard's directory whose report.json ``change`` edited."""
    copy = tmp_path / f"edited-{source.name}"
    shutil.copytree(source, copy)
    data = json.loads((copy / "report.json").read_text())
    change(data)
    (copy / "report.json").write_text(json.dumps(data, indent=2))
    return copy


def refusal(dirs: list[Path], out: Path) -> str:
    with pytest.raises(ReportError) as err:
        merge_reports(dirs, out, step_summary=False)
    assert not (out / "report.json").exists()  # nothing half-merged is left behind
    return str(err.value)


def test_the_whole_suite_in_three_shards_merges_into_the_unsharded_report(tmp_path: Path) -> None:
    assert certify(tmp_path / "whole") == 0
    for i in (1, 2, 3):
        assert certify(tmp_path / f"shard-{i}", "--shard", f"{i}/3") == 0
    parts = [read_report(d / "report.json") for d in shards(tmp_path)]
    assert sorted(s["id"] for p in parts for s in p["scenarios"]) == [
        s["id"] for s in read_report(tmp_path / "whole" / "report.json")["scenarios"]]
    assert [p["shard"]["index"] for p in parts] == [1, 2, 3] and all(p["scenarios"] for p in parts)
    paths = merge_reports(shards(tmp_path), tmp_path / "merged", step_summary=False)
    assert paths["json"] == tmp_path / "merged" / "report.json"
    assert_same_report(tmp_path / "merged", tmp_path / "whole")
    merged = read_report(paths["json"])
    assert merged["shard"] is None and merged["certified"] is True


def test_failing_shards_merge_into_the_unsharded_verdict(loops: Path, tmp_path: Path) -> None:
    merge_reports(list(reversed(shards(loops))), tmp_path / "merged", step_summary=False)  # in any order
    assert_same_report(tmp_path / "merged", loops / "whole")
    merged = read_report(tmp_path / "merged" / "report.json")
    assert (merged["certified"], merged["level"], merged["totals"]["failed"]) == (False, "none", 11)


def test_a_shard_report_says_it_covers_a_part(loops: Path) -> None:
    part = read_report(loops / "shard-2" / "report.json")
    assert {k: part["shard"][k] for k in ("index", "total", "by", "instances")} == {
        "index": 2, "total": 3, "by": "hash", "instances": 11}
    assert part["totals"]["scenarios"] < 11
    md = (loops / "shard-2" / "report.md").read_text()
    assert "| Shard | 2 of 3 (by hash, 11 instances in all): this report covers this shard's part" in md
    assert 'name="shard" value="2/3"' in (loops / "shard-2" / "junit.xml").read_text()
    assert "<dt>Shard</dt><dd>2 of 3 (by hash" in (loops / "shard-2" / "report.html").read_text()


def test_more_shards_than_scenarios_leave_empty_shards_that_merge_too(tmp_path: Path) -> None:
    args = ("-k", "budget-st*")  # one scenario
    assert certify(tmp_path / "whole", *args) == 0
    for i in (1, 2, 3):
        assert certify(tmp_path / f"shard-{i}", *args, "--shard", f"{i}/3") == 0  # an empty shard passes
    assert sum(bool(read_report(d / "report.json")["scenarios"]) for d in shards(tmp_path)) == 1
    merge_reports(shards(tmp_path), tmp_path / "merged", step_summary=False)
    assert_same_report(tmp_path / "merged", tmp_path / "whole")


def test_shards_split_by_durations_merge_too(tmp_path: Path) -> None:
    durations = tmp_path / "durations.json"
    assert certify(tmp_path / "whole", "-k", "side-*", "--store-durations", str(durations)) == 0
    known = json.loads(durations.read_text())
    assert sorted(known) == [s["id"] for s in read_report(tmp_path / "whole" / "report.json")["scenarios"]]
    for i in (1, 2, 3):
        assert certify(tmp_path / f"shard-{i}", "-k", "side-*", "--shard", f"{i}/3",
                       "--shard-durations", str(durations)) == 0
    assert {read_report(d / "report.json")["shard"]["by"] for d in shards(tmp_path)} == {"durations"}
    merge_reports(shards(tmp_path), tmp_path / "merged", step_summary=False)
    assert_same_report(tmp_path / "merged", tmp_path / "whole")


def test_the_shards_comparisons_with_a_baseline_are_joined(loops: Path, tmp_path: Path) -> None:
    old = loops / "whole"  # the naive agent's: the guarded one fixes every loop scenario
    assert certify(tmp_path / "whole", "-k", "loop-*", "--baseline", str(old)) == 0
    for i in (1, 2, 3):
        assert certify(tmp_path / f"shard-{i}", "-k", "loop-*", "--shard", f"{i}/3", "--baseline", str(old)) == 0
    merge_reports(shards(tmp_path), tmp_path / "joined", step_summary=False)
    assert_same_report(tmp_path / "joined", tmp_path / "whole")
    assert len(read_report(tmp_path / "joined" / "report.json")["baseline"]["fixes"]) == 11
    merge_reports(shards(tmp_path), tmp_path / "anew", baseline=old, step_summary=False)  # compared anew
    assert_same_report(tmp_path / "anew", tmp_path / "whole")


def test_a_field_the_scenarios_do_not_rebuild_is_carried_when_every_shard_agrees(loops: Path, tmp_path: Path) -> None:
    def add(value: str) -> Callable[[dict[str, Any]], None]:
        return lambda data: data.update(deployment=value)

    same = [edited(tmp_path / str(i), d, add("eu-1")) for i, d in enumerate(shards(loops))]
    merge_reports(same, tmp_path / "merged", step_summary=False)
    assert read_report(tmp_path / "merged" / "report.json")["deployment"] == "eu-1"
    differ = [*same[:2], edited(tmp_path / "odd", shards(loops)[2], add("us-2"))]
    said = refusal(differ, tmp_path / "refused")
    assert said.startswith("cannot merge: the shards differ in deployment (a field the scenarios do not rebuild): ")
    assert '"us-2"' in said and str(differ[2]) in said


@pytest.mark.parametrize(("field", "change", "said"), [
    ("seed", lambda r: r.update(seed=7), "the shards differ in seed: 0 ("),
    ("suite", lambda r: r["suite"].update(version="0.0.1"), "the shards differ in suite: "),
    ("harness", lambda r: r["harness"].update(version="0.0.1"), "the shards differ in harness: "),
    ("required level", lambda r: r.update(required_level="major"), "the shards differ in required level: "),
    ("count", lambda r: r["shard"].update(total=4), "the shards differ in shard count: 3 ("),
    ("baseline", lambda r: r.update(baseline={"old": {"agent": "x"}}), "the shards differ in baseline: "),
])
def test_shards_of_another_run_are_refused_naming_the_mismatch_and_the_dirs(
        loops: Path, tmp_path: Path, field: str, change: Callable[[dict[str, Any]], None], said: str) -> None:
    odd = edited(tmp_path, shards(loops)[1], change)
    text = refusal([shards(loops)[0], odd, shards(loops)[2]], tmp_path / "out")
    assert text.startswith(f"cannot merge: {said}"), text
    assert str(odd) in text and str(shards(loops)[0]) in text


def test_shards_of_another_agent_are_refused(loops: Path, tmp_path: Path) -> None:
    assert certify(tmp_path / "guarded-2", "-k", "loop-*", "--shard", "2/3") == 0
    text = refusal([shards(loops)[0], tmp_path / "guarded-2", shards(loops)[2]], tmp_path / "out")
    assert text.startswith("cannot merge: the shards differ in agent: ")
    assert "builtin:naive" in text and "builtin:guarded" in text and str(tmp_path / "guarded-2") in text


def test_shards_of_another_selection_are_refused(loops: Path, tmp_path: Path) -> None:
    assert certify(tmp_path / "other-2", "--agent", "builtin:naive", "-k", "loop-a*", "--shard", "2/3") in (0, 1)
    text = refusal([shards(loops)[0], tmp_path / "other-2", shards(loops)[2]], tmp_path / "out")
    assert text.startswith("cannot merge: the shards differ in partition: ") and "-k" in text


def test_a_missing_or_doubled_shard_is_refused(loops: Path, tmp_path: Path) -> None:
    one, two, three = shards(loops)
    assert refusal([one, three], tmp_path / "out") == (
        f"cannot merge: shard 2/3 is missing (given: 1/3 in {one}, 3/3 in {three}); merge the reports of all 3 shards")
    again = tmp_path / "again"
    shutil.copytree(two, again)
    assert refusal([one, two, again, three], tmp_path / "out") == (
        f"cannot merge: shard 2/3 is given twice ({two}, {again})")
    assert refusal([one], tmp_path / "out").startswith("cannot merge: shard 2/3, 3/3 are missing")


def test_a_scenario_in_two_shards_is_refused(loops: Path, tmp_path: Path) -> None:
    one, two, three = shards(loops)
    stolen = read_report(one / "report.json")["scenarios"][0]
    odd = edited(tmp_path, two, lambda r: r["scenarios"].insert(0, stolen))
    shutil.copy(one / stolen["trace"], odd / stolen["trace"])
    assert refusal([one, odd, three], tmp_path / "out") == (
        f"cannot merge: scenario {stolen['id']!r} ran in two shards ({one}, {odd}); "
        "the shards did not split one suite the same way")


def test_what_is_no_shard_is_refused(loops: Path, tmp_path: Path) -> None:
    one, _, three = shards(loops)
    text = refusal([one, loops / "whole", three], tmp_path / "out")
    assert text == (f"{loops / 'whole'}: not a shard: its report.json has no shard (it ran without --chaos-shard "
                    "or --shard); a merge joins the reports of one sharded run")
    assert refusal([one, tmp_path / "nowhere", three], tmp_path / "out").startswith(
        f"{tmp_path / 'nowhere'}: no report.json there; give the report directory each shard wrote")
    assert refusal([], tmp_path / "out").startswith("no shard to merge")


def test_a_missing_or_misplaced_trace_is_refused(loops: Path, tmp_path: Path) -> None:
    one, two, three = shards(loops)
    lost = tmp_path / "lost"
    shutil.copytree(two, lost)
    first = read_report(lost / "report.json")["scenarios"][0]
    (lost / first["trace"]).unlink()
    assert refusal([one, lost, three], tmp_path / "out").startswith(
        f"{lost}: the trace of scenario {first['id']!r} cannot be read (")
    (tmp_path / "secret.txt").write_text("not a trace")
    odd = edited(tmp_path, two, lambda r: r["scenarios"][0].update(trace="../../secret.txt"))
    assert "names its trace as '../../secret.txt'; a report's traces are traces/<id>.trace.jsonl" in refusal(
        [one, odd, three], tmp_path / "out")


def test_the_merge_is_not_written_over_a_shard(loops: Path, tmp_path: Path) -> None:
    copies = []
    for d in shards(loops):
        shutil.copytree(d, tmp_path / d.name)
        copies.append(tmp_path / d.name)
    before = (copies[0] / "report.json").read_bytes()
    with pytest.raises(ReportError, match="is a shard's own directory"):
        merge_reports(copies, copies[0], step_summary=False)
    assert (copies[0] / "report.json").read_bytes() == before


def test_a_report_json_path_is_taken_for_its_directory(loops: Path, tmp_path: Path) -> None:
    merge_reports([d / "report.json" for d in shards(loops)], tmp_path / "merged", step_summary=False)
    assert_same_report(tmp_path / "merged", loops / "whole")


def test_the_merged_report_md_goes_to_the_step_summary(loops: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    merge_reports(shards(loops), tmp_path / "merged")
    assert summary.read_text() == (tmp_path / "merged" / "report.md").read_text()
