"""``toolchaos replay``: replay a recorded call sequence against an agent; it must end within a bound."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from toolchaos import invariants
from toolchaos._engine import RunResult
from toolchaos._engine import run as run_agent
from toolchaos._internal.trace import Trace
from toolchaos.cli._run import (
    AGENT_REF_HELP,
    add_pass_env_argument,
    add_real_seconds_argument,
    real_seconds_limit,
    resolve_agent_ref,
)
from toolchaos.errors import CommandError, LogFormatError, render_violations
from toolchaos.invariants import Invariant
from toolchaos.logs import FORMATS, Conversation, conversation, read_records, replay_tools
from toolchaos.policies import Recorded

HELP = "replay the model's recorded decisions (a trace or an agent log) against an agent, within a bound"
EXAMPLES = """\
  toolchaos replay incident.trace.jsonl --agent myapp.agent:run      # must now end within the bound
  toolchaos replay chat.json --format openai-chat --max-executions 3
  toolchaos replay spans.json --session conv_42 --agent builtin:guarded --artifacts replays/
  toolchaos replay incident.trace.jsonl --scenario > scenarios/incident.chaos.yaml"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="TRACE", help="a toolchaos trace or an agent log (.gz is read too)")
    parser.add_argument("--agent", default="builtin:guarded", metavar="REF",
                        help=f"agent under test: {AGENT_REF_HELP} (default builtin:guarded)")
    parser.add_argument("--format", default="auto", choices=["auto", *FORMATS], help="log format (default: detected)")
    parser.add_argument("--session", metavar="ID", help="which session of the log (default: the first)")
    parser.add_argument("--max-executions", type=int, default=3, metavar="N",
                        help="the bound: at most N tool executions (default 3)")
    parser.add_argument("--max-turns", type=int, metavar="N", help="and at most N model turns")
    parser.add_argument("--task", help="the task given to the agent (default: the log's first user message, if any)")
    parser.add_argument("--side-effect", action="append", default=[], metavar="TOOL",
                        help="a tool (not from the catalogue) whose calls are side effects (repeatable)")
    parser.add_argument("--no-faults", action="store_true",
                        help="tools answer ok instead of as the log recorded (timeouts, errors, data)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="run seed (default 0)")
    parser.add_argument("--artifacts", metavar="DIR", help="write the replay's trace to DIR/<name>.trace.jsonl")
    add_real_seconds_argument(parser, scenarios=False)
    add_pass_env_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object: the outcome and any violations")
    parser.add_argument("--scenario", action="store_true",
                        help="print a YAML scenario replaying this log (policy: recorded) instead of running it")


def run(args: argparse.Namespace) -> int:
    # Checked even with --scenario, which runs nothing: a bad value is an error either way.
    with real_seconds_limit(args.real_seconds, pass_env=args.pass_env, total=args.total_seconds):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise CommandError(f"no such file: {args.path}")
    if args.max_executions < 0 or (args.max_turns is not None and args.max_turns < 1):
        raise CommandError("--max-executions must be >= 0 and --max-turns >= 1")
    agent = resolve_agent_ref(args.agent)
    conv = _recorded(path, args)
    task = args.task or _task_of(path) or f"Replay of {path.name}"
    tools = replay_tools(conv, args.side_effect, as_recorded=not args.no_faults)
    if not tools:
        raise CommandError(f"{args.path}: session {conv.session!r} calls no tools; nothing to replay")
    bound = invariants.bounded(executions=args.max_executions, turns=args.max_turns)
    expect = [bound, invariants.terminated(), invariants.no_execution_after_refusal(), invariants.idempotent()]
    if args.scenario:
        print(_scenario_yaml(path, conv, tools, task, expect, args))
        return 0
    policy = Recorded(path, format=conv.format, session=conv.session, turns=conv.decisions())
    result = run_agent(agent, task=task, tools=tools, policy=policy, seed=args.seed,
                       name=f"replay-{_slug(_session_name(conv.session))}", artifacts=args.artifacts)
    violations = result.violations(*expect)
    if args.json:
        print(json.dumps(_outcome(args, conv, result, bound, violations), indent=2))
    else:
        _print_outcome(args, conv, result, bound, violations)
    return 1 if violations else 0


def _recorded(path: Path, args: argparse.Namespace) -> Conversation:
    """The session and its turns as a scenario's `recorded` policy reads them."""
    try:
        conv = conversation(path, args.format, args.session)
    except LogFormatError as exc:
        raise CommandError(str(exc)) from None
    if not conv.turns:
        raise CommandError(f"{args.path}: session {conv.session!r} has no model turns to replay")
    return conv


def _outcome(args: argparse.Namespace, conv: Conversation, result: RunResult, bound: Invariant,
             violations: list[Any]) -> dict[str, Any]:
    return {
        "session": conv.session, "format": conv.format, "agent": args.agent, "recorded_calls": _executed(conv),
        "recorded_turns": len(conv.turns), "state": result.terminal_state, "guard": result.guard,
        "executions": result.total_executions, "turns": result.turns, "bound": bound.params(),
        "passed": not violations, "violations": [v.headline() for v in violations],
        "trace": str(result.trace.path) if result.trace.path else None}


def _print_outcome(args: argparse.Namespace, conv: Conversation, result: RunResult, bound: Invariant,
                   violations: list[Any]) -> None:
    print(f"replayed {conv.session} ({conv.format}, {len(conv.turns)} recorded turns, {_executed(conv)} recorded "
          f"executions) against {args.agent}")
    print(result.summary())
    if violations:
        print(render_violations(result, violations))
    else:
        print(f"PASS: ended within the bound ({', '.join(f'{k} <= {v}' for k, v in bound.params().items())})")
    if isinstance(result.trace, Trace) and result.trace.path:
        print(f"trace: {result.trace.path}")


def _executed(conv: Conversation) -> int:
    return len([c for c in conv.calls if c.executed])


def _task_of(path: Path) -> str | None:
    """The first user message of a chat-style log, as the task (the log was read once already)."""
    records, _ = read_records(path)
    data: Any = records[0][1]
    if isinstance(data, dict):
        data = data.get("messages") or data.get("input")
    for m in data if isinstance(data, list) else []:
        if isinstance(m, dict) and m.get("role") == "user":
            text = _text_of(m.get("content"))
            if text is not None:
                return text
    return None


def _text_of(content: Any) -> str | None:
    """A user message's text: the content itself, or its first text block."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            return str(texts[0])
    return None


def _scenario_yaml(path: Path, conv: Conversation, tools: list[Any], task: str, expect: list[Any],
                   args: argparse.Namespace) -> str:
    import yaml
    from toolchaos.fuzzing import invariant_data, policy_data, tool_data  # hypothesis: only for --scenario

    # The decisions written out, whatever the log's format: a path to the log would resolve against
    # wherever the scenario is saved (`> scenarios/x.chaos.yaml` breaks a relative one), and the
    # regression should not need the production log at all.
    policy = policy_data(Recorded(turns=conv.decisions()))
    data = {
        "id": f"replay-{_slug(conv.session)}",
        "title": f"Replay of {path.name} ({conv.session}) ends within a bound",
        "category": "loops", "severity": "critical", "tags": ["replay", "incident"],
        "description": f"The model's recorded decisions from {path.name} ({conv.format}); the tools answer as "
                       f"they did then. The fixed runtime must end within the bound.",
        "seed": args.seed, "task": task, "tools": {t.name: tool_data(t) for t in tools}, "policy": policy,
        "expect": [invariant_data(i) for i in expect],
    }
    return "# generated by `toolchaos replay --scenario`\n" + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=110, default_flow_style=None)


def _session_name(session: str) -> str:
    """A session's name without the ``#seed`` a toolchaos trace's run id ends with (a replay gets its own)."""
    head, _, tail = session.rpartition("#")
    return head if head and tail.isdigit() else session


def _slug(text: str) -> str:
    out = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in text).strip("-._")
    return (out or "session")[:60]
