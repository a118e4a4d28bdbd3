"""``toolchaos certify``: the bundled certification suite against an agent, without a test.

``--matrix`` runs the suite against the reference agent, its ablations and the ports of
published guard designs instead and prints the matrix that proves the suite
(docs/certification-matrix.md is its output).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from toolchaos._engine import default_for_certification
from toolchaos.cli import _lazy
from toolchaos.cli._run import (
    AGENT_REF_HELP,
    add_isolation_argument,
    add_keyword_argument,
    add_pass_env_argument,
    add_real_seconds_argument,
    add_trials_argument,
    errors_note,
    load,
    real_seconds_limit,
    resolve_agent_ref,
    run_each,
    select,
    trials,
)
from toolchaos.cli._shards import add_shard_arguments, run_timed, select_shard
from toolchaos.errors import CommandError
from toolchaos.reports import add_report_arguments, applicable, finish_command

if TYPE_CHECKING:
    from toolchaos.matrices import Matrix

HELP = "run the bundled certification suite against an agent (or print the ablation matrix)"
EXAMPLES = """\
  toolchaos certify                                  # the reference agent, builtin:guarded
  toolchaos certify --agent myapp.agent:run          # your agent: in-process, SDK or a framework's, recognised
  toolchaos certify --agent sdk:myapp.agent:run      # the kind named: in-process, sdk, openai-agents, pydantic-ai, langgraph
  toolchaos certify --agent preset:codex             # a client in its own process: a preset (claude-code, python, ...)
  toolchaos certify --agent 'cmd:node agent.mjs'     # or any command line (the serve extra; docs/process-agents.md)
  toolchaos certify --agent preset:python --pass-env HF_TOKEN  # a variable of yours a process agent may see
  toolchaos certify --agent builtin:naive -k 'loop-*'
  toolchaos certify --agent preset:codex -k 'loop-*,side-*'   # several patterns (or -k A -k B)
  toolchaos certify --agent myapp.agent:run --report chaos-report/ --require major
  toolchaos certify --agent myapp.agent:run --real-seconds 30   # a slow agent or CI machine
  toolchaos certify --agent myapp.agent:run --isolation none     # in this process (a debugger, coverage)
  toolchaos certify --agent myapp.agent:run --shard 2/3 --report shard-2/   # one CI job's part (docs/ci-shards.md)
  toolchaos certify --agent myapp.agent:run --trials 5 --require-pass-k 3,0.9   # pass^3 of critical ones
  toolchaos certify --matrix                         # scenario x agent variant: does the suite prove itself?
  toolchaos certify --matrix --output docs/certification-matrix.md"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="REF", default="builtin:guarded",
                        help=f"agent under test: {AGENT_REF_HELP} (default builtin:guarded)")
    parser.add_argument("--suite", metavar="DIR", help="a directory of scenarios instead of the bundled suite")
    add_keyword_argument(parser)
    add_trials_argument(parser)
    parser.add_argument("--artifacts", metavar="DIR", help="write each run's trace to DIR/<scenario-id>.trace.jsonl")
    parser.add_argument("--json", action="store_true", help="one JSON object per scenario")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the full failure of each failing scenario")
    parser.add_argument("--matrix", action="store_true",
                        help="run every agent variant (reference, naive, each ablation, eager, the published designs) "
                             "and print the matrix")
    parser.add_argument("--output", "-o", metavar="FILE", help="with --matrix: write the Markdown matrix to FILE")
    add_real_seconds_argument(parser, scenarios=True)
    add_isolation_argument(parser, default_for_certification())
    add_pass_env_argument(parser)
    add_report_arguments(parser)
    add_shard_arguments(parser)


def run(args: argparse.Namespace) -> int:
    # --matrix too: it runs the suite against every agent variant, each under the same defaults.
    with real_seconds_limit(args.real_seconds, args.isolation, args.pass_env, args.total_seconds):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    scenarios = load([args.suite], "*.chaos.yaml", False) if args.suite else _lazy.suite()
    if args.matrix:
        if args.shard:
            raise CommandError("--shard does not go with --matrix: the matrix runs the whole suite")
        if args.trials is not None:
            raise CommandError(f"--trials {args.trials} does not go with --matrix: each cell of the matrix is one run "
                               f"of a scenario against one agent variant; to run trials, certify one agent: "
                               f"toolchaos certify --agent REF --trials {args.trials}")
        return _matrix(_lazy.ablation_matrix(select(scenarios, args.keyword)), args.output)
    if args.output:
        raise CommandError("--output goes with --matrix")
    # -k ID#trial=I picks one trial; scenarios x trials are split across shards
    scenarios, shard = select_shard(select(trials(scenarios, args.trials), args.keyword), args)
    agent = resolve_agent_ref(args.agent)
    started = datetime.now(UTC)
    verdicts = run_timed(scenarios, lambda todo: run_each(todo, agent, args), args.store_durations)
    passed = sum(v.passed for v in verdicts)
    judged = len(applicable(verdicts))  # a scenario needing what the agent's kind lacks did not run (N/A)
    what = "scenarios passed" if judged == len(verdicts) else (f"applicable scenarios passed, "
                                                              f"{len(verdicts) - judged} not applicable")
    print(f"\n{args.agent}: {passed}/{judged} {what}{errors_note(verdicts)}", file=sys.stderr)
    # the bundled suite's own version, as pytest --chaos-certify writes it: shards of both merge as one run
    suite_meta = ({"suite": "custom"} if args.suite
                  else {"suite": "certification", "suite_version": _lazy.SUITE_VERSION})
    return finish_command(args, verdicts, {"agent": args.agent, "seed": 0, "started": started, "shard": shard,
                                           **suite_meta})


def _matrix(matrix: Matrix, output: str | None) -> int:
    print(matrix.text())
    if output:
        try:
            Path(output).write_text(matrix.markdown(), encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        print(f"wrote {output}", file=sys.stderr)
    return 1 if matrix.problems() else 0
