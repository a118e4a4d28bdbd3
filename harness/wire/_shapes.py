"""The shapes of the request fields the wire reads, checked where it reads them.

A model request is read field by field (``_formats``, ``_conversation``): a list where a list is
read, an object where an object is read. A field of another JSON type (``messages: 1``, a
message that is a string, ``tool_calls: {}``) is not a request the API would take: the reader
raises ``Malformed`` naming the field, and the wire answers it with HTTP 400 in the API's own
error format, as the real API does, before any model turn is taken. Fields a reader takes in
any form (a content that is text, parts or anything else, whose text is read) are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Malformed", "array", "json_type", "obj"]


class Malformed(ValueError):
    """A request whose field ``field`` has a JSON type the API does not take there."""

    def __init__(self, field: str, expected: str, value: Any) -> None:
        super().__init__(f"{field}: expected {expected}, got {json_type(value)}")
        self.field = field


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, as an error message names it (``a number (1)``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"a string ({shown!r})"
    if isinstance(value, Mapping):
        return "an object"
    return "an array"


def array(value: Any, field: str, expected: str = "an array") -> Sequence[Any]:
    """A field read as a list: its items (none when it is absent or null)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise Malformed(field, expected, value)
    return value


def obj(value: Any, field: str) -> Mapping[str, Any]:
    """A value read as an object (a message, a block, a call)."""
    if not isinstance(value, Mapping):
        raise Malformed(field, "an object", value)
    return value
