"""Trials that wait on a live model: 20 recorded one after the other, then 8 at a time, then replayed.

The live model is the tests' stochastic OpenAI-compatible server on loopback
(``tests/live_model.py``: 200 ms +- 50 ms a request, 10 % of the answers 429 with
``Retry-After: 1``). ``chaos.trials`` records each trial's cassette; with ``concurrency`` 8
the trials run at once, each in an isolated child (``toolchaos._engine.trials``).

Figures: ``live_serial_s`` and ``live_concurrent_s`` (wall seconds for the trials, concurrency
1 and 8), ``live_concurrent_share`` (their ratio; the goal is under 0.25), ``live_replay_s``
(the concurrent recording replayed offline, one trial after the other) and ``live_replay_same``
(1 when every replayed trace equals its recorded one byte for byte).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench_util import clock
from toolchaos import Chaos, policies
from toolchaos.fake_tools import catalogue

from tests.live_model import StochasticModel

TASK = "Get the total of invoice inv_1."
SPECS = {"fetch_invoice": {"type": "object", "properties": {"invoice_id": {"type": "string"}}}}
CONCURRENCY = 8


def _trials(chaos: Chaos, live: Any, n: int) -> tuple[float, list[Any]]:
    t0 = clock()
    results = chaos.trials(task=TASK, tools=[catalogue.get("fetch_invoice")], live=live, n=n)
    return clock() - t0, results


def measure(quick: bool) -> dict[str, float]:
    n = 8 if quick else 20
    with tempfile.TemporaryDirectory() as tmp, StochasticModel(seed=0) as server:
        live = policies.openai_chat(server.url, model="stochastic", api_key="sk-bench", specs=SPECS)
        serial, _ = _trials(Chaos(record=True, cassettes=Path(tmp, "serial"), name="bench", concurrency=1), live, n)
        at_once, recorded = _trials(Chaos(record=True, cassettes=Path(tmp, "at-once"), name="bench",
                                          concurrency=CONCURRENCY), live, n)
        replay, replayed = _trials(Chaos(cassettes=Path(tmp, "at-once"), name="bench"), live, n)
    same = all(a.trace.jsonl() == b.trace.jsonl() for a, b in zip(recorded, replayed, strict=True))
    return {"live_trials": float(n), "live_serial_s": serial, "live_concurrent_s": at_once,
            "live_concurrent_share": at_once / serial, "live_replay_s": replay, "live_replay_same": float(same)}
