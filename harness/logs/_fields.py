"""Checked reads of JSON fields for the format parsers: each names the field at fault (``BadField``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class BadField(Exception):
    """Raised by a parser with the field path; its reader re-raises it as ``LogFormatError`` with the
    file and the record, which the parser does not know."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field, self.problem = field, problem


def kind_of(value: Any) -> str:
    """What a value is, for an error message: ``a string ('abc')``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadField(where, f"expected a list, got {kind_of(value)}")
    return value


def as_map(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadField(where, f"expected an object, got {kind_of(value)}")
    return value


def as_str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadField(where, f"expected a non-empty string, got {kind_of(value)}")
    return value


def as_args(value: Any, where: str) -> dict[str, Any]:
    """Tool arguments: an object, or JSON text of one (empty text = no arguments)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise BadField(where, f"not valid JSON ({exc.msg} at column {exc.colno}): {value[:60]!r}") from None
    if not isinstance(value, Mapping):
        raise BadField(where, f"expected the arguments as an object, got {kind_of(value)}")
    return dict(value)


def number(value: Any) -> float | None:
    """A JSON number as a float; ``None`` for anything else (booleans included)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text of its parts/blocks."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part for part in map(_part_text, content) if part is not None)
    return json.dumps(content, default=str)


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        for key in ("text", "content", "output_text"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None
