"""The example agents in docs/examples are real programs: run each under chaos."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from toolchaos import Ceiling, policies, wire
from toolchaos.fake_tools import catalogue, faults

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
BILLING = "GET https://billing.example.com/invoices/{invoice_id}"


def load(name: str, *needs: str) -> ModuleType:
    for module in needs:
        pytest.importorskip(module, reason=f"needs {module}: pip install 'toolchaos[all-frameworks]'")
    full = f"toolchaos_example_{name}"
    if full in sys.modules:
        return sys.modules[full]
    spec = importlib.util.spec_from_file_location(full, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


def stubborn(**kw: Any) -> Any:
    return policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}, **kw)


def test_openai_naive_loop() -> None:
    ex = load("openai_naive", "openai")
    ok = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")], policy=stubborn())
    assert ok.terminal_state == "COMPLETED" and ok.total_executions == 1
    looping = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice", faults=faults.timeout())],
                       policy=stubborn())
    assert looping.terminal_state == "FAILED"  # returned None after 10 steps: not completed
    assert looping.total_executions == ex.MAX_STEPS == looping.model_requests


def test_anthropic_naive_loop_with_a_patched_tool() -> None:
    ex = load("anthropic_naive", "anthropic")
    original = ex.lookup_invoice
    tool = catalogue.get("fetch_invoice", faults=faults.timeout(after=30), delivery="raise")
    result = wire.run(ex.agent, task="Total of inv_1?", tools=[tool], policy=stubborn(),
                      patch={f"{ex.__name__}:lookup_invoice": "fetch_invoice"})
    assert ex.lookup_invoice is original
    assert result.terminal_state == "FAILED" and result.total_executions == 10
    shown = result.trace.model_events[1]["shown"][0]
    assert shown["read_as"] == "error" and "timeout" in shown["content"]  # is_error: the model reads an error


def test_openai_agents_example_with_an_http_backed_tool() -> None:
    ex = load("openai_agents_example", "agents", "openai")
    route = wire.http_tool("fetch_invoice", BILLING)
    ok = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")], policy=stubborn(),
                  http_tools=[route])
    assert ok.terminal_state == "COMPLETED" and ok.total_executions == 1
    down = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice", faults=faults.transient(503))],
                    policy=stubborn(), http_tools=[route])
    assert down.terminal_state == "CRASHED" and "MaxTurnsExceeded" in (down.error or "")  # the SDK default: 10 turns
    assert down.total_executions == 10
    # the SDK hides the 503 from the model behind a fixed text; the trace records what it was shown
    assert down.trace.model_events[1]["shown"][0]["content"] == "An error occurred while running the tool. Please try again."


def test_pydantic_ai_example_with_a_patched_tool() -> None:
    ex = load("pydantic_ai_example", "pydantic_ai", "openai")
    result = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")], policy=stubborn(),
                      patch={f"{ex.__name__}:lookup_invoice": "fetch_invoice"})
    assert result.terminal_state == "COMPLETED" and result.total_executions == 1


def test_langgraph_example_with_an_http_backed_tool() -> None:
    ex = load("langgraph_example", "langgraph", "langchain_openai")
    route = wire.http_tool("fetch_invoice", BILLING)
    ok = wire.run(ex.agent, task="Total of inv_1?", tools=[catalogue.get("fetch_invoice")], policy=stubborn(),
                  http_tools=[route])
    assert ok.terminal_state == "COMPLETED" and ok.total_executions == 1
    # LangGraph's default recursion limit is effectively unbounded: the harness ceiling ends the loop
    down = catalogue.get("fetch_invoice", faults=faults.transient(503))
    looping = wire.run(ex.agent, task="Total of inv_1?", tools=[down], policy=stubborn(), http_tools=[route],
                       ceiling=Ceiling(max_model_turns=12, real_seconds=120))
    assert looping.terminal_state == "HARD_CEILING" and looping.total_executions == 12


EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.py"))


def _closure(top: str) -> set[str]:
    """The distributions ``pip install top`` brings in, read from the installed metadata (names normalised)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(top)]
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.distribution(req.name).requires or []
        except metadata.PackageNotFoundError:  # a requirement for another platform
            continue
        for line in requires:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append(dep)
    return {name for name, _ in seen}


def test_all_frameworks_installs_what_every_example_imports() -> None:
    """Every module a docs/examples file imports comes with `pip install 'toolchaos[all-frameworks]'`."""
    import ast
    from importlib import metadata

    from packaging.utils import canonicalize_name

    pytest.importorskip("langchain", reason="needs the examples' frameworks: pip install 'toolchaos[all-frameworks]'")
    imported: dict[str, str] = {}
    for path in EXAMPLES.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                imported.setdefault(name.split(".")[0], path.name)
    ours = ("__future__", "toolchaos")
    third_party = {m: f for m, f in imported.items() if m not in sys.stdlib_module_names and m not in ours}
    assert {"openai", "anthropic", "agents", "pydantic_ai", "langchain", "langchain_openai", "httpx"} <= set(third_party)
    installed = _closure("toolchaos[all-frameworks]")
    owners = metadata.packages_distributions()
    missing = {m: f for m, f in third_party.items() if not {canonicalize_name(d) for d in owners.get(m, [])} & installed}
    assert not missing, f"imported by docs/examples but not installed by toolchaos[all-frameworks]: {missing}"


AGENTS_DOC = EXAMPLES.parents[0] / "agents.md"


def _examples_section() -> str:
    text = AGENTS_DOC.read_text(encoding="utf-8")
    return text[text.index("\n## Examples\n"):]


def documented_end_states() -> dict[str, str]:
    """docs/agents.md's list of examples: each file and the terminal state it says the file's run ends in."""
    return dict(re.findall(r"^- `(\w+\.py)`:.*?ends\s+`([A-Z_]+)`", _examples_section(), flags=re.M | re.S))


def documented_adapter_commands() -> list[tuple[list[str], str, str]]:
    """The section's `toolchaos certify` lines (run in docs/examples): argv, the terminal state and the guard."""
    found = re.findall(r"^(toolchaos certify [^#\n]+?)\s+# ([A-Z_]+), guard (\w+)$", _examples_section(), flags=re.M)
    return [(shlex.split(line), state, guard) for line, state, guard in found]


def _no_keys() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}


def test_the_doc_lists_every_example_with_its_end_state() -> None:
    assert sorted(documented_end_states()) == EXAMPLE_FILES
    assert [argv[3] for argv, _, _ in documented_adapter_commands()] == [
        "openai_agents_example:billing_agent", "pydantic_ai_example:billing_agent"]


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_every_example_runs_as_a_script_and_ends_as_documented(name: str) -> None:
    """`python docs/examples/X.py`, as docs/agents.md says to run it: the agent under chaos, the trace and the
    summary printed, and the run ends in the terminal state the doc gives for that file."""
    pytest.importorskip("langchain", reason="needs the examples' frameworks: pip install 'toolchaos[all-frameworks]'")
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300,
                         env=_no_keys())
    assert out.returncode == 0, out.stderr[-3000:]
    assert "kind" in out.stdout and "virtual time:" in out.stdout, out.stdout[-3000:]
    ended = re.search(r"\(seed \d+\): ([A-Z_]+);", out.stdout)
    assert ended is not None, out.stdout[-3000:]
    assert ended.group(1) == documented_end_states()[name], out.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("argv,state,guard", [pytest.param(*c, id=c[0][3].split(":")[0])
                                               for c in documented_adapter_commands()])
def test_the_framework_object_through_its_adapter_stops_at_the_guard(argv: list[str], state: str, guard: str) -> None:
    """docs/agents.md's commands: the same example's agent object, named as the agent, ends at its framework's
    limit as a loop guard (the `agent(task)` around it crashes with the limit's exception instead)."""
    pytest.importorskip("langchain", reason="needs the examples' frameworks: pip install 'toolchaos[all-frameworks]'")
    exe = Path(sys.executable).with_name(argv[0])
    out = subprocess.run([str(exe), *argv[1:]], cwd=EXAMPLES, capture_output=True, text=True, timeout=300,
                         env=_no_keys())
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]  # the loop scenario fails its bounds
    [row] = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert (row["terminal_state"], row["guard"]) == (state, guard), row
