"""``toolchaos serve``: one scenario's run served over HTTP (model APIs and MCP) to an agent in any process."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from toolchaos._internal.limits import check_real_seconds
from toolchaos.cli import _lazy
from toolchaos.cli._run import line, load, select
from toolchaos.errors import CommandError

LINGER = 5.0  # real seconds the server outlives its run: a client's requests in flight get the 400, not a refusal
HELP = "serve a scenario's run over HTTP: the model APIs (OpenAI, Anthropic, Gemini) and the tools over MCP"
EXAMPLES = """\
  toolchaos serve loop.chaos.yaml                         # prints the base URLs, ends at POST .../toolchaos/end
  toolchaos serve loop.chaos.yaml --seed 3 --port 8765 --urls-file urls.json --artifacts traces/
  OPENAI_BASE_URL=$(jq -r .openai urls.json) node agent.js && curl -X POST $(jq -r .end urls.json)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (one scenario, or pick one with -k)")
    parser.add_argument("-k", dest="keyword", metavar="PATTERN", help="the scenario (or variant) whose id matches")
    parser.add_argument("--seed", type=int, metavar="N", help="seed of the run (default: the scenario's)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1); another than loopback needs --allow-remote")
    parser.add_argument("--allow-remote", action="store_true",
                        help="bind an address other machines can reach (--host); only the run's URLs, which carry its "
                             "token, are answered")
    parser.add_argument("--port", type=int, default=0, metavar="N", help="port to bind (default 0: a free port)")
    parser.add_argument("--urls-file", metavar="PATH",
                        help="write the URLs as JSON (openai, anthropic, gemini, mcp, end) once the server is up")
    parser.add_argument("--artifacts", metavar="DIR", help="write the run's trace to DIR/<scenario-id>.trace.jsonl")
    parser.add_argument("--allow-imports", action="store_true", help="let the scenario name Python code as 'module:attr'")
    parser.add_argument("--linger", metavar="SECONDS", type=float, default=LINGER,
                        help=f"after the run ends, keep answering (every model request with the documented 400) for "
                             f"SECONDS before the server stops, so a client's late requests are told, not refused "
                             f"(default {LINGER:g})")
    add_limit_arguments(parser, "run")
    parser.add_argument("--max-body", metavar="BYTES",
                        help="the largest request body read (default 8388608, 8 MiB); a larger one is answered 413")


def serve_api() -> Any:
    """``toolchaos.serve``, or one line saying which extra to install."""
    try:
        import toolchaos.serve as serve  # the serve extra (uvicorn, starlette, mcp): only for serve and mcp
    except ImportError as exc:
        raise CommandError(f"this command needs the serve extra ({exc.name} is missing): "
                           f"pip install 'CLONE[serve]' (CLONE: the path of your toolchaos clone; the README's "
                           f"'Use it in your project')") from None
    return serve


def linger(seconds: float, stop: threading.Event) -> None:
    """The run has ended: the server stays up for ``seconds`` (or until SIGTERM), answering late requests with the
    ended run's 400 (a client refused a connection backs off and retries for minutes; told the run is over, it stops)."""
    if seconds > 0:
        print(f"the run has ended; answering late requests for {seconds:g}s (--linger)", file=sys.stderr, flush=True)
        stop.wait(seconds)


def pick(args: argparse.Namespace) -> Any:
    scenarios = select(load([args.scenario], "*", args.allow_imports), args.keyword)
    if len(scenarios) != 1:
        raise CommandError(f"{args.scenario}: {len(scenarios)} scenarios; pick one with -k "
                           f"({', '.join(s.name for s in scenarios)})")
    if scenarios[0].restart is not None:
        raise CommandError(f"{scenarios[0].name}: a scenario with restart: runs the agent twice; a served run is one "
                           f"run")
    return scenarios[0]


def add_limit_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--real-seconds`` and ``--total-seconds``: the watchdog's two limits for a served run or session."""
    parser.add_argument("--real-seconds", metavar="SECONDS",
                        help=f"the watchdog's no-progress limit for the {what}: ended (WATCHDOG) after SECONDS without "
                             f"a new model request or tool call while the agent could run (a retry of the same "
                             f"request is none) (default: the scenario's ceiling, else 300)")
    parser.add_argument("--total-seconds", metavar="SECONDS",
                        help=f"the watchdog's total limit for the {what}: ended (WATCHDOG) after SECONDS of real time "
                             f"in all (default: the scenario's ceiling, else 3 times the no-progress limit)")


def real_seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return check_real_seconds(raw, "--real-seconds")
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def total_seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return check_real_seconds(raw, "--total-seconds", "the total real-time limit of the run")
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def max_body(raw: str | None) -> dict[str, int]:
    """``Server``'s ``max_body`` keyword, when the option is given."""
    if raw is None:
        return {}
    try:
        return {"max_body": serve_api().check_max_body(raw, "--max-body")}  # the serve extra: loaded already
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def write_urls(path: str, urls: dict[str, str]) -> None:
    """Written whole, then renamed: a process watching for the file never reads half of it."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(urls, indent=2) + "\n")
    os.replace(tmp, target)


def run(args: argparse.Namespace) -> int:
    Server = serve_api().Server  # uvicorn, starlette, mcp: not for --help

    scenario = pick(args)
    spec = _lazy.scenario_spec(scenario, seed=args.seed, real_seconds=real_seconds(args.real_seconds))
    total = total_seconds(args.total_seconds)
    if total is not None:
        spec = spec.with_(total_seconds=total, total_source="--total-seconds")
    server = Server(spec.with_(artifacts=Path(args.artifacts) if args.artifacts else None), host=args.host,
                    port=args.port, **max_body(args.max_body))
    server.allow_remote = args.allow_remote
    stop = threading.Event()  # SIGTERM also cuts the linger short

    def on_term(*_: Any) -> None:
        server.end(why="the server got SIGTERM")
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        server.start()
        print(json.dumps(server.urls()), flush=True)
        if args.urls_file:
            write_urls(args.urls_file, server.urls())
        print(f"serving {scenario.name} at {server.url} (end it: POST {server.end_url})", file=sys.stderr, flush=True)
        print("the path's tc-... part is the run's token: whoever has these URLs can drive and end the run; "
              "requests without it are refused and recorded", file=sys.stderr, flush=True)
        try:
            server.wait()
            linger(args.linger, stop)
        except KeyboardInterrupt:
            server.end(why="interrupted (Ctrl-C)")
    finally:
        server.close()
        signal.signal(signal.SIGTERM, previous)
    if server.result is None:
        raise CommandError(f"the run failed: {server.error!r}", code=3)
    verdict = _lazy.judge(scenario, server.result, agent=f"served:{server.url}")
    print(line(verdict), file=sys.stderr)
    return 0 if verdict.passed else 1
