"""Trials that wait on a live model run at once, each in an isolated child, results in trial order; recorded
against the stochastic server, they replay offline from their cassettes with the same traces."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import pytest
from live_model import StochasticModel
from toolchaos import Chaos, RunResult, policies
from toolchaos._engine.trials import MAX_CONCURRENCY, MAX_TRIALS, check_concurrency, run_at_once
from toolchaos.errors import CassetteError
from toolchaos.fake_tools import catalogue
from toolchaos.scenario import MAX_TRIALS as LOADER_MAX_TRIALS

TASK = "Get the total of invoice inv_1."
SPECS = {"fetch_invoice": {"type": "object", "properties": {"invoice_id": {"type": "string"}}}}


def test_the_engine_knows_the_loaders_largest_trial_count() -> None:
    assert MAX_TRIALS == LOADER_MAX_TRIALS


def test_results_come_in_the_jobs_order_not_the_order_they_finish() -> None:
    done = [threading.Event() for _ in range(4)]

    def job(i: int) -> int:
        if i < 3:  # each waits for the next one: they finish last to first
            assert done[i + 1].wait(5)
        done[i].set()
        return i

    assert run_at_once([functools.partial(job, i) for i in range(4)], 4) == [0, 1, 2, 3]


def test_a_jobs_exception_is_raised_after_every_job_ended() -> None:
    ran: list[int] = []

    def job(i: int) -> int:
        ran.append(i)
        if i == 1:
            raise ValueError("trial 1 broke")
        return i

    with pytest.raises(ValueError, match="trial 1 broke"):
        run_at_once([functools.partial(job, i) for i in range(3)], 2)
    assert sorted(ran) == [0, 1, 2]


@pytest.mark.parametrize("bad", [0, MAX_CONCURRENCY + 1, True, "4", 2.0])
def test_a_concurrency_out_of_range_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=rf"expected how many trials may wait on a live model at once, a whole "
                                         rf"number from 1 to {MAX_CONCURRENCY}, got {bad!r}"):
        check_concurrency(bad)
    with pytest.raises(TypeError, match="a whole number from 1 to"):
        Chaos(concurrency=bad)  # type: ignore[arg-type]


def _trials(chaos: Chaos, live: object, n: int) -> list[RunResult]:
    return chaos.trials(task=TASK, tools=[catalogue.get("fetch_invoice")], live=live, n=n)


def test_live_trials_run_at_once_and_replay_offline_with_the_same_traces(tmp_path: Path) -> None:
    with StochasticModel(seed=5) as server:
        live = policies.openai_chat(server.url, model="stochastic", api_key="sk-test-key", specs=SPECS)
        recording = Chaos(record=True, cassettes=tmp_path, name="refund", concurrency=8)
        recorded = _trials(recording, live, 8)
        stats = server.stats()
    assert [r.isolation for r in recorded] == ["process"] * 8  # each in a child of its own
    assert [r.seed for r in recorded] == list(range(8))  # trial i: seed + i, in trial order
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["refund.cassette.json", *(f"refund.trial-{i}.cassette.json" for i in range(1, 8))])
    assert stats["answered"] == sum(r.turns for r in recorded)  # every model turn asked the live model once
    assert len({r.trace.jsonl() for r in recorded}) > 1  # a live model varies from trial to trial
    # the server is gone: the replay is offline, one trial after the other, and gives the same traces
    replayed = _trials(Chaos(cassettes=tmp_path, name="refund", concurrency=8), live, 8)
    assert [r.isolation for r in replayed] == ["none"] * 8
    assert [r.trace.jsonl() for r in replayed] == [r.trace.jsonl() for r in recorded]


def test_a_trial_without_its_cassette_fails_the_replay_before_any_trial_runs(tmp_path: Path) -> None:
    (tmp_path / "refund.cassette.json").write_text('{"format": "toolchaos.cassette", "version": 1, "turns": []}')
    with pytest.raises(CassetteError, match=r"no cassette at .*refund\.trial-1\.cassette\.json: record it first"):
        _trials(Chaos(cassettes=tmp_path, name="refund"), None, 2)
