"""The JSON a side request with a schema is answered with: valid under the schema (checked with
jsonschema, the schema's own draft), every property filled, the same bytes every time."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from toolchaos.wire._instances import instance

NESTED = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "exclusiveMinimum": 0}},
          "required": ["ok", "n"], "additionalProperties": False}
TREE = {"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "children": {"type": "array",
                                                                          "items": {"$ref": "#/$defs/node"}}},
                           "required": ["name", "children"]}},
        "$ref": "#/$defs/node"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "every_keyword_at_once": {
        "type": "object", "additionalProperties": False,
        "properties": {
            "title": {"type": "string", "minLength": 5, "maxLength": 8},
            "confidence": {"type": "number", "minimum": 0.25, "maximum": 1},
            "count": {"type": "integer", "minimum": 3, "multipleOf": 2},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "minItems": 2},
            "kind": {"enum": ["first", "second"]},
            "fixed": {"const": 7},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 1}]},
            "either": {"oneOf": [{"type": "integer", "maximum": -3}, {"type": "string", "maxLength": 0}]},
            "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "number", "exclusiveMaximum": -1}}, "required": ["b"]}]},
            "listed": {"type": ["string", "null"], "format": "date-time"},
            "when": {"type": "string", "format": "email"},
            "nested": {"$ref": "#/$defs/nested"},
        },
        "required": ["title", "confidence", "count", "tags", "pair", "kind", "fixed", "maybe", "either", "both",
                     "listed", "when", "nested"],
        "$defs": {"nested": NESTED},
    },
    "required_without_a_schema": {"type": "object", "required": ["free"], "properties": {}},
    "a_recursive_tree": TREE,
    "draft_4_exclusive_flags": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                                "properties": {"p": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                                               "q": {"type": "integer", "maximum": -2, "exclusiveMaximum": True},
                                               "r": {"type": "array", "items": [{"type": "string"}, {"type": "null"}],
                                                     "minItems": 2}},
                                "required": ["p", "q", "r"]},
    "no_type_at_all": {"properties": {"x": {}}, "required": ["x"]},
    "a_top_level_array": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}},
                                                     "required": ["id"]}, "minItems": 1, "maxItems": 1},
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_instance_validates_under_the_schemas_own_draft(name: str) -> None:
    schema = SCHEMAS[name]
    value = instance(schema)
    jsonschema.validators.validator_for(schema)(schema).validate(value)
    assert json.dumps(instance(schema)) == json.dumps(value)  # deterministic


def test_every_declared_property_is_filled_and_the_plainest_values_are_chosen() -> None:
    value = instance(SCHEMAS["every_keyword_at_once"])
    assert list(value) == list(SCHEMAS["every_keyword_at_once"]["properties"])  # in the schema's order
    assert value["title"] == "OK..." and value["confidence"] == 0.25 and value["count"] == 4
    assert value["kind"] == "first" and value["fixed"] == 7 and value["maybe"] == "OK"
    assert value["nested"] == {"ok": False, "n": 1} and value["tags"] == ["OK", "OK"]


def test_gemini_response_schemas_write_their_types_in_capitals() -> None:
    # gemini-cli's routing classifier sends @google/genai's Type enum: OBJECT, STRING
    schema = {"type": "OBJECT", "properties": {"reasoning": {"type": "STRING"},
                                               "model_choice": {"type": "STRING", "enum": ["flash", "pro"]}},
              "required": ["reasoning", "model_choice"]}
    assert instance(schema) == {"reasoning": "OK", "model_choice": "flash"}


def test_scripted_values_answer_by_property_name_wherever_it_appears() -> None:
    schema = {"type": "object", "properties": {"outer": {"type": "object", "properties": {"score": {"type": "number"}}},
                                               "score": {"type": "number"}, "why": {"type": "string"}}}
    value = instance(schema, "yes, you are looping", {"score": 0.95})
    assert value == {"outer": {"score": 0.95}, "score": 0.95, "why": "yes, you are looping"}
