"""Scenario and agent sources that several test files write into their temporary projects."""

from __future__ import annotations

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
