"""pydantic-ai: ``Agent`` with its default settings, two ways.

    from toolchaos.adapters import pydantic_ai as pai

    wire.run(pai.agent(), ...)               # OpenAIChatModel pointed at the wire (HTTP)
    wire.run(pai.agent(function_model=True), ...)   # FunctionModel: the policy in-process

The fake tools become ``Tool.from_schema`` tools. The defaults stay pydantic-ai's own
(``UsageLimits()``, tool ``retries``); ``UsageLimitExceeded`` maps to STOPPED_LOOP_GUARD
(guard ``usage_limit``), other ``AgentRunError``s to FAILED. With ``FunctionModel`` the
model requests never cross HTTP: pydantic-ai's messages are read into the neutral format
and the run's model client (the policy) answers, so the trace is the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from toolchaos.adapters._common import ending, require, tool_result_text

require("pydantic-ai")

from pydantic_ai import Agent, Tool  # noqa: E402
from pydantic_ai.exceptions import AgentRunError, UsageLimitExceeded  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)


def tools(env: Any) -> list[Any]:
    """The run's fake tools as pydantic-ai tools."""
    out = []
    for tool in env.tools:
        def call(_tool: Any = tool, **kwargs: Any) -> str:
            return tool_result_text(_tool.call(kwargs))

        out.append(Tool.from_schema(call, name=tool.name, description=tool.description, json_schema=tool.parameters))
    return out


def neutral_messages(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai's message history in the harness's neutral chat format."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart)) or None
            calls = [{"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_dict()}
                     for p in message.parts if isinstance(p, ToolCallPart)]
            out.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": part.content if isinstance(part.content, str)
                            else json.dumps([str(c) for c in part.content])})
            elif isinstance(part, ToolReturnPart):
                out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()})
            elif isinstance(part, RetryPromptPart):
                if part.tool_name is None:
                    out.append({"role": "user", "content": part.model_response()})
                else:
                    out.append({"role": "tool", "tool_call_id": part.tool_call_id,
                                "content": {"error": part.model_response()}})
    return out


def function_model(env: Any) -> Any:
    """A ``FunctionModel`` answered by the run's model client (the policy), without HTTP."""
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = env.model.complete(neutral_messages(messages), [t.parameters for t in env.tools])
        if turn.tool_calls:
            return ModelResponse(parts=[ToolCallPart(c.name, dict(c.arguments), tool_call_id=c.id)
                                        for c in turn.tool_calls])
        return ModelResponse(parts=[TextPart(turn.text or "")])

    return FunctionModel(answer, model_name="toolchaos-policy")


def openai_model(env: Any, model_name: str = "gpt-4o-mini") -> Any:
    """pydantic-ai's OpenAI chat model, pointed at the wire."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(model_name, provider=OpenAIProvider(base_url=env.openai_base_url, api_key=env.api_key))


def agent(*, function_model: bool = False, build: Callable[[Any, list[Any]], Any] | None = None, base: Any = None,
          instructions: str = "You are a helpful assistant. Use the tools to complete the task.",
          usage_limits: Any = None) -> Callable[[str, Any], Any]:
    """An agent for ``wire.run`` driving ``pydantic_ai.Agent.run`` (defaults unless given).

    ``build(model, tools)`` returns your own ``Agent`` built on the given model and tools.
    ``base`` is your own ``Agent`` as it is (its model, instructions and settings), run with
    the fake tools in place of its own (``Agent.override``); the wire's model only when it has none.
    """
    use_function_model = function_model

    async def run(task: str, env: Any) -> Any:
        fake = tools(env)
        kwargs: dict[str, Any] = {}
        if usage_limits is not None:
            kwargs["usage_limits"] = usage_limits
        try:
            if base is not None:
                result = await _run_own(base, task, fake, env, kwargs)
            else:
                model = globals()["function_model"](env) if use_function_model else openai_model(env)
                pa = build(model, fake) if build is not None else Agent(model, instructions=instructions, tools=fake)
                result = await pa.run(task, **kwargs)
        except UsageLimitExceeded as exc:
            return ending(limit="usage_limit", error=exc)
        except AgentRunError as exc:
            return ending(error=exc)
        return ending(answer=result.output)

    return run


async def _run_own(own: Any, task: str, fake: list[Any], env: Any, kwargs: dict[str, Any]) -> Any:
    """Your agent with the fake tools in place of its tools and toolsets, for this run only."""
    if own.model is None:  # an agent given its model at run time: the wire's
        kwargs = {**kwargs, "model": openai_model(env)}
    with own.override(tools=fake, toolsets=[]):
        return await own.run(task, **kwargs)
