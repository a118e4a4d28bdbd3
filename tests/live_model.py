"""A stochastic OpenAI-compatible model on loopback: the live model of the tests and benchmarks, offline.

``StochasticModel(seed=0)`` starts a real HTTP server in a process of its own (so that neither the
harness's virtual time nor the forks of its isolated runs reach it) and stops it on ``close``::

    with StochasticModel(seed=7) as server:
        live = policies.openai_chat(server.url, model="stochastic", api_key="sk-test")

Each ``POST /v1/chat/completions`` is answered after a latency of ``latency`` +- ``jitter``
real seconds (uniform; 200 ms +- 50 ms by default); a ``limited`` share of the answers
(10 %) are ``429 Too Many Requests`` with ``Retry-After: 1``. Otherwise it answers like a
model that is not sure when to stop: one call of a tool it was offered, with arguments
filled from the tool's schema, while fewer than ``most_calls`` tool results are in the
conversation and a coin says so (``keep_calling``), else a final text. Every draw comes
from one ``random.Random(seed)``: requests asked one at a time get the same answers for the
same seed; concurrent ones get them in the order they arrive, as a live model would vary.
``GET /stats`` answers the counts (``requests``, ``limited``, ``answered``).

Run as a script (``python tests/live_model.py --seed 7``) it prints ``PORT <n>`` and serves
until stdin closes.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LATENCY, JITTER, LIMITED, RETRY_AFTER = 0.2, 0.05, 0.1, "1"


class _Model:
    """The server's state: one seeded draw after another, under a lock (requests arrive in threads)."""

    def __init__(self, seed: int, latency: float, jitter: float, limited: float, keep_calling: float,
                 most_calls: int) -> None:
        self.rng, self.lock = random.Random(seed), threading.Lock()
        self.latency, self.jitter, self.limited = latency, jitter, limited
        self.keep_calling, self.most_calls = keep_calling, most_calls
        self.counts = {"requests": 0, "limited": 0, "answered": 0}

    def draw(self, body: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
        """The latency of this request, and its answer (None: rate limited)."""
        with self.lock:
            self.counts["requests"] += 1
            wait = self.rng.uniform(self.latency - self.jitter, self.latency + self.jitter)
            if self.rng.random() < self.limited:
                self.counts["limited"] += 1
                return wait, None
            self.counts["answered"] += 1
            return wait, self._answer(body)

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = [t.get("function", {}) for t in body.get("tools") or []]
        results = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        if tools and results < self.most_calls and (results == 0 or self.rng.random() < self.keep_calling):
            fn = self.rng.choice(tools)
            args = {name: self._value(schema) for name, schema in
                    sorted((fn.get("parameters") or {}).get("properties", {}).items())}
            call = {"id": f"call_{self.rng.randrange(10**6)}", "type": "function",
                    "function": {"name": fn.get("name"), "arguments": json.dumps(args)}}
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": f"Done: answer {self.rng.randrange(1000)}."}
        return {"id": "chatcmpl-stochastic", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def _value(self, schema: Any) -> Any:
        kind = schema.get("type") if isinstance(schema, dict) else None
        if kind in ("integer", "number"):
            return self.rng.randrange(1, 10)
        if isinstance(schema, dict) and schema.get("enum"):
            return self.rng.choice(schema["enum"])
        return f"inv_{self.rng.randrange(1, 4)}"


def _handler(model: _Model) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # http.server names it
            size = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                return self._send(400, {"error": {"message": "not JSON"}})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            wait, answer = model.draw(body)
            time.sleep(wait)  # a process of its own: real time
            if answer is None:
                return self._send(429, {"error": {"message": "rate limited", "type": "rate_limit_exceeded"}},
                                  {"Retry-After": RETRY_AFTER})
            return self._send(200, answer)

        def do_GET(self) -> None:
            with model.lock:
                return self._send(200, dict(model.counts))

        def _send(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


class StochasticModel:
    """The server in a child process: ``url`` is its OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, seed: int = 0, *, latency: float = LATENCY, jitter: float = JITTER,
                 limited: float = LIMITED, keep_calling: float = 0.5, most_calls: int = 3) -> None:
        argv = [sys.executable, __file__, "--seed", str(seed), "--latency", str(latency), "--jitter", str(jitter),
                "--limited", str(limited), "--keep-calling", str(keep_calling), "--most-calls", str(most_calls)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the stochastic model did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        """How many requests it had, how many it answered 429, how many it answered."""
        import httpx

        return dict(httpx.get(f"http://127.0.0.1:{self.port}/stats", timeout=5).json())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the server's signal to stop
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck server
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> StochasticModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# A scenario whose policy records a cassette from the live model (a module named with --allow-imports, or
# importable in a pytester project): what the CLI's and the plugin's concurrency tests run.
LIVE_POLICY = """\
from toolchaos import policies

SPECS = {"fetch_invoice": {"type": "object", "properties": {"invoice_id": {"type": "string"}}}}


def make(url, cassette, record=False):
    live = policies.openai_chat(url, model="stochastic", api_key="sk-test-key", specs=SPECS)
    return policies.cassette(cassette, live=live, record=record)
"""
_LIVE_SCENARIO = """\
id: live-invoice
title: a live model gets the total of an invoice
severity: major
{trials}task: Get the total of invoice inv_1.
tools:
  fetch_invoice: {{}}
policy:
  livepol:make: {{url: "{url}", cassette: cassettes/live.cassette.json, record: {record}}}
expect:
  - terminated: {{}}
"""


def live_scenario(url: str, record: bool, trials: int | None = None) -> str:
    """The live-invoice scenario's YAML, its policy (``LIVE_POLICY`` as ``livepol``) asking the model at ``url``."""
    return _LIVE_SCENARIO.format(url=url, record=str(record).lower(),
                                 trials="" if trials is None else f"trials: {trials}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description="a stochastic OpenAI-compatible model on loopback")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--latency", type=float, default=LATENCY)
    ap.add_argument("--jitter", type=float, default=JITTER)
    ap.add_argument("--limited", type=float, default=LIMITED)
    ap.add_argument("--keep-calling", type=float, default=0.5)
    ap.add_argument("--most-calls", type=int, default=3)
    a = ap.parse_args()
    model = _Model(a.seed, a.latency, a.jitter, a.limited, a.keep_calling, a.most_calls)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdin.read()  # until the parent closes it (or dies)
    server.shutdown()


if __name__ == "__main__":
    main()
