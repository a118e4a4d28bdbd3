"""The names a client gives the fake tools it reaches through MCP, and back.

A coding CLI declares an MCP server's tools to its model under names of its own: Claude Code
``mcp__chaos__fetch_invoice``, gemini-cli ``mcp_chaos_fetch_invoice``, OpenCode
``chaos_fetch_invoice``, Codex ``fetch_invoice`` inside a Responses ``namespace`` tool named
``mcp__chaos``. The policy asks for the fake tool's own
name, so the wire answers with the name the client declared (and its namespace), and reads the
client's names in the conversation it sends back as the fake tools' own. A declared name is the
alias of the longest fake tool name it ends with after a separator (``_``, ``.``, ``-``, ``/``).
The trace keeps the fake tools' names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from toolchaos._internal.model import ModelTurn, ToolCall

_SEPARATORS = "_.-/"
MCP_NAME = "chaos"  # the MCP server's name in the presets' configs (toolchaos._agents._presets)


@dataclass(frozen=True, slots=True)
class ClientCall(ToolCall):
    """A tool call under the client's name; ``namespace`` for a tool declared inside a namespace."""

    namespace: str | None = None


def aliases(declared: Sequence[Any], fake: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """Fake tool name -> (the client's name, its namespace), for the tools the client renamed.

    A client's own tool may end like a fake one (gemini-cli's ``grep_search`` and ``search``): a
    name naming the MCP server the presets register (``chaos``) wins over one that does not.
    """
    names = sorted(set(fake), key=len, reverse=True)
    found: dict[str, list[tuple[str, str | None]]] = {}
    for name, namespace in _declared(declared):
        if name in names and namespace is None:
            continue
        for f in names:
            if name == f or (name.endswith(f) and name[-len(f) - 1] in _SEPARATORS):
                found.setdefault(f, []).append((name, namespace))
                break
    return {f: max(cands, key=lambda c: MCP_NAME in (c[1] or c[0][:-len(f)])) for f, cands in found.items()}


def declared_names(tools: Sequence[Any]) -> set[str]:
    """Every tool name the request declares, those inside a Responses ``namespace`` included."""
    return {name for name, _ in _declared(tools)}


def _declared(tools: Sequence[Any], namespace: str | None = None) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for t in tools or ():
        if not isinstance(t, Mapping):
            continue
        if t.get("type") == "namespace" and isinstance(t.get("tools"), list):
            out += _declared(t["tools"], str(t.get("name")))
            continue
        gemini = t.get("functionDeclarations") or t.get("function_declarations")
        if isinstance(gemini, list):
            out += _declared(gemini, namespace)
            continue
        fn = t["function"] if isinstance(t.get("function"), Mapping) else t
        if isinstance(fn.get("name"), str):
            out.append((fn["name"], namespace))
    return out


def to_fake(messages: list[dict[str, Any]], specs: list[dict[str, Any]],
            names: Mapping[str, tuple[str, str | None]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The conversation and the declared tools under the fake tools' own names."""
    back = {client: f for f, (client, _ns) in names.items()}
    msgs = []
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            m = {**m, "tool_calls": [{**c, **_renamed(c, back)} for c in calls]}
        msgs.append(m)
    return msgs, [{**s, "name": _fake(s.get("name"), back)} for s in specs]


def _fake(name: Any, back: Mapping[str, str]) -> Any:
    return back.get(name, name) if isinstance(name, str) else name


def _renamed(call: Mapping[str, Any], back: Mapping[str, str]) -> dict[str, Any]:
    fn = call.get("function")
    if isinstance(fn, Mapping):
        return {"function": {**fn, "name": _fake(fn.get("name"), back)}}
    return {"name": _fake(call.get("name"), back)} if "name" in call else {}


def to_client(turn: ModelTurn, names: Mapping[str, tuple[str, str | None]]) -> ModelTurn:
    """The turn's calls under the client's names (what the wire encodes)."""
    calls = tuple(ClientCall(c.id, *names[c.name][:1], c.arguments, names[c.name][1]) if c.name in names else c
                  for c in turn.tool_calls)
    return replace(turn, tool_calls=calls)
