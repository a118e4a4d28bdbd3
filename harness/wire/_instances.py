"""A JSON value that validates against a response schema: what a side request with a schema is answered with.

A model asked for JSON under a schema answers with an instance of it, every declared property
filled. ``instance(schema)`` builds one deterministically (same schema, same bytes), as plain
as the schema allows: a ``const`` or the first ``enum`` value; for a string the side answer's
text (at least ``minLength``, at most ``maxLength``; a date, a time, an e-mail address, a URI or
a UUID for those formats); for a number 0 moved into its bounds and onto its ``multipleOf``;
``false``; ``null``; an array of ``minItems`` items; an object with every property and every
required name. ``anyOf``/``oneOf`` take their first alternative that is not ``null``, ``allOf``
its parts merged, ``$ref`` the local definition it names (``#/$defs/...``, ``#/definitions/...``).
Types are read in any case: Gemini's ``responseSchema`` writes them ``OBJECT``, ``STRING``.

``values`` answer by property name, wherever the name appears (a scenario's scripted answer:
``{"unproductive_state_confidence": 0.95}``), as given. A ``pattern`` is not followed: a schema
that constrains a string by a pattern alone gets the text as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["instance"]

_DEPTH = 16  # a recursive schema (a tree of nodes) stops here: the deepest optional parts are left out
_FORMATS = {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "time": "00:00:00Z",
            "email": "agent@example.com", "idn-email": "agent@example.com", "uri": "https://example.com/",
            "url": "https://example.com/", "iri": "https://example.com/", "uri-reference": "https://example.com/",
            "uuid": "00000000-0000-4000-8000-000000000000", "hostname": "example.com", "ipv4": "192.0.2.1",
            "ipv6": "2001:db8::1", "duration": "PT0S"}


def instance(schema: Any, text: str = "OK", values: Mapping[str, Any] | None = None) -> Any:
    """A value valid under ``schema`` (see the module docstring); ``text`` fills free strings."""
    return _Maker(schema, text, values or {}).make(schema, None, 0)


class _Maker:
    def __init__(self, root: Any, text: str, values: Mapping[str, Any]) -> None:
        self.root = root
        self.text = text
        self.values = values

    def make(self, schema: Any, name: str | None, depth: int) -> Any:
        if name is not None and name in self.values:
            return self.values[name]
        if not isinstance(schema, Mapping) or depth > _DEPTH:
            return self.text  # ``true`` or ``{}``: anything goes; a model writes text
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.make(self._resolve(ref), name, depth + 1)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return self.make({**_without(schema, key), **_first_not_null(options)}, name, depth + 1)
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            return self.make(_merged(_without(schema, "allOf"), parts), name, depth + 1)
        return self._typed(schema, _type(schema), depth)

    def _typed(self, schema: Mapping[str, Any], kind: str, depth: int) -> Any:
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind in ("number", "integer"):
            return _number(schema, kind == "integer")
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        return self._string(schema)

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        out = {str(k): self.make(v, str(k), depth + 1) for k, v in props.items()}
        required = schema.get("required")
        for k in required if isinstance(required, list) else ():
            if isinstance(k, str) and k not in out:  # required without a schema of its own: any value
                out[k] = self.values.get(k, self.text)
        return out

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        head = [self.make(s, None, depth + 1) for s in prefix] if isinstance(prefix, list) else []
        least = schema.get("minItems")
        need = least if isinstance(least, int) and least > len(head) else len(head)
        items = schema.get("items")
        if isinstance(items, list):  # draft 4's tuple form
            head += [self.make(s, None, depth + 1) for s in items[len(head):]]
            items = schema.get("additionalItems", {})
        return head + [self.make(items if items is not None else {}, None, depth + 1) for _ in range(need - len(head))]

    def _string(self, schema: Mapping[str, Any]) -> str:
        fmt = schema.get("format")
        text = _FORMATS.get(fmt, self.text) if isinstance(fmt, str) else self.text
        least, most = schema.get("minLength"), schema.get("maxLength")
        if isinstance(least, int) and len(text) < least:
            text += "." * (least - len(text))
        if isinstance(most, int) and len(text) > most:
            text = text[:most]
        return text

    def _resolve(self, ref: str) -> Any:
        """A local ``$ref`` (``#/$defs/Name``); anything else is read as any value."""
        if not ref.startswith("#"):
            return {}
        node = self.root
        for part in (p for p in ref[1:].split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return {}
            node = node[part]
        return node


def _type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first that is not null
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    if isinstance(kind, str):
        return kind.lower()
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    """0 moved into the bounds (``exclusiveMinimum`` as a number, or draft 4's boolean) and onto ``multipleOf``."""
    low, high = _bound(schema, "minimum", "exclusiveMinimum", integer, 1), _bound(schema, "maximum",
                                                                                 "exclusiveMaximum", integer, -1)
    value: float = 0
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high if low is None else (low + high) / 2 if not integer else low
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        value = -(-value // step) * step  # the first multiple at or above it
    if integer:
        return int(value)
    return int(value) if float(value).is_integer() else value


def _bound(schema: Mapping[str, Any], inclusive: str, exclusive: str, integer: bool, sign: int) -> float | None:
    plain, strict = schema.get(inclusive), schema.get(exclusive)
    if isinstance(strict, bool):  # draft 4: a flag on the inclusive bound
        strict, plain = (plain if strict else None), (None if strict else plain)
    if isinstance(strict, (int, float)) and not isinstance(strict, bool):
        return float(strict + sign * (1 if integer else 0.5))
    if isinstance(plain, (int, float)) and not isinstance(plain, bool):
        return float(plain)
    return None


def _first_not_null(options: Sequence[Any]) -> Mapping[str, Any]:
    for option in options:
        if isinstance(option, Mapping) and str(option.get("type", "")).lower() != "null":
            return option
    first = options[0]
    return first if isinstance(first, Mapping) else {}


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _merged(base: Mapping[str, Any], parts: Sequence[Any]) -> dict[str, Any]:
    """``allOf``'s parts as one schema: properties and required names joined, other keys the last part's."""
    out: dict[str, Any] = dict(base)
    props: dict[str, Any] = dict(out.get("properties") or {})
    required: list[Any] = list(out.get("required") or [])
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        props.update(part.get("properties") or {})
        required += [r for r in part.get("required") or () if r not in required]
        out.update({k: v for k, v in part.items() if k not in ("properties", "required")})
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    return out
