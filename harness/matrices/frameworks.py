"""The framework matrix: the certification suite against each framework with its DEFAULT settings.

    python -m toolchaos.matrices.frameworks                      # print the table
    python -m toolchaos.matrices.frameworks --write docs/frameworks.md
    python -m toolchaos.matrices.frameworks --only loop-exact-repeat-timeout --framework langgraph

Each scenario of the bundled suite runs through ``toolchaos.wire.run`` with a framework
adapter (the framework's own loop, tools and limits, its model pointed at the wire), and
its expectations are checked by ``toolchaos.certification.judge``, exactly as for in-process
agents. A cell shows PASS/FAIL, the terminal state, tool executions
and side effects applied. Frameworks that are not installed are left out.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from toolchaos import certification
from toolchaos._agents import SDK
from toolchaos.adapters import agent_under_test
from toolchaos.certification import Verdict, suite
from toolchaos.scenario import Scenario

BEGIN, END = "<!-- framework-matrix:begin -->", "<!-- framework-matrix:end -->"
MATRIX_REAL_SECONDS = 900.0


# label: (modules the framework needs, its adapter module, the adapter's agent() arguments)
ADAPTERS: dict[str, tuple[tuple[str, ...], str, dict[str, Any]]] = {
    "openai-agents": (("agents",), "toolchaos.adapters.openai_agents", {}),
    "pydantic-ai": (("pydantic_ai",), "toolchaos.adapters.pydantic_ai", {}),
    "pydantic-ai FunctionModel": (("pydantic_ai",), "toolchaos.adapters.pydantic_ai", {"function_model": True}),
    "langgraph": (("langgraph", "langchain_openai"), "toolchaos.adapters.langgraph", {}),
}


def framework_agents() -> dict[str, Callable[[], Any]]:
    """Framework label -> factory of a ``wire.run`` agent with the framework's defaults (installed ones)."""
    return {label: functools.partial(_adapter_agent, module, kwargs)
            for label, (needs, module, kwargs) in ADAPTERS.items()
            if all(importlib.util.find_spec(m) is not None for m in needs)}


def _adapter_agent(module: str, kwargs: dict[str, Any]) -> Any:
    # imported when a cell runs: an adapter imports its framework's SDK, seconds of imports
    return importlib.import_module(module).agent(**kwargs)


def run_scenario(scenario: Scenario, agent: Any, label: str) -> Verdict:
    """``toolchaos.certification.run_scenario`` for an SDK/framework agent: runs through the wire, the same judge."""
    # The scenario's ceilings on turns and tool calls; a generous real-time watchdog, so a cell
    # depends on the framework, not on how busy the machine was (an unbounded framework runs
    # to the turn ceiling: 200 turns through LangGraph take tens of seconds on a loaded CI box).
    return certification.run_scenario(scenario, agent_under_test(agent, SDK), label=label,
                                      real_seconds=MATRIX_REAL_SECONDS)


def matrix(frameworks: Iterable[str] | None = None, scenarios: Sequence[Scenario] | None = None,
           progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Verdict]]:
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


def cell(verdict: Verdict) -> str:
    r = verdict.result
    effects = sum(r.ledger.applied(t) for t in r.tools if r.tools[t].side_effect)
    return f"{'PASS' if verdict.passed else 'FAIL'} · {r.terminal_state} · {r.total_executions} ex · {effects} fx"


def markdown(results: dict[str, dict[str, Verdict]]) -> str:
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
                 "langchain", "langchain-openai"):
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
    command = f"python -m toolchaos.matrices.frameworks --write {path.as_posix()}"
    body = f"{BEGIN}\nGenerated by `{command}` with {versions()}.\n\n{table}\n{END}"
    path.write_text(head + body + tail, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolchaos.matrices.frameworks", description=__doc__,
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
