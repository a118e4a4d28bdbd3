"""A scenario's ``expect:`` (and ``restart.expect_before``): registered invariants
(``toolchaos.invariants.INVARIANTS``) with their parameters, or ``package.module:attr``,
each with an optional ``why:`` beside it (why it is that bound).

The registry declares the parameters (names, the first one for ``max_side_effects: 1``,
a variadic one for ``terminal_state: [FAILED, NEEDS_HUMAN]``), the checks their plain
values must pass (the constructors trust their types) and what a kind cannot do
without (``bounded`` needs a bound). Cross-checks no single invariant can make happen
here: invariants naming tools the scenario does not define, bounds that cannot both be
met (completed needs more calls than bounded allows), ``max_side_effects`` on a tool
without side effects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from toolchaos.errors import did_you_mean
from toolchaos.fake_tools import FakeTool
from toolchaos.fake_tools.registry import Kind
from toolchaos.invariants import INVARIANTS, Invariant, Violation
from toolchaos.scenario._context import Context, import_ref, is_ref, one_key, registered, signature, try_build
from toolchaos.scenario._locate import dotted, locate
from toolchaos.scenario._scenario import Expectation
from toolchaos.scenario._spans import plain, short


def build_expect(items: Sequence[Any], ctx: Context, where: list[Any], phase: str,
                 root: Any = None) -> list[Expectation]:
    out = []
    for i, item in enumerate(items):
        at = [*where, i]
        span = locate(ctx.root if root is None else root, at)
        why = _why(item, ctx, at, root)
        inv = build_invariant(item, ctx, at, root)
        text = ctx.source_of(span, item) if span is not None else str(plain(item))
        out.append(Expectation(inv, text, span.line if span else None, phase, why))
    return out


def _why(item: Any, ctx: Context, at: list[Any], root: Any) -> str | None:
    """An expectation's ``why:`` beside the invariant: why it is that bound, whitespace folded."""
    if not isinstance(item, dict) or "why" not in item:
        return None
    why = item["why"]
    if not isinstance(why, str) or not why.strip():
        raise ctx.error(f"{dotted(at)}.why: expected text saying why the expectation is what it is, "
                        f"got {short(why)}", [*at, "why"], root=root)
    return " ".join(why.split())


def build_invariant(value: Any, ctx: Context, at: list[Any], root: Any) -> Any:
    name, raw = one_key(value, ctx, at, "invariant", INVARIANTS, root, beside=("why",))
    inner = [*at, name] if isinstance(value, dict) else at
    if is_ref(name):
        return _custom(name, raw, ctx, inner, root)
    kind = registered(INVARIANTS, name, "invariant", ctx, at, inner, value, root)
    args, kwargs = _arguments(kind, raw, ctx, inner, root)
    _check_values(kind, args, kwargs, ctx, inner, root)
    return try_build(lambda: kind.build(*args, **kwargs), ctx, inner, f"invariant {name!r}", root, kwargs=kwargs)


def _custom(name: str, raw: Any, ctx: Context, inner: list[Any], root: Any) -> Any:
    """A ``package.module:attr`` invariant: a class, a factory, an invariant or a check function."""
    obj = import_ref(name, ctx, inner, "invariant", root)
    params = plain(raw)

    def make() -> Any:
        if params is not None:
            if not isinstance(params, dict):
                raise ValueError(f"parameters must be a mapping, got {params!r}")
            return obj(**params)
        if inspect.isclass(obj):
            return obj()
        if hasattr(obj, "check"):
            return obj
        if _required_params(obj) == 0:  # a factory: call it for the invariant
            return obj()
        return FunctionInvariant(obj, name)  # a check: (result) -> violations | bool

    inv = try_build(make, ctx, inner, f"invariant {name!r}", root)
    if not callable(getattr(inv, "check", None)):
        raise ctx.error(f"invariant {name!r} has no check(result) method", inner, root=root)
    return inv


def _arguments(kind: Kind[Any], raw: Any, ctx: Context, at: list[Any], root: Any) -> tuple[list[Any], dict[str, Any]]:
    """Positional and named arguments: a mapping names them; any other value is the first one (or the list
    of a variadic one)."""
    var = next((p.name for p in kind.params if p.variadic), None)
    if raw is None:
        return [], {}
    if isinstance(raw, dict):
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for k, v in raw.items():
            if k not in kind.param_names:
                raise ctx.error(f"invariant {kind.name!r}: unknown parameter {k!r}{did_you_mean(k, kind.param_names)} "
                                f"(known: {', '.join(kind.param_names) or 'none'})", [*at, k], key=True, root=root)
            if k == var:
                args.extend(plain(v) if isinstance(v, list) else [plain(v)])
            else:
                kwargs[k] = plain(v)
        return args, kwargs
    if not kind.params:
        raise ctx.error(f"invariant {kind.name!r} takes no parameters; write it as `- {kind.name}`", at, root=root)
    if var is not None:
        return (plain(raw) if isinstance(raw, list) else [plain(raw)]), {}
    return [plain(raw)], {}


def _check_values(kind: Kind[Any], args: list[Any], kwargs: dict[str, Any], ctx: Context, at: list[Any],
                  root: Any) -> None:
    """The values pass their parameters' checks; a kind that needs some parameter has one."""
    try:
        bound = signature(kind.build).bind_partial(*args, **kwargs)
    except TypeError as exc:
        raise ctx.error(f"invariant {kind.name!r}: bad parameters ({exc})", at, root=root) from None
    for name, value in bound.arguments.items():
        param = kind.param(name)
        check = param.check if param is not None else None
        if check is not None and not check.accepts(value):
            raise ctx.error(f"invariant {kind.name!r}: {name}: expected {check.expects}, got {short(value)}",
                            [*at, name] if check.at_value else at, root=root)
    needs = kind.extra.get("needs")
    if needs and not bound.arguments:
        raise ctx.error(f"invariant {kind.name!r} needs {needs}", at, root=root)


def _required_params(fn: Any) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


class FunctionInvariant:
    """A plain function ``(result) -> violations`` used as an invariant (``module:attr`` in ``expect``)."""

    def __init__(self, fn: Callable[[Any], Any], name: str) -> None:
        self.fn, self.name = fn, name

    def check(self, result: Any) -> list[Any]:
        out = self.fn(result)
        if out is None or out is True:
            return []
        if out is False:
            return [Violation(self.name, "the check to hold", "it returned false")]
        return list(out)

    def __repr__(self) -> str:
        return f"{self.name}()"


# -- cross-checks --


def cross_check(expect: list[Expectation], tools: Sequence[FakeTool], ctx: Context, where: list[Any],
                root: Any) -> None:
    by_name: dict[str, list[tuple[int, Any]]] = {}
    for i, e in enumerate(expect):
        by_name.setdefault(e.name, []).append((i, e.invariant))
    _check_named_tools(expect, {t.name for t in tools}, ctx, where, root)
    for i, comp in by_name.get("completed", []):
        _check_completion_bounds(i, comp, by_name, expect, ctx, where, root)
    for i, ms in by_name.get("max_side_effects", []):
        if ms.tool is not None and not next(t for t in tools if t.name == ms.tool).side_effect:
            raise ctx.error(f"invariant 'max_side_effects' on {ms.tool!r}, a tool without side effects: it can "
                            f"never break (give the tool `side_effect: true`, or drop the invariant)",
                            [*where, i, "max_side_effects", "tool"], root=root)


def _check_named_tools(expect: list[Expectation], names: set[str], ctx: Context, where: list[Any],
                       root: Any) -> None:
    for i, e in enumerate(expect):
        named = e.invariant.named_tools() if isinstance(e.invariant, Invariant) else {}
        for tool, path in named.items():
            if tool not in names:
                raise ctx.error(f"invariant {e.name!r} names the tool {tool!r}, which this scenario does not define"
                                f"{did_you_mean(tool, names)} (tools: {', '.join(sorted(names))})",
                                [*where, i, e.name, *path], key=True, root=root)


def _check_completion_bounds(i: int, comp: Any, by_name: dict[str, list[tuple[int, Any]]], expect: list[Expectation],
                             ctx: Context, where: list[Any], root: Any) -> None:
    """``completed`` asks for no more than ``bounded`` and ``terminal_state`` allow."""
    need = dict(comp.successes)
    for j, b in by_name.get("bounded", []):
        for tool, n in need.items():
            cap = b.per_tool.get(tool)
            if cap is not None and n > cap:
                raise ctx.error(f"bounds cannot both be met: completed needs at least {n} successful calls of "
                                f"{tool}, but bounded (line {expect[j].line}) allows at most {cap} executions "
                                f"of it", [*where, i, "completed", "successes", tool], root=root)
        if b.executions is not None and sum(need.values()) > b.executions:
            raise ctx.error(f"bounds cannot both be met: completed needs at least {sum(need.values())} "
                            f"successful calls, but bounded (line {expect[j].line}) allows at most "
                            f"{b.executions} executions", [*where, i], root=root)
    for j, ts in by_name.get("terminal_state", []):
        if "COMPLETED" not in ts.states:
            raise ctx.error(f"bounds cannot both be met: completed requires the state COMPLETED, but "
                            f"terminal_state (line {expect[j].line}) allows only {', '.join(ts.states)}",
                            [*where, i], root=root)
