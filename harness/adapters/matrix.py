"""The framework matrix: the certification suite against each framework with its DEFAULT settings.

    python -m toolchaos.adapters.matrix                      # print the table
    python -m toolchaos.adapters.matrix --write docs/frameworks.md
    python -m toolchaos.adapters.matrix --only loop-exact-repeat-timeout --framework langgraph

Each scenario of the bundled suite runs through ``toolchaos.wire.run`` with a framework
adapter (the framework's own loop, tools and limits, its model pointed at the wire), and
its expectations are checked exactly as ``toolchaos.certification._suite.run_scenario`` checks them
for in-process agents. A cell shows PASS/FAIL, the terminal state, tool executions
and side effects applied. Frameworks that are not installed are left out.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolchaos import wire
from toolchaos._engine import RunResult
from toolchaos._internal.limits import Ceiling
from toolchaos.certification._suite import Verdict, _check, combine, suite

BEGIN, END = "<!-- framework-matrix:begin -->", "<!-- framework-matrix:end -->"
MATRIX_REAL_SECONDS = 900.0


def framework_agents() -> dict[str, Callable[[], Any]]:
    """Framework label -> factory of a ``wire.run`` agent with the framework's defaults (installed ones)."""
    out: dict[str, Callable[[], Any]] = {}
    if importlib.util.find_spec("agents") is not None:
        def oa() -> Any:
            from toolchaos.adapters import openai_agents  # the framework SDK: imported when its cell runs

            return openai_agents.agent()

        out["openai-agents"] = oa
    if importlib.util.find_spec("pydantic_ai") is not None:
        def pa() -> Any:
            from toolchaos.adapters import pydantic_ai  # the framework SDK: imported when its cell runs

            return pydantic_ai.agent()

        def paf() -> Any:
            from toolchaos.adapters import pydantic_ai  # the framework SDK: imported when its cell runs

            return pydantic_ai.agent(function_model=True)

        out["pydantic-ai"] = pa
        out["pydantic-ai FunctionModel"] = paf
    if importlib.util.find_spec("langgraph") is not None and importlib.util.find_spec("langchain_openai") is not None:
        def lg() -> Any:
            from toolchaos.adapters import langgraph  # the framework SDK: imported when its cell runs

            return langgraph.agent()

        out["langgraph"] = lg
    return out


def run_scenario(scenario: Any, agent: Any, label: str) -> Any:
    """``toolchaos.certification._suite.run_scenario`` for an SDK/framework agent: the same checks, runs through the wire."""
    store: dict[str, Any] = {}
    # The scenario's ceilings on turns and tool calls; a generous real-time watchdog, so a cell
    # depends on the framework, not on how busy the machine was (an unbounded framework runs
    # to the turn ceiling: 200 turns through LangGraph take tens of seconds on a loaded CI box).
    ceiling = replace(scenario.ceiling or Ceiling(), real_seconds=MATRIX_REAL_SECONDS)
    common: dict[str, Any] = {"seed": scenario.seed, "budgets": scenario.budgets, "store": store, "ceiling": ceiling}
    first = wire.run(agent, task=scenario.task, tools=scenario.tools, policy=scenario.policy(), name=scenario.name,
                     **common)
    runs: list[RunResult] = [first]
    result: RunResult = first
    if scenario.restart is not None:
        r = scenario.restart
        second = wire.run(agent, task=r.task, tools=r.tools, policy=r.policy(), name=f"{scenario.name}~restart",
                          **common)
        runs.append(second)
        result = combine(first, second)
    failures: list[Any] = []
    for exp in scenario.expect:
        phases: dict[str, list[RunResult]] = {"run": [result], "before": [first], "each": runs}
        targets = phases[exp.phase]
        for target in targets:
            for v in _check(exp.invariant, target):
                failures.append((exp, v))
    failures.sort(key=lambda f: (f[1].seq is None, f[1].seq or 0))
    return Verdict(id=scenario.name, title=scenario.title, category=scenario.category, severity=scenario.severity,
                   result=result, violations=[v for _, v in failures], expect=scenario.invariants, path=scenario.path,
                   content_hash=scenario.content_hash, agent=label, scenario=scenario, failures=failures, runs=runs)


def matrix(frameworks: Iterable[str] | None = None, scenarios: Sequence[Any] | None = None,
           progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """scenario id -> framework label -> verdict."""
    agents = framework_agents()
    chosen = list(frameworks) if frameworks is not None else list(agents)
    for name in chosen:
        if name not in agents:
            raise ValueError(f"framework {name!r} is not installed or unknown; installed: {', '.join(agents) or 'none'}")
    scenarios = list(scenarios) if scenarios is not None else suite()
    out: dict[str, dict[str, Any]] = {}
    for scenario in scenarios:
        row = out.setdefault(scenario.name, {})
        for name in chosen:
            verdict = run_scenario(scenario, agents[name](), name)
            row[name] = verdict
            if progress is not None:
                progress(f"{scenario.name:45} {name:28} {cell(verdict)}")
    return out


def cell(verdict: Any) -> str:
    r = verdict.result
    effects = sum(r.ledger.applied(t) for t in r.tools if r.tools[t].side_effect)
    return f"{'PASS' if verdict.passed else 'FAIL'} · {r.terminal_state} · {r.total_executions} ex · {effects} fx"


def markdown(results: dict[str, dict[str, Any]]) -> str:
    frameworks = list(next(iter(results.values())).keys()) if results else []
    lines = ["| scenario | " + " | ".join(frameworks) + " |", "|---|" + "---|" * len(frameworks)]
    passed = dict.fromkeys(frameworks, 0)
    for sid, row in results.items():
        cells = []
        for f in frameworks:
            v = row[f]
            passed[f] += v.passed
            text = cell(v)
            if not v.passed and v.failures:
                exp, _ = v.failures[0]
                text += f" (first broken: `{exp.name}`)"
            cells.append(text)
        lines.append(f"| `{sid}` | " + " | ".join(cells) + " |")
    lines.append("| **passed** | " + " | ".join(f"**{passed[f]}/{len(results)}**" for f in frameworks) + " |")
    return "\n".join(lines)


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("openai", "anthropic", "openai-agents", "pydantic-ai-slim", "langgraph", "langgraph-prebuilt",
                 "langchain-openai"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def write(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers to write the matrix between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    command = f"python -m toolchaos.adapters.matrix --write {path.as_posix()}"
    body = f"{BEGIN}\nGenerated by `{command}` with {versions()}.\n\n{table}\n{END}"
    path.write_text(head + body + tail, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolchaos.adapters.matrix", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", action="append", help="only this framework (repeatable)")
    ap.add_argument("--only", action="append", help="only this scenario id (repeatable)")
    ap.add_argument("--write", type=Path, help="write the table into this Markdown file, between the markers")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    scenarios = [s for s in suite() if not args.only or s.name in args.only]
    results = matrix(args.framework, scenarios, None if args.quiet else lambda line: print(line, file=sys.stderr))
    table = markdown(results)
    if args.write:
        write(args.write, table)
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
