"""openai-agents with its default tracing on: the exporter's thread cannot move the run's clock or leave the wire."""

from __future__ import annotations

import time
from typing import Any

import pytest
from toolchaos import policies
from toolchaos.fake_tools import catalogue
from toolchaos.wire import run

agents = pytest.importorskip("agents")


@agents.function_tool
def lookup_invoice(invoice_id: str) -> str:
    """The invoice's total."""
    time.sleep(30)  # virtual: the run's clock moves 30 s per lookup, whatever the exporter does
    return "42 EUR"


BILLING = agents.Agent(name="billing", instructions="Use the tools.", tools=[lookup_invoice])


def traced_agent(task: str) -> Any:
    return agents.Runner.run_sync(BILLING, task).final_output  # default RunConfig: tracing on


def _once() -> Any:
    policy = policies.scripted([{"call": "lookup_invoice", "args": {"invoice_id": "i"}}, {"final": "42 EUR"}])
    return run(traced_agent, task="Get the total", tools=[catalogue.get("search")], policy=policy)


def test_default_tracing_cannot_move_the_clock_and_every_request_is_answered() -> None:
    """In a fresh process: the SDK's tracing (its provider, exporter thread and HTTP client) is process-wide state."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_background_threads as m\n"
              "for r in (m._once(), m._once()):\n"
              "    print(json.dumps([r.terminal_state, r.unmatched, r.model_requests, r.virtual_seconds, r.error,\n"
              "                      r.trace.jsonl()]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, second = (json.loads(line) for line in out.stdout.strip().splitlines()[-2:])
    # both runs COMPLETED with every request answered and 30 virtual seconds (the tool's sleep, in the SDK's
    # reused worker thread; none of the exporter's), and the same trace
    for once in (first, second):
        assert once[:5] == ["COMPLETED", [], 2, 30.0, None], once[:5]
    assert first[5] == second[5]


def _user_trace_after_a_run() -> Any:
    """A traced run, then the user's own trace outside any run: exported on the SDK's real-time schedule."""
    import os
    import threading

    import respx

    first = _once()
    os.environ["OPENAI_API_KEY"] = "sk-the-users-own"  # a developer's shell: exported, as without toolchaos
    with respx.mock(assert_all_called=False) as user_mock:  # the user's own mock, outside any run
        ingest = user_mock.post("https://api.openai.com/v1/traces/ingest").respond(204)
        with agents.trace("the user's own workflow, outside any chaos run"):
            pass
        waited = threading.Event()
        for _ in range(80):  # the SDK exports every 5 real seconds: up to 8 s here
            if ingest.called:
                break
            waited.wait(0.1)
    return first, ingest.called


def _foreign_thread_during_a_run() -> Any:
    """A thread that is not the run's sends, during a run that serves only Anthropic, to a URL nothing serves."""
    import threading

    import httpx

    go, seen = threading.Event(), {}

    def telemetry() -> None:
        go.wait(30)
        try:
            httpx.post("https://telemetry.example.com/v1/events", json={"e": 1}, timeout=5)
        except httpx.ConnectError as exc:
            seen["error"] = str(exc)
        seen["clock"] = time.monotonic()

    sender = threading.Thread(target=telemetry, daemon=True)
    sender.start()

    def agent(task: str) -> str:
        import anthropic

        go.set()
        sender.join(30)  # a real wait: the sender is not the run's thread
        time.sleep(60)
        # the Agents SDK's trace ingest is served in every run, whatever its APIs (the SDK exports there by default)
        seen["ingest"] = httpx.post("https://api.openai.com/v1/traces/ingest", json={"data": []}).status_code
        reply = anthropic.Anthropic().messages.create(model="claude-sonnet-4-5", max_tokens=100,
                                                      messages=[{"role": "user", "content": task}])
        return "".join(getattr(block, "text", "") for block in reply.content)

    result = run(agent, task="t", tools=[catalogue.get("search")], policy=policies.scripted([{"final": "done"}]),
                 apis=("anthropic",))
    return result, seen


def test_the_exporter_keeps_its_real_schedule_and_a_background_request_never_fails_a_run() -> None:
    pytest.importorskip("anthropic")
    """Fresh process. The exporter's next export, set on the run's virtual clock (a 2026 date), left the
    user's later traces queued outside runs and sent them inside a later run: in one that served only
    Anthropic, its request was unmatched and failed a run it had nothing to do with."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = (f"import sys, json, time; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
              "import test_background_threads as m\n"
              "first, exported = m._user_trace_after_a_run()\n"
              "r, seen = m._foreign_thread_during_a_run()\n"
              "print(json.dumps([first.terminal_state, first.unmatched, exported, r.terminal_state, r.unmatched,\n"
              "                  r.refused, r.virtual_seconds, seen.get('error', ''), seen['clock'] < 1e9,\n"
              "                  seen['ingest']]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, unmatched, exported, state, r_unmatched, refused, seconds, error, real_clock, ingest = \
        json.loads(out.stdout.strip().splitlines()[-1])
    assert (first, unmatched) == ("COMPLETED", [])
    assert exported  # on the SDK's schedule, outside any run: to the user's mock, as without toolchaos
    assert (state, r_unmatched, seconds) == ("COMPLETED", [], 60.0)  # the run is not failed by it
    assert refused == ["POST https://telemetry.example.com/v1/events"]
    assert "refused" in error and "does not reach the network" in error
    assert ingest == 204
    assert real_clock  # the thread read the real monotonic clock during the run, not the virtual 2026 one
