"""Plain copies of what an agent hands the harness: builtin types only, bounded in size.

An agent's objects can run code of their own when read (a ``str`` subclass's ``__str__``, a
``dict`` subclass's ``get``, an object's ``__repr__``). The engine copies them into plain
``str``/``int``/``float``/``bool``/``None``/``dict``/``list`` while the watchdog still watches
the run, so nothing the harness does later (the trace, the reports, the terminal) calls into
agent code. Text keeps every character: a lone surrogate stays in the copy, and the writers
escape it (``toolchaos._internal.trace``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

MAX_ITEMS = 10_000  # containers' items copied in all; the rest is dropped with a marker
MAX_DEPTH = 20
MAX_TEXT = 100_000  # characters of one string


class _Budget:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_ITEMS


_TYPE_NAME = type.__dict__["__name__"]  # the descriptor itself: reading it runs no metaclass code


def type_name(value: Any) -> str:
    """The name of ``value``'s type, read from the type's own slot.

    ``type(value).__name__`` goes through the type's metaclass, whose ``__getattribute__`` an
    agent can write (to spin or raise); this does not.
    """
    return str.__str__(_TYPE_NAME.__get__(type(value), type))


def plain_text(value: Any) -> str:
    """A plain ``str`` of ``value``, bounded; a ``str`` subclass is copied without calling its methods."""
    text = str.__str__(value) if isinstance(value, str) else str(value)
    if type(text) is not str:  # a __str__ returning a str subclass
        text = str.__str__(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... ({len(text) - MAX_TEXT:,} more characters)"


def plain(value: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """``value`` as plain JSON-able builtins (numbers finite or as text, mapping keys as text)."""
    kind = type(value)
    # Exact builtins first: they are most of what agents return, and copying them runs no
    # agent code, so the abstract-class checks of _plain_other (each a metaclass call) are for the rest.
    if kind is str:
        return value if len(value) <= MAX_TEXT else plain_text(value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is float:
        return value if math.isfinite(value) else str(value)  # JSON has no NaN or Infinity
    if kind is dict and depth < MAX_DEPTH:
        return _copy_mapping(dict.items(value), depth, budget or _Budget())
    if kind is list and depth < MAX_DEPTH:
        return _copy_sequence(list.__iter__(value), depth, budget or _Budget())
    return _plain_other(value, depth, budget or _Budget())


def _plain_other(value: Any, depth: int, budget: _Budget) -> Any:
    """``plain`` of what is not an exact builtin: subclasses, other mappings and sequences, any other object.

    Each read goes through the builtin's own slot (``int.__index__``, ``dict.items``, ...), so an
    override in the agent's subclass is not called; what is none of these is copied as its text.
    """
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else str(number)
    if isinstance(value, str):
        return plain_text(value)
    if depth >= MAX_DEPTH:
        return "..."
    if isinstance(value, Mapping):
        return _copy_mapping(dict.items(value) if isinstance(value, dict) else value.items(), depth, budget)
    if isinstance(value, (list, tuple)):
        return _copy_sequence(list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value), depth, budget)
    return plain_text(value)


def _copy_mapping(items: Iterable[tuple[Any, Any]], depth: int, budget: _Budget) -> dict[str, Any]:
    """A mapping's items copied, keys as text, until the run's budget of items is spent."""
    out: dict[str, Any] = {}
    for k, v in items:
        budget.left -= 1
        if budget.left < 0:
            out["..."] = "(truncated)"
            break
        t = type(v)  # an exact short str, int, bool or None is its own copy: no call for it
        out[k if type(k) is str and len(k) <= MAX_TEXT else plain_text(k)] = (
            v if (t is str and len(v) <= MAX_TEXT) or v is None or t is bool or t is int
            else plain(v, depth + 1, budget))
    return out


def _copy_sequence(seq: Iterable[Any], depth: int, budget: _Budget) -> list[Any]:
    """A list's or tuple's items copied into a list, until the run's budget of items is spent."""
    copied: list[Any] = []
    for v in seq:
        budget.left -= 1
        if budget.left < 0:
            copied.append("...")
            break
        t = type(v)
        copied.append(v if (t is str and len(v) <= MAX_TEXT) or v is None or t is bool or t is int
                      else plain(v, depth + 1, budget))
    return copied
