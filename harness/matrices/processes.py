"""The process-agent matrix: coding CLIs and Node agents, unmodified, at their default settings.

    python -m toolchaos.matrices.processes                        # print the table
    python -m toolchaos.matrices.processes --write docs/cli-agents.md
    python -m toolchaos.matrices.processes --agent codex --only loop-exact-repeat-timeout

Each cell runs one bundled certification scenario against one agent started by its preset
(``toolchaos._agents.PRESETS``): the coding CLIs from ``--bin`` (default ``.ci/cli/node_modules/.bin``,
installed by ``.ci/cli-matrix``), the Node example agents from ``--node`` (default ``.ci/node``).
Its verdict is the suite's own judge; the row says what happened: tool executions, model
requests (and how many were side requests: titles, loop checks), duplicate side effects, what
stopped the run (the agent's own loop detector, named, its turn limit, its model's answer, or
the harness) and what its model was shown last. A scenario that needs what a process agent
cannot do (its ``needs:``) is not run: its row says N/A and why.
An agent whose program is not installed is left out, saying so. ``--artifacts DIR`` keeps each
cell's trace and process record under ``DIR/<agent>/``. The figures are statements of fact about
each product at the version shown, not a ranking.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from toolchaos._agents import PRESETS, ProcessAgent, kinds
from toolchaos._engine import RunSpec
from toolchaos._internal.limits import Ceiling
from toolchaos.certification import NOT_RUN, Verdict, judge, not_applicable_to, not_run, suite
from toolchaos.fake_tools import World
from toolchaos.process import ProcessRunResult, run
from toolchaos.scenario import Scenario

BEGIN, END = "<!-- cli-matrix:begin -->", "<!-- cli-matrix:end -->"
ROOT = Path.cwd()
# The scenarios that make sense out of process: their faults answer at once (no real waits), and
# what they judge (executions, side effects, how the run ends) is visible from outside the agent.
SCENARIOS = ("loop-exact-repeat-timeout", "side-email-asked-repeatedly", "err-permission-denied",
             "loop-argument-jitter", "legit-transient-503")
CLIS = ("codex", "claude-code", "gemini-cli", "opencode")
NODE = ("node-openai", "node-anthropic", "openai-agents-js", "vercel-ai")
MATRIX_REAL_SECONDS = 300.0  # a CLI's 200 turns against the ceiling take tens of seconds on a loaded machine
_VERSION_ARGS = ("--version",)
PROCESS = "process"  # the agent kind of every agent here: what it can do decides which scenarios apply


@dataclass(frozen=True)
class Row:
    agent: str
    version: str
    scenario: str
    verdict: Verdict

    @property
    def result(self) -> ProcessRunResult:
        res: ProcessRunResult = self.verdict.result  # type: ignore[assignment]
        return res


def agents(bin_dir: Path, node_dir: Path, only: Iterable[str] | None = None) -> tuple[dict[str, ProcessAgent],
                                                                                       dict[str, str]]:
    """The agents that can run here (label -> agent), and why each other one cannot."""
    chosen = list(only) if only is not None else [*CLIS, *NODE]
    out: dict[str, ProcessAgent] = {}
    missing: dict[str, str] = {}
    for name in chosen:
        preset = PRESETS[name]
        if name in NODE:
            if shutil.which("node") is None or not (node_dir / "node_modules").is_dir():
                missing[name] = f"node or {node_dir}/node_modules missing (npm ci --prefix {node_dir})"
                continue
            out[name] = ProcessAgent(preset=name, cwd=str(node_dir))
            continue
        program = bin_dir / preset.program[0]
        if not program.exists():
            missing[name] = f"{program} not installed (npm ci --prefix {bin_dir.parent.parent})"
            continue
        out[name] = ProcessAgent((str(program),), preset=name, cwd=str(_work_dir()))
    return out, missing


def _work_dir() -> Path:
    """An empty working folder for the coding CLIs (they read and index their cwd)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="toolchaos-cli-work-"))


_NODE_PACKAGES = {"node-openai": "openai", "node-anthropic": "@anthropic-ai/sdk", "openai-agents-js": "@openai/agents",
                  "vercel-ai": "ai"}


def version(name: str, agent: ProcessAgent, node_dir: Path) -> str:
    """The agent's real version: the CLI's own ``--version``, or the SDK package's in node_modules."""
    if name in NODE:
        pkg = _NODE_PACKAGES[name]
        data = json.loads((node_dir / "node_modules" / pkg / "package.json").read_text(encoding="utf-8"))
        return f"{pkg} {data['version']}"
    env = {"HOME": _work_dir().as_posix(), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([*agent.command, *_VERSION_ARGS], capture_output=True, text=True, timeout=60, env=env,
                          check=False)
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[0] if (done.stdout or done.stderr) else "?"


def run_cell(scenario: Scenario, agent: ProcessAgent, label: str, artifacts: Path | None = None) -> Verdict:
    """One scenario against one process agent, judged by the suite's judge; N/A (not run) where it cannot apply."""
    reason = not_applicable_to(scenario, kinds()[PROCESS])
    if reason is not None:  # from the scenario's needs and the kind alone, as certify decides it
        return not_run(scenario, agent=label, kind=PROCESS, reason=reason)
    ceiling = replace(scenario.ceiling or Ceiling(), real_seconds=MATRIX_REAL_SECONDS)
    spec = RunSpec.of(task=scenario.task, tools=scenario.tools, policy=scenario.policy(), seed=scenario.seed,
                      budgets=scenario.budgets, ceiling=ceiling, world=World(scenario.world), name=scenario.name,
                      api_faults=getattr(scenario, "api_faults", None), artifacts=artifacts)
    result = run(agent, spec)
    return judge(scenario, result, None, agent=label)


def matrix(bin_dir: Path, node_dir: Path, only_agents: Iterable[str] | None = None,
           only: Sequence[str] | None = None, progress: Callable[[str], None] | None = None,
           artifacts: Path | None = None) -> tuple[list[Row], dict[str, str]]:
    chosen, missing = agents(bin_dir, node_dir, only_agents)
    wanted = list(only) if only else list(SCENARIOS)
    scenarios = [s for s in suite() if s.name in wanted]
    rows: list[Row] = []
    for name, agent in chosen.items():
        ver = version(name, agent, node_dir)
        for scenario in scenarios:
            started = time.monotonic()
            verdict = run_cell(scenario, agent, name, None if artifacts is None else artifacts / name)
            rows.append(Row(name, ver, scenario.name, verdict))
            if progress is not None:  # the real seconds a cell took: what makes this the slower job
                progress(f"{name:16} {scenario.name:32} {_verdict_word(verdict)} {verdict.result.terminal_state} "
                         f"{time.monotonic() - started:.0f}s {stopped_by(name, rows[-1].result)}")
    return rows, missing


def duplicates(res: ProcessRunResult) -> int:
    """Side effects applied beyond the first for the same operation (ledger truth)."""
    return sum(n - 1 for _tool, _key, n in res.ledger.duplicates())


# What each product prints when its own guard stops a run, as seen at the versions checked.
_OWN_GUARDS: tuple[tuple[str, str, str], ...] = (
    ("gemini-cli", r"[Ll]oop.{0,20}detected", "its own loop detector (gemini-cli's loop detection)"),
    ("opencode", r"doom_loop", "its own loop detector (OpenCode's doom_loop permission)"),
    ("claude-code", r'"subtype"\s*:\s*"error_max_turns"', "its turn limit (--max-turns)"),
)


_TURN_LIMITS = {"openai-agents-js": "its turn limit (the SDK's default max turns, 10: MaxTurnsExceededError)",
                "vercel-ai": "its step limit (the example's stopWhen: stepCountIs(10))"}


def stopped_by(name: str, res: ProcessRunResult) -> str:
    """What ended the run: the harness, the agent's own guard (named), its turn limit, or its model's answer."""
    if res.terminal_state == NOT_RUN:
        return "(not run)"
    proc = res.process
    if res.terminal_state in ("HARD_CEILING", "WATCHDOG"):
        what = "ceiling" if res.terminal_state == "HARD_CEILING" else "watchdog"
        return f"the harness ({what}: {res.error or res.terminal_state})"
    text = (proc.stdout + proc.stderr) if proc is not None else ""
    for product, pattern, words in _OWN_GUARDS:
        if product == name and re.search(pattern, text):
            return words
    counted = re.search(r'TOOLCHAOS_COUNTS .*"stopped":\s*"(\w+)"', text)
    if counted and counted.group(1) == "turn_limit":
        return _TURN_LIMITS.get(name, "its turn limit (the example's AGENT_MAX_TURNS, 10)")
    events = res.trace.model_events
    if events and not events[-1].get("calls"):
        return "its model's final answer"
    code = proc.exit_code if proc is not None else "?"
    return f"it exited (code {code}) without its model answering"


def shown(res: ProcessRunResult, width: int = 90) -> str:
    """What its model was shown of the last tool result (as the agent sent it back)."""
    for event in reversed(res.trace.model_events):
        seen = event.get("shown") or []
        if seen:
            content = " ".join(str(seen[-1].get("content", "")).split())
            return content if len(content) <= width else content[:width - 1] + "…"
    return "(no tool result)"


def _verdict_word(verdict: Verdict) -> str:
    if verdict.not_applicable is not None:
        return "N/A"
    return "PASS" if verdict.passed else "FAIL"


def requests(res: ProcessRunResult) -> str:
    """Model requests the server answered, with how many of them were side requests (titles, loop checks)."""
    side = res.side_requests
    return f"{res.model_requests} ({side} side)" if side else str(res.model_requests)


def markdown(rows: Sequence[Row], missing: dict[str, str]) -> str:
    lines = ["| agent (version) | scenario | verdict | ended | tool executions | model requests | duplicate side "
             "effects | what stopped it | what its model was shown last |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        res, verdict = row.result, _verdict_word(row.verdict)
        if row.verdict.not_applicable is not None:  # nothing ran: no figures, the reason instead
            lines.append(f"| {row.agent} ({row.version}) | `{row.scenario}` | N/A | | | | | "
                         f"{_cell(row.verdict.not_applicable)} | |")
            continue
        if not row.verdict.passed and row.verdict.failures:
            verdict += f" (`{row.verdict.failures[0][0].name}`)"
        lines.append(f"| {row.agent} ({row.version}) | `{row.scenario}` | {verdict} | {res.terminal_state} | "
                     f"{res.total_executions} | {requests(res)} | {duplicates(res)} | "
                     f"{stopped_by(row.agent, res)} | {_cell(shown(res))} |")
    for name, why in missing.items():
        lines.append(f"| {name} | (not run) | | | | | | {_cell(why)} | |")
    return "\n".join(lines)


def not_applicable_table(scenarios: Iterable[Scenario] | None = None) -> str:
    """The bundled scenarios no process agent runs (N/A for every agent above), each with its reason."""
    kind = kinds()[PROCESS]
    lines = ["| scenario | N/A to every agent above: what it needs |", "|---|---|"]
    for scenario in suite() if scenarios is None else scenarios:
        reason = not_applicable_to(scenario, kind)
        if reason is not None:
            lines.append(f"| `{scenario.name}` | {_cell(reason)} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers to write the matrix between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolchaos.matrices.processes", description=__doc__.split("\n")[0])
    parser.add_argument("--bin", type=Path, default=ROOT / ".ci" / "cli" / "node_modules" / ".bin",
                        help="where the coding CLIs are installed")
    parser.add_argument("--node", type=Path, default=ROOT / ".ci" / "node",
                        help="the folder whose node_modules holds the Node agents' packages")
    parser.add_argument("--agent", action="append", choices=[*CLIS, *NODE], help="only these agents")
    parser.add_argument("--only", action="append", help="only these scenario ids")
    parser.add_argument("--write", type=Path, help="write the table into this Markdown file, between the markers")
    parser.add_argument("--artifacts", type=Path, help="keep each cell's trace and process record in DIR/<agent>/")
    args = parser.parse_args(argv)
    rows, missing = matrix(args.bin.resolve(), args.node.resolve(), args.agent, args.only,
                           progress=lambda line: print(line, file=sys.stderr, flush=True), artifacts=args.artifacts)
    table = f"{markdown(rows, missing)}\n\n{not_applicable_table()}"
    if args.write is not None:
        write(args.write, table)
    else:
        print(table)
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())


__all__ = ["Row", "main", "markdown", "matrix", "not_applicable_table", "requests", "run_cell", "stopped_by"]

