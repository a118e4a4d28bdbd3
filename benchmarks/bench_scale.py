"""Scale figures: a generated suite of scenarios in one process and under xdist, async overhead, memory,
and the harness against the same scenario hand-written with plain pytest + respx + a counter.

- scenarios_per_s: a 1,000-scenario generated suite (six families of faults and model behaviours, each
  scenario its own seed, checked against invariants), run three times in one fresh process, imports
  excluded; the best pass (scenarios_per_s_median: the median pass)
- peak_rss_mb: that process's peak resident memory; peak_rss_mb_250: the same with 250 scenarios
  (the two should be close: memory is flat in the number of scenarios)
- xdist_speedup_2: the same suite as 1,000 pytest tests under ``pytest --chaos``: serial wall time
  divided by ``-n 2`` wall time (process start-up and collection included in both), with the
  bytecode cache warm; xdist_speedup_2_test_phase: the same ratio over the test phase only (first
  test start to last test end, across workers), without interpreter and plugin start-up;
  xdist_{serial,n2}_{wall,startup}_s and pytest_ms_per_test_serial (test phase / tests, serial) say
  where the time goes; serial and -n 2 sessions alternate three times and each figure is its best
  session (one session of ~1 ms tests moves by a third from run to run on a shared machine)
- xdist_speedup_2_batched_10: the same 1,000 scenarios as 100 tests of 10 scenarios each (what
  xdist gives when a test is not dominated by pytest's own per-test cost)
- per_call_overhead_us_async: harness cost of ``await tools.acall(...)`` minus a bare ``await``;
  per_call_overhead_us_sync_same_run: the sync figure measured the same way, for the ratio
  async_vs_sync_overhead
- harness_vs_handwritten: the time of one test body "the billing tool always times out; the agent
  stops within 3 attempts", written with the harness (fake tool, policy, invariants), divided by the
  same test hand-written with respx (an HTTP route raising a timeout), a call counter and asserts
- harness_vs_handwritten_session: the same two tests, 300 parametrized cases each, as pytest sessions
  (start-up included)

``python benchmarks/bench_scale.py suite N`` runs the suite in this process and prints its figures as
JSON (what ``measure`` calls in a subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

from bench_util import best as _best  # noqa: E402
from bench_util import clock, peak_rss_mb  # noqa: E402
from toolchaos._plumbing import clock as _clock  # noqa: E402

# --- the generated suite ------------------------------------------------------------------

FAMILIES = ("stubborn_timeout", "transient_then_ok", "poll", "paginate", "paraphrase_flaky", "lost_payment")


def scenario(i: int) -> dict[str, Any]:
    """Scenario ``i`` of the generated suite: keyword arguments for ``toolchaos.run`` plus ``expect``."""
    from toolchaos import invariants, policies
    from toolchaos.fake_tools import catalogue, faults

    family = FAMILIES[i % len(FAMILIES)]
    seed = i
    agent = "builtin:guarded" if (i // len(FAMILIES)) % 2 == 0 else "builtin:naive"
    if family == "stubborn_timeout":
        tools = [catalogue.get("fetch_invoice", faults=faults.timeout(after=10 + i % 20))]
        policy = policies.stubborn("fetch_invoice", {"invoice_id": f"inv_{i}"}, max_turns=12)
        expect = [invariants.bounded(turns=13)]
    elif family == "transient_then_ok":
        tools = [catalogue.get("search", faults=[{"calls": [1, 1 + i % 2], "outcome": faults.transient(503)}])]
        policy = policies.stubborn("search", {"query": f"q{i}"}, until="success", max_turns=6)
        expect = [invariants.bounded(executions=6)]
    elif family == "poll":
        tools = [catalogue.get("get_job_status", faults=faults.pending(polls=1 + i % 4, interval=5))]
        policy = policies.poll_until("get_job_status", {"job_id": f"job_{i}"}, max_turns=10)
        expect = [invariants.bounded(turns=11)]
    elif family == "paginate":
        tools = [catalogue.get("list_records", faults=faults.paginated(pages=2 + i % 4, page_size=3))]
        policy = policies.paginate("list_records", {"table": "t"}, max_turns=10)
        expect = [invariants.bounded(turns=11)]
    elif family == "paraphrase_flaky":
        tools = [catalogue.get("search", faults=[{"probability": 0.4, "outcome": "timeout"}])]
        policy = policies.paraphrase("search", {"query": f"refund policy {i % 7}"}, max_turns=8)
        expect = [invariants.bounded(turns=9)]
    else:
        tools = [catalogue.get("charge_payment", faults=[{"call": 1, "outcome": {"timeout": {"applied": True}}}])]
        policy = policies.scripted([{"call": "charge_payment", "args": {"customer_id": f"c{i}", "amount": 5,
                                                                        "idempotency_key": f"k{i}"}}] * 3
                                   + [{"final": "paid"}])
        expect = [invariants.max_side_effects(3, "charge_payment")]
    return {"agent": agent, "task": family, "tools": tools, "policy": policy, "seed": seed, "name": f"s{i}",
            "expect": expect}


def run_scenario(i: int) -> int:
    """Run scenario ``i`` and check its invariants; returns the number of violations (kept nowhere)."""
    from toolchaos import run

    spec = scenario(i)
    expect = spec.pop("expect")
    agent = spec.pop("agent")
    return len(run(agent, **spec).violations(*expect))


def suite(n: int, repeat: int = 3) -> dict[str, float]:
    """The suite ``repeat`` times in this process; the best pass gives the rate.

    On a shared machine the CPU time of the same pass varies by up to 2x from one pass to the
    next; the best pass is the one least disturbed (as ``timeit`` reports). The median is
    printed beside it.
    """
    _clock.install()
    for i in range(2 * len(FAMILIES)):  # warm: imports, virtual time, the catalogue, both agents
        run_scenario(i)
    passes = []
    for _ in range(repeat):
        t0 = clock()
        for i in range(n):
            run_scenario(i)
        passes.append(clock() - t0)
    best, median = min(passes), sorted(passes)[len(passes) // 2]
    return {"seconds": best, "per_s": n / best, "per_s_median": n / median, "peak_rss_mb": peak_rss_mb()}


def _suite_in_subprocess(n: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "suite", str(n)], check=True,
                         capture_output=True, text=True, cwd=ROOT, env=_env())
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), str(HERE), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}


# --- the suite under pytest, serial and -n 2 ---------------------------------------------

SUITE_TESTS = """
import pytest
from bench_scale import run_scenario

@pytest.mark.chaos
@pytest.mark.parametrize("i", range({tests}))
def test_scenario(i):
    for j in range(i * {per_test}, (i + 1) * {per_test}):
        run_scenario(j)
"""

# The generated suite is configured like this project's own tests: langsmith (pulled in by the
# langgraph extra) registers a pytest plugin that costs seconds of start-up in every process.
SUITE_INI = """
[pytest]
addopts = -p no:langsmith_plugin
"""

# Records when each test starts and ends (a system-wide monotonic clock, comparable across the
# xdist workers), so the test phase can be told apart from interpreter and plugin start-up. The
# stamps stay in memory until the session ends: a file written twice per test would be measured too.
TIMESTAMPS = """
import os
import freezegun.api as fz

_stamps = []

def pytest_runtest_setup(item):
    _stamps.append(("start", fz.real_monotonic()))

def pytest_runtest_teardown(item):
    _stamps.append(("end", fz.real_monotonic()))

def pytest_sessionfinish(session):
    with open(os.path.join(os.environ["BENCH_STAMPS"], os.environ.get("PYTEST_XDIST_WORKER", "main")), "a") as fh:
        fh.writelines(f"{kind} {t}\\n" for kind, t in _stamps)
"""


def _pytest_wall(path: Path, *args: str, env: dict[str, str] | None = None) -> float:
    t0 = clock()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=path,
                   env=env or _env(), check=True, capture_output=True, text=True)
    return clock() - t0


def _test_phase(stamps: Path) -> float:
    starts, ends = [], []
    for f in stamps.iterdir():
        for line in f.read_text().splitlines():
            kind, t = line.split()
            (starts if kind == "start" else ends).append(float(t))
        f.unlink()
    return max(ends) - min(starts)


def _pytest_env(pycache: Path, stamps: Path) -> dict[str, str]:
    """Bytecode cached in a scratch directory: pytest re-rewrites the asserts of every plugin module
    in every process when PYTHONDONTWRITEBYTECODE is set (seconds per process), which a developer
    machine or a CI job with a cache does not pay."""
    env = {k: v for k, v in _env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(pycache), "BENCH_STAMPS": str(stamps)}


def xdist_speedup(n: int, per_test: int = 1, repeat: int = 3) -> dict[str, float]:
    """The generated suite under ``pytest --chaos``, serial and ``-n 2``: wall and test-phase seconds, best of ``repeat``."""
    tests = SUITE_TESTS.replace("{tests}", str(n // per_test)).replace("{per_test}", str(per_test))
    return serial_vs_n2("test_generated.py", tests, repeat)


def serial_vs_n2(name: str, source: str, repeat: int = 1) -> dict[str, float]:
    """One test file under ``pytest --chaos``, serial then ``-n 2`` (bytecode warmed first).

    ``repeat`` > 1: the two alternate that many times and each keeps its best session (as
    ``timeit`` does): one session of a thousand ~1 ms tests moves by a third from one run to
    the next on a shared machine, and the least disturbed run is the one that measures the code.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        (path / name).write_text(source)
        (path / "conftest.py").write_text(TIMESTAMPS)
        (path / "pytest.ini").write_text(SUITE_INI)
        stamps = path / "stamps"
        stamps.mkdir()
        env = _pytest_env(path / "pycache", stamps)
        _pytest_wall(path, "--chaos", "-n", "2", "--co", env=env)  # warm the bytecode cache
        best: dict[str, float] = {}
        for _ in range(repeat):
            for kind, args in (("serial", ()), ("parallel", ("-n", "2"))):
                wall = _pytest_wall(path, "--chaos", *args, env=env)
                tests = _test_phase(stamps)
                best[f"{kind}_s"] = min(best.get(f"{kind}_s", wall), wall)
                best[f"{kind}_tests_s"] = min(best.get(f"{kind}_tests_s", tests), tests)
    return best


# --- async overhead -----------------------------------------------------------------------


def call_overheads(n: int, repeat: int) -> dict[str, float]:
    import asyncio

    from toolchaos import Ceiling, policies, run
    from toolchaos.fake_tools import catalogue

    payload = {"record_id": "r1", "version": 3, "status": "written"}
    args = {"record_id": "r1", "data": {"a": 1}}

    async def bare_async(record_id: str, data: dict[str, Any]) -> dict[str, Any]:
        return payload

    def bare_sync(record_id: str, data: dict[str, Any]) -> dict[str, Any]:
        return payload

    timing: dict[str, float] = {}

    async def bare_async_agent(task: str, model: Any, tools: Any) -> str:
        t0 = clock()
        for _ in range(n):
            await bare_async(**args)
        timing["bare_async"] = clock() - t0
        acall = tools.acall
        t0 = clock()
        for _ in range(n):
            await acall("write_record", args)
        timing["async"] = clock() - t0
        return "done"

    def sync_agent(task: str, model: Any, tools: Any) -> str:
        t0 = clock()
        for _ in range(n):
            bare_sync(**args)
        timing["bare_sync"] = clock() - t0
        call = tools.call
        t0 = clock()
        for _ in range(n):
            call("write_record", args)
        timing["sync"] = clock() - t0
        return "done"

    best: dict[str, float] = {}
    tool = [catalogue.get("write_record")]
    for _ in range(repeat):
        for agent in (bare_async_agent, sync_agent):
            run(agent, task="bench", tools=tool, policy=policies.scripted([]),
                ceiling=Ceiling(max_tool_calls=n + 1, real_seconds=600))
        for k, v in timing.items():
            best[k] = min(best.get(k, float("inf")), v / n)
    asyncio.get_event_loop_policy()  # nothing left running
    return {"async_us": (best["async"] - best["bare_async"]) * 1e6,
            "sync_us": (best["sync"] - best["bare_sync"]) * 1e6}


# --- the harness against a hand-written test ----------------------------------------------

HANDWRITTEN = '''
import httpx
import respx

URL = "https://billing.example.test/invoices/inv_1"
CLIENT = httpx.Client()  # built once: an httpx client loads the CA bundle, milliseconds each time


def billing_agent(get_invoice, turns):
    """The agent under test: retries a failing tool at most 3 times, then stops."""
    failures = 0
    for _ in turns:  # the model asks for the same call every turn
        try:
            return get_invoice()
        except httpx.TimeoutException:
            failures += 1
            if failures >= 3:
                return "STOPPED_LOOP_GUARD"
    return "FAILED"


def handwritten_test():
    with respx.mock(assert_all_called=False) as mock:
        route = mock.get(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
        state = billing_agent(lambda: CLIENT.get(URL).json(), range(40))
    assert state == "STOPPED_LOOP_GUARD"
    assert route.call_count == 3  # the counter: 3 executions, no more
'''

WITH_HARNESS = '''
from toolchaos.fake_tools import catalogue, faults
from toolchaos import AgentResult, invariants, policies, run, tool_message

TOOLS = [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]
POLICY = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})
EXPECT = (invariants.bounded(executions=3), invariants.terminal_state("STOPPED_LOOP_GUARD"))


def billing_agent(task, model, tools):
    """The same agent, on the harness's model client and toolbox."""
    messages = [{"role": "user", "content": task}]
    failures = 0
    for _ in range(40):
        turn = model.complete(messages, tools.specs)
        messages.append(turn.as_message())
        if turn.final:
            return turn.text
        for call in turn.tool_calls:
            result = tools.call(call.name, call.arguments, call_id=call.id)
            messages.append(tool_message(call, result))
            if isinstance(result, dict) and "error" in result:
                failures += 1
                if failures >= 3:
                    return AgentResult("STOPPED_LOOP_GUARD")
    return None


def harness_test():
    run(billing_agent, task="Get the invoice total", tools=TOOLS, policy=POLICY).check(*EXPECT)
'''


def handwritten_ratio(repeat: int, n: int) -> float:
    ns_hand: dict[str, Any] = {}
    ns_harness: dict[str, Any] = {}
    exec(compile(HANDWRITTEN, "handwritten", "exec"), ns_hand)
    exec(compile(WITH_HARNESS, "with_harness", "exec"), ns_harness)
    hand, harn = ns_hand["handwritten_test"], ns_harness["harness_test"]
    hand()
    harn()  # warm both

    def many(fn: Any) -> Any:
        return lambda: [fn() for _ in range(n)]

    return _best(many(harn), repeat) / _best(many(hand), repeat)


SESSION_TEST = """
import pytest
{body}

@pytest.mark.parametrize("i", range({n}))
def test_case(i):
    {fn}()
"""


def handwritten_session_ratio(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        (path / "hand").mkdir()
        (path / "harness").mkdir()
        (path / "hand" / "test_hand.py").write_text(
            SESSION_TEST.replace("{body}", HANDWRITTEN).replace("{n}", str(n)).replace("{fn}", "handwritten_test"))
        (path / "harness" / "test_harness.py").write_text(
            SESSION_TEST.replace("{body}", WITH_HARNESS).replace("{n}", str(n)).replace("{fn}", "harness_test"))
        hand = min(_pytest_wall(path / "hand") for _ in range(2))
        harn = min(_pytest_wall(path / "harness") for _ in range(2))
    return harn / hand


def measure(quick: bool = False) -> dict[str, float]:
    n_suite = 1000
    big = _suite_in_subprocess(n_suite)
    small = _suite_in_subprocess(250)
    calls = call_overheads(20_000 if quick else 100_000, 3 if quick else 5)
    xd = xdist_speedup(200 if quick else n_suite)
    batched = xdist_speedup(200 if quick else n_suite, per_test=10)
    return {
        "scenarios_per_s": big["per_s"],
        "scenarios_per_s_median": big["per_s_median"],
        "peak_rss_mb": big["peak_rss_mb"],
        "peak_rss_mb_250": small["peak_rss_mb"],
        "xdist_speedup_2": xd["serial_s"] / xd["parallel_s"],
        "xdist_speedup_2_test_phase": xd["serial_tests_s"] / xd["parallel_tests_s"],
        "xdist_serial_wall_s": xd["serial_s"],
        "xdist_serial_startup_s": xd["serial_s"] - xd["serial_tests_s"],
        "xdist_n2_wall_s": xd["parallel_s"],
        "xdist_n2_startup_s": xd["parallel_s"] - xd["parallel_tests_s"],
        "pytest_ms_per_test_serial": 1000 * xd["serial_tests_s"] / (200 if quick else n_suite),
        "xdist_speedup_2_batched_10": batched["serial_s"] / batched["parallel_s"],
        "xdist_speedup_2_batched_10_test_phase": batched["serial_tests_s"] / batched["parallel_tests_s"],
        "per_call_overhead_us_async": calls["async_us"],
        "per_call_overhead_us_sync_same_run": calls["sync_us"],
        "async_vs_sync_overhead": calls["async_us"] / calls["sync_us"],
        "harness_vs_handwritten": handwritten_ratio(3 if quick else 5, 50 if quick else 200),
        "harness_vs_handwritten_session": handwritten_session_ratio(100 if quick else 300),
    }


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "suite":
        print(json.dumps(suite(int(sys.argv[2]))))
    else:
        print(json.dumps(measure("--quick" in sys.argv), sort_keys=True))
