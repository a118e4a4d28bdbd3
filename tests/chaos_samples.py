"""Scenario and agent sources that several test files write into their temporary projects."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Agents that never return and call nothing in the harness, so only the watchdog ends them. They
# wait blocked in C, using no CPU: the machine's load does not change when the no-progress limit
# ends them (a spinning agent on a loaded machine gets its share of a CPU, and is ended later).
SPIN_AGENTS = """
import threading


def spin(task, model, tools):
    threading.Event().wait()  # no call into the harness: only the watchdog ends it


def spin_sdk(task):
    threading.Event().wait()
"""

SPIN_SCENARIO = """
id: spin
title: an agent that never returns
task: Find the invoice.
tools:
  search: {}
policy:
  scripted: []
expect:
  - terminated
"""

# The same, with a real-time limit of its own, and with a ceiling that sets only another limit.
SPIN_OWN_LIMIT = SPIN_SCENARIO.replace("id: spin", "id: own-limit") + "ceiling: {real_seconds: 0.1}\n"
SPIN_NO_OWN_LIMIT = SPIN_SCENARIO.replace("id: spin", "id: no-own-limit") + "ceiling: {max_tool_calls: 50}\n"

# A stubborn model on a payment tool: the naive agent charges again and again.
PAY_SCENARIO = """
id: pay
title: a payment
task: Charge the customer.
tools:
  charge_payment: {}
policy:
  stubborn: {tool: charge_payment, args: {customer_id: c1, amount: 10}}
expect:
  - idempotent
"""


def timeout_loop(sid: str, *expect: str) -> str:
    """A scenario whose invoice tool always times out, asked for by a stubborn model; ``expect``: YAML items."""
    items = "".join(f"  - {e}\n" for e in expect)
    return (f"id: {sid}\ntitle: the invoice tool always times out\ncategory: loops\nseverity: critical\n"
            "task: Get the total of invoice inv_1.\ntools:\n  fetch_invoice:\n    faults: {timeout: {after: 30}}\n"
            "policy:\n  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}\n"
            f"expect:\n{items}")


def flaky_model(seed: int, trials: int | None = None) -> str:
    """A scenario whose model sometimes gives up before it has the invoice (``give_up: 0.3``, drawn from the
    seed): a trial that gives up first fails ``completed``, one that fetched the invoice first passes."""
    return ("id: flaky-model\ntitle: the model sometimes gives up before it has the invoice\nseverity: critical\n"
            f"seed: {seed}\n" + ("" if trials is None else f"trials: {trials}\n")
            + "task: Get the total of invoice inv_1.\ntools:\n  fetch_invoice: {}\npolicy:\n"
            "  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}, give_up: 0.3}\n"
            "expect:\n  - completed: {successes: {fetch_invoice: 1}}\n")


def plain_loop(answer: Callable[[Any, Any], Any], steps: int = 40) -> Callable[[str, Any, Any], str | None]:
    """The plain loop (builtin:naive's shape) as an in-process agent: each turn's calls handed back as
    ``answer(tools, call)`` gives them; it ends with the model's final text, or after ``steps`` turns."""

    def agent(task: str, model: Any, tools: Any) -> str | None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(steps):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                return str(turn.text)
            for call in turn.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer(tools, call)})
        return None

    return agent


def state_becomes(pid: int, states: str, within: float = 10.0) -> bool:
    """Whether process ``pid`` reaches one of ``states`` (letters of /proc's state: S, T, ...) within ``within``
    real seconds: a test that stops or starts a real process waits for the kernel to say so."""
    from toolchaos._plumbing import opportunity  # only the tests that stop a process read /proc

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if (opportunity._state(pid) or "?") in states:
            return True
        time.sleep(0.005)
    return False


def needs_private_temp() -> None:
    """Skip where children cannot get private temporary folders (no user or mount namespaces)."""
    import os

    import pytest
    from toolchaos._plumbing import children  # only the tests of sealed children start one

    if not children.sealing_available():
        pytest.skip("no user namespaces here: children share the machine's temporary folders")
    probe = children.start(["true"], env={"PATH": os.defpath}, private_tmp=())
    probe.end(1.0)
    if not probe.private_tmp:
        pytest.skip(f"no private temporary folders here: {probe.private_note}")
