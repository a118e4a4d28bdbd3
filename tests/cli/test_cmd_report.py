"""``toolchaos report merge`` and ``toolchaos certify --shard``: the command line of CI shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos.cli import main


def certify(out: Path, *args: str) -> int:
    return main(["certify", "--isolation", "none", "-k", "loop-*", "--report", str(out), *args])


@pytest.fixture(scope="module")
def naive_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("naive")
    for i in (1, 2):
        certify(root / f"shard-{i}", "--agent", "builtin:naive", "--shard", f"{i}/2")
    return [root / "shard-1", root / "shard-2"]


def test_a_shard_says_it_is_one_and_passes_or_fails_on_its_own_part(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert certify(tmp_path / "s", "--shard", "1/2") == 0
    err = capsys.readouterr().err
    assert "shard 1/2: 6 of 11 scenarios (by hash)" in err
    assert "SHARD 1/2 PASSED: level reached all, required all" in err
    assert "the certificate is the merged report's: toolchaos report merge" in err and "CERTIFIED" not in err
    assert certify(tmp_path / "n", "--shard", "2/2", "--agent", "builtin:naive") == 1
    assert "SHARD 2/2 FAILED: level reached none, required all" in capsys.readouterr().err


def test_the_merge_prints_the_certificate_and_exits_with_it(naive_shards: list[Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["report", "merge", *map(str, naive_shards), "--out", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["merged 2 shards: 0/11 scenarios passed",
                   f"report: {tmp_path / 'm' / 'report.html'} (also report.md, report.json, junit.xml)",
                   "NOT CERTIFIED: 0 of 11 applicable scenarios passed (all applicable); level reached none, "
                   "required all"]
    for i in (1, 2):
        certify(tmp_path / f"g{i}", "--shard", f"{i}/2")
    capsys.readouterr()
    assert main(["report", "merge", str(tmp_path / "g1"), str(tmp_path / "g2"), "--out", str(tmp_path / "gm")]) == 0
    assert capsys.readouterr().err.endswith(
        "CERTIFIED for 11 of 11 applicable scenarios (all applicable): level reached all, required all\n")


def test_the_default_out_is_chaos_report(naive_shards: list[Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    main(["report", "merge", *map(str, naive_shards)])
    assert json.loads((tmp_path / "chaos-report" / "report.json").read_text())["totals"]["scenarios"] == 11


def test_a_refusal_is_one_line_and_exit_status_2(naive_shards: list[Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["report", "merge", str(naive_shards[0]), "--out", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err == (
        f"toolchaos report: error: cannot merge: shard 2/2 is missing (given: 1/2 in {naive_shards[0]}); "
        "merge the reports of all 2 shards\n")
    certify(tmp_path / "guarded-2", "--shard", "2/2")
    capsys.readouterr()
    assert main(["report", "merge", str(naive_shards[0]), str(tmp_path / "guarded-2"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolchaos report: error: cannot merge: the shards differ in agent: ") and err.count("\n") == 1
    assert not (tmp_path / "m").exists()


def test_a_regression_since_the_baseline_fails_the_merge_when_asked(naive_shards: list[Path], tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    for i in (1, 2):
        certify(tmp_path / f"g{i}", "--shard", f"{i}/2")
    main(["report", "merge", str(tmp_path / "g1"), str(tmp_path / "g2"), "--out", str(tmp_path / "good")])
    capsys.readouterr()
    args = ["report", "merge", *map(str, naive_shards), "--out", str(tmp_path / "m"), "--baseline", str(tmp_path / "good")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "since the baseline:\n  11 regressions, 0 fixes" in err
    assert main([*args, "--fail-on-regression"]) == 1
    assert "REGRESSED: 11 scenario(s) passed in the baseline and do not now" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "said"), [
    (["--shard", "3/2"], "toolchaos certify: error: --shard: shard 3/2 does not exist"),
    (["--shard", "half"], "toolchaos certify: error: --shard: expected a shard as I/N"),
    (["--shard-durations", "d.json"], "toolchaos certify: error: --shard-durations goes with --shard I/N"),
    (["--shard", "1/2", "--shard-durations", "missing.json"],
     "toolchaos certify: error: --shard-durations: cannot read the durations file missing.json"),
    (["--matrix", "--shard", "1/2"], "toolchaos certify: error: --shard does not go with --matrix"),
])
def test_certify_refuses_a_bad_shard_before_running_anything(args: list[str], said: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["certify", "-k", "loop-*", *args]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(said) and out == ""


def test_a_bad_durations_file_to_store_into_is_refused_before_the_runs(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "d.json"
    bad.write_text("[]")
    assert main(["certify", "-k", "loop-*", "--store-durations", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("toolchaos certify: error: --store-durations: ")
