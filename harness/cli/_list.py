"""``toolchaos list``: what a scenario can name, each with a one-line description.

Faults, policies and invariants are their registries' kinds, with each kind's help.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from toolchaos._agents import BUILTIN as AGENTS
from toolchaos.cli import _lazy
from toolchaos.errors import CommandError, did_you_mean
from toolchaos.fake_tools import catalogue
from toolchaos.fake_tools.faults import FAULTS
from toolchaos.invariants import INVARIANTS
from toolchaos.policies import POLICIES
from toolchaos.reports import LEVELS

HELP = "list faults, policies, invariants, catalogue tools, agents, levels and built-in scenarios"
EXAMPLES = """\
  toolchaos list                      # everything
  toolchaos list faults policies      # some sections
  toolchaos list tools --json         # machine-readable
  toolchaos list scenarios            # the bundled certification suite and examples"""

Row = tuple[str, str]


def _faults() -> list[Row]:
    return list(FAULTS.help().items())


def _policies() -> list[Row]:
    return [(k, _first_line(v)) for k, v in POLICIES.help().items()]


def _invariants() -> list[Row]:
    return [(k, _first_line(v)) for k, v in INVARIANTS.help().items()]


def _tools() -> list[Row]:
    rows = []
    for name, desc in catalogue.describe().items():
        tool = catalogue.get(name)
        if tool.side_effect:
            key = f", idempotency key: {tool.idempotency_key}" if tool.idempotency_key else ""
            desc = f"{desc} (side effect{key})"
        rows.append((name, desc))
    return rows


def _agents() -> list[Row]:
    rows = []
    for name, fn in AGENTS.items():
        module = sys.modules.get(getattr(fn, "__module__", ""), None)
        rows.append((f"builtin:{name}", _first_line(getattr(module, "__doc__", None) or fn.__doc__)))
    rows.append(("package.module:attr", "your agent: a callable agent(task, model, tools)"))
    return rows


def _levels() -> list[Row]:
    return list(LEVELS.items())


def _first_line(text: Any) -> str:
    """The first line of a docstring, without reStructuredText literal quotes."""
    lines = str(text or "").strip().splitlines()
    return lines[0].strip().replace("``", "") if lines else ""


def _scenarios() -> list[Row]:
    """The bundled suites, as the certification runner loads them."""
    rows: list[Row] = []
    for name in ("certification", "examples"):
        try:
            found = _lazy.suite(name)  # YAML and pydantic: only for this section, not for --help
        except FileNotFoundError:  # a suite folder that is not there
            continue
        for sc in found:
            tags = ", ".join(t for t in (name, sc.category, sc.severity) if t)
            title = _first_line(sc.title or sc.description)
            rows.append((sc.name, f"[{tags}] {title}".strip() if tags else title))
    return rows


SECTIONS: dict[str, tuple[str, Callable[[], list[Row]]]] = {
    "faults": ("fault kinds a fake tool can answer with", _faults),
    "policies": ("model doubles (how the model behaves)", _policies),
    "invariants": ("what must hold after a run", _invariants),
    "tools": ("ready-made fake tools (the catalogue)", _tools),
    "agents": ("agents to test", _agents),
    "levels": ("certification levels (--require / --chaos-require)", _levels),
    "scenarios": ("built-in scenarios", _scenarios),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sections", nargs="*", metavar="SECTION",
                        help=f"what to list: {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object {section: {name: description}}")


def run(args: argparse.Namespace) -> int:
    wanted = list(dict.fromkeys(args.sections)) or list(SECTIONS)
    for name in wanted:
        if name not in SECTIONS:
            raise CommandError(f"unknown section {name!r}{did_you_mean(name, SECTIONS)} "
                               f"(sections: {', '.join(SECTIONS)})")
    data = {name: SECTIONS[name][1]() for name in wanted}
    if args.json:
        print(json.dumps({k: dict(v) for k, v in data.items()}, indent=2, ensure_ascii=False))
        return 0
    blocks = []
    for name, rows in data.items():
        lines = [f"{name}: {SECTIONS[name][0]}"]
        if not rows:
            lines.append("  (none)")
        width = min(max((len(r[0]) for r in rows), default=0), 34)
        lines += [f"  {key:<{width}}  {desc}".rstrip() for key, desc in rows]
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))
    return 0
