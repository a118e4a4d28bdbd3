"""A client's own names for the fake tools (MCP prefixes, Responses namespaces), answered and read back."""

from __future__ import annotations

from toolchaos._internal.model import ModelTurn, ToolCall, Usage
from toolchaos.wire._formats import responses_output
from toolchaos.wire._names import ClientCall, aliases, to_client, to_fake

FAKE = ["fetch_invoice", "get_job", "get_job_status"]


def test_prefixed_and_namespaced_names_are_aliases_of_the_longest_fake_name_they_end_with() -> None:
    declared = [
        {"name": "mcp__chaos__fetch_invoice"},  # Claude Code
        {"type": "function", "function": {"name": "chaos_get_job_status"}},  # OpenCode, Chat Completions
        {"type": "namespace", "name": "mcp__chaos", "tools": [{"type": "function", "name": "get_job"}]},  # Codex
        {"name": "Bash"}, {"name": "xget_job"},  # no separator: not an alias
    ]
    gemini = [{"functionDeclarations": [{"name": "mcp_chaos_fetch_invoice"}, {"name": "read_file"}]}]
    assert aliases(gemini, FAKE) == {"fetch_invoice": ("mcp_chaos_fetch_invoice", None)}
    # a client's own tool that ends like a fake one loses to the MCP server's
    own = [{"functionDeclarations": [{"name": "grep_search"}, {"name": "mcp_chaos_search"}]}]
    assert aliases(own, ["search"]) == {"search": ("mcp_chaos_search", None)}
    assert aliases([{"name": "grep_search"}], ["search"]) == {"search": ("grep_search", None)}
    assert aliases(declared, FAKE) == {"fetch_invoice": ("mcp__chaos__fetch_invoice", None),
                                       "get_job_status": ("chaos_get_job_status", None),
                                       "get_job": ("get_job", "mcp__chaos")}
    assert aliases([{"name": "fetch_invoice"}], FAKE) == {}  # the fake tool's own name needs nothing


def test_the_turn_goes_out_under_the_clients_names_and_the_conversation_comes_back_under_the_fake_ones() -> None:
    names = {"fetch_invoice": ("mcp__chaos__fetch_invoice", None), "get_job": ("get_job", "mcp__chaos")}
    turn = ModelTurn(2, None, (ToolCall("c1", "fetch_invoice", {"invoice_id": "i"}), ToolCall("c2", "get_job", {}),
                               ToolCall("c3", "search", {})), Usage(1, 1))
    out = to_client(turn, names)
    assert [c.name for c in out.tool_calls] == ["mcp__chaos__fetch_invoice", "get_job", "search"]
    assert isinstance(out.tool_calls[1], ClientCall) and out.tool_calls[1].namespace == "mcp__chaos"
    items = responses_output(out)
    assert "namespace" not in items[0] and items[1]["namespace"] == "mcp__chaos"
    msgs = [{"role": "assistant", "tool_calls": [{"id": "c1", "name": "mcp__chaos__fetch_invoice", "arguments": {}}]},
            {"role": "assistant", "tool_calls": [{"id": "c9", "function": {"name": "mcp__chaos__fetch_invoice"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    back, specs = to_fake(msgs, [{"name": "mcp__chaos__fetch_invoice"}, {"name": "Bash"}], names)
    assert back[0]["tool_calls"][0]["name"] == "fetch_invoice"
    assert back[1]["tool_calls"][0]["function"]["name"] == "fetch_invoice"
    assert back[2] == msgs[2] and [s["name"] for s in specs] == ["fetch_invoice", "Bash"]
