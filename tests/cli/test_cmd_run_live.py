"""``toolchaos run --concurrency N``: the trials of a scenario whose policy records a cassette from a live model
(a policy named with --allow-imports) run at once, each in an isolated child, printed in trial order; each trial
records a cassette of its own, and the scenario replays offline from them with the same traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from live_model import LIVE_POLICY, StochasticModel, live_scenario
from toolchaos._engine import trials
from toolchaos.certification import _run as certification_run
from toolchaos.cli import main


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the command imports the policy from the working directory
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "livepol.py").write_text(LIVE_POLICY)
    return tmp_path


def _write(project: Path, url: str, record: bool) -> None:
    (project / "live.chaos.yaml").write_text(live_scenario(url, record, 6))


def _run(project: Path, out: str, *args: str) -> int:
    return main(["run", str(project / "live.chaos.yaml"), "--allow-imports", "--isolation", "none", "--json",
                 "--artifacts", str(project / out), *args])


def test_live_trials_run_at_once_and_replay_from_their_cassettes(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[int, int]] = []
    at_once = trials.run_at_once

    def counted(jobs: Any, concurrency: int) -> Any:
        calls.append((len(jobs), concurrency))
        return at_once(jobs, concurrency)

    monkeypatch.setattr(certification_run, "run_at_once", counted)
    with StochasticModel(seed=11) as server:
        _write(project, server.url, record=True)
        assert _run(project, "recorded", "--concurrency", "6") in (0, 1)
    assert calls == [(6, 6)]  # the six trials, at once
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [v["id"] for v in lines] == ["live-invoice", *(f"live-invoice#trial={i}" for i in range(1, 6))]
    assert sorted(p.name for p in (project / "cassettes").iterdir()) == sorted(
        ["live.cassette.json", *(f"live.trial-{i}.cassette.json" for i in range(1, 6))])
    _write(project, "http://127.0.0.1:9/v1", record=False)  # replayed: nothing listens there, nothing is asked
    assert _run(project, "replayed") in (0, 1)
    assert calls == [(6, 6)]  # a replay waits on nothing: one trial after the other
    recorded = sorted((project / "recorded").glob("*.trace.jsonl"))
    assert len(recorded) == 6
    for trace in recorded:
        assert (project / "replayed" / trace.name).read_bytes() == trace.read_bytes()


def test_a_concurrency_out_of_range_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(project, "http://127.0.0.1:9/v1", record=False)
    assert _run(project, "x", "--concurrency", "0") == 2
    assert ("--concurrency: expected how many trials may wait on a live model at once, a whole number from 1 to 64, "
            "got 0 (1 runs them one after the other)") in capsys.readouterr().err
