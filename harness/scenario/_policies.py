"""A scenario's ``policy:`` (and ``restart.policy``): a registered policy (``toolchaos.policies.POLICIES``)
with its parameters, or ``package.module:attr``; validated when the file loads, built afresh
for every run.

What the registry declares drives it: the parameter names (unknown ones get a "did you
mean"), the first parameter (``stubborn: fetch_invoice``), a parameter typed ``Policy``
(a nested policy: ``ignores_refusals: {stubborn: {...}}``) and one typed ``Path`` (a file,
relative to the scenario, part of its content hash). A policy that reads a file is built
once, now, where the file's errors point into the scenario, and each run gets a copy:
a fuzz run of a hundred examples does not parse the log a hundred times.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolchaos.errors import did_you_mean
from toolchaos.fake_tools import FakeTool
from toolchaos.fake_tools.registry import Kind
from toolchaos.policies import POLICIES, as_policy, known_calls, tools_of
from toolchaos.scenario._context import Context, import_ref, is_ref, one_key, registered, try_build
from toolchaos.scenario._locate import find_scalar, subtree
from toolchaos.scenario._spans import Span, YMap, plain, short


def build_policy(value: Any, ctx: Context, where: list[Any], root: Any = None) -> Callable[[], Any]:
    """Validate a policy spec now; return a builder of fresh instances."""
    name, raw = one_key(value, ctx, where, "policy", POLICIES, root)
    at = [*where, name] if isinstance(value, dict) else where
    if is_ref(name):
        return _custom(name, raw, ctx, at, root)
    kind = registered(POLICIES, name, "policy", ctx, where, at, value, root)
    kwargs, positional = _arguments(kind, raw, ctx, at, root)
    inner = {k: build_policy(v, ctx, at if positional else [*at, k], root) for k, v in kwargs.items()
             if _takes_policy(kind, k)}
    plain_kwargs = {k: plain(v) for k, v in kwargs.items() if k not in inner}
    reads = _resolve_files(kind, plain_kwargs, ctx)

    def build() -> Any:
        return kind.build(**plain_kwargs, **{k: b() for k, b in inner.items()})

    built = try_build(build, ctx, at, f"policy {name!r}", root, kwargs=kwargs, positional=positional)
    return functools.partial(copy.copy, built) if reads else build


def _custom(name: str, raw: Any, ctx: Context, at: list[Any], root: Any) -> Callable[[], Any]:
    """A ``package.module:attr`` policy: a class or factory (called with the parameters), or a policy."""
    obj = import_ref(name, ctx, at, "policy", root)
    params = plain(raw) if raw is not None else None
    if params is not None and not isinstance(params, dict):
        raise ctx.error(f"policy {name!r}: parameters must be a mapping, got {short(raw)}", at, root=root)

    def custom() -> Any:
        if params:
            made = obj(**params)
        elif inspect.isclass(obj):
            made = obj()
        else:
            made = obj
        return as_policy(made)

    try_build(custom, ctx, at, f"policy {name!r}", root)
    return custom


def _takes_policy(kind: Kind[Any], name: str) -> bool:
    param = kind.param(name)
    return param is not None and param.names("Policy")


def _arguments(kind: Kind[Any], raw: Any, ctx: Context, at: list[Any], root: Any) -> tuple[dict[str, Any], bool]:
    """The parameters by name, and whether the value was the first one alone (``stubborn: fetch_invoice``)."""
    first = kind.first.name if kind.first is not None else None
    # A wrapper written `ignores_refusals: {stubborn: {...}}`: the mapping is the inner policy.
    wraps = (first is not None and _takes_policy(kind, first) and isinstance(raw, dict) and len(raw) == 1
             and next(iter(raw)) not in kind.param_names)
    if raw is None:
        kwargs: dict[str, Any] = {}
    elif isinstance(raw, dict) and not wraps:
        kwargs = dict(raw)
    elif first is not None:
        kwargs = {first: raw}
    else:
        raise ctx.error(f"policy {kind.name!r} takes named parameters", at, root=root)
    for k in kwargs:
        if k not in kind.param_names:
            raise ctx.error(f"policy {kind.name!r}: unknown parameter {k!r}{did_you_mean(k, kind.param_names)} "
                            f"(known: {', '.join(kind.param_names)})", [*at, k], key=True, root=root)
    positional = first is not None and first in kwargs and not (isinstance(raw, dict) and first in raw)
    return kwargs, positional


def _resolve_files(kind: Kind[Any], kwargs: dict[str, Any], ctx: Context) -> list[Path]:
    """Make the files the policy names relative to the scenario's folder; they are part of its hash."""
    files = []
    for param in kind.params:
        if param.names("Path") and isinstance(kwargs.get(param.name), str):
            # Lexically, not Path.resolve(): the path is checked when it is read, where a symlink
            # loop or a NUL byte becomes a located error rather than a RuntimeError here.
            kwargs[param.name] = os.path.abspath(os.path.join(ctx.base, kwargs[param.name]))
            files.append(Path(kwargs[param.name]))
    ctx.depends.extend(files)
    return files


def check_policy_tools(build: Callable[[], Any], tools: Sequence[FakeTool], ctx: Context, where: list[Any],
                       root: Any) -> None:
    """The policy calls only tools the scenario defines."""
    names = {t.name for t in tools}
    used = tools_of(build())
    for tool in sorted(used - names):
        span = find_scalar(subtree(root, where), tool)
        raise ctx.error(f"the policy calls the tool {tool!r}, which this scenario does not define"
                        f"{did_you_mean(tool, names)} (tools: {', '.join(sorted(names))})", where, span=span,
                        root=root)


def check_policy_args(build: Callable[[], Any], tools: Sequence[FakeTool], ctx: Context, where: list[Any],
                      root: Any) -> None:
    """The arguments the policy will send pass the schema of a tool with faults: else none of them could fire.

    Only the calls whose arguments the policy knows before the run (``known_calls``); the others
    are caught when they run (``faults_fired``). A tool without faults is left alone: sending it
    invalid arguments may be what the scenario tests (a PRECONDITION the runtime must not resend).
    """
    by_name = {t.name: t for t in tools}
    for tool_name, args in known_calls(build()):
        tool = by_name.get(tool_name)
        if tool is None or not _has_faults(tool):
            continue
        bad = tool.validate(args)
        if bad is None:
            continue
        params = [str(p) for p in (tool.parameters.get("properties") or {})]
        strays = [k for k in args if k not in params]
        hints = "".join(f"; {k!r} is not one of its parameters{did_you_mean(k, params)}" for k in strays)
        node = subtree(root, where)
        span = next((sp for k in strays if (sp := _key_span(node, k)) is not None), None) or find_scalar(node, tool_name)
        raise ctx.error(f"the policy calls {tool_name} with {short(args)}, which its argument schema rejects "
                        f"({bad.message}{hints}): every such call would fail before {tool_name}'s faults are "
                        f"read, so the scenario would test none of them", where, span=span, root=root)


def _has_faults(tool: FakeTool) -> bool:
    return bool(tool.schedule.rules) or tool.schedule.default.kind != "ok"


def _key_span(node: Any, key: str) -> Span | None:
    """Where ``key`` is written as a mapping key under ``node`` (a misspelled argument name)."""
    if isinstance(node, YMap):
        if key in node.key_spans:
            return node.key_spans[key]
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    return next((sp for child in children if (sp := _key_span(child, key)) is not None), None)
