"""Fake tools for replaying a recorded session: each call answered as the log says it was."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolchaos.fake_tools import FakeTool, catalogue, fake_tool
from toolchaos.logs._conversation import Conversation
from toolchaos.logs._faults import fault_of


def replay_tools(conversation: Conversation, side_effects: Iterable[str] = (), *,
                 as_recorded: bool = True) -> list[FakeTool]:
    """Fake tools answering each recorded call as the log says (by call number per tool).

    Catalogue names get the catalogue tool; any other name a permissive tool (any
    arguments), with a side effect when listed in ``side_effects``. ``as_recorded=False``
    gives the same tools answering as they would without faults.
    """
    rules = _recorded_rules(conversation) if as_recorded else {}
    side = set(side_effects)
    tools = []
    for name in conversation.tool_names():
        faults = rules.get(name)
        if name in catalogue.NAMES:
            tools.append(catalogue.get(name, faults))
        else:
            tools.append(fake_tool(name, f"{name} (replayed from a log)", {"type": "object", "properties": {}},
                                   side_effect=name in side, faults=faults))
    return tools


def _recorded_rules(conversation: Conversation) -> dict[str, list[dict[str, Any]]]:
    """Fault rules per tool, by call number: the executed calls' answers (a plain ok needs no rule)."""
    rules: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    effects: dict[str, int] = {}  # the effect count a trace recorded after each tool's last call
    for call in conversation.calls:
        if not call.executed:
            continue
        n = counts[call.tool] = counts.get(call.tool, 0) + 1
        fault = fault_of(call, effects.get(call.tool))
        if call.outcome is not None and isinstance(call.outcome.get("effects"), int):
            effects[call.tool] = int(call.outcome["effects"])
        if fault is not None:
            rules.setdefault(call.tool, []).append({"call": n, "outcome": fault})
    return rules
