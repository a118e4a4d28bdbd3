"""Side requests: what a client asks a model beside the run's conversation, answered as a model would.

Besides its tool loop a client asks its model for a title, a topic, a loop check, a routing
choice. A real API answers such a request with text, or with JSON under the schema it gives;
it never calls a tool the request does not declare. The wire tells them apart from the main
conversation by the request alone (``classify``) and answers them itself, without the
policy: they take no model turn, and the trace records each as a ``side`` event.

A request is a *side request* when either

- it asks for a **response schema** and declares none of the run's tools: Chat Completions'
  ``response_format`` (``json_schema``, or ``json_object``: any object), Responses'
  ``text.format``, Anthropic's ``output_format`` / ``output_config.format``, Gemini's
  ``generationConfig.responseJsonSchema`` / ``responseSchema`` (or ``responseMimeType:
  application/json`` alone); or it **forces one tool that is not one of the run's**, the
  tool's parameters being the output schema (``tool_choice`` naming it; Gemini's
  ``functionCallingConfig`` in mode ``ANY`` allowing that one name). It is answered with an
  instance of the schema (``_instances``): as JSON text, or as the one call to the forced tool;
- or it **declares no tools and does not continue the main conversation**: the run has tools,
  the request carries no result of a call the run asked for, and its system prompt is not
  the one of the last request that declared tools (before any such request: a system prompt at
  all). It is answered with a short neutral text;
- or it is a **probe**: it declares no tools and allows at most one output token (Chat
  Completions' ``max_tokens`` / ``max_completion_tokens``, Responses' ``max_output_tokens``,
  Anthropic's ``max_tokens``, Gemini's ``generationConfig.maxOutputTokens``), as Claude Code's
  quota check at start-up does (``max_tokens: 1``, the user message ``quota``): no answer of
  one token is a turn of the task. It is answered with the same text.

So a runtime that drops its tools to force a final answer (the same system prompt, its
history with the run's tool results) stays a main turn, and a run whose tools are none has
no side requests without a schema. ``SideAnswer`` is what side requests get: the text, and
values by property name for the schema'd ones (a scenario scripting "yes, you are looping").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any

from toolchaos._internal.model import ModelTurn, ToolCall, Usage, estimate_tokens
from toolchaos.wire._instances import instance

__all__ = ["DEFAULT_TEXT", "NO_TOOLS", "PROBE", "SCHEMA", "Side", "SideAnswer", "classify", "side_answer_of", "system_of"]

DEFAULT_TEXT = "OK"
SCHEMA, NO_TOOLS, PROBE = "schema", "no_tools", "probe"  # why a request is a side request (the side event's ``why``)
PROBE_TOKENS = 1  # an output limit this small answers no turn of a task: a connectivity or quota check
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


@dataclass(frozen=True)
class SideAnswer:
    """What side requests are answered with: ``text`` (a tool-less one's answer, and every free
    string of a schema'd one) and ``values`` by property name (used as given wherever the name appears)."""

    text: str = DEFAULT_TEXT
    values: Mapping[str, Any] = field(default_factory=dict)


def side_answer_of(value: Any) -> SideAnswer:
    """A ``SideAnswer`` from what a policy carries as ``side_answer``: one, a text, or ``{text, values}``."""
    if value is None:
        return SideAnswer()
    if isinstance(value, SideAnswer):
        return value
    if isinstance(value, str):
        return SideAnswer(value)
    if isinstance(value, Mapping) and set(value) <= {"text", "values"}:
        text, values = value.get("text", DEFAULT_TEXT), value.get("values") or {}
        if isinstance(text, str) and isinstance(values, Mapping):
            return SideAnswer(text, dict(values))
    raise ValueError(f"side_answer: expected a text or a mapping {{text, values}} (values: property name -> "
                     f"value), got {value!r}")


@dataclass(frozen=True)
class Side:
    """Why a request is a side request, and what it asks for."""

    why: str  # SCHEMA, NO_TOOLS or PROBE
    schema: Any = None  # the response schema (the forced tool's parameters), for SCHEMA
    tool: str | None = None  # the forced output tool: answered as one call to it

    def answer(self, messages: Sequence[Mapping[str, Any]], step: int, n: int, with_: SideAnswer) -> ModelTurn:
        """The model's answer to it: text, JSON text, or the forced tool's call; its usage as a turn's is counted."""
        if self.why != SCHEMA:
            text: str | None = with_.text
            calls: tuple[ToolCall, ...] = ()
        else:
            value = instance(self.schema, with_.text, with_.values)
            if self.tool is not None:
                text, calls = None, (ToolCall(f"call_side_{n}", self.tool, value if isinstance(value, dict) else {}),)
            else:
                text, calls = _dumps(value), ()
        out = text if text is not None else _dumps(calls[0].arguments)
        return ModelTurn(step, text, calls, Usage(estimate_tokens(list(messages)), 4 + estimate_tokens([out])))


def system_of(messages: Iterable[Mapping[str, Any]]) -> str:
    """A conversation's system prompt: the text of the system messages it starts with, joined (a long
    conversation costs nothing more: the messages after them are not read)."""
    return "\n".join(str(m.get("content") or "") for m in takewhile(lambda m: m.get("role") == "system", messages))


def classify(api: str, body: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], specs: Sequence[Mapping[str, Any]],
             *, declared: set[str], run_tools: set[str], asked: set[str], main_system: str | None) -> Side | None:
    """The request's ``Side``, or None for a main turn (see the module docstring).

    ``specs``: the tools it declares (neutral); ``declared``: their names, those inside a
    namespace included; ``run_tools``: the run's tool names as this client spells them;
    ``asked``: the ids of the calls the run asked for; ``main_system``: the system prompt of
    the last request that declared tools (None: none has yet).
    """
    forced = forced_tool(api, body)
    if forced is not None and forced not in run_tools:
        params = next((s.get("parameters") for s in specs if s.get("name") == forced), None)
        return Side(SCHEMA, params if params is not None else {}, forced)
    found, schema = response_schema(api, body)
    if found and not declared & run_tools:
        return Side(SCHEMA, schema)
    if specs or found:
        return None
    if _output_limit(api, body) <= PROBE_TOKENS:
        return Side(PROBE)
    if not run_tools:
        return None
    if any(m.get("role") == "tool" and m.get("tool_call_id") in asked for m in messages):
        return None  # it carries the run's tool results: the main conversation, tools dropped
    if system_of(messages) == (main_system or ""):
        return None  # the main conversation's system prompt (before any request declared tools: none)
    return Side(NO_TOOLS)


_LIMIT_KEYS: dict[str, tuple[str, ...]] = {"openai.chat": ("max_completion_tokens", "max_tokens"),
                                           "openai.responses": ("max_output_tokens",)}


def _output_limit(api: str, body: Mapping[str, Any]) -> float:
    """The most output tokens the request allows (infinity: no limit given)."""
    holder: Mapping[str, Any] = body
    keys: tuple[str, ...] = _LIMIT_KEYS.get(api, ("max_tokens",))
    if api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config")
        holder, keys = (config if isinstance(config, Mapping) else {}), ("maxOutputTokens", "max_output_tokens")
    for key in keys:
        value = holder.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return float("inf")


def response_schema(api: str, body: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether the request asks for JSON under a schema, and the schema (JSON mode without one: any object)."""
    if api == "openai.chat":
        return _openai_format(body.get("response_format"), nested=True)
    if api == "openai.responses":
        text = body.get("text")
        return _openai_format(text.get("format") if isinstance(text, Mapping) else None, nested=False)
    if api.startswith("anthropic"):
        config = body.get("output_config")
        fmt = body.get("output_format") or (config.get("format") if isinstance(config, Mapping) else None)
        if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
            return True, fmt.get("schema") or {}
        return False, None
    if api == "gemini":
        return _gemini_format(body)
    return False, None


def _openai_format(fmt: Any, nested: bool) -> tuple[bool, Any]:
    """``{"type": "json_schema", ...}`` (the schema under ``json_schema`` in Chat Completions) or ``json_object``."""
    if not isinstance(fmt, Mapping):
        return False, None
    if fmt.get("type") == "json_object":
        return True, {"type": "object"}
    if fmt.get("type") != "json_schema":
        return False, None
    holder = fmt.get("json_schema") if nested else fmt
    schema = holder.get("schema") if isinstance(holder, Mapping) else None
    return True, schema if schema is not None else {"type": "object"}


def _gemini_format(body: Mapping[str, Any]) -> tuple[bool, Any]:
    config = body.get("generationConfig") or body.get("generation_config")
    if not isinstance(config, Mapping):
        return False, None
    for key in ("responseJsonSchema", "response_json_schema", "responseSchema", "response_schema"):
        if config.get(key) is not None:
            return True, config[key]
    mime = config.get("responseMimeType") or config.get("response_mime_type")
    return (True, {"type": "object"}) if mime == "application/json" else (False, None)


def forced_tool(api: str, body: Mapping[str, Any]) -> str | None:
    """The one tool the request forces the model to call, if it forces one by name."""
    if api == "gemini":
        config = body.get("toolConfig") or body.get("tool_config")
        calling = config.get("functionCallingConfig") or config.get("function_calling_config") \
            if isinstance(config, Mapping) else None
        if not isinstance(calling, Mapping) or str(calling.get("mode", "")).upper() != "ANY":
            return None
        names = calling.get("allowedFunctionNames") or calling.get("allowed_function_names")
        return str(names[0]) if isinstance(names, list) and len(names) == 1 else None
    choice = body.get("tool_choice")
    if not isinstance(choice, Mapping):
        return None
    if choice.get("type") == "tool" or (choice.get("type") == "function" and "name" in choice):
        name = choice.get("name")  # Anthropic's {"type": "tool"}, Responses' {"type": "function", "name"}
    elif choice.get("type") == "function" and isinstance(choice.get("function"), Mapping):
        name = choice["function"].get("name")  # Chat Completions'
    else:
        return None
    return str(name) if name is not None else None
