"""Trials from the command line: ``trials: n`` and ``--trials n``, pass^k in every report, ``--require-pass-k``,
and trials split across shards that merge into the unsharded report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chaos_samples import flaky_model
from report_timings import assert_same_report
from toolchaos.cli import main
from toolchaos.reports import merge_reports, pass_hat_k

# A model that gives up, each turn, with a chance of 0.3 drawn from the run's seed: a trial whose model
# gives up before it fetched the invoice fails `completed`, one that fetched it first passes.
FLAKY = flaky_model(7, 20)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trials")
    (root / "flaky.chaos.yaml").write_text(FLAKY)
    (root / "steady.chaos.yaml").write_text(FLAKY.replace("flaky-model", "steady-model")
                                            .replace("give_up: 0.3", "give_up: 0").replace("severity: critical",
                                                                                        "severity: major"))
    return root


def run(suite: Path, out: Path, *args: str) -> int:
    return main(["run", str(suite), "--isolation", "none", "--report", str(out), *args])


@pytest.fixture(scope="module")
def whole(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole")
    assert run(suite, out) == 1  # some trials of the flaky scenario gave up before the invoice
    return out


def test_twenty_trials_give_pass_k_in_json_markdown_and_html(whole: Path) -> None:
    report = json.loads((whole / "report.json").read_text())
    flaky = [s for s in report["scenarios"] if s["id"].startswith("flaky-model")]
    assert len(flaky) == 20 and [s["seed"] for s in sorted(flaky, key=lambda s: s["trial"]["index"])] == list(
        range(7, 27))  # trial i: seed + i
    assert {s["trial"]["scenario"] for s in flaky} == {"flaky-model"}
    [stats, steady] = report["trials"]
    n, c = stats["trials"], stats["passed"]
    assert (stats["id"], n, stats["verdict"]) == ("flaky-model", 20, "fail") and 0 < c < 20  # the seed varies it
    assert c == sum(s["verdict"] == "pass" for s in flaky)
    assert len(stats["pass_hat_k"]) == len(stats["pass_at_k"]) == 20
    assert stats["pass_hat_k"][2] == pytest.approx(pass_hat_k(20, c, 3), abs=1e-6)
    assert (steady["passed"], steady["verdict"], steady["pass_hat_k"][-1]) == (20, "pass", 1.0)
    md = (whole / "report.md").read_text()
    assert "### Trials" in md and "| pass^1 | pass^2 | pass^3 | pass^5 | pass^10 | pass^20 |" in md
    assert f"| `flaky-model` | critical | {c}/20 | ❌ fail |" in md
    html = (whole / "report.html").read_text()
    assert '<h2 id="trials">Trials</h2>' in html and "<code>flaky-model</code>" in html


def test_the_same_seed_gives_the_same_report(suite: Path, whole: Path, tmp_path: Path) -> None:
    assert run(suite, tmp_path) == 1
    assert_same_report(tmp_path, whole)


def test_trial_0_is_the_run_without_trials_byte_for_byte(suite: Path, whole: Path, tmp_path: Path) -> None:
    assert run(suite, tmp_path, "--trials", "1", "-k", "flaky-model") in (0, 1)
    once = json.loads((tmp_path / "report.json").read_text())
    assert [s["id"] for s in once["scenarios"]] == ["flaky-model"] and once["trials"] == []
    trace = "traces/flaky-model.trace.jsonl"
    assert (tmp_path / trace).read_bytes() == (whole / trace).read_bytes()


def test_another_seed_gives_other_trials(suite: Path, whole: Path, tmp_path: Path) -> None:
    run(suite, tmp_path, "--seed", "1000")
    new, old = (json.loads((d / "report.json").read_text())["scenarios"] for d in (tmp_path, whole))
    assert [s["verdict"] for s in new] != [s["verdict"] for s in old]


def test_require_pass_k_fires_below_p_and_holds_above(suite: Path, whole: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    c = json.loads((whole / "report.json").read_text())["trials"][0]["passed"]
    value = pass_hat_k(20, c, 2)
    assert run(suite, tmp_path / "short", "--require", "major", "--require-pass-k", f"2,{value + 0.01:.4f}") == 1
    err = capsys.readouterr().err
    assert f"PASS^K SHORT: flaky-model: pass^2 = {value:.3f} < " in err and "NOT CERTIFIED" in err
    short = json.loads((tmp_path / "short" / "report.json").read_text())
    assert short["certified"] is False and short["required_pass_k"]["k"] == 2
    assert run(suite, tmp_path / "held", "--require", "major", "--require-pass-k", f"2,{value - 0.01:.4f}") == 0
    err = capsys.readouterr().err
    assert "CERTIFIED for" in err and "critical pass^2 >= " in err and "NOT CERTIFIED" not in err
    assert json.loads((tmp_path / "held" / "report.json").read_text())["certified"] is True


def test_k_above_the_trials_is_a_clear_error(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(suite, tmp_path, "--trials", "3", "--require-pass-k", "5,0.5") == 2
    err = capsys.readouterr().err
    assert "'flaky-model' ran 3 trial(s), fewer than K=5; run at least 5 trials" in err


@pytest.mark.parametrize("bad", ["0", "10001"])
def test_a_trial_count_out_of_range_is_refused(suite: Path, tmp_path: Path, bad: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert run(suite, tmp_path, "--trials", bad) == 2
    assert f"--trials: trials must be between 1 and 10000, got {bad}" in capsys.readouterr().err


def test_trials_split_across_shards_merge_into_the_unsharded_report(suite: Path, tmp_path: Path) -> None:
    def certify(out: Path, *args: str) -> int:
        return main(["certify", "--suite", str(suite), "--isolation", "none", "--report", str(out),
                     "--trials", "6", "--require-pass-k", "2,0.3", *args])

    certify(tmp_path / "whole")
    for i in (1, 2, 3):
        certify(tmp_path / f"shard-{i}", "--shard", f"{i}/3")
    parts = [json.loads((tmp_path / f"shard-{i}" / "report.json").read_text()) for i in (1, 2, 3)]
    assert all(0 < len(p["scenarios"]) < 12 for p in parts)  # scenarios x trials were split, not scenarios
    merge_reports([tmp_path / f"shard-{i}" for i in (1, 2, 3)], tmp_path / "merged", step_summary=False)
    assert_same_report(tmp_path / "merged", tmp_path / "whole")
    merged = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert [t["trials"] for t in merged["trials"]] == [6, 6]


def test_a_failed_trial_reproduces_as_its_scenario_run_once_with_the_trials_seed(
        suite: Path, whole: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads((whole / "report.json").read_text())
    failed = next(s for s in report["scenarios"] if s["verdict"] == "fail" and s["trial"]["index"] > 0)
    main(["run", str(suite), "--isolation", "none", "-k", failed["id"], "-v", "--trials", "20"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("reproduce: toolchaos run "))
    assert " -k flaky-model " in line and line.endswith(f" --seed {failed['seed']} --trials 1")
    assert main(["run", str(suite), "--isolation", "none", "-k", "flaky-model", "--seed", str(failed["seed"]),
                 "--trials", "1", "--json"]) == 1
    [again] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert again["id"] == "flaky-model" and not again["passed"]  # the trial's run, under the scenario's own name


def test_toolchaos_run_shards_merge_into_the_unsharded_report(suite: Path, whole: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    for i in (1, 2, 3):
        assert run(suite, tmp_path / f"shard-{i}", "--shard", f"{i}/3") in (0, 1)
    assert "shard 1/3: " in capsys.readouterr().err
    parts = [json.loads((tmp_path / f"shard-{i}" / "report.json").read_text()) for i in (1, 2, 3)]
    assert all(0 < len(p["scenarios"]) < 40 for p in parts) and sum(len(p["scenarios"]) for p in parts) == 40
    merge_reports([tmp_path / f"shard-{i}" for i in (1, 2, 3)], tmp_path / "merged", step_summary=False)
    assert_same_report(tmp_path / "merged", whole)


def test_run_refuses_shard_durations_without_a_shard(suite: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert run(suite, tmp_path, "--shard-durations", "d.json") == 2
    assert "--shard-durations goes with --shard I/N" in capsys.readouterr().err


def test_the_matrix_refuses_trials_saying_how_to_run_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--matrix", "--trials", "5", "-k", "legit-*"]) == 2
    assert ("--trials 5 does not go with --matrix: each cell of the matrix is one run of a scenario against one "
            "agent variant; to run trials, certify one agent: toolchaos certify --agent REF --trials 5"
            in capsys.readouterr().err)
