"""What a long SDK conversation leaves alive on the wire: the harness keeps its own record
(``wire.requests``), not respx's record of every request with its whole-history body."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from toolchaos import Ceiling, Decision, wire
from toolchaos.fake_tools import catalogue
from toolchaos.wire import _server

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

RESULT = '{"invoice_id":"inv_1","total":"671.50","currency":"EUR","status":"open"}'


def test_the_wires_own_requests_are_not_kept_by_respx_but_the_users_routes_are() -> None:
    seen: dict[str, Any] = {}

    def agent(task: str, env: Any) -> str:
        user = env.router.get("https://billing.test/status").mock(return_value=httpx.Response(200, json={"ok": True}))
        client = openai.OpenAI()
        msgs: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(12):
            tc = client.chat.completions.create(model="m", messages=msgs).choices[0].message.tool_calls[0]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": tc.id, "type": "function",
                 "function": {"name": tc.function.name, "arguments": tc.function.arguments}}]})
            msgs.append({"role": "tool", "tool_call_id": tc.id, "content": RESULT})
        for _ in range(2):
            assert httpx2.Client().get("https://billing.test/status").json() == {"ok": True}
        served = _server.active()
        assert served is not None
        seen.update(route_calls=len(served.route.calls), router_calls=[str(c.request.url) for c in env.router.calls],
                    user_calls=user.call_count)
        return "done"

    result = wire.run(agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")],
                      policy=lambda view: Decision.call("fetch_invoice", {"invoice_id": "inv_1"}),
                      ceiling=Ceiling(max_model_turns=20))
    assert result.error is None and result.answer == "done", result.error
    assert len(result.requests) == 12 and [r.n for r in result.requests] == list(range(1, 13))
    assert result.requests[-1].body["messages"][-1]["content"] == RESULT  # the harness's record keeps the bodies
    assert seen["route_calls"] == 0  # respx would hold all 12, each with its whole history
    assert seen["router_calls"] == ["https://billing.test/status"] * 2
    assert seen["user_calls"] == 2
