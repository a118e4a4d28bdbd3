"""The JSON Schema of a scenario file (``toolchaos schema``, ``docs/scenario.schema.json``).

The sections' structure comes from the pydantic models (``_spec``); faults, policies and
invariants come from their registries: every registered kind, its parameters (with the
schema a parameter declares, else any value) and its help.
"""

from __future__ import annotations

from typing import Any

from toolchaos.fake_tools.faults import FAULTS
from toolchaos.fake_tools.registry import Kind
from toolchaos.invariants import INVARIANTS
from toolchaos.policies import POLICIES
from toolchaos.scenario._spec import ProcessAgentSpec, ScenarioSpec

SCHEMA_URL = "https://raw.githubusercontent.com/toolchaos/toolchaos/main/docs/scenario.schema.json"
_POLICY = {"$ref": "#/$defs/Policy"}
_REF = {"type": "string", "pattern": r"^[\w.]+:[\w.]+$", "description": "package.module:attr (needs chaos_allow_imports)"}


def _params(kind: Kind[Any]) -> dict[str, Any]:
    """The mapping of a kind's parameters: each with its declared schema, a nested policy for ``Policy`` ones."""
    props = {p.name: (dict(_POLICY) if p.names("Policy") else dict(p.schema)) for p in kind.params}
    return {"type": "object", "additionalProperties": False, "properties": props}


def _fault_schema() -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"enum": sorted(FAULTS)}]
    for name in sorted(FAULTS):
        variants.append({"type": "object", "additionalProperties": False, "required": [name], "properties": {
            name: {"anyOf": [{"type": "null"}, _params(FAULTS[name]), {"not": {"type": "object"}}]}}})
    return {"description": "a fault kind, or {kind: {parameters}}, or {kind: first-parameter}", "anyOf": variants}


def _policy_forms(kind: Kind[Any]) -> list[dict[str, Any]]:
    """How a policy's value may be written: nothing, its first parameter, or its parameters."""
    params = _params(kind)
    forms: list[dict[str, Any]] = [{"type": "null"}, {"not": {"type": "object"}}, params]
    required = kind.extra.get("required")
    if required:  # it cannot do without these: `name: FIRST` (text) or `name: {them, ...}`
        params["required"] = list(required)
        forms = [{"type": "string"}, params]
    if any(p.names("Policy") for p in kind.params):  # a wrapper: `ignores_refusals: {stubborn: {...}}`
        forms.append(dict(_POLICY))
    return forms


def _policy_schema() -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"enum": sorted(POLICIES)}, dict(_REF)]
    for name in sorted(POLICIES):
        variants.append({"type": "object", "additionalProperties": False, "required": [name],
                         "description": POLICIES[name].help, "properties": {name: {"anyOf": _policy_forms(POLICIES[name])}}})
    return {"description": "a built-in policy: `name` or `name: {parameters}`", "anyOf": variants}


_WHY: dict[str, Any] = {"type": "string", "minLength": 1,
                        "description": "why the expectation is what it is (a bound: the harm it prevents, its margin)"}


def _invariant_schema() -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"enum": sorted(INVARIANTS)}]
    for name in sorted(INVARIANTS):
        kind = INVARIANTS[name]
        variants.append({"type": "object", "additionalProperties": False, "required": [name],
                         "description": kind.help, "properties": {
                             name: {"anyOf": [{"type": "null"}, _params(kind), {"not": {"type": "object"}}]},
                             "why": _WHY}})
    variants.append({"type": "object", "minProperties": 1, "maxProperties": 2, "properties": {"why": _WHY},
                     "propertyNames": {"anyOf": [{"pattern": r"^[\w.]+:[\w.]+$"}, {"const": "why"}]},
                     "description": "package.module:attr (needs chaos_allow_imports)"})
    return {"description": "an invariant: `name` or `name: {parameters}`, with an optional `why:` beside it",
            "anyOf": variants}


def _fuzz_schema() -> dict[str, Any]:
    from toolchaos.fuzzing import FUZZ_KEYS  # the fuzzer imports hypothesis: only when a schema is asked for

    return {"description": "fault-schedule fuzzing: `fuzz: true` or a mapping of options",
            "anyOf": [{"type": "boolean"}, {"type": "null"},
                      {"type": "object", "additionalProperties": False, "properties": {k: {} for k in FUZZ_KEYS}}]}


def _rule_schema() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["outcome"], "properties": {
        "call": {"type": "integer", "minimum": 1, "description": "the Nth call of this tool (1-based)"},
        "calls": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["integer", "null"]},
                  "description": "[first, last] call numbers, inclusive; last may be null (open-ended)"},
        "match": {"type": "object", "description": "calls whose arguments include these values"},
        "probability": {"type": "number", "minimum": 0, "maximum": 1, "description": "seeded random"},
        "always": {"type": "boolean"},
        "outcome": {"$ref": "#/$defs/Fault"}}}


def _refs(node: Any) -> Any:
    """Replace the ``x-toolchaos`` placeholders with references to the hand-written definitions."""
    if isinstance(node, dict):
        target = node.get("x-toolchaos")
        out = {k: _refs(v) for k, v in node.items() if k != "x-toolchaos"}
        if target == "Invariants":
            _set_items(out, {"$ref": "#/$defs/Invariant"})
        elif target is not None:
            out = {"$ref": f"#/$defs/{target}", **({"description": node["description"]} if "description" in node else {})}
        return out
    if isinstance(node, list):
        return [_refs(v) for v in node]
    return node


def _set_items(node: dict[str, Any], items: dict[str, Any]) -> None:
    if node.get("type") == "array":
        node["items"] = items
    for sub in node.get("anyOf", []):
        if isinstance(sub, dict):
            _set_items(sub, items)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (what ``toolchaos schema`` prints)."""
    schema: dict[str, Any] = _refs(ScenarioSpec.model_json_schema())
    defs = schema.setdefault("$defs", {})
    defs["Fault"] = _fault_schema()
    defs["Rule"] = _rule_schema()
    defs["FaultSchedule"] = {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Fault"}, {
        "type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Rule"}, {"$ref": "#/$defs/Fault"}]}}]}
    defs["Policy"] = _policy_schema()
    defs["Invariant"] = _invariant_schema()
    defs["Fuzz"] = _fuzz_schema()
    defs["Agent"] = {"anyOf": [{"type": "string", "description": "an agent reference"},
                               ProcessAgentSpec.model_json_schema()]}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_URL
    schema["title"] = "toolchaos scenario"
    return schema
