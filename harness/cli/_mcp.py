"""``toolchaos mcp``: a scenario's fake tools (faults, ledger, trace) as an MCP server on stdin/stdout."""

from __future__ import annotations

import argparse
import sys

from toolchaos.cli._serve import add_limit_arguments, pick, real_seconds, serve_api, total_seconds

HELP = "serve a scenario's fake tools over MCP on stdin/stdout (the run ends when the client closes stdin)"
EXAMPLES = """\
  toolchaos mcp payment.chaos.yaml                        # as the command of an MCP client's stdio server
  toolchaos mcp payment.chaos.yaml --seed 2 --artifacts traces/"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (one scenario, or pick one with -k)")
    parser.add_argument("-k", dest="keyword", metavar="PATTERN", help="the scenario (or variant) whose id matches")
    parser.add_argument("--seed", type=int, metavar="N", help="seed of the run (default: the scenario's)")
    parser.add_argument("--artifacts", metavar="DIR", help="write the run's trace to DIR/<scenario-id>.trace.jsonl")
    parser.add_argument("--allow-imports", action="store_true", help="let the scenario name Python code as 'module:attr'")
    add_limit_arguments(parser, "session")


def run(args: argparse.Namespace) -> int:
    serve_mcp_stdio = serve_api().serve_mcp_stdio  # mcp and anyio: not for --help

    scenario = pick(args)
    result = serve_mcp_stdio(scenario, seed=args.seed, artifacts=args.artifacts,
                             real_seconds=real_seconds(args.real_seconds), total_seconds=total_seconds(args.total_seconds))
    per_tool = ", ".join(f"{k}={v}" for k, v in sorted(result.executions.items())) or "none"
    print(f"{scenario.name}: {result.total_executions} tool executions ({per_tool}); "
          f"effects: {result.ledger.applied()}; ended {result.terminal_state}", file=sys.stderr)
    return 0
