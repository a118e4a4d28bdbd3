"""A fake tool of your own, as the README's quickstart and docs/fake-tools.md define it with ``fake_tool``.

The examples run as written: the fault of their schedule fires (the trace shows the lost response)
and the retry under the same idempotency key applies nothing again (the ledger stays at one effect).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from toolchaos.fake_tools import ManualClock, ToolSet, fake_tool

ROOT = Path(__file__).resolve().parents[2]
README, DOC = ROOT / "README.md", ROOT / "docs" / "fake-tools.md"

# Mints a new idempotency key on every attempt: to the API each retry is a new refund.
FRESH_KEY_EVERY_TRY = '''
from toolchaos import tool_message


def run_agent(task, model, tools):
    messages = [{"role": "user", "content": task}]
    for attempt in range(5):
        turn = model.complete(messages, tools.specs)
        messages.append(turn.as_message())
        if turn.final:
            return turn.text
        for call in turn.tool_calls:
            args = {**call.arguments, "idempotency_key": f"try-{attempt}"}
            messages.append(tool_message(call, tools.call(call.name, args, call_id=call.id)))
    return None
'''


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def block(path: Path, start: str) -> str:
    """The Python block of ``path`` that starts with ``start`` (its file-name comment or first line)."""
    found = [b for b in python_blocks(path) if b.startswith(start)]
    assert len(found) == 1, f"{path.name}: expected one Python block starting {start!r}, found {len(found)}"
    return found[0]


def refund_events(pytester: pytest.Pytester, test_file: str, *args: str) -> list[dict[str, Any]]:
    """Run ``test_refunds.py`` under ``pytest --chaos``: its one test passes; the refund's trace events."""
    pytester.makepyfile(test_refunds=test_file)
    pytester.runpytest("--chaos", "--chaos-artifacts=traces", *args).assert_outcomes(passed=1)
    (trace,) = (pytester.path / "traces").glob("*.trace.jsonl")
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    return [e for e in events if e["kind"] == "tool" and e["tool"] == "refund_order"]


def assert_lost_then_replayed(events: list[dict[str, Any]]) -> None:
    # call 1: the rule fired, the refund applied and its response was lost; call 2: the same key,
    # answered as a replay while the ledger's count of applied refunds stays at one
    assert [(e["call_no"], e["outcome"], e["effects"]) for e in events] == [(1, "timeout", 1), (2, "replay", 1)]
    assert events[0]["args"] == events[1]["args"]


def test_the_readme_tool_loses_a_response_and_replays_the_retry(pytester: pytest.Pytester) -> None:
    assert_lost_then_replayed(refund_events(pytester, block(README, "# test_refunds.py")))


def test_the_readme_tool_fails_an_agent_that_retries_under_a_new_key(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fresh_keys=FRESH_KEY_EVERY_TRY, test_refunds=block(README, "# test_refunds.py"))
    pytester.syspathinsert()
    result = pytester.runpytest("--chaos", "--chaos-agent=fresh_keys:run_agent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invariant max_side_effects* broke*"])


def test_the_doc_tool_on_its_own_and_in_a_chaos_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(refunds=block(DOC, "# refunds.py"))
    pytester.syspathinsert()
    alone: dict[str, Any] = {}
    exec(compile(block(DOC, "from toolchaos.fake_tools import ToolSet"), str(DOC), "exec"), alone)  # its asserts run
    ledger = alone["tools"].ledger
    assert [(e.key, e.applied, e.replayed) for e in ledger.effects] == [("o1-refund", True, False),
                                                                        ("o1-refund", False, True)]
    assert_lost_then_replayed(refund_events(pytester, block(DOC, "# test_refunds.py")))


def test_the_doc_schedule_answers_as_its_comments_say() -> None:
    defined: dict[str, Any] = {}
    exec(compile(block(DOC, "from toolchaos.fake_tools import fake_tool, faults, rule"), str(DOC), "exec"), defined)
    tools = ToolSet([defined["fetch_invoice"]], seed=0, clock=ManualClock())
    codes = [tools.call("fetch_invoice", invoice_id="inv_1")["error"]["code"]]
    tools.clock.advance(20)  # the 429's Retry-After
    codes += [tools.call("fetch_invoice", invoice_id="inv_1")["error"]["code"] for _ in range(2)]
    codes.append(tools.call("fetch_invoice", invoice_id="inv_0")["error"]["code"])
    assert codes == ["rate_limited", "timeout", "timeout", "not_found"]
    assert tools.rule_hits() == {"fetch_invoice": {0: 1, 1: 2, 2: 1}}


def test_the_doc_names_every_argument_of_fake_tool() -> None:
    section = DOC.read_text(encoding="utf-8").split("## `fake_tool`", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    documented = {name for row in rows for name in re.findall(r"`(\w+)`", row)}
    assert documented == set(inspect.signature(fake_tool).parameters)
