"""A refusal of a duplicate side effect and an answer with the recorded result are judged the same.

A framework-style per-tool call limit (as LangChain's ToolCallLimitMiddleware, here one successful
run of each side-effect tool) runs the effect once and blocks every later call of the tool with
"Tool call limit exceeded. Do not call 'charge_payment' again." in place of a result; it may then
let the model go on, or report the stop as the contract asks after a refusal. A ledger hands back
the first result as data instead. Each applies the effect once. The model double reads the refusal
of a call whose effect was applied and answered as the work done and carries on with its script,
and the side-effect scenarios judge the effects and the final state, not which mechanism was used:
every one gives the four the same verdict. A refusal of a call whose effect never applied, or
whose response was lost, still stops the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from chaos_samples import plain_loop
from toolchaos import AgentResult
from toolchaos._internal.model import tool_message
from toolchaos.certification import certify, suite
from toolchaos.scenario import Scenario, load_text

Blocked = Callable[[Any, Any, dict[str, Any]], Any]  # (tools, call, first results by tool) -> what the model reads
LIMIT = "Tool call limit exceeded. Do not call '{}' again."


def _limited(blocked: Blocked, stop_after_refusal: bool = False, steps: int = 40) -> Callable[..., Any]:
    """A plain loop that runs each side-effect tool until one run succeeds, then hands later calls to ``blocked``.

    ``stop_after_refusal``: a final answer right after a blocked call ends as a reported stop.
    """

    def agent(task: str, model: Any, tools: Any) -> Any:
        side = {s["name"] for s in tools.specs if s.get("x-side-effect")}
        first: dict[str, Any] = {}  # side-effect tool -> its first successful result
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        blocked_last = False
        for _ in range(steps):
            turn = model.complete(messages, tools.specs)
            messages.append(turn.as_message())
            if turn.final:
                if blocked_last and stop_after_refusal:
                    return AgentResult("STOPPED_LOOP_GUARD", turn.text, {
                        "guard": "tool_call_limit", "reason": "a call past the limit was blocked",
                        "completed": sorted(first), "resume_condition": "a new task"})
                return str(turn.text)
            blocked_last = False
            for call in turn.tool_calls:
                if call.name in first:
                    result, blocked_last = blocked(tools, call, first), True
                else:
                    tool, outcome = tools.execute(call.name, call.arguments, call_id=call.id)
                    try:
                        result = tool.deliver(outcome)
                    except Exception as exc:  # the model sees the error as prose; the call may run again
                        result = f"Error: {exc}"
                    if call.name in side and outcome.kind == "ok":
                        first[call.name] = result
                messages.append(tool_message(call, result))
        return None

    return agent


def _refuse(tools: Any, call: Any, first: dict[str, Any]) -> Any:
    text = LIMIT.format(call.name)
    tools.refuse(call.name, call.arguments, guard="tool_call_limit", reason=text, call_id=call.id)
    return text


def _block_unreported(tools: Any, call: Any, first: dict[str, Any]) -> Any:
    """Neither run nor reported to the harness: only the message the model reads (recorded as skipped)."""
    return LIMIT.format(call.name)


def _answer_with_data(tools: Any, call: Any, first: dict[str, Any]) -> Any:
    return first[call.name]


DESIGNS = {"refuses": _limited(_refuse), "refuses-then-stops": _limited(_refuse, stop_after_refusal=True),
           "blocks-unreported": _limited(_block_unreported), "answers-from-ledger": _limited(_answer_with_data)}


def _verdicts(agent: Any, scenarios: list[Scenario]) -> dict[str, tuple[str, ...]]:
    return {v.id: tuple(sorted({x.invariant for x in v.violations})) for v in certify(agent, scenarios)}


def _side_scenarios() -> list[Scenario]:
    return [s for s in suite() if s.category == "side_effects" and s.restart is None]


@pytest.mark.parametrize("design", ["refuses", "refuses-then-stops", "blocks-unreported"])
def test_a_refused_duplicate_is_judged_as_the_recorded_answer(design: str) -> None:
    scenarios = _side_scenarios()
    assert len(scenarios) >= 8
    assert _verdicts(DESIGNS[design], scenarios) == _verdicts(DESIGNS["answers-from-ledger"], scenarios)


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.parametrize("name", ["side-concurrent-same-key", "side-stale-read-rewrite"])
def test_charged_once_then_refused_passes(name: str, design: str) -> None:
    """The two scenarios a per-tool call limit failed: the effect once, the truth of the state, either mechanism."""
    scenario, = [s for s in suite() if s.name == name]
    verdict, = certify(DESIGNS[design], [scenario])
    assert verdict.passed, verdict.violations
    kinds = {e["kind"] for e in verdict.result.trace.events}
    assert {"refuses": "refusal", "refuses-then-stops": "refusal", "blocks-unreported": "skipped"}.get(
        design, "tool") in kinds


def test_the_model_carries_on_after_a_refused_duplicate() -> None:
    scenario, = [s for s in suite() if s.name == "side-concurrent-same-key"]
    verdict, = certify(DESIGNS["refuses"], [scenario])
    assert (verdict.result.terminal_state, verdict.result.answer) == ("COMPLETED", "Charged once.")


ONE_CHARGE = ("id: {id}\ntitle: t\ntask: Charge cus_1 10 EUR.\ntools: {{charge_payment: {tool}}}\n"
              "policy: {{scripted: [{{call: charge_payment, args: {{customer_id: cus_1, amount: 10.0}}}},"
              " {{call: charge_payment, args: {{customer_id: cus_1, amount: 10.0}}}}, {{final: Charged.}}]}}\n"
              "expect: [completed]\n")


def _refuse_every_repeat() -> Any:
    """Runs a tool once, whatever it returned, and refuses it after that."""
    ran: set[str] = set()

    def answer(tools: Any, call: Any) -> Any:
        if call.name in ran:
            return _refuse(tools, call, {})
        ran.add(call.name)
        try:
            return tools.call(call.name, call.arguments, call_id=call.id)
        except Exception as exc:
            return f"Error: {exc}"

    return plain_loop(answer, steps=10)


REJECTED = "{faults: {fatal: {code: invalid_argument, field: amount}}}"
LOST = "{faults: [{call: 1, outcome: {timeout: {after: 30, applied: true}}}]}"


@pytest.mark.parametrize("tool", [REJECTED, LOST], ids=["never-applied", "response-lost"])
def test_a_refusal_the_model_cannot_read_as_done_still_stops_it(tool: str) -> None:
    """Rejected (no effect), or timed out (applied, but nobody saw it succeed): the refused retry stops the model."""
    scenario, = load_text(ONE_CHARGE.format(id="refused-charge", tool=tool))
    verdict, = certify(_refuse_every_repeat(), [scenario])
    assert verdict.result.answer is not None and verdict.result.answer.startswith("I cannot complete the task")

