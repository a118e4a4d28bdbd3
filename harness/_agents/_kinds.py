"""How a reference names an agent, and how an agent is called.

An agent under test is of one of the registered kinds (``toolchaos.kinds``: in-process, sdk,
openai-agents, pydantic-ai, langgraph, process, and any a user registers); the registry
(``_registry``) says how each is recognised and run. A reference is ``builtin:NAME``,
``package.module:attr`` (the kind recognised from the object: a framework's agent by its
type, a function by its signature), ``KIND:package.module:attr`` (the kind named, e.g.
``sdk:myapp.agent:run``) or a kind's own form (``cmd:...``, ``preset:...``). This module reads
references and objects and calls agents; running each kind is its kind module's job.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from toolchaos._agents._registry import accepted, kinds
from toolchaos._agents._registry import recognise as recognise_kind
from toolchaos._plumbing.clock import real_datetime
from toolchaos.errors import AgentCallError, AgentRefError, did_you_mean


class _Helps(Mapping[str, str]):
    """Kind name -> what an agent of that kind is: the registry's, as it is now."""

    def __getitem__(self, name: str) -> str:
        return kinds()[name].help

    def __iter__(self) -> Iterator[str]:
        return iter(kinds())

    def __len__(self) -> int:
        return len(kinds())


KINDS: Mapping[str, str] = _Helps()


def recognise(obj: Any) -> str:
    """The name of the kind of an agent object (see ``_registry.recognise``)."""
    return recognise_kind(obj).name


def import_ref(ref: str) -> Any:
    """The object ``package.module:attr`` names (no kind prefix)."""
    module, _, attr = ref.partition(":")
    try:
        with real_datetime():  # the agent's own imports (LangChain's pydantic.v1) under the installed clock
            obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise AgentRefError(f"agent reference {ref!r}: cannot import {module!r} ({exc})"
                            f"{_module_hint(module, exc)}") from None
    owner = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AgentRefError(f"agent reference {ref!r}: {owner!r} has no attribute {part!r}"
                                f"{did_you_mean(part, _names(obj, part), several=True)}") from None
        owner = f"{owner}:{part}" if owner == module else f"{owner}.{part}"
    return obj


def _names(obj: Any, wanted: str) -> list[str]:
    """What ``obj`` has that a reference could mean: its public names (private ones too when one was asked for)."""
    try:
        names = dir(obj)
    except Exception:  # an object whose __dir__ fails: no suggestion, the message stands without one
        return []
    return [n for n in names if isinstance(n, str) and (wanted.startswith("_") or not n.startswith("_"))]


def _module_hint(module: str, exc: ImportError) -> str:
    """``; did you mean 'pkg.agent'?`` for a misspelled module: its siblings in the package that imported,
    or the top-level modules on the path. Only a module that is not found gets one (not one that failed)."""
    import pkgutil  # an error path only: keeps resolving a correct reference cheap

    missing = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not missing or not module.startswith(missing):
        return ""
    parent, _, leaf = missing.rpartition(".")
    try:
        where = importlib.import_module(parent).__path__ if parent else None
        names = [m.name for m in pkgutil.iter_modules(where)]
    except (ImportError, AttributeError):  # the parent is no package: nothing to list
        return ""
    return did_you_mean(leaf, names, several=True, prefix=f"{parent}." if parent else "")


ENV_MARK = "__toolchaos_takes_env__"  # set by toolchaos.wire.takes_env: "call me as agent(task, env)"


def env_parameter(agent: Any) -> str | None:
    """How an SDK agent asks for the wire's ``Env``, explicitly: the parameter annotated ``toolchaos.wire.Env``
    (its name), or ``""`` for ``@toolchaos.wire.takes_env`` (the second positional argument); else ``None``.

    Never a name match: a parameter merely called ``env`` (a config string, say) is the agent's own.
    """
    if getattr(agent, ENV_MARK, False):
        return ""
    try:
        params = inspect.signature(agent).parameters.values()
    except (TypeError, ValueError):
        return None
    for p in params:
        ann = p.annotation
        name = ann if isinstance(ann, str) else getattr(ann, "__qualname__", "")
        module = "" if isinstance(ann, str) else getattr(ann, "__module__", "")
        if (name in ("Env", "wire.Env", "toolchaos.wire.Env")
                and (isinstance(ann, str) or module.startswith("toolchaos.wire"))):
            return p.name
    return None


def invoke(agent: Any, name: str, *args: Any) -> Any:
    """Call an agent; a ``TypeError`` raised by the call itself, before the agent ran, is an ``AgentCallError``.

    A wrong signature (or an object that is no function at all) fails at the call: its traceback
    ends in this frame. A ``TypeError`` from inside the agent has the agent's frames below this
    one and stays what it is, the agent's own crash.
    """
    try:
        return agent(*args)
    except TypeError as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
            raise AgentCallError(name, exc, accepted()) from None
        raise
