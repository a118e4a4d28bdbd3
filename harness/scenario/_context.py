"""What building a scenario's objects shares: the document being built (``Context``, which
turns an error into a located ``ScenarioError``), ``name`` / ``name: {parameters}`` entries,
``module:attr`` references to Python code, and constructor errors read back as the file's."""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolchaos.errors import ScenarioError, UserError, did_you_mean
from toolchaos.fake_tools.registry import Kind, Registry
from toolchaos.scenario._locate import dotted, end_of, locate
from toolchaos.scenario._spans import Span, YMap, short

IMPORTS_HINT = ("scenario files may name Python code only when imports are allowed: set the ini option "
                "`chaos_allow_imports = true` (pytest) or pass `--allow-imports` (toolchaos run)")

signature = functools.lru_cache(maxsize=256)(inspect.signature)


class Context:
    """One scenario document being built: where it came from, and the files it reads."""

    def __init__(self, path: Path | None, text: str, root: YMap, allow_imports: bool) -> None:
        self.path, self.text, self.root, self.allow_imports = path, text, root, allow_imports
        self.base = path.parent if path is not None else Path.cwd()
        self.depends: list[Path] = []  # other files the scenario reads (a recorded log): part of its hash

    def error(self, message: str, where: Sequence[Any] = (), key: bool = False, span: Span | None = None,
              root: Any = None) -> ScenarioError:
        if span is None:
            span = locate(self.root if root is None else root, where, key=key)
        return ScenarioError(message, self.path, span, self.text)

    def source_of(self, span: Span, value: Any = None) -> str:
        """The YAML text of a value (for failure reports), dedented."""
        end = end_of(value, span)
        last = end.end_line if end.end_col > 1 else end.end_line - 1
        chunk = self.text.splitlines()[span.line - 1: max(span.line, last)]
        if not chunk:
            return ""
        indent = span.col - 1
        first = chunk[0]
        out = [first[indent:] if first[:indent].strip() in ("", "-") or first[:indent].rstrip().endswith("-")
               else first.strip()]
        out += [extra[indent:] if extra[:indent].strip() == "" else extra for extra in chunk[1:]]
        while out and (not out[-1].strip() or out[-1].lstrip().startswith("#")):
            out.pop()
        return "\n".join(line.rstrip() for line in out)


def is_ref(name: Any) -> bool:
    """Does a name refer to Python code (``package.module:attr``)?"""
    return isinstance(name, str) and ":" in name and not name.startswith("builtin:")


def import_ref(ref: str, ctx: Context, where: Sequence[Any], what: str, root: Any = None) -> Any:
    """The object a ``package.module:attr`` reference names, where imports are allowed."""
    if not ctx.allow_imports:
        raise ctx.error(f"{what} {ref!r} names Python code; {IMPORTS_HINT}", where, root=root)
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ctx.error(f"{what} {ref!r}: expected 'package.module:attr'", where, root=root)
    try:
        obj: Any = importlib.import_module(module)
    except Exception as exc:  # any import failure is the user's: one line
        raise ctx.error(f"{what} {ref!r}: cannot import {module!r} ({type(exc).__name__}: {exc})", where,
                        root=root) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ctx.error(f"{what} {ref!r}: module {module!r} has no attribute {attr!r}", where, root=root)
        obj = getattr(obj, part)
    return obj


def one_key(value: Any, ctx: Context, where: Sequence[Any], what: str, known: Iterable[str],
            root: Any = None, beside: Sequence[str] = ()) -> tuple[str, Any]:
    """(name, raw parameters) of an entry written ``name`` or ``name: {parameters}``; keys in
    ``beside`` may sit next to the name (an expectation's ``why:``)."""
    if isinstance(value, str):
        return value, None
    names = [k for k in value if k not in beside] if isinstance(value, dict) else []
    if isinstance(value, dict) and len(names) == 1:
        (name,) = names
        if not isinstance(name, str):
            raise ctx.error(f"{dotted(where)}: {what} names are words, got {name!r}", where, root=root)
        return name, value[name]
    known = list(known)
    stray = _stray(value, known, beside)
    if stray is not None:
        raise ctx.error(f"{dotted(where)}: {stray!r} next to the {what}: only {', '.join(beside)} may sit beside it"
                        f"{did_you_mean(stray, beside)}", [*where, stray], key=True, root=root)
    got = "an empty mapping" if isinstance(value, dict) and not value else (
        f"a mapping with {len(value)} keys ({', '.join(map(str, value))})" if isinstance(value, dict) else short(value))
    raise ctx.error(f"{dotted(where)}: expected one {what} written as `name` or `name: {{parameters}}` "
                    f"(known: {', '.join(known)}); got {got}", where, root=root)


def _stray(value: Any, known: Sequence[str], beside: Sequence[str]) -> str | None:
    """A key next to a known name that is neither a name nor allowed beside one (a typo of ``why``)."""
    if not beside or not isinstance(value, dict) or not any(k in known for k in value):
        return None
    return next((str(k) for k in value if k not in known and k not in beside), None)


def try_build(build: Callable[[], Any], ctx: Context, at: list[Any], what: str, root: Any,
              kwargs: Mapping[str, Any] | None = None, positional: bool = False) -> Any:
    """``build()``; what a constructor raises about the file's values is a ``ScenarioError`` at them."""
    try:
        return build()
    except ScenarioError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        msg = msg.removeprefix(f"{what.split()[-1].strip(chr(39))}: ")
        named = exc.field if isinstance(exc, UserError) else None  # the constructor says which parameter
        target = [*at, named] if named is not None and not positional and named in (kwargs or {}) else at
        if isinstance(exc, TypeError):
            msg = re.sub(r"^\w+\.?\w*\(\) ", "", msg)
            msg = f"bad parameters ({msg})"
        elif isinstance(exc, (KeyError, IndexError)):
            msg = f"bad parameters (missing {msg})"
        raise ctx.error(f"{what}: {msg}", target, root=root) from None
    except Exception as exc:  # anything else a constructor raised on the file's values: still the file's fault
        raise ctx.error(f"{what}: bad parameters ({type(exc).__name__}: {exc})", at, root=root) from None


def registered(registry: Registry[Any], name: str, what: str, ctx: Context, where: Sequence[Any], at: list[Any],
               value: Any, root: Any) -> Kind[Any]:
    """The kind registered as ``name``, or a located error listing the registered ones (with "did you mean")."""
    kind = registry.get(name)
    if kind is None:
        raise ctx.error(f"{dotted(where)}: unknown {what} {name!r}{did_you_mean(name, registry)} "
                        f"(known: {', '.join(registry)})", at, key=isinstance(value, dict), root=root)
    return kind
