"""Trials that wait on a live model, run at once: each in an isolated child, at most ``concurrency`` together.

A trial recorded from a live model spends nearly all its time waiting for the model's answers
(real seconds each), while its own work (the agent, the fake tools, virtual time) is a few
milliseconds. So ``run_at_once`` runs such trials side by side: each is an ordinary isolated run
(``RunSpec.isolation == "process"``, ``toolchaos._engine.isolated``) whose child has its own virtual
clock and watchdog, so no two trials share time or limits; a thread of this process per trial only
waits for its child (``fork_run``'s ``_await``). The results come back in the trials' order, not the
order they finished in, so everything built from them (the traces, the report) is what the same
trials run one after the other give.

``DEFAULT_CONCURRENCY`` (4) is sized for the rate limits of hosted models: an entry-tier API key is
allowed a few hundred requests a minute, and four trials asking a model that answers in one to
three seconds stay well below that, while most of the waiting is overlapped. Raise it for a local
model or a higher tier; a 429 or 503 answer is asked again after its ``Retry-After`` by the
harness's own client (``toolchaos.policies.openai_chat``), so a limit reached now and then costs
time, not the trial.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

from toolchaos._engine import isolated as _isolated

DEFAULT_CONCURRENCY = 4  # trials asking a live model at once (see the module's docstring for why four)
MAX_CONCURRENCY = 64  # more at once is a typo: each one is a forked process
MAX_TRIALS = 10_000  # toolchaos.scenario.MAX_TRIALS, without loading the scenario loader (a test checks they agree)

_T = TypeVar("_T")


def check_concurrency(value: Any, flag: str = "concurrency") -> int:
    """``value`` as a number of trials at once, or a ``ValueError`` saying what is allowed."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise ValueError(f"{flag}: expected how many trials may wait on a live model at once, a whole number from "
                         f"1 to {MAX_CONCURRENCY}, got {value!r} (1 runs them one after the other)")
    return value


def can_run_at_once() -> bool:
    """Whether runs can go to children of their own here: ``os.fork`` exists and this is not one already."""
    return hasattr(os, "fork") and _isolated.placement_allows_fork()


def run_at_once(jobs: Sequence[Callable[[], _T]], concurrency: int) -> list[_T]:
    """Call every job, at most ``concurrency`` at a time; their results in the jobs' order.

    Each job must run isolated (its run forks a child): jobs in this process would share its one
    virtual clock. With ``concurrency`` 1, or one job, they run here one after the other. A job's
    exception is raised once every job has ended (the first in the jobs' order).
    """
    check_concurrency(concurrency)
    if concurrency == 1 or len(jobs) <= 1:
        return [job() for job in jobs]
    _isolated.prepare_forks()  # once, in this thread: what every fork would otherwise set up in a race
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(jobs)), thread_name_prefix="toolchaos-trial")
    try:
        futures = [pool.submit(job) for job in jobs]
        wait(futures)
    except BaseException:  # Ctrl-C: no trial starts any more; those running end at their own limits
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return [f.result() for f in futures]
