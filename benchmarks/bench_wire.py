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


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), indent=2, sort_keys=True))
