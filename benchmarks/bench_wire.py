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

The conversation figures (``wire_conversation_*``, ``wire_request_cost_slope``, ``wire_replay*``:
the per-request cost as the history grows) are defined in ``_conversations``.

Timing is CPU time of the benchmarking thread (``time.thread_time``): on a shared machine
wall-clock blocks are dominated by other processes, while CPU time is what a request
costs. ``..._wall_us`` repeats the main figure in wall-clock time, read from freezegun's
saved real clock (the harness installs virtual time process-wide: inside a run
``time.perf_counter`` is virtual).
"""

from __future__ import annotations

import functools
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
# The loops declare their tool: a request without tools and with a system prompt of its own is a side request
_PARAMS = {"type": "object", "properties": {"invoice_id": {"type": "string"}}, "required": ["invoice_id"]}
_OPENAI_TOOLS = [{"type": "function", "function": {"name": "fetch_invoice", "parameters": _PARAMS}}]
_ANTHROPIC_TOOLS = [{"name": "fetch_invoice", "input_schema": _PARAMS}]


def _conversations(quick: bool) -> dict[str, float]:
    """The same SDK loop for 10, 50 and 200 turns, answered by the harness and by canned bytes.

    Each turn the agent sends the whole history, gets one tool call back and appends the call
    and a fixed tool result (both arms append the same bytes, so the SDK's own work is the
    same in both; the harness arm's calls are not executed, the trace records them skipped).
    Both arms' clients send through a timing transport: the bare arm's wraps an
    ``httpx2.MockTransport`` returning canned bytes, the harness arm's the default transport
    that the harness intercepts. The arms alternate within a round (which one goes first
    alternates too), every length and every variant runs in every round, and a figure is the
    median over rounds of the difference (or ratio) within the round, so a slow phase of a
    loaded machine hits both arms alike. Times are CPU time of this thread unless ``_wall``.

    Figures (``anthropic_`` prefix: the same for Anthropic Messages):

    - ``wire_conversation_ratio_200``: harness / bare, CPU time of the whole 200-turn
      conversation (the SDK's own work included, as a user feels it); ``..._wall``: the same
      in wall-clock time.
    - ``wire_conversation_extra_us_<turns>``: what the harness adds per request, read at the
      transport (harness transport - bare transport, per request: the SDK's work, the same in
      both arms, is not in the difference, so the figure is not buried in its noise; the young
      generation is collected before each timed transport call in both arms, so the SDK's
      garbage is not billed to whoever allocates next).
    - ``wire_request_cost_slope``: how that extra grows with the history, in microseconds per
      request per 100 messages of history: the least-squares slope of the three
      ``extra_us`` figures against the mean history length of their conversations (a
      conversation of t turns sends requests of 2, 4, ..., 2t messages: mean t + 1; the
      Anthropic loop, without a system message in the list, 1 less), times 100. 0 = flat.
      It includes what the SDK does to the processor's caches: the openai client transforms
      the whole history in Python before each request (~45 ms at 400 messages), so the
      harness's code and data are colder at 200 turns than at 10.
    - ``wire_conversation_extra_us_10_flushed``: the 10-turn extra with a 32 MB read before
      each request, in both arms (outside the timing): the harness's cost per request when the
      caches are cold, at a short history. When it matches ``..._extra_us_200`` the growth is
      the cache, not work that grows with the history.
    - ``wire_replay_extra_us_<turns>`` and ``wire_replay_cost_slope``: the same as above with
      no SDK in the loop: the request bodies the SDK sent in a 200-turn conversation
      (recorded once) replayed through a bare ``httpx2.Client``, the first t of them for a
      conversation of t turns: the harness's own cost per request against the history, with
      warm caches. ``wire_replay_cold_extra_us_<turns>`` and ``wire_replay_cold_cost_slope``:
      the same replay with a 32 MB read before each request in both arms (outside the timing),
      so every request meets the cold caches an SDK's work leaves behind, at every length: the
      work that touches the history shows here, and this slope is the one to hold near 0.
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
    urls = {"": "https://api.openai.com/v1/chat/completions", "anthropic_": "https://api.anthropic.com/v1/messages"}
    headers = {"content-type": "application/json"}
    flush_buffer = bytearray(32 << 20)

    spent = [0.0]  # CPU seconds inside the transports, since the last reset

    class Timed(httpx2.BaseTransport):
        def __init__(self, inner: httpx2.BaseTransport) -> None:
            self.inner = inner
            self.flush = False  # read 32 MB before each request (outside the timing): cold caches
            self.log: list[bytes] | None = None  # request bodies, when recording

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            if self.log is not None:
                self.log.append(request.read())
            if self.flush:
                flush_buffer.count(b"x")
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
            msg = client.chat.completions.create(model="m", messages=messages, tools=_OPENAI_TOOLS).choices[0].message
            tc = msg.tool_calls[0]
            messages.append({"role": "assistant", "content": msg.content, "tool_calls": [
                {"id": tc.id, "type": "function", "function": {"name": tc.function.name,
                                                               "arguments": tc.function.arguments}}]})
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": _TOOL_RESULT})

    def anthropic_loop(client: Any, turns: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the total of invoice inv_1?"}]
        for _ in range(turns):
            content = client.messages.create(model="c", max_tokens=64, messages=messages, tools=_ANTHROPIC_TOOLS,
                                             system="Use the tools to complete the task.").content
            use = content[-1]
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": use.id, "name": use.name, "input": use.input}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": _TOOL_RESULT}]})

    samples: dict[tuple[str, str, int], list[float]] = {}
    walls: dict[tuple[str, str, int], list[float]] = {}
    transport: dict[tuple[str, str, int], list[float]] = {}

    def timed(key: tuple[str, str, int], run: Any) -> None:
        # Each conversation starts from a collected heap, as a test's does. Otherwise what earlier
        # conversations left pending makes a full collection (~0.2 s over the SDKs' 300k objects)
        # fall in whichever arm crosses the threshold, which is not the arm that caused it.
        gc.collect()
        start, cpu, spent[0] = _now(), _cpu(), 0.0
        run()
        samples.setdefault(key, []).append(_cpu() - cpu)
        walls.setdefault(key, []).append(_now() - start)
        transport.setdefault(key, []).append(spent[0])

    def replay(client: Any, url: str, bodies: list[bytes]) -> None:
        for body in bodies:
            client.post(url, content=body, headers=headers).read()

    def agent(task: str, env: Any) -> str:
        arms = {"": (openai_loop, {"bare": openai.OpenAI(http_client=bare(canned[""])),
                                   "wire": openai.OpenAI(http_client=served())}),
                "anthropic_": (anthropic_loop, {"bare": anthropic.Anthropic(http_client=bare(canned["anthropic_"])),
                                                "wire": anthropic.Anthropic(http_client=served())})}
        raw = {"bare": {p: bare(canned[p]) for p in arms}, "wire": {p: served() for p in arms}}
        recorded: dict[str, list[bytes]] = {}
        for prefix, (loop, clients) in arms.items():  # warm up (first use builds the SDK's models); record
            for client in clients.values():
                loop(client, 10)
            log = clients["bare"]._client._transport.log = []
            loop(clients["bare"], CONVERSATION_TURNS[-1])
            clients["bare"]._client._transport.log = None
            recorded[prefix] = log
        for r in range(rounds):
            for prefix, (loop, clients) in arms.items():
                for turns in CONVERSATION_TURNS:
                    order = ["bare", "wire"] if (r + turns) % 2 else ["wire", "bare"]
                    for arm in order:
                        timed((prefix, arm, turns), functools.partial(loop, clients[arm], turns))
                    for kind in ("replay_", "replay_cold_"):
                        for arm in order:
                            raw[arm][prefix]._transport.flush = kind == "replay_cold_"
                            timed((prefix, kind + arm, turns),
                                  functools.partial(replay, raw[arm][prefix], urls[prefix], recorded[prefix][:turns]))
                            raw[arm][prefix]._transport.flush = False
                for arm in ["bare", "wire"] if r % 2 else ["wire", "bare"]:
                    clients[arm]._client._transport.flush = True
                    timed((prefix, "flushed_" + arm, 10), functools.partial(loop, clients[arm], 10))
                    clients[arm]._client._transport.flush = False
        return "done"

    def policy(view: Any) -> Decision:
        return Decision.call("fetch_invoice", {"invoice_id": "inv_1"})

    per_round = 2 * (3 * sum(CONVERSATION_TURNS) + 10) + 40
    result = wire.run(agent, task="bench", tools=[catalogue.get("fetch_invoice")], policy=policy,
                      ceiling=Ceiling(max_model_turns=per_round * (rounds + 2), max_tool_calls=10,
                                      real_seconds=1800))
    if result.answer != "done":
        raise RuntimeError(f"the conversation benchmark failed: {result.error}")
    return _conversation_figures(samples, walls, transport)


def _paired(a: list[float], b: list[float], per: float = 1.0) -> float:
    """The median over rounds of (a - b) within the round, per ``per`` requests, in microseconds."""
    return statistics.median(x - y for x, y in zip(a, b)) / per * 1e6


def _slope(turns: tuple[int, ...], extras: list[float], opening: int) -> float:
    """Microseconds per request per 100 messages of history (least squares against the mean history)."""
    xs = [opening + (t - 1) for t in turns]  # requests of opening, opening + 2, ... messages: mean opening + t - 1
    return round(statistics.linear_regression(xs, extras).slope * 100, 2)


def _conversation_figures(samples: dict[tuple[str, str, int], list[float]],
                          walls: dict[tuple[str, str, int], list[float]],
                          transport: dict[tuple[str, str, int], list[float]]) -> dict[str, float]:
    figures: dict[str, float] = {}
    longest = CONVERSATION_TURNS[-1]
    for prefix, opening in (("", 2), ("anthropic_", 1)):
        for name, source in (("", samples), ("_wall", walls)):
            figures[f"{prefix}wire_conversation_ratio_{longest}{name}"] = round(statistics.median(
                w / b for w, b in zip(source[(prefix, "wire", longest)], source[(prefix, "bare", longest)])), 3)
        for kind, arm, slope in (("conversation", "", "request"), ("replay", "replay_", "replay"),
                                 ("replay_cold", "replay_cold_", "replay_cold")):
            extras = [_paired(transport[(prefix, arm + "wire", t)], transport[(prefix, arm + "bare", t)], t)
                      for t in CONVERSATION_TURNS]
            for t, extra in zip(CONVERSATION_TURNS, extras):
                figures[f"{prefix}wire_{kind}_extra_us_{t}"] = round(extra, 1)
            figures[f"{prefix}wire_{slope}_cost_slope"] = _slope(CONVERSATION_TURNS, extras, opening)
        figures[f"{prefix}wire_conversation_extra_us_10_flushed"] = round(
            _paired(transport[(prefix, "flushed_wire", 10)], transport[(prefix, "flushed_bare", 10)], 10), 1)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), indent=2, sort_keys=True))
