"""Merging located data: a variant's fields over the scenario's (``tools`` and ``budgets`` per
key), a restart's tool overrides over the scenario's tools. Every merged value keeps the
span it was written at, so errors still point into the file."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from toolchaos.scenario._context import Context
from toolchaos.scenario._spans import YMap
from toolchaos.scenario._spec import VariantSpec

VARIANT_MERGE = {"tools": 2, "budgets": 1, "ceiling": 1, "world": 1}


def variant_roots(root: YMap, variants: Sequence[VariantSpec], ctx: Context) -> Iterator[tuple[str, YMap, int]]:
    """Each variant's id, the document it makes (its fields over the scenario's) and its line."""
    raw_variants = root["variants"]
    base = without(root, "variants")
    seen: dict[str, int] = {}
    for i, variant in enumerate(variants):
        line = raw_variants.item_spans[i].line
        if variant.id in seen:
            raise ctx.error(f"variant id {variant.id!r} is used twice (first at line {seen[variant.id]})",
                            ["variants", i, "id"])
        seen[variant.id] = line
        yield variant.id, merge(base, without(raw_variants[i], "id"), VARIANT_MERGE), line


def merge(base: Any, over: Any, depth: int | Mapping[str, int]) -> Any:
    """``over`` on top of ``base``, merging mappings ``depth`` levels deep (per key at the top
    when ``depth`` is a mapping). Every value keeps the span it was written at."""
    if not isinstance(base, YMap) or not isinstance(over, YMap) or depth == 0:
        return over
    out = YMap(base, span=over.span)
    out.key_spans, out.value_spans = dict(base.key_spans), dict(base.value_spans)
    for k, v in over.items():
        d = depth.get(k, 0) if isinstance(depth, Mapping) else depth - 1
        out[k] = merge(base[k], v, d) if k in base else v
        out.key_spans[k], out.value_spans[k] = over.key_spans[k], over.value_spans[k]
    return out


def without(node: YMap, key: str) -> YMap:
    out = YMap({k: v for k, v in node.items() if k != key}, span=node.span)
    out.key_spans = {k: s for k, s in node.key_spans.items() if k != key}
    out.value_spans = {k: s for k, s in node.value_spans.items() if k != key}
    return out


def with_tool_overrides(root: YMap, restart: YMap) -> YMap:
    """The scenario with a restart's ``tools:`` merged into its own (per tool, per key)."""
    over = YMap({"tools": restart["tools"]}, span=restart.span)
    over.key_spans["tools"], over.value_spans["tools"] = restart.key_spans["tools"], restart.value_spans["tools"]
    merged: YMap = merge(root, over, {"tools": 2})
    return merged
