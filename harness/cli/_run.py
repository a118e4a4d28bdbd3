"""``toolchaos run``: run scenario files against an agent, without writing a test."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolchaos._agents import KINDS, PRESETS, PROCESS
from toolchaos._engine import ISOLATION_MODES, session_defaults
from toolchaos._engine.trials import DEFAULT_CONCURRENCY, MAX_CONCURRENCY, check_concurrency
from toolchaos._internal.limits import (
    DEFAULT_REAL_SECONDS,
    SDK_REAL_SECONDS,
    SERVE_REAL_SECONDS,
    TOTAL_FACTOR,
    check_real_seconds,
)
from toolchaos._plumbing.environ import split_names
from toolchaos.adapters import agent_under_test
from toolchaos.cli import _lazy
from toolchaos.cli._shards import add_shard_arguments, run_timed, select_shard
from toolchaos.errors import AgentRefError, CommandError, ScenarioError, UserError, printable
from toolchaos.reports import NOT_APPLICABLE, add_report_arguments, could_not_call, finish_command, verdict_status

HELP = "run scenario files (or directories of them) against an agent"
EXAMPLES = """\
  toolchaos run scenarios/examples/                       # every *.chaos.yaml under a directory
  toolchaos run incident.chaos.yaml --agent myapp.agent:run --allow-imports
  toolchaos run loop.chaos.yaml --seed 7 --artifacts traces/ -v
  toolchaos run scenarios/ --agent myapp.agent:run --real-seconds 30    # a slow agent or CI machine
  toolchaos run loop.chaos.yaml --agent untrusted.agent:run --isolation process  # the agent in a contained child
  toolchaos run scenarios/ --agent 'cmd:node agent.mjs' --pass-env NPM_TOKEN  # a variable of yours it may see
  toolchaos run scenarios/ --agent myapp.agent:run --report chaos-report/
  toolchaos run scenarios/ --trials 5 --shard 2/3 --report shard-2/   # one CI job's part (docs/ci-shards.md)"""

# The agent reference every command takes (certify, run, replay): the kinds are toolchaos._agents.KINDS; a
# process agent is not named 'process:module:attr' but by its program, a preset or a command line.
AGENT_REF_HELP = ("'builtin:NAME', 'package.module:attr' (the kind recognised: an in-process or SDK agent, a "
                  "framework's agent object), 'KIND:package.module:attr' "
                  f"(KIND: {', '.join(k for k in KINDS if k != PROCESS)}), or a program in its own process (the "
                  f"serve extra; docs/process-agents.md): 'preset:NAME' (NAME: {', '.join(PRESETS)}) or "
                  "'cmd:COMMAND LINE' (the task is its last argument)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories")
    parser.add_argument("--agent", metavar="REF",
                        help=f"agent under test: {AGENT_REF_HELP} (default: the scenario's own agent, else "
                             "builtin:guarded)")
    parser.add_argument("--seed", type=int, metavar="N", help="seed for every run (default: each scenario's)")
    add_trials_argument(parser)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help="scenarios and trials that wait on a live model (a policy recording a cassette from "
                             "one, named with --allow-imports) run at once, each in an isolated child with its own "
                             f"virtual clock and watchdog, at most N together (1 to {MAX_CONCURRENCY}; default "
                             f"{DEFAULT_CONCURRENCY}: a few requests at a time keep an entry-tier API key under its "
                             "rate limit; a 429 or 503 is asked again after its Retry-After); the others run one "
                             "after the other")
    parser.add_argument("--artifacts", metavar="DIR", help="write each run's trace to DIR/<scenario-id>.trace.jsonl")
    parser.add_argument("--allow-imports", action="store_true",
                        help="let scenario files name Python code as 'module:attr'")
    add_keyword_argument(parser)
    parser.add_argument("--pattern", default="*.chaos.yaml", help="file pattern in directories (default *.chaos.yaml)")
    parser.add_argument("--json", action="store_true", help="one JSON object per scenario")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the full failure of each failing scenario")
    add_real_seconds_argument(parser, scenarios=True)
    add_isolation_argument(parser, "none")
    add_pass_env_argument(parser)
    add_report_arguments(parser)
    add_shard_arguments(parser)


REAL_SECONDS_OPTION = "--real-seconds"
TOTAL_SECONDS_OPTION = "--total-seconds"
PASS_ENV_OPTION = "--pass-env"


def add_real_seconds_argument(parser: argparse.ArgumentParser, *, scenarios: bool) -> None:
    """``--real-seconds`` and ``--total-seconds``: the watchdog's two limits for the session, as pytest's
    ``--chaos-real-seconds`` and ``--chaos-total-seconds``."""
    own = "a scenario's own ceiling real_seconds wins; " if scenarios else ""
    # A string, not type=float: argparse would word a bad value its own way; real_seconds_limit
    # checks it with the plugin's rule and words (toolchaos._internal.limits.check_real_seconds).
    parser.add_argument(REAL_SECONDS_OPTION, metavar="SECONDS",
                        help="no-progress limit of each agent run: the watchdog ends an agent that makes no progress "
                             "(no model request, tool call or event) for SECONDS while it could run (time it waited "
                             "for a CPU or was stopped does not count) as a failure (WATCHDOG); "
                             f"{own}default {DEFAULT_REAL_SECONDS:g} seconds, "
                             f"{SDK_REAL_SECONDS:g} for toolchaos.wire SDK agents, "
                             f"{SERVE_REAL_SECONDS:g} for agents in a process of their own (cmd:, preset:)")
    own = "a scenario's own ceiling total_seconds wins; " if scenarios else ""
    parser.add_argument(TOTAL_SECONDS_OPTION, metavar="SECONDS",
                        help="total limit of each agent run: the watchdog ends a run that goes on for SECONDS of real "
                             f"time in all, progress or not, as a failure (WATCHDOG); {own}default "
                             f"{TOTAL_FACTOR:g} times the no-progress limit")


def add_isolation_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--isolation none|process``: where each run's agent executes (``RunSpec.isolation``)."""
    where = "process on Linux, none elsewhere" if default == "process" else default
    parser.add_argument("--isolation", choices=ISOLATION_MODES, default=default,
                        help="where each run's agent executes: 'process' (a contained child, killed when stuck; "
                             "see docs/isolation.md) or 'none' (in this process) "
                             f"(default: {where})")


def add_pass_env_argument(parser: argparse.ArgumentParser) -> None:
    """``--pass-env NAME[,NAME...]``: variables process agents get (``RunSpec.pass_env``), as ``--chaos-pass-env``."""
    parser.add_argument(PASS_ENV_OPTION, action="append", metavar="NAME[,NAME...]",
                        help="give process agents (cmd:, preset:) these variables of this environment as they are; "
                             "they get none of it otherwise beyond an allowlist (PATH, the locale, TZ, TMPDIR; "
                             "docs/process-agents.md) (repeatable)")


@contextmanager
def real_seconds_limit(raw: str | None, isolation: str | None = None,
                       pass_env: list[str] | None = None, total: str | None = None) -> Iterator[None]:
    """The defaults of every run the command makes: ``--real-seconds`` and ``--total-seconds`` (``total``;
    ``--isolation``, ``--pass-env``), then put back.

    The command's session defaults (``toolchaos._engine.session_defaults``, what each ``RunSpec``
    leaves unset) rather than settings handed to each run, so the precedence is the engine's own,
    as under pytest: a scenario's ceiling ``real_seconds`` (``total_seconds``) still wins and SDK
    agents give up their longer default. Restored on the way out so that ``main()`` called in-process (tests, a wrapper
    script) leaves no trace. A bad value is a ``CommandError``: one line, exit 2, before anything
    is loaded or run.
    """
    try:
        seconds = None if raw is None else check_real_seconds(raw, REAL_SECONDS_OPTION)
        in_all = None if total is None else check_real_seconds(total, TOTAL_SECONDS_OPTION,
                                                               "the total real-time limit of each chaos run")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    try:
        names = split_names(pass_env or [], PASS_ENV_OPTION)
    except UserError as exc:
        raise CommandError(str(exc)) from None
    if seconds is None and in_all is None and isolation is None and not names:
        yield
        return
    restore = session_defaults(isolation=isolation, real_seconds=seconds, source=REAL_SECONDS_OPTION,
                               pass_env=names or None, total_seconds=in_all, total_source=TOTAL_SECONDS_OPTION)
    try:
        yield
    finally:
        restore()


def resolve_agent_ref(ref: str | None) -> Any:
    """A command-line agent reference of any kind, resolved now: one clear line when it is wrong."""
    if ref is None:
        return None
    try:
        return agent_under_test(ref)
    except AgentRefError as exc:
        raise CommandError(str(exc)) from None


def _resolve_own(agent: Any) -> Any:
    """A scenario's own agent of any kind (a reference, a process agent) with the run of its kind."""
    try:
        return agent_under_test(agent)
    except AgentRefError as exc:
        raise CommandError(str(exc)) from None


def add_trials_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, metavar="N",
                        help="run every scenario N times, trial i with seed + i (trial 0 is the run without "
                             "trials); a scenario passes only if every trial passes; the report gives pass^k and "
                             "pass@k (default: each scenario's trials, else 1)")


def trials(scenarios: list[Any], count: int | None) -> list[Any]:
    """The scenarios as their trials (``--trials N``, else each one's ``trials:``)."""
    try:
        return list(_lazy.expand_trials(scenarios, count))
    except ValueError as exc:
        raise CommandError(f"--trials: {exc}") from None


def load(paths: list[str], pattern: str, allow_imports: bool) -> list[Any]:
    scenarios: list[Any] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise CommandError(f"no such file or directory: {raw}")
        files = _lazy.find_files(p, pattern)
        if not files:
            raise CommandError(f"no scenario files ({pattern}) under {raw}")
        for f in files:
            try:
                scenarios.extend(_lazy.load_file(f, allow_imports=allow_imports))
            except ScenarioError as exc:
                raise CommandError(f"invalid scenario\n{exc}") from None
    return scenarios


def line(verdict: Any) -> str:
    status = verdict_status(verdict).upper()
    text = f"{status}  {verdict.id}  ({verdict.category}, {verdict.severity})"
    if status == "N/A":  # not run: what it needs that the agent's kind lacks
        text += f"\n      {verdict.not_applicable}"
    elif status == "ERROR" and verdict.result.error:
        text += f"\n      {verdict.result.error.strip().splitlines()[-1]}"
    elif not verdict.passed:
        text += f"\n      {verdict.violations[0].headline()}"
    return text


def as_json(verdict: Any) -> str:
    r = verdict.result
    return json.dumps({
        "id": verdict.id, "passed": verdict.passed, "verdict": verdict_status(verdict),
        "not_applicable": verdict.not_applicable, "category": verdict.category, "severity": verdict.severity,
        "agent": verdict.agent, "terminal_state": None if verdict.not_applicable else r.terminal_state,
        "guard": r.guard,
        "executions": r.total_executions, "turns": r.turns, "side_effects": r.ledger.applied(),
        "virtual_seconds": round(r.virtual_seconds, 6), "tokens": r.tokens,
        "violations": [{"invariant": v.invariant, "expected": v.expected, "actual": v.actual, "step": v.step,
                        "seq": v.seq} for v in verdict.violations],
        "trace": str(r.trace.path) if r.trace.path else None,
    }, sort_keys=True)


def na_note(verdicts: list[Any]) -> str:
    """``, N not applicable``: scenarios not run, needing what the agent's kind lacks (neither passed nor failed)."""
    na = sum(verdict_status(v) == NOT_APPLICABLE for v in verdicts)
    return f", {na} not applicable" if na else ""


def errors_note(verdicts: list[Any]) -> str:
    """``, N errors``: scenarios that could not judge the agent, counted apart from its failures."""
    errors = sum(verdict_status(v) == "error" for v in verdicts)
    return f", {errors} errors" if errors else ""


def add_keyword_argument(parser: argparse.ArgumentParser) -> None:
    """``-k PATTERN``: repeatable, and each may list several patterns separated by commas."""
    parser.add_argument("-k", dest="keyword", action="append", metavar="PATTERN",
                        help="only scenarios whose id matches (a glob, or a part of the id); several patterns: "
                             "-k A -k B or -k A,B (a scenario matching any is run)")


def patterns(keyword: str | list[str] | None) -> list[str]:
    """The patterns of ``-k`` (repeated, comma-separated, or both), each once, in order."""
    given = [keyword] if isinstance(keyword, str) else list(keyword or [])
    return list(dict.fromkeys(p.strip() for k in given for p in k.split(",") if p.strip()))


def select(scenarios: list[Any], keyword: str | list[str] | None) -> list[Any]:
    """The scenarios ``-k`` picks: those matching any of its patterns (a glob on the id, or a part of it), in
    their order. A pattern that matches nothing is an error (a typo would silently narrow the run)."""
    wanted = patterns(keyword)
    if not wanted:
        return scenarios
    unmatched = [p for p in wanted if not any(_matches(s.name, p) for s in scenarios)]
    if unmatched:
        raise CommandError("no scenario matches " + ", ".join(f"-k {p!r}" for p in unmatched))
    return [s for s in scenarios if any(_matches(s.name, p) for p in wanted)]


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatch(name, pattern) or pattern in name


def run_each(scenarios: list[Any], agent: Any, args: argparse.Namespace, seed: int | None = None) -> list[Any]:
    """Run the scenarios in order, printing each verdict as it comes (a line, JSON, or the full failure).

    Those that wait on a live model run first, at once (``--concurrency``), and are printed in their turn.
    """
    def run_one(sc: Any, isolation: str | None = None) -> Any:
        own = agent if agent is not None or sc.agent is None else _resolve_own(sc.agent)
        return _lazy.run_scenario(sc, own, seed=seed, artifacts=args.artifacts, isolation=isolation)

    ready = _live_at_once(scenarios, run_one, getattr(args, "concurrency", 1))
    verdicts = []
    for i, sc in enumerate(scenarios):
        verdict = ready[i] if i in ready else run_one(sc)
        verdicts.append(verdict)
        if args.json:
            print(as_json(verdict))
        else:
            print(printable(line(verdict)))  # agent-supplied text: no escape sequences reach the terminal
            if args.verbose and verdict_status(verdict) in ("fail", "error"):  # an N/A has no failure to show
                print("\n" + printable(_lazy.render_failure(verdict)) + "\n")
    return verdicts


def _live_at_once(scenarios: list[Any], run_one: Any, concurrency: int) -> dict[int, Any]:
    """The verdicts of the scenarios that wait on a live model, run at once (``--concurrency``), by index."""
    return _lazy.run_live_at_once(scenarios, run_one, concurrency) if concurrency > 1 else {}


def _check_concurrency(value: int) -> None:
    try:
        check_concurrency(value, "--concurrency")
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    with real_seconds_limit(args.real_seconds, args.isolation, args.pass_env, args.total_seconds):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    _check_concurrency(args.concurrency)  # before anything loads
    agent = resolve_agent_ref(args.agent)
    scenarios = load(args.paths, args.pattern, args.allow_imports)
    # -k ID#trial=I picks one trial; scenarios x trials are split across shards, as for toolchaos certify
    scenarios, shard = select_shard(select(trials(scenarios, args.trials), args.keyword), args)
    started = datetime.now(UTC)
    verdicts = run_timed(scenarios, lambda todo: run_each(todo, agent, args, seed=args.seed), args.store_durations)
    failed = sum(verdict_status(v) == "fail" for v in verdicts)
    passed = sum(v.passed for v in verdicts)
    print(f"\n{passed} passed, {failed} failed{errors_note(verdicts)}{na_note(verdicts)}", file=sys.stderr)
    print(printable(run_verdict(verdicts)), file=sys.stderr)  # agent-supplied text (an error): no escape sequences
    # a report's level (and its exit status) only when one was asked for
    if not (args.report or args.require or args.require_pass_k):
        judged = [v for v in verdicts if verdict_status(v) != NOT_APPLICABLE]  # N/A: neither passed nor failed
        return 2 if could_not_call(verdicts) else 0 if all(v.passed for v in judged) else 1
    meta = {"agent": args.agent or "scenario's own", "seed": args.seed or 0, "suite": "custom", "started": started,
            "shard": shard}
    return finish_command(args, verdicts, meta)


def run_verdict(verdicts: list[Any]) -> str:
    """The run's verdict, the command's last line: ``PASS: id: ...``, ``FAIL: id: INVARIANT broke at step N``,
    ``ERROR: id: could not call agent ...``; for several scenarios, how many and which.

    ERROR (a scenario that could not judge the agent) outranks FAIL, which outranks PASS.
    """
    errors = [v for v in verdicts if verdict_status(v) == "error"]
    failures = [v for v in verdicts if verdict_status(v) == "fail"]
    na = [v for v in verdicts if verdict_status(v) == NOT_APPLICABLE]
    if len(verdicts) == 1:
        v = verdicts[0]
        if verdict_status(v) == NOT_APPLICABLE:
            return f"N/A: {v.id}: not run: {v.not_applicable}"
        if v.passed:
            return f"PASS: {v.id}: every expectation held ({v.result.terminal_state})"
        return f"{verdict_status(v).upper()}: {v.id}: {_what_broke(v)}"
    if errors:  # mostly one cause for all (an agent the harness could not call): said once
        ids = ", ".join(v.id for v in errors[:3]) + (", ..." if len(errors) > 3 else "")
        return f"ERROR: {len(errors)} of {len(verdicts)} scenarios could not run ({ids}): {_what_broke(errors[0])}"
    if failures:
        named = "; ".join(f"{v.id} ({_what_broke(v)})" for v in failures[:3]) + ("; ..." if len(failures) > 3 else "")
        return f"FAIL: {len(failures)} of {len(verdicts)} scenarios failed: {named}"
    if na:
        named = ", ".join(v.id for v in na[:3]) + (", ..." if len(na) > 3 else "")
        if len(na) == len(verdicts):  # nothing applied: nothing passed either
            return f"N/A: none of the {len(na)} scenarios applies to the agent's kind ({named})"
        return f"PASS: all {len(verdicts) - len(na)} applicable scenarios passed ({len(na)} not applicable: {named})"
    return f"PASS: all {len(verdicts)} scenarios passed"


def _what_broke(verdict: Any) -> str:
    """``idempotent broke at step 2`` (and how many more broke), or why the scenario could not run."""
    if verdict_status(verdict) == "error" or not verdict.violations:
        return (verdict.result.error or "the scenario could not run").strip().splitlines()[-1]
    first = verdict.violations[0]
    at = f" at step {first.step}" if first.step is not None else ""
    more = len(verdict.violations) - 1
    return f"{first.invariant} broke{at}" + (f", and {more} more" if more else "")
