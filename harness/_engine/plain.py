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
from collections.abc import Mapping
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
    # agent code, so the abstract-class checks below (each a metaclass call) are for the rest.
    if kind is str:
        return value if len(value) <= MAX_TEXT else plain_text(value)
    if value is None or kind is bool or kind is int:
        return value
    budget = budget or _Budget()
    if kind is not dict and kind is not list:
        if isinstance(value, int):
            return int.__index__(value)
        if isinstance(value, float):
            number = float.__float__(value)
            return number if math.isfinite(number) else str(number)  # JSON has no NaN or Infinity
        if isinstance(value, str):
            return plain_text(value)
    if depth >= MAX_DEPTH:
        return "..."
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        items = dict.items(value) if isinstance(value, dict) else value.items()
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
    if kind is list or isinstance(value, (list, tuple)):
        seq = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
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
    return plain_text(value)
