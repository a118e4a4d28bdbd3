"""Fake tools as an SDK agent meets them: passed in, or patched in by import path.

- **Passed in**: ``env.tools`` are plain callables (``tool(**arguments)``) with the fake
  tool's name, description and JSON Schema, and ``env.openai_tools`` /
  ``env.responses_tools`` / ``env.anthropic_tools`` declare them to each API; ``env.call(name, args)``
  dispatches a model's tool call. The framework adapters build their own tool objects
  from the same callables.
- **Patched by import path**: ``patch={"myapp.tools:lookup_invoice": "fetch_invoice"}``
  replaces the attribute for the run (and restores it afterwards) with a function of the
  same signature, name and docstring that executes the fake tool with the arguments it
  was called with. Patch the name where the agent *looks it up* (as with
  ``unittest.mock.patch``): a tool object built at import time keeps the function it
  was built with, so patch the function it calls, or build the agent inside the run.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from toolchaos.errors import PatchError
from toolchaos.fake_tools import FakeTool


class WireTool:
    """A fake tool as a plain callable: ``tool(**arguments)`` executes it in the run."""

    def __init__(self, spec: FakeTool, toolbox: Any) -> None:
        self.name = spec.name
        self.description = spec.description or spec.name
        self.parameters: dict[str, Any] = dict(spec.parameters)
        self.side_effect = spec.side_effect
        self._toolbox = toolbox
        self.__name__ = spec.name
        self.__doc__ = self.description

    def __call__(self, **arguments: Any) -> Any:
        return self._toolbox.call(self.name, arguments)

    def call(self, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> Any:
        return self._toolbox.call(self.name, dict(arguments or {}), call_id=call_id)

    @property
    def openai(self) -> dict[str, Any]:
        """Chat Completions declaration."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    @property
    def responses(self) -> dict[str, Any]:
        """Responses API declaration."""
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": self.parameters, "strict": False}

    @property
    def anthropic(self) -> dict[str, Any]:
        """Anthropic Messages declaration."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def __repr__(self) -> str:
        return f"<WireTool {self.name}>"


def _resolve(target: str) -> tuple[Any, str, Any]:
    if ":" not in target:
        raise PatchError(f"patch target {target!r}: expected 'package.module:attribute'")
    module, _, attr = target.partition(":")
    try:
        owner: Any = importlib.import_module(module)
    except ImportError as exc:
        raise PatchError(f"patch target {target!r}: cannot import {module!r} ({exc})") from None
    *path, last = attr.split(".")
    for part in path:
        try:
            owner = getattr(owner, part)
        except AttributeError:
            raise PatchError(f"patch target {target!r}: {module!r} has no attribute {attr!r}") from None
    if not hasattr(owner, last):
        raise PatchError(f"patch target {target!r}: {module!r} has no attribute {attr!r}")
    return owner, last, getattr(owner, last)


def replacement(original: Any, tool: str, toolbox: Any) -> Callable[..., Any]:
    """A function like ``original`` (signature, name, docstring, sync or async) that runs the fake tool."""
    try:
        sig: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        sig = None

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if sig is None:
            if args:
                raise TypeError(f"{tool}: call it with keyword arguments (its original signature is unknown)")
            return kwargs
        bound = sig.bind(*args, **kwargs)
        out: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            elif kind is not inspect.Parameter.VAR_POSITIONAL:
                out[name] = value
        return out

    if inspect.iscoroutinefunction(original):
        async def patched_async(*args: Any, **kwargs: Any) -> Any:
            return toolbox.call(tool, arguments(args, kwargs))

        fn: Callable[..., Any] = patched_async
    else:
        def patched(*args: Any, **kwargs: Any) -> Any:
            return toolbox.call(tool, arguments(args, kwargs))

        fn = patched
    if callable(original):
        try:
            fn = functools.wraps(original)(fn)
        except (AttributeError, TypeError):  # pragma: no cover - exotic callables
            pass
    fn.__toolchaos_tool__ = tool  # type: ignore[attr-defined]
    return fn


class Patches:
    """Applied ``module:attr -> fake tool`` patches; ``undo()`` restores the originals."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def apply(self, patch: Mapping[str, Any], toolbox: Any) -> None:
        for target, tool in patch.items():
            name = tool.name if isinstance(tool, FakeTool) else str(tool)
            toolbox.spec(name)  # the fake tool must be in the run (UnknownTool names the known ones)
            owner, attr, original = _resolve(target)
            setattr(owner, attr, replacement(original, name, toolbox))
            self._undo.append((owner, attr, original))

    def undo(self) -> None:
        while self._undo:
            owner, attr, original = self._undo.pop()
            setattr(owner, attr, original)


def check_targets(patch: Mapping[str, Any]) -> None:
    """Resolve every target now, so a typo fails before the run starts."""
    for target in patch:
        _resolve(target)
