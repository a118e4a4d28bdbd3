"""What the wire costs per model request, against the real SDK clients.

    python benchmarks/run.py --only wire

Three ways to answer the same ``chat.completions.create`` (and ``messages.create``) call,
interleaved in blocks inside one ``wire.run`` so machine noise hits all three alike:

- ``sdk``: the SDK over ``httpx2.MockTransport`` returning canned bytes: the SDK's own
  time (and httpx2's client), no respx, no harness;
- ``respx``: the SDK's default client, through the dual mocker and respx, to a respx
  route returning the same canned bytes;
- ``wire``: the SDK's default client, answered by the harness: the request parsed into
  neutral messages, the policy consulted, the model turn traced, the answer encoded.

Figures (microseconds per request; each block times one arm for ``per_block`` requests,
the arms rotate within a round, and a difference is the median over rounds of the
difference within the round, so slow phases of a busy machine cancel out):

- ``wire_request_overhead_us``: wire - sdk, everything the harness adds to a request
  (interception, routing, parsing, policy, trace, encoding): the target is <= 200;
- ``wire_server_overhead_us``: wire - respx, the harness's server alone (the issue's
  "against a respx route returning a canned response");
- ``wire_respx_overhead_us``: respx - sdk, interception and routing alone;
- the same three for Anthropic with an ``anthropic_`` prefix, and ``wire_sdk_request_us``.

Timing is CPU time of the benchmarking thread (``time.thread_time``): on a shared machine
wall-clock blocks are dominated by other processes, while CPU time is what a request
costs. ``..._wall_us`` repeats the main figure in wall-clock time, read from freezegun's
saved real clock (the harness installs virtual time process-wide: inside a run
``time.perf_counter`` is virtual).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _now() -> float:
    import freezegun.api as fz

    return float(fz.real_perf_counter())  # looked up at call time: a module alias would be patched


def _cpu() -> float:
    return time.thread_time()  # CPU time of this thread: what a request costs, whatever else runs on the box


def measure(quick: bool) -> dict[str, float]:
    figures = _per_request(quick)
    if figures:
        figures.update(_conversations(quick))
    return figures


def _per_request(quick: bool) -> dict[str, float]:
    try:
        import anthropic
        import httpx
        import httpx2
        import openai
    except ImportError:
        return {}
    from toolchaos import Ceiling, Decision, wire
    from toolchaos._internal.model import ModelTurn, Usage
    from toolchaos.wire import _formats as fmt
    from toolchaos.wire._mocker import Body

    blocks, per_block = (6, 40) if quick else (25, 100)
    messages = [{"role": "system", "content": "Use the tools to complete the task."},
                {"role": "user", "content": "What is the total of invoice inv_1?"}]
    turn = ModelTurn(1, "The total is 671.50 EUR.", (), Usage(30, 12))
    chat_body = json.dumps(fmt.chat_completion(turn, rid="chatcmpl-1", model="m", created=1)).encode()
    msg_body = json.dumps(fmt.anthropic_message(turn, mid="msg_1", model="c")).encode()
    headers = {"content-type": "application/json"}
    figures: dict[str, float] = {}

    def canned(body: bytes) -> Any:
        return httpx2.MockTransport(lambda request: httpx2.Response(200, content=body, headers=headers))

    def agent(task: str, env: Any) -> str:
        env.router.post("https://canned.test/v1/chat/completions").mock(
            side_effect=lambda request: httpx.Response(200, headers=headers, stream=Body(chat_body)))
        env.router.post("https://canned.test/v1/messages").mock(
            side_effect=lambda request: httpx.Response(200, headers=headers, stream=Body(msg_body)))
        oa = {"sdk": openai.OpenAI(http_client=httpx2.Client(transport=canned(chat_body))),
              "respx": openai.OpenAI(base_url="https://canned.test/v1"), "wire": openai.OpenAI()}
        an = {"sdk": anthropic.Anthropic(http_client=httpx2.Client(transport=canned(msg_body))),
              "respx": anthropic.Anthropic(base_url="https://canned.test"), "wire": anthropic.Anthropic()}
        calls = {
            "": {k: (lambda c=c: c.chat.completions.create(model="m", messages=messages)) for k, c in oa.items()},
            "anthropic_": {k: (lambda c=c: c.messages.create(model="c", max_tokens=64, messages=messages[1:],
                                                             system=messages[0]["content"])) for k, c in an.items()},
        }
        for prefix, arms in calls.items():
            for fn in arms.values():  # warm up: first use builds the SDK's response models
                for _ in range(20):
                    fn()
            samples: dict[str, list[float]] = {k: [] for k in arms}
            walls: dict[str, list[float]] = {k: [] for k in arms}
            order = list(arms)
            for block in range(blocks):
                for arm in order[block % 3:] + order[:block % 3]:  # rotate: no arm always runs first
                    fn = arms[arm]
                    start, cpu = _now(), _cpu()
                    for _ in range(per_block):
                        fn()
                    samples[arm].append((_cpu() - cpu) / per_block * 1e6)
                    walls[arm].append((_now() - start) / per_block * 1e6)

            def paired(a: str, b: str, samples: dict[str, list[float]] = samples) -> float:
                """The median over rounds of (a - b) within the round."""
                return statistics.median(x - y for x, y in zip(samples[a], samples[b]))

            figures[f"{prefix}wire_request_overhead_us"] = paired("wire", "sdk")
            figures[f"{prefix}wire_server_overhead_us"] = paired("wire", "respx")
            figures[f"{prefix}wire_respx_overhead_us"] = paired("respx", "sdk")
            figures[f"{prefix}wire_sdk_request_us"] = statistics.median(samples["sdk"])
            figures[f"{prefix}wire_request_overhead_min_us"] = min(samples["wire"]) - min(samples["sdk"])
            figures[f"{prefix}wire_request_overhead_wall_us"] = paired("wire", "sdk", walls)
        return "done"

    def policy(view: Any) -> Decision:
        return Decision.final("The total is 671.50 EUR.")

    turns = 10 * blocks * per_block + 200
    result = wire.run(agent, task="bench", tools=[], policy=policy,
                      ceiling=Ceiling(max_model_turns=turns, max_tool_calls=10, real_seconds=1800))
    if result.answer != "done":
        raise RuntimeError(f"the wire benchmark failed: {result.error}")
    return {k: round(v, 1) for k, v in figures.items()}


CONVERSATION_TURNS = (10, 50, 200)
_TOOL_RESULT = '{"invoice_id":"inv_1","total":"671.50","currency":"EUR","status":"open"}'


def _conversations(quick: bool) -> dict[str, float]:
    """The same SDK loop for 10, 50 and 200 turns, answered by the harness and by canned bytes.

    Each turn the agent sends the whole history, gets one tool call back and appends the call
    and a fixed tool result (both arms append the same bytes, so the SDK's own work is the
    same in both; the harness arm's calls are not executed, the trace records them skipped).
    Both arms' clients send through a timing transport: the bare arm's wraps an
    ``httpx2.MockTransport`` returning canned bytes, the harness arm's the default transport
    that the harness intercepts. The arms alternate within a round, every length runs in
    every round, and a figure is the median over rounds, so a slow phase of the machine hits
    both arms (CPU time of this thread throughout).

    Figures: ``wire_conversation_ratio_200``: harness / bare, the whole 200-turn conversation
    (the SDK's own work included, as a user feels it); ``wire_conversation_extra_us_<turns>``:
    what the harness adds per request, read at the transport (harness transport - bare
    transport: the SDK's work, the same in both arms, is not in the difference, so the
    figure is not buried in its noise; the young generation is collected before each timed
    transport call in both arms, so the SDK's garbage is not billed to whoever allocates
    next); ``wire_request_cost_slope``: how that extra grows, in microseconds per request
    per 100 messages of history (least squares over the three lengths against their mean
    history; 0 = flat). ``anthropic_`` prefix: Anthropic Messages.
    """
    import anthropic
    import httpx2
    import openai
    from toolchaos import Ceiling, Decision, wire
    from toolchaos._internal.model import ModelTurn, ToolCall, Usage
    from toolchaos.fake_tools import catalogue
    from toolchaos.wire import _formats as fmt

    rounds = 3 if quick else 7
    call = ToolCall("call_1_0", "fetch_invoice", {"invoice_id": "inv_1"})
    turn = ModelTurn(1, None, (call,), Usage(30, 12))
    canned = {"": json.dumps(fmt.chat_completion(turn, rid="chatcmpl-1", model="m", created=1)).encode(),
              "anthropic_": json.dumps(fmt.anthropic_message(turn, mid="msg_1", model="c")).encode()}
    headers = {"content-type": "application/json"}

    spent = [0.0]  # CPU seconds inside the transports, since the last reset

    class Timed(httpx2.BaseTransport):
        def __init__(self, inner: httpx2.BaseTransport) -> None:
            self.inner = inner

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            # The SDK leaves thousands of young objects per request (the openai client copies the
            # whole history); whoever allocates next pays their collection. Collected here, outside
            # the timing, in both arms: the figure is the transport's own work, not the SDK's garbage.
            gc.collect(0)
            cpu = _cpu()
            response = self.inner.handle_request(request)
            response.read()  # the body as the harness streams it: part of its cost
            spent[0] += _cpu() - cpu
            return response

    def bare(body: bytes) -> httpx2.Client:
        return httpx2.Client(transport=Timed(httpx2.MockTransport(
            lambda request: httpx2.Response(200, content=body, headers=headers))))

    def served() -> httpx2.Client:
        return httpx2.Client(transport=Timed(httpx2.HTTPTransport()))

    def openai_loop(client: Any, turns: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools to complete the task."},
                                          {"role": "user", "content": "What is the total of invoice inv_1?"}]
        for _ in range(turns):
            msg = client.chat.completions.create(model="m", messages=messages).choices[0].message
            tc = msg.tool_calls[0]
            messages.append({"role": "assistant", "content": msg.content, "tool_calls": [
                {"id": tc.id, "type": "function", "function": {"name": tc.function.name,
                                                               "arguments": tc.function.arguments}}]})
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": _TOOL_RESULT})

    def anthropic_loop(client: Any, turns: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the total of invoice inv_1?"}]
        for _ in range(turns):
            content = client.messages.create(model="c", max_tokens=64, messages=messages,
                                             system="Use the tools to complete the task.").content
            use = content[-1]
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": use.id, "name": use.name, "input": use.input}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": _TOOL_RESULT}]})

    samples: dict[tuple[str, str, int], list[float]] = {}
    transport: dict[tuple[str, str, int], list[float]] = {}

    def agent(task: str, env: Any) -> str:
        arms = {"": (openai_loop, {"bare": openai.OpenAI(http_client=bare(canned[""])),
                                   "wire": openai.OpenAI(http_client=served())}),
                "anthropic_": (anthropic_loop, {"bare": anthropic.Anthropic(http_client=bare(canned["anthropic_"])),
                                                "wire": anthropic.Anthropic(http_client=served())})}
        for loop, clients in arms.values():  # warm up: first use builds the SDK's models
            for client in clients.values():
                loop(client, 10)
        for r in range(rounds):
            for prefix, (loop, clients) in arms.items():
                for turns in CONVERSATION_TURNS:
                    order = ["bare", "wire"] if (r + turns) % 2 else ["wire", "bare"]
                    for arm in order:
                        cpu, spent[0] = _cpu(), 0.0
                        loop(clients[arm], turns)
                        samples.setdefault((prefix, arm, turns), []).append(_cpu() - cpu)
                        transport.setdefault((prefix, arm, turns), []).append(spent[0])
        return "done"

    def policy(view: Any) -> Decision:
        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"})

    per_round = 2 * sum(CONVERSATION_TURNS) + 40
    result = wire.run(agent, task="bench", tools=[catalogue.get("fetch_invoice")], policy=policy,
                      ceiling=Ceiling(max_model_turns=per_round * (rounds + 1), max_tool_calls=10,
                                      real_seconds=1800))
    if result.answer != "done":
        raise RuntimeError(f"the conversation benchmark failed: {result.error}")
    return _conversation_figures(samples, transport)


def _conversation_figures(samples: dict[tuple[str, str, int], list[float]],
                          transport: dict[tuple[str, str, int], list[float]]) -> dict[str, float]:
    figures: dict[str, float] = {}
    for prefix in ("", "anthropic_"):
        longest = CONVERSATION_TURNS[-1]
        figures[f"{prefix}wire_conversation_ratio_{longest}"] = round(statistics.median(
            w / b for w, b in zip(samples[(prefix, "wire", longest)], samples[(prefix, "bare", longest)])), 3)
        # history of request i (0-based) of a conversation: 2 opening messages + 2 per earlier turn
        xs, ys = [], []
        for turns in CONVERSATION_TURNS:
            extra = statistics.median(w - b for w, b in zip(transport[(prefix, "wire", turns)],
                                                            transport[(prefix, "bare", turns)]))
            xs.append(2 + (turns - 1))  # mean history length over the conversation's requests
            ys.append(extra / turns * 1e6)
            figures[f"{prefix}wire_conversation_extra_us_{turns}"] = round(ys[-1], 1)
        figures[f"{prefix}wire_request_cost_slope"] = round(statistics.linear_regression(xs, ys).slope * 100, 2)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), indent=2, sort_keys=True))
