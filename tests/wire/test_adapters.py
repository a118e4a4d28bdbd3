"""Framework adapters: each framework's own loop, default settings, endings mapped to terminal states."""

from __future__ import annotations

from typing import Any

import pytest
from toolchaos import Ceiling, invariants, policies, wire
from toolchaos.fake_tools import catalogue, faults


def _adapter(name: str) -> Any:
    if name == "openai-agents":
        pytest.importorskip("agents", reason="needs the openai-agents extra: pip install 'toolchaos[openai-agents]'")
        from toolchaos.adapters import openai_agents

        return openai_agents.agent()
    if name.startswith("pydantic-ai"):
        pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra: pip install 'toolchaos[pydantic-ai]'")
        from toolchaos.adapters import pydantic_ai

        return pydantic_ai.agent(function_model=name.endswith("function"))
    pytest.importorskip("langgraph", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    pytest.importorskip("langchain_openai", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    from toolchaos.adapters import langgraph

    if name == "langgraph-react":  # LangGraph's deprecated prebuilt agent, still supported
        return langgraph.agent(prebuilt="create_react_agent")
    pytest.importorskip("langchain", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    return langgraph.agent()  # langchain's create_agent


FRAMEWORKS = ["openai-agents", "pydantic-ai", "pydantic-ai-function", "langgraph", "langgraph-react"]
STUBBORN = {"tool": "fetch_invoice", "args": {"invoice_id": "inv_1"}}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_task_completes(framework: str) -> None:
    result = wire.run(_adapter(framework), task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice")], policy=policies.stubborn(**STUBBORN))
    assert result.terminal_state == "COMPLETED", result.error
    assert result.total_executions == 1 and result.turns == 2
    assert result.answer == "Here is the result of fetch_invoice."


# How each framework's default limit ends a stubborn loop on a tool that always times out.
ENDINGS = {
    "openai-agents": ("STOPPED_LOOP_GUARD", "max_turns", 10),
    "pydantic-ai": ("STOPPED_LOOP_GUARD", "usage_limit", 50),
    "pydantic-ai-function": ("STOPPED_LOOP_GUARD", "usage_limit", 50),
    "langgraph": ("HARD_CEILING", None, 15),  # default recursion limit 10007: only the harness ceiling ends it
    "langgraph-react": ("HARD_CEILING", None, 15),
}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_default_limits_end_a_stubborn_loop(framework: str) -> None:
    state, guard, executions = ENDINGS[framework]
    turns = 60 if framework.startswith("pydantic") else 15
    result = wire.run(_adapter(framework), task="What is the total of invoice inv_1?",
                      tools=[catalogue.get("fetch_invoice", faults=faults.timeout(after=30))],
                      policy=policies.stubborn(**STUBBORN), ceiling=Ceiling(max_model_turns=turns, real_seconds=120))
    assert result.terminal_state == state, result.error
    assert result.guard == guard
    assert result.total_executions == executions
    assert not result.violations(invariants.bounded(executions=executions))
    assert result.violations(invariants.bounded(executions=3))  # the framework's default is no loop guard


@pytest.mark.parametrize("framework", ["openai-agents", "langgraph", "langgraph-react"])
def test_a_raising_tool_as_the_model_sees_it(framework: str) -> None:
    tool = catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"fatal": "permission_denied"}}],
                         delivery="raise")
    result = wire.run(_adapter(framework), task="t", tools=[tool], policy=policies.stubborn(**STUBBORN))
    if framework == "openai-agents":  # hidden behind a fixed text, so the model retries
        assert result.trace.model_events[1]["shown"][0]["content"] == \
            "An error occurred while running the tool. Please try again."
        assert result.terminal_state == "COMPLETED" and result.total_executions == 2
    else:  # LangGraph's ToolNode re-raises tool exceptions by default: the graph run fails
        assert result.terminal_state == "CRASHED" and "ToolPermissionDenied" in (result.error or "")


def test_langgraph_default_is_langchains_create_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    pytest.importorskip("langchain_openai", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    import langchain.agents
    from toolchaos.adapters import langgraph

    built: list[str] = []
    real = langchain.agents.create_agent

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append("create_agent")
        return real(*args, **kwargs)

    monkeypatch.setattr(langchain.agents, "create_agent", spy)
    result = wire.run(langgraph.agent(), task="t", tools=[catalogue.get("fetch_invoice")],
                      policy=policies.stubborn(**STUBBORN))
    assert built == ["create_agent"] and result.terminal_state == "COMPLETED"


def test_langgraph_without_langchain_uses_create_react_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langgraph", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    pytest.importorskip("langchain_openai", reason="needs the langgraph extra: pip install 'toolchaos[langgraph]'")
    import importlib.util

    from toolchaos.adapters import langgraph

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "langchain" else real_find_spec(name, *a))
    from langchain_openai import ChatOpenAI

    graph = langgraph.prebuilt_agent(ChatOpenAI(model="gpt-4o-mini", api_key="sk-none"), [], None)  # no request made
    assert "agent" in graph.nodes and "model" not in graph.nodes  # create_react_agent's node names
    with pytest.raises(ValueError, match=r"prebuilt='react'.*create_agent, create_react_agent"):
        langgraph.agent(prebuilt="react")
