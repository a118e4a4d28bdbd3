"""Malformed scenario documents always give a clear, located ScenarioError.

Never an internal traceback, never a hang: generated documents with wrong types, unknown
keys, missing fields, broken YAML, huge or deeply nested values. The examples are
derandomized and bounded so CI stays fast and reproducible.
"""

from __future__ import annotations

import copy
from typing import Any

import freezegun.api as fz
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from toolchaos.certification import run_scenario
from toolchaos.scenario import ScenarioError, load_text

VALID: dict[str, Any] = {
    "id": "fuzz",
    "title": "fuzzed",
    "category": "loops",
    "severity": "major",
    "tags": ["a"],
    "seed": 1,
    "task": "get the total",
    "budgets": {"max_steps": 10},
    "tools": {
        "fetch_invoice": {"faults": [{"call": 1, "outcome": {"timeout": {"after": 30}}}], "default": "ok"},
        "lookup": {"description": "inline", "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                           "required": ["q"]}, "faults": "empty"},
    },
    "policy": {"ignores_refusals": {"inner": {"stubborn": {"tool": "fetch_invoice", "args": {"invoice_id": "i"}}},
                                    "max_turns": 8}},
    "expect": [{"bounded": {"executions": 3, "per_tool": {"fetch_invoice": 3}}},
               {"terminal_state": ["STOPPED_LOOP_GUARD", "COMPLETED"]}, "idempotent", {"stop_report": None}],
    "variants": [{"id": "v1", "seed": 2}, {"id": "v2", "tools": {"fetch_invoice": {"faults": "empty"}}}],
    "restart": {"tools": {"fetch_invoice": {"faults": []}}, "expect_before": ["terminated"]},
}

# No shrinking: a failure is reported at once with the document that broke (shrinking
# documents with huge values takes minutes, and CI must stay fast).
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["ok", "timeout", "stubborn", "bounded", "fetch_invoice", "STOPPED_LOOP_GUARD", "*", "&a", "!!x",
                     "module:attr", "builtin:naive", "toolchaos._agents:naive", ""]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


ALL_PATHS = paths(VALID)[1:]


def get_parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        live = [p for p in paths(doc)[1:]]
        if not live:
            break
        path = draw(st.sampled_from(live))
        parent = get_parent(doc, path)
        key = path[-1]
        op = draw(st.sampled_from(["replace", "delete", "add", "rename", "nest", "huge"]))
        if op == "replace":
            parent[key] = draw(values)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(values)
        elif op == "rename" and isinstance(parent, dict):
            typo = str(key)[:-1] + draw(st.sampled_from("xsz_")) if str(key) else "x"
            parent[typo] = parent.pop(key)
        elif op == "nest":
            deep: Any = parent[key]
            for _ in range(draw(st.integers(1, 80))):
                deep = [deep]
            parent[key] = deep
        elif op == "huge":
            parent[key] = "x" * draw(st.integers(1000, 200_000))
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


YAML_BITS = ["id: a\n", "title: t\n", "task: x\n", "tools:\n", "  search:\n", "    faults: [", "{", "}", "[", "]",
             ": ", "- ", "  ", "\t", "&x ", "*x", "!!python/object:os.system ", "!t ", "---\n", "...\n", "'", '"',
             "#", "\n", "? ", "|\n", ">\n", "%YAML 1.1\n", "\x00", "\ufeff", "é", "<<: *x\n", "expect:\n", "policy: ",
             "stubborn", "null", "~", "1e999", "0x1F", "2026-01-01", "yes", ",", "\\"]


@st.composite
def garbage(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(st.sampled_from(YAML_BITS), max_size=40)))


def check(text: str) -> None:
    """Loads, or fails with a located ScenarioError; a loaded scenario runs to a verdict."""
    started = fz.real_monotonic()
    try:
        scenarios = load_text(text, "fuzz.chaos.yaml")
    except ScenarioError as err:
        assert err.message and err.line is not None and err.line >= 1 and err.col is not None and err.col >= 1
        rendered = str(err)
        assert rendered.startswith("fuzz.chaos.yaml:") and "Traceback" not in rendered
    else:
        for sc in scenarios[:2]:
            verdict = run_scenario(sc, "builtin:guarded")
            assert verdict.result.harness_stop in (None, "ceiling", "crash"), verdict.result.error
    assert fz.real_monotonic() - started < 5.0, "loading took too long"


@SETTINGS
@given(mutated())
def test_mutated_scenarios_fail_clearly(text: str) -> None:
    check(text)


@SETTINGS
@given(garbage())
def test_yaml_garbage_fails_clearly(text: str) -> None:
    check(text)


@SETTINGS
@given(st.integers(0, len(yaml.safe_dump(VALID))), st.booleans())
def test_truncated_documents_fail_clearly(cut: int, flow: bool) -> None:
    text = yaml.safe_dump(VALID, sort_keys=False, default_flow_style=flow)
    check(text[:cut])


@settings(max_examples=25, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
@given(st.sampled_from(["[", "{", "- ", "a: "]), st.integers(10, 20_000))
def test_deep_nesting_fails_clearly(opener: str, depth: int) -> None:
    closer = {"[": "]", "{": "}"}.get(opener, "")
    if opener == "a: ":
        text = "".join(" " * i + "a:\n" for i in range(min(depth, 400)))
    elif opener == "- ":
        text = "".join(" " * (2 * i) + "-\n" for i in range(min(depth, 400)))
    else:
        text = "id: x\nargs: " + opener * depth + closer * depth + "\n"
    check(text)


def test_a_constructor_tripping_on_a_value_is_still_a_located_error() -> None:
    doc = copy.deepcopy(VALID)
    doc["tools"]["lookup"]["parameters"]["required"] = [[]]  # once a TypeError in the constructor
    try:
        load_text(yaml.safe_dump(doc, sort_keys=False), "fuzz.chaos.yaml")
    except ScenarioError as err:
        assert "tool 'lookup': parameters.required" in err.message and err.line >= 19
    else:
        raise AssertionError("loaded")


def test_the_valid_document_loads_and_runs() -> None:
    scenarios = load_text(yaml.safe_dump(VALID, sort_keys=False), "fuzz.chaos.yaml")
    assert [s.name for s in scenarios] == ["fuzz[v1]", "fuzz[v2]"]
    check(yaml.safe_dump(VALID, sort_keys=False))
