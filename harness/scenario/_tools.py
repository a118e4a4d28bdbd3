"""A scenario's ``tools:``: catalogue tools by name, inline tools with ``parameters:``, each with
its fault schedule, built by ``toolchaos.fake_tools`` (the one validation path). Its
``DefinitionError`` names a field; it becomes a ``ScenarioError`` at that field in the file."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolchaos.errors import ScenarioError, did_you_mean
from toolchaos.fake_tools import RULE_KEYS, DefinitionError, FakeTool, catalogue, fake_tool
from toolchaos.scenario._context import Context
from toolchaos.scenario._locate import exact, holder_of, locate, split_path, subtree
from toolchaos.scenario._spans import Span, plain
from toolchaos.scenario._spec import ToolSpec, WritesSpec

_EMPTY_TOOL = ToolSpec.model_validate({})
_INLINE_ONLY = ("description", "side_effect", "idempotency_key", "volatile", "writes", "reads")


def build_tools(specs: Mapping[str, ToolSpec | None], ctx: Context, where: Sequence[Any],
                root: Any = None) -> tuple[FakeTool, ...]:
    root = ctx.root if root is None else root
    return tuple(build_tool(str(name), spec or _EMPTY_TOOL, ctx, [*where, name], root) for name, spec in specs.items())


def build_tool(name: str, spec: ToolSpec, ctx: Context, where: list[Any], root: Any) -> FakeTool:
    try:
        return _make(name, spec, ctx, where, root)
    except DefinitionError as exc:
        raise _definition_error(exc, name, ctx, where, root) from None
    except ScenarioError:
        raise
    except Exception as exc:  # a constructor tripped on a value it did not expect: still the file's fault
        raise ctx.error(f"tool {name!r}: invalid definition ({type(exc).__name__}: {exc})", where, key=True,
                        root=root) from None


def _make(name: str, spec: ToolSpec, ctx: Context, where: list[Any], root: Any) -> FakeTool:
    faults, default, delivery = plain(spec.faults), plain(spec.default), spec.delivery or "return"
    given = {"idempotency": spec.idempotency, "honoured_after_applied": spec.honoured_after_applied,
             "idempotency_ttl": spec.idempotency_ttl}
    api: dict[str, Any] = {k: v for k, v in given.items() if v is not None}  # how the API treats keys
    if spec.parameters is not None:
        writes = spec.writes.model_dump() if isinstance(spec.writes, WritesSpec) else spec.writes
        return fake_tool(name, spec.description or "", plain(spec.parameters), side_effect=bool(spec.side_effect),
                         idempotency_key=spec.idempotency_key, volatile=spec.volatile, delivery=delivery,
                         faults=faults, default=default, writes=writes,
                         reads=spec.reads.model_dump() if spec.reads is not None else None, **api)
    if name not in catalogue.NAMES:
        raise ctx.error(f"tool {name!r} is not in the catalogue{did_you_mean(name, catalogue.NAMES)}; "
                        f"to define a tool inline give it `parameters:` (catalogue: "
                        f"{', '.join(catalogue.NAMES)})", where, key=True, root=root)
    for f in _INLINE_ONLY:
        if getattr(spec, f) is not None:
            raise ctx.error(f"tool {name!r}: {f!r} is only for tools defined inline (with `parameters:`); "
                            f"the catalogue tool has its own", [*where, f], key=True, root=root)
    return catalogue.get(name, faults, default=default, delivery=delivery, **api)


def _definition_error(exc: DefinitionError, name: str, ctx: Context, where: list[Any], root: Any) -> ScenarioError:
    path = split_path(exc.field)
    problem = exc.problem
    kind = re.search(r"unknown fault kind '([^']*)'", problem)
    names_key = problem.startswith(("unknown parameter", "unknown rule key", "unknown fault kind"))
    span = _definition_span(root, where, path, kind.group(1) if kind else None, names_key)
    if kind and "did you mean" not in problem:
        close = difflib.get_close_matches(kind.group(1), RULE_KEYS, n=1, cutoff=0.6)
        if close:
            problem += f"; did you mean the rule key {close[0]!r}? (a rule needs an `outcome:`)"
    return ctx.error(f"tool {name!r}: {exc.field}: {problem}", [*where, *path], key=names_key, span=span, root=root)


def _definition_span(root: Any, where: list[Any], path: list[str | int], unknown_kind: str | None,
                     names_key: bool) -> Span | None:
    """Where the field a ``DefinitionError`` names is written (None: let ``locate`` find the nearest)."""
    span = None if unknown_kind is not None else exact(root, [*where, *path], key=names_key)
    if span is None and path and path[0] == "then":  # a nested fault reports its path from the inner fault
        holder = holder_of(subtree(root, where), "then")
        span = locate(holder, path, key=names_key) if holder is not None else None
    if span is None and names_key:  # point at the unknown name itself: a key somewhere in this tool
        unknown_name = unknown_kind if unknown_kind is not None else path[-1] if path else None
        holder = holder_of(subtree(root, where), unknown_name) if isinstance(unknown_name, str) else None
        span = holder.key_spans[unknown_name] if holder is not None else None
    return span
