"""Virtual time is the same everywhere: UTC for local time in a run, and only a run's own threads move its clock."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from toolchaos import policies, run
from toolchaos._plumbing import clock
from toolchaos.fake_tools import catalogue

LOCAL_TIME_AGENT = textwrap.dedent("""
    import datetime, sys, time
    from toolchaos import policies, run
    from toolchaos.fake_tools import catalogue

    def agent(task, model, tools):
        time.sleep(3600)
        now = time.time()
        return "|".join([time.strftime("%Y-%m-%d %H:%M"), str(tuple(time.localtime())),
                         str(tuple(time.localtime(now))), datetime.datetime.now().astimezone().isoformat(),
                         datetime.datetime.fromtimestamp(now).isoformat(), str(time.timezone), time.ctime(), time.asctime()])

    r = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.stubborn("search", {"query": "q"}))
    sys.stdout.write(r.answer + "\\n" + r.trace.jsonl())
    sys.stdout.write("after the run: " + str(time.timezone) + "\\n")
""")


def _trace_under(tz: str) -> str:
    env = {**os.environ, "TZ": tz}
    return subprocess.run([sys.executable, "-c", LOCAL_TIME_AGENT], capture_output=True, text=True, check=True,
                          env=env, timeout=120).stdout


def test_local_time_in_a_run_is_utc_whatever_the_machines_zone() -> None:
    outs = {tz: _trace_under(tz) for tz in ("UTC", "Asia/Kolkata", "America/St_Johns")}
    runs = {tz: out.rsplit("after the run: ", 1)[0] for tz, out in outs.items()}
    assert runs["UTC"] == runs["Asia/Kolkata"] == runs["America/St_Johns"], runs
    assert runs["UTC"].startswith("2026-01-01 01:00|")
    fields = runs["UTC"].splitlines()[0].split("|")
    assert fields[3] == "2026-01-01T01:00:00+00:00" and fields[6] == fields[7] == "Thu Jan  1 01:00:00 2026"
    # the machine's own zone is back once the run is over
    assert outs["Asia/Kolkata"].rstrip().endswith("after the run: -19800")


def _quiet_run(agent):  # type: ignore[no-untyped-def]
    return run(agent, task="t", tools=[catalogue.get("search")], policy=policies.stubborn("search", {"query": "q"}))


def test_a_thread_left_over_from_an_earlier_run_cannot_move_a_later_runs_clock() -> None:
    stop = threading.Event()
    sleeps = []

    def leftover() -> None:
        while not stop.is_set():
            time.sleep(0.01)
            sleeps.append(clock.active())

    def first(task, model, tools):  # type: ignore[no-untyped-def]
        threading.Thread(target=leftover, name="leftover").start()  # non-daemon: it moved this run's clock

    def second(task, model, tools):  # type: ignore[no-untyped-def]
        time.sleep(10)
        n = len(sleeps)
        while len(sleeps) < n + 5:  # the leftover thread sleeps while this run is active
            clock.real_sleep(0.01)

    try:
        _quiet_run(first)
        later = _quiet_run(second)
    finally:
        stop.set()
    assert later.virtual_seconds == 10


def test_a_daemon_thread_the_agent_starts_sleeps_in_real_time() -> None:
    stop = threading.Event()
    slept = threading.Event()

    def exporter() -> None:  # like an SDK's tracing exporter: a daemon thread in a retry loop
        while not stop.is_set():
            time.sleep(0.01)
            slept.set()

    def agent(task, model, tools):  # type: ignore[no-untyped-def]
        threading.Thread(target=exporter, daemon=True).start()
        slept.wait(5)
        clock.real_sleep(0.05)

    try:
        r = _quiet_run(agent)
    finally:
        stop.set()
    assert slept.is_set() and r.virtual_seconds == 0


def test_the_agents_own_worker_threads_still_move_its_clock() -> None:
    def agent(task, model, tools):  # type: ignore[no-untyped-def]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(time.sleep, [5, 5]))

    assert _quiet_run(agent).virtual_seconds == 10
