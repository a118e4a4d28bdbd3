"""One agent of each kind, as their authors would write them, for ``toolchaos certify --agent``.

Nothing here knows about the harness: an OpenAI Agents SDK ``Agent``, a pydantic-ai ``Agent``
on an OpenAI model, a LangGraph prebuilt ReAct graph and a plain anthropic-SDK loop, each with
a tool of its own (the certification suite gives them its fake tools instead). The models
point at the providers' default URLs, which the harness answers; the API keys are dummies.
``wrong_signature`` is no agent of any kind.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import agents
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

KEY = "sk-not-a-real-key"


def lookup_invoice(invoice_id: str) -> str:
    """The application's own tool (never called under the harness)."""
    raise RuntimeError("the real billing system was called")


openai_agent = agents.Agent(name="billing", instructions="Use the tools to complete the task.",
                            tools=[agents.function_tool(lookup_invoice)])

pydantic_agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(api_key=KEY)),
                       instructions="Use the tools to complete the task.", tools=[lookup_invoice])

with warnings.catch_warnings():  # create_react_agent moved to langchain.agents.create_agent
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

    langgraph_agent = create_react_agent(ChatOpenAI(model="gpt-4o-mini", api_key=KEY), [tool(lookup_invoice)])


def anthropic_loop(task: str, env: Any) -> str | None:
    """A plain tool loop on the anthropic SDK: the tools come in ``env``."""
    client = env.anthropic()
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for _ in range(10):
        message = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, tools=env.anthropic_tools,
                                         messages=messages)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        results = []
        for block in message.content:
            if block.type == "tool_use":
                try:
                    content = json.dumps(env.call(block.name, block.input, call_id=block.id), default=str)
                except Exception as exc:
                    content = f"Error: {exc}"
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": content})
        messages.append({"role": "user", "content": results})
    return None


def wrong_signature(task: str, model: Any, tools: Any, config: dict[str, Any]) -> None:
    """Four required arguments: no kind of agent is called that way."""
