"""Finding a place in located data: the span a dotted path (``faults[0].outcome.after``)
points at, leniently, so an error can point at the file where the fault lies."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from toolchaos.scenario._spans import Span, YList, YMap


def split_path(path: str) -> list[str | int]:
    """``faults[0].outcome.after`` -> ``['faults', 0, 'outcome', 'after']``."""
    out: list[str | int] = []
    for part in re.split(r"\.(?![^\[]*\])", path):
        for m in re.finditer(r"([^\[\]]+)|\[(\d+)\]", part):
            if m.group(1) is not None:
                out.append(m.group(1))
            else:
                out.append(int(m.group(2)))
    return out


def locate(root: Any, path: Sequence[Any], key: bool = False) -> Span | None:
    """The span of the deepest value found along ``path`` (lenient: skips segments it cannot follow).

    ``key``: when the last segment is a key found in a mapping, the span of the key itself.
    A segment missing from a one-key mapping (a fault or policy written ``{kind: params}``)
    descends into that one value and tries again.
    """
    cur, span = root, getattr(root, "span", None)
    i = 0
    parts = list(path)
    while i < len(parts):
        part = parts[i]
        if isinstance(cur, YMap):
            if part in cur:
                span = cur.key_spans[part] if key and i == len(parts) - 1 else cur.value_spans[part]
                cur = cur[part]
                i += 1
                continue
            if len(cur) == 1:
                (only,) = cur
                span, cur = cur.value_spans[only], cur[only]
                continue
        elif isinstance(cur, YList) and isinstance(part, int) and 0 <= part < len(cur):
            span, cur = cur.item_spans[part], cur[part]
            i += 1
            continue
        i += 1
    return span


def exact(root: Any, path: Sequence[Any], key: bool) -> Span | None:
    """The span at exactly ``path`` (None when the path is not literally in the file)."""
    node, span = root, None
    for i, part in enumerate(path):
        if isinstance(node, YMap) and part in node:
            span = node.key_spans[part] if key and i == len(path) - 1 else node.value_spans[part]
            node = node[part]
        elif isinstance(node, YList) and isinstance(part, int) and 0 <= part < len(node):
            span, node = node.item_spans[part], node[part]
        else:
            return None
    return span


def holder_of(node: Any, key: str) -> YMap | None:
    """The first mapping under ``node`` that has ``key``."""
    if isinstance(node, YMap):
        if key in node:
            return node
        items: Iterable[Any] = node.values()
    elif isinstance(node, YList):
        items = node
    else:
        return None
    for v in items:
        found = holder_of(v, key)
        if found is not None:
            return found
    return None


def find_scalar(root: Any, value: Any) -> Span | None:
    """The span of the first scalar equal to ``value`` under ``root`` (to point at a tool name)."""
    if isinstance(root, YMap):
        for k, v in root.items():
            if v == value and not isinstance(v, (dict, list)):
                return root.value_spans[k]
            found = find_scalar(v, value)
            if found:
                return found
    elif isinstance(root, YList):
        for i, v in enumerate(root):
            if v == value and not isinstance(v, (dict, list)):
                return root.item_spans[i]
            found = find_scalar(v, value)
            if found:
                return found
    return None


def subtree(root: Any, where: Sequence[Any]) -> Any:
    node = root
    for part in where:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            break
    return node


def end_of(value: Any, span: Span) -> Span:
    """The span of the last scalar inside a value: where its text really ends (a block node's
    own end mark is the start of the next token, often on the next line)."""
    if isinstance(value, YMap) and value:
        last = list(value)[-1]
        return end_of(value[last], value.value_spans[last])
    if isinstance(value, YList) and value:
        return end_of(value[-1], value.item_spans[-1])
    return span


def dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the scenario"
