"""Located plain data: values from a scenario file that remember where they were written.

``YMap``/``YList`` are a ``dict``/``list`` that also keep the ``Span`` (line and column)
of every key and value, so a ``ScenarioError`` (``toolchaos.errors``) can render
``file:line:col: message`` with the source line and a caret under the offending text.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Span(NamedTuple):
    """Where a YAML node sits: 1-based line and column of its start and end."""

    line: int
    col: int
    end_line: int
    end_col: int


NOWHERE = Span(1, 1, 1, 1)


class YMap(dict[Any, Any]):
    """A mapping from a YAML file, with the span of the whole node, each key and each value."""

    __slots__ = ("key_spans", "span", "value_spans")

    def __init__(self, *args: Any, span: Span = NOWHERE, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.span = span
        self.key_spans: dict[Any, Span] = {}
        self.value_spans: dict[Any, Span] = {}


class YList(list[Any]):
    """A sequence from a YAML file, with the span of the node and of each item."""

    __slots__ = ("item_spans", "span")

    def __init__(self, *args: Any, span: Span = NOWHERE) -> None:
        super().__init__(*args)
        self.span = span
        self.item_spans: list[Span] = []


def plain(value: Any) -> Any:
    """A copy of located data as plain dicts and lists (what the harness constructors get)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def short(value: Any, limit: int = 60) -> str:
    text = repr(plain(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"
