"""Side requests answered as a model would, on the four APIs: a request without tools that does not
continue the main conversation gets text, one with a response schema an instance that validates,
neither takes a turn of the policy, and the trace records each as a ``side`` event.

The recorded side requests are the coding CLIs' own: gemini-cli's loop check, next-speaker check and
routing classifier (their schemas as gemini-cli sends them), OpenCode's title request and Claude
Code's topic request (no tools, a system prompt of their own)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import jsonschema
import pytest
from toolchaos import policies, wire
from toolchaos.errors import PolicyError
from toolchaos.fake_tools import catalogue
from toolchaos.policies import POLICIES
from toolchaos.scenario import ScenarioError, load_text
from toolchaos.wire._names import declared_names as names
from toolchaos.wire._side import NO_TOOLS, PROBE, SCHEMA, classify

ARGS = {"invoice_id": "inv_1"}
PARAMS = {"type": "object", "properties": {"invoice_id": {"type": "string"}}, "required": ["invoice_id"]}
MAIN_SYSTEM = "You are a billing agent. Use the tools."
TASK = "Get the total of invoice inv_1"
URLS = {"openai.chat": "https://api.openai.com/v1/chat/completions",
        "openai.responses": "https://api.openai.com/v1/responses",
        "anthropic.messages": "https://api.anthropic.com/v1/messages",
        "gemini": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        "gemini.sse": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent"
                      "?alt=sse"}
APIS = ["openai.chat", "openai.responses", "anthropic.messages", "gemini"]
TITLE = {"type": "object", "properties": {"title": {"type": "string", "minLength": 3},
                                          "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                          "topics": {"type": "array", "items": {"enum": ["billing", "other"]},
                                                     "minItems": 1}},
         "required": ["title", "confidence", "topics"], "additionalProperties": False}

# gemini-cli (packages/core): services/loopDetectionService.ts, utils/nextSpeakerChecker.ts,
# routing/strategies/classifierStrategy.ts, sent by BaseLlmClient.generateJson as generationConfig
LOOP_CHECK = {"type": "object", "properties": {
    "unproductive_state_analysis": {"type": "string", "description": "Your reasoning on if the conversation is "
                                                                     "looping without forward progress."},
    "unproductive_state_confidence": {"type": "number", "description": "A number between 0.0 and 1.0 representing "
                                      "your confidence that the conversation is in an unproductive state."}},
    "required": ["unproductive_state_analysis", "unproductive_state_confidence"]}
NEXT_SPEAKER = {"type": "object", "properties": {
    "reasoning": {"type": "string", "description": "Brief explanation justifying the 'next_speaker' choice."},
    "next_speaker": {"type": "string", "enum": ["user", "model"], "description": "Who should speak next"}},
    "required": ["reasoning", "next_speaker"]}
CLASSIFIER = {"type": "OBJECT", "properties": {  # @google/genai's Type enum
    "reasoning": {"type": "STRING", "description": "A brief, step-by-step explanation for the model choice."},
    "model_choice": {"type": "STRING", "enum": ["flash", "pro"]}},
    "required": ["reasoning", "model_choice"]}
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "mcp_chaos_fetch_invoice", "parametersJsonSchema": PARAMS}]}]
GEMINI_HISTORY = [{"role": "user", "parts": [{"text": TASK}]},
                  {"role": "model", "parts": [{"functionCall": {"id": "call_1_0", "name": "mcp_chaos_fetch_invoice",
                                                                "args": ARGS}}]},
                  {"role": "user", "parts": [{"functionResponse": {"id": "call_1_0", "name": "mcp_chaos_fetch_invoice",
                                                                   "response": {"error": "timed out"}}}]}]


def _gemini_json(system: str | None, contents: list[Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": contents, "generationConfig": {
        "temperature": 0, "responseJsonSchema": schema, "responseMimeType": "application/json"}}
    if system is not None:
        body["systemInstruction"] = {"role": "user", "parts": [{"text": system}]}
    return body


GEMINI_CLI = {
    "loop_check": (LOOP_CHECK, _gemini_json(
        "You are a diagnostic agent that determines whether a conversational AI assistant is stuck in an "
        "unproductive loop.",
        [{"role": "user", "parts": [{"text": f"<original_user_request>\n{TASK}\n</original_user_request>"}]},
         *GEMINI_HISTORY[1:], {"role": "user", "parts": [{"text": "Please analyze the conversation history to "
                                                                  "determine the possibility that the conversation is "
                                                                  "stuck in a repetitive, non-productive state. Provide "
                                                                  "your response in the requested JSON format."}]}],
        LOOP_CHECK)),
    "next_speaker": (NEXT_SPEAKER, _gemini_json(None, [
        {"role": "user", "parts": [{"text": TASK}]}, {"role": "model", "parts": [{"text": "The total is 671.50 EUR."}]},
        {"role": "user", "parts": [{"text": "Analyze *only* the content and structure of your immediately preceding "
                                            "response. Determine who should logically speak next: the 'user' or the "
                                            "'model' (you)."}]}], NEXT_SPEAKER)),
    "classifier": (CLASSIFIER, _gemini_json("You are a specialized Task Routing AI. Your sole function is to analyze "
                                            "the user's request and classify its complexity.",
                                            [{"role": "user", "parts": [{"text": TASK}]}], CLASSIFIER)),
}
# OpenCode 1.x (Chat Completions through @ai-sdk/openai-compatible, streamed): its title agent
OPENCODE_TITLE = {"model": "toolchaos/policy", "stream": True, "max_tokens": 32000, "messages": [
    {"role": "system", "content": "You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>\n"
                                  "Generate a brief title that would help the user find this conversation later.\n"
                                  "</task>\n\n<rules>\n- Never use tools\n- Never respond to questions, just generate a "
                                  "title\n</rules>"},
    {"role": "user", "content": "Generate a title for this conversation:\n"}, {"role": "user", "content": TASK}]}
OPENCODE_MAIN = {"model": "toolchaos/policy", "stream": True, "messages": [
    {"role": "system", "content": "You are opencode, an interactive CLI tool that helps users with software tasks."},
    {"role": "user", "content": TASK}],
    "tools": [{"type": "function", "function": {"name": "chaos_fetch_invoice", "parameters": PARAMS}}]}
# Claude Code (Anthropic Messages, streamed): its topic check, on the small model, without tools
CLAUDE_TOPIC = {"model": "claude-haiku-4-5", "max_tokens": 512, "stream": True, "messages": [
    {"role": "user", "content": TASK}], "system": [
    {"type": "text", "text": "Analyze if this message indicates a new conversation topic. If it does, extract a 2-3 "
                             "word title that captures the new topic. Format your response as a JSON object with two "
                             "fields: 'isNewTopic' (boolean) and 'title' (string, or null if isNewTopic is false). "
                             "Only include these fields, no other text."}]}
# Claude Code's quota check at start-up: one token, the word "quota", no tools, no system prompt
CLAUDE_QUOTA = {"model": "claude-haiku-4-5", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
CLAUDE_MAIN = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": True, "messages": [
    {"role": "user", "content": [{"type": "text", "text": TASK}]}], "system": [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
    "tools": [{"name": "mcp__chaos__fetch_invoice", "input_schema": PARAMS}, {"name": "Bash", "input_schema": {}}]}


# --- the four APIs: a main turn, a side request with no tools, one with a schema -----------


def _main(api: str, system: str = MAIN_SYSTEM) -> dict[str, Any]:
    if api == "openai.chat":
        return {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": TASK}],
                "tools": [{"type": "function", "function": {"name": "fetch_invoice", "parameters": PARAMS}}]}
    if api == "openai.responses":
        return {"model": "m", "instructions": system, "input": TASK,
                "tools": [{"type": "function", "name": "fetch_invoice", "parameters": PARAMS}]}
    if api == "anthropic.messages":
        return {"model": "c", "max_tokens": 64, "system": system, "messages": [{"role": "user", "content": TASK}],
                "tools": [{"name": "fetch_invoice", "input_schema": PARAMS}]}
    return {"systemInstruction": {"parts": [{"text": system}]}, "contents": [{"role": "user", "parts": [{"text": TASK}]}],
            "tools": [{"functionDeclarations": [{"name": "fetch_invoice", "parametersJsonSchema": PARAMS}]}]}


def _no_tools(api: str) -> dict[str, Any]:
    body = _main(api, "You write a short title for the conversation.")
    body.pop("tools")
    return body


def _with_schema(api: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    body = _no_tools(api)
    if api == "openai.chat":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "t", "schema": schema, "strict": True}}
    elif api == "openai.responses":
        body["text"] = {"format": {"type": "json_schema", "name": "t", "schema": schema, "strict": True}}
    elif api == "anthropic.messages":
        body["output_format"] = {"type": "json_schema", "schema": schema}
    else:
        body["generationConfig"] = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    return body


def _answer(api: str, response: httpx.Response) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    """The text and the calls of an answer, read as the API's clients read it (streamed or not)."""
    if response.headers["content-type"].startswith("text/event-stream"):
        return _streamed(api, response.text)
    data = response.json()
    if api == "openai.chat":
        msg = data["choices"][0]["message"]
        return msg["content"], [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                                for c in msg.get("tool_calls") or ()]
    if api == "openai.responses":
        texts = [c["text"] for i in data["output"] if i["type"] == "message" for c in i["content"]]
        calls = [(i["name"], json.loads(i["arguments"])) for i in data["output"] if i["type"] == "function_call"]
        return ("".join(texts) if texts else None), calls
    if api == "anthropic.messages":
        texts = [b["text"] for b in data["content"] if b["type"] == "text"]
        return ("".join(texts) if texts else None), [(b["name"], b["input"]) for b in data["content"]
                                                     if b["type"] == "tool_use"]
    parts = data["candidates"][0]["content"]["parts"]
    texts = [p["text"] for p in parts if "text" in p]
    return ("".join(texts) if texts else None), [(p["functionCall"]["name"], p["functionCall"]["args"])
                                                 for p in parts if "functionCall" in p]


def _streamed(api: str, raw: str) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    texts: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if api == "openai.chat":
            for choice in event["choices"]:
                texts.append(choice["delta"].get("content") or "")
                calls += [(c["function"]["name"], {}) for c in choice["delta"].get("tool_calls") or ()
                          if c["function"].get("name")]
        elif api == "anthropic.messages":
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                texts.append(event["delta"]["text"])
            elif event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
                calls.append((event["content_block"]["name"], {}))
        else:
            for part in event["candidates"][0]["content"]["parts"]:
                texts.append(part.get("text", ""))
                if "functionCall" in part:
                    calls.append((part["functionCall"]["name"], part["functionCall"]["args"]))
    return ("".join(texts) or None), calls


def _run(requests: list[tuple[str, dict[str, Any]]], policy: Any = None, **options: Any
         ) -> tuple[list[httpx.Response], Any]:
    """Send raw requests (API, body) from inside a run whose policy keeps calling fetch_invoice."""
    got: list[httpx.Response] = []

    def agent(task: str) -> str:
        with httpx.Client() as client:
            for api, body in requests:
                got.append(client.post(URLS[api], json=body))
        return "done"

    policy = policy if policy is not None else policies.stubborn("fetch_invoice", ARGS)
    result = wire.run(agent, task=TASK, tools=[catalogue.get("fetch_invoice")], policy=policy,
                      apis=("openai", "anthropic", "gemini"), **options)
    assert all(r.status_code == 200 for r in got), [r.text for r in got]
    return got, result


def _validate(schema: Mapping[str, Any], value: Any) -> None:
    """jsonschema's verdict; Gemini's capitalised types read as the API reads them."""
    def lower(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: (v.lower() if k == "type" and isinstance(v, str) else lower(v)) for k, v in node.items()}
        return [lower(n) for n in node] if isinstance(node, list) else node
    schema = lower(schema)
    jsonschema.validators.validator_for(schema)(schema).validate(value)


@pytest.mark.parametrize("api", APIS)
def test_a_tool_less_side_request_gets_text_and_a_schemad_one_an_instance_that_validates(api: str) -> None:
    responses, result = _run([(api, _main(api)), (api, _no_tools(api)), (api, _with_schema(api, TITLE)),
                              (api, _main(api))])
    assert _answer(api, responses[0])[1] == [("fetch_invoice", ARGS)]
    assert _answer(api, responses[1]) == ("OK", [])  # text, never a call to a tool it does not declare
    text, calls = _answer(api, responses[2])
    assert not calls and text is not None
    _validate(TITLE, json.loads(text))
    sides = result.trace.of_kind("side")
    assert [(e["why"], e["request"], e["step"]) for e in sides] == [(NO_TOOLS, 2, 1), (SCHEMA, 3, 1)]
    assert result.side_requests == 2 and [r.is_side for r in result.requests] == [False, True, True, False]


@pytest.mark.parametrize("api", APIS)
def test_side_requests_take_no_turn_of_the_policy(api: str) -> None:
    steps: list[int] = []

    def counting(view: Any) -> Any:
        steps.append(view.step)
        return policies.Decision.call("fetch_invoice", ARGS)

    _, alone = _run([(api, _main(api)), (api, _main(api))])
    _, beside = _run([(api, _main(api)), (api, _no_tools(api)), (api, _with_schema(api, TITLE)), (api, _main(api))],
                     policy=counting)
    assert steps == [1, 2] and beside.turns == alone.turns == 2
    model = [{k: v for k, v in e.items() if k != "seq"} for e in beside.trace.of_kind("model")]
    assert model == [{k: v for k, v in e.items() if k != "seq"} for e in alone.trace.of_kind("model")]
    assert beside.tokens == alone.tokens  # a side request's tokens are its event's, not the turns'


@pytest.mark.parametrize("case", list(GEMINI_CLI))
def test_gemini_clis_json_requests_get_an_instance_of_their_recorded_schemas(case: str) -> None:
    schema, body = GEMINI_CLI[case]
    main = {"systemInstruction": {"parts": [{"text": "You are gemini-cli."}]}, "contents": GEMINI_HISTORY[:1],
            "tools": GEMINI_TOOLS}
    responses, result = _run([("gemini.sse", main), ("gemini", body)])
    assert _answer("gemini", responses[0])[1] == [("mcp_chaos_fetch_invoice", ARGS)]
    text, calls = _answer("gemini", responses[1])
    assert not calls and text is not None  # never a functionCall: gemini-cli retried that for minutes
    value = json.loads(text)
    _validate(schema, value)
    assert set(value) >= set(schema["required"])
    assert result.turns == 1 and [e["why"] for e in result.trace.of_kind("side")] == [SCHEMA]


def test_the_loop_check_reads_not_looping_unless_the_scenario_says_so() -> None:
    body = GEMINI_CLI["loop_check"][1]
    plain = json.loads(_answer("gemini", _run([("gemini", body)])[0][0])[0] or "")
    assert plain == {"unproductive_state_analysis": "OK", "unproductive_state_confidence": 0}
    looping = policies.stubborn("fetch_invoice", ARGS, side_answer={
        "text": "yes, you are looping", "values": {"unproductive_state_confidence": 0.95}})
    (check, title), result = _run([("gemini", body), ("openai.chat", OPENCODE_TITLE)],
                                  policy=policies.obedient(looping))  # read through a wrapper too
    assert json.loads(_answer("gemini", check)[0] or "") == {"unproductive_state_analysis": "yes, you are looping",
                                                             "unproductive_state_confidence": 0.95}
    assert _answer("openai.chat", title) == ("yes, you are looping", [])
    assert result.trace.of_kind("side")[0]["answer"] == ('{"unproductive_state_analysis":"yes, you are looping",'
                                                         '"unproductive_state_confidence":0.95}')


def test_a_side_answer_that_is_neither_text_nor_text_and_values_is_refused_naming_the_parameter() -> None:
    with pytest.raises(PolicyError, match="side_answer must be a text") as exc:
        policies.stubborn("fetch_invoice", ARGS, side_answer={"txt": "typo"})
    assert exc.value.field == "side_answer"


def test_opencodes_title_request_gets_a_title_whether_it_comes_first_or_later() -> None:
    responses, result = _run([("openai.chat", OPENCODE_TITLE), ("openai.chat", OPENCODE_MAIN),
                              ("openai.chat", OPENCODE_TITLE)])
    assert [_answer("openai.chat", r) for r in responses] == [("OK", []), (None, [("chaos_fetch_invoice", {})]),
                                                               ("OK", [])]
    assert result.turns == 1 and result.side_requests == 2


def test_claude_codes_topic_request_gets_text_and_its_main_turn_a_call() -> None:
    responses, result = _run([("anthropic.messages", CLAUDE_MAIN), ("anthropic.messages", CLAUDE_TOPIC)])
    assert _answer("anthropic.messages", responses[0]) == (None, [("mcp__chaos__fetch_invoice", {})])
    assert _answer("anthropic.messages", responses[1]) == ("OK", [])
    assert result.turns == 1 and [e["tool"] for e in result.trace.of_kind("side")] == ["anthropic.messages"]


def test_anthropic_tool_forced_json_is_answered_with_one_call_to_the_output_tool() -> None:
    body = {**_no_tools("anthropic.messages"), "tools": [{"name": "record_title", "input_schema": TITLE}],
            "tool_choice": {"type": "tool", "name": "record_title"}}
    (response,), result = _run([("anthropic.messages", body)])
    data = response.json()
    assert data["stop_reason"] == "tool_use" and [b["type"] for b in data["content"]] == ["tool_use"]
    _validate(TITLE, data["content"][0]["input"])
    assert result.turns == 0 and result.side_requests == 1 and result.total_executions == 0


def test_a_runtime_that_drops_its_tools_to_force_a_final_answer_stays_a_main_turn() -> None:
    history = [{"role": "system", "content": MAIN_SYSTEM}, {"role": "user", "content": TASK},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1_0", "type": "function", "function": {
                   "name": "fetch_invoice", "arguments": json.dumps(ARGS)}}]},
               {"role": "tool", "tool_call_id": "call_1_0", "content": '{"error": "timed out"}'}]
    final = {"model": "m", "messages": [*history, {"role": "user", "content": "Answer now, without tools."}]}
    other_prompt = {"model": "m", "messages": [{"role": "system", "content": "Summarise."}, *history[1:]]}
    _, result = _run([("openai.chat", _main("openai.chat")), ("openai.chat", final), ("openai.chat", other_prompt)])
    assert result.turns == 3 and result.side_requests == 0  # the same system prompt; the run's tool results


def test_a_schema_beside_the_runs_tools_and_a_forced_run_tool_are_main_turns() -> None:
    with_tools = {**_with_schema("openai.responses", TITLE), "tools": _main("openai.responses")["tools"]}
    forced = {**_main("anthropic.messages"), "tool_choice": {"type": "tool", "name": "fetch_invoice"}}
    responses, result = _run([("openai.responses", with_tools), ("anthropic.messages", forced)])
    assert [_answer(a, r)[1] for a, r in zip(("openai.responses", "anthropic.messages"), responses)] == [
        [("fetch_invoice", ARGS)], [("fetch_invoice", ARGS)]]
    assert result.turns == 2 and result.side_requests == 0


def test_the_same_seed_gives_the_same_trace_with_side_requests() -> None:
    requests = [("gemini.sse", {"contents": GEMINI_HISTORY[:1], "tools": GEMINI_TOOLS}),
                ("gemini", GEMINI_CLI["loop_check"][1]), ("openai.chat", OPENCODE_TITLE)]
    assert _run(requests)[1].trace.jsonl() == _run(requests)[1].trace.jsonl()


# --- the definition, request by request ---------------------------------------------------

def _classify(body: Mapping[str, Any], api: str = "openai.chat", *, run_tools: set[str] | None = None,
              asked: set[str] | None = None, main_system: str | None = MAIN_SYSTEM, specs: Any = None) -> Any:
    msgs = body.get("messages", [])
    side = classify(api, body, msgs, specs or [], declared=names(specs or []),
                    run_tools={"fetch_invoice"} if run_tools is None else run_tools, asked=asked or set(),
                    main_system=main_system)
    return None if side is None else side.why


def test_what_makes_a_tool_less_request_a_side_request() -> None:
    other = {"messages": [{"role": "system", "content": "Write a title."}, {"role": "user", "content": TASK}]}
    same = {"messages": [{"role": "system", "content": MAIN_SYSTEM}, {"role": "user", "content": TASK}]}
    bare = {"messages": [{"role": "user", "content": TASK}]}
    answered = {"messages": [*other["messages"], {"role": "tool", "tool_call_id": "call_1_0", "content": "x"}]}
    assert _classify(other) == NO_TOOLS and _classify(answered) == NO_TOOLS  # a result of no call of the run
    assert _classify(same) is None and _classify(answered, asked={"call_1_0"}) is None
    assert _classify(other, main_system=None) == NO_TOOLS  # before any request declared tools: a system prompt
    assert _classify(bare, main_system=None) is None  # ... or none at all, as the main conversation has
    assert _classify(other, run_tools=set()) is None  # a run without tools: its main conversation declares none


def test_what_makes_a_request_with_a_schema_a_side_request() -> None:
    specs = [{"name": "fetch_invoice", "parameters": PARAMS}]
    for api in APIS:
        assert _classify(_with_schema(api, TITLE), api) == SCHEMA
        assert _classify(_with_schema(api, TITLE), api, specs=specs) is None  # beside the run's tools: main
    assert _classify({"response_format": {"type": "json_object"}}) == SCHEMA
    assert _classify({"response_format": {"type": "text"}}) == NO_TOOLS  # no schema: the tool-less rule
    assert _classify({"generationConfig": {"responseMimeType": "application/json"}}, "gemini") == SCHEMA
    assert _classify({"generationConfig": {"responseMimeType": "text/plain"}}, "gemini") == NO_TOOLS
    forced = {"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["out"]}}}
    assert _classify(forced, "gemini", specs=[{"name": "out", "parameters": TITLE}]) == SCHEMA
    assert _classify({"tool_choice": {"type": "function", "function": {"name": "out"}}},
                     specs=[{"name": "out"}, *specs]) == SCHEMA  # forcing its output tool, beside the run's
    assert _classify({"tool_choice": {"type": "function", "name": "fetch_invoice"}}, "openai.responses",
                     specs=specs) is None
    # `codex exec --output-schema`: a schema on its main turns, the run's tools inside an MCP namespace
    codex = {"type": "namespace", "name": "mcp__chaos", "tools": [{"type": "function", "name": "fetch_invoice"}]}
    assert _classify(_with_schema("openai.responses", TITLE), "openai.responses", specs=[codex]) is None


def test_a_scenario_scripts_the_side_answer_in_its_policy_and_writes_it_back() -> None:
    text = ("id: scripted-side\ntitle: t\ntask: t\ntools: {fetch_invoice: {}}\npolicy:\n  stubborn:\n"
            "    tool: fetch_invoice\n    side_answer: {text: \"yes, you are looping\", values: "
            "{unproductive_state_confidence: 0.95}}\nexpect: [terminated]\n")
    (scenario,) = load_text(text, "s.chaos.yaml")
    policy = scenario.policy()
    scripted = {"text": "yes, you are looping", "values": {"unproductive_state_confidence": 0.95}}
    assert policy.side_answer == scripted and POLICIES.to_data(policy)["stubborn"]["side_answer"] == scripted
    with pytest.raises(ScenarioError, match="side_answer must be a text"):
        load_text(text.replace("side_answer: {text", "side_answer: {txt"), "s.chaos.yaml")


def test_claude_codes_quota_check_is_a_probe_answered_without_a_turn_of_the_policy() -> None:
    responses, result = _run([("anthropic.messages", CLAUDE_QUOTA), ("anthropic.messages", CLAUDE_MAIN)])
    assert _answer("anthropic.messages", responses[0]) == ("OK", [])
    assert _answer("anthropic.messages", responses[1]) == (None, [("mcp__chaos__fetch_invoice", {})])  # turn 1
    assert result.turns == 1 and [e["why"] for e in result.trace.of_kind("side")] == [PROBE]


@pytest.mark.parametrize("api", ["openai.chat", "openai.responses", "anthropic.messages", "gemini"])
def test_what_makes_a_request_a_probe(api: str) -> None:
    bare = {k: v for k, v in _main(api).items() if k not in ("tools", "system", "instructions", "systemInstruction")}
    if "messages" in bare:  # no system prompt either: as the main conversation may start
        bare["messages"] = [m for m in bare["messages"] if m["role"] != "system"]
    limit = {"openai.chat": "max_completion_tokens", "openai.responses": "max_output_tokens",
             "anthropic.messages": "max_tokens"}.get(api)

    def capped(n: int, body: Mapping[str, Any] = bare) -> dict[str, Any]:
        if limit is None:
            return {**body, "generationConfig": {"maxOutputTokens": n}}
        return {**body, limit: n}

    assert _classify(capped(1), api, main_system=None) == PROBE
    assert _classify(capped(1), api, main_system=None, run_tools=set()) == PROBE  # a run without tools too
    assert _classify(capped(2), api, main_system=None) is None  # two tokens: as any tool-less request
    assert _classify(capped(1, _main(api)), api, specs=[{"name": "fetch_invoice", "parameters": PARAMS}]) is None
