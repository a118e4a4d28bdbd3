"""The kinds of agent the harness can call, and how a reference names one.

An agent under test is one of five kinds, each driven its own way:

- ``in-process``: ``agent(task, model, tools)``, the in-process contract (``toolchaos.run``);
- ``sdk``: ``agent(task)`` or ``agent(task, env)`` talking to a model through the openai or
  anthropic SDK, its requests answered over HTTP (``toolchaos.wire.run``);
- ``openai-agents``: an ``agents.Agent`` of the OpenAI Agents SDK, run by its ``Runner``;
- ``pydantic-ai``: a ``pydantic_ai.Agent``;
- ``langgraph``: a LangGraph compiled graph (``create_agent``, ``create_react_agent``,
  ``StateGraph(...).compile()``).

A reference is ``builtin:NAME``, ``package.module:attr`` (the kind recognised from the object:
a framework's agent by its type, a function by its signature) or ``KIND:package.module:attr``
(the kind named, e.g. ``sdk:myapp.agent:run``). This module only reads references and objects;
running each kind is the engine's, the wire's and the framework adapters' job
(``toolchaos.adapters.agent_under_test``).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from toolchaos._internal.clock import real_datetime
from toolchaos.errors import AgentCallError, AgentRefError, did_you_mean

IN_PROCESS, SDK = "in-process", "sdk"
KINDS: dict[str, str] = {
    IN_PROCESS: "agent(task, model, tools): the in-process contract",
    SDK: "agent(task) or agent(task, env): an SDK loop, its model answered over HTTP (toolchaos.wire)",
    "openai-agents": "an agents.Agent (OpenAI Agents SDK), run by its Runner",
    "pydantic-ai": "a pydantic_ai.Agent",
    "langgraph": "a LangGraph compiled graph (create_agent, create_react_agent, StateGraph.compile())",
    "process": "a program in any language run as a child process (cmd:COMMAND LINE or preset:NAME, or a "
               "ProcessAgent), its model and tools served over HTTP and MCP (toolchaos.process)",
}
FRAMEWORKS = ("openai-agents", "pydantic-ai", "langgraph")

# (top-level package, class name) anywhere in an object's type hierarchy -> its framework kind.
# Read from the type, so recognising an agent imports no framework.
_FRAMEWORK_TYPES: dict[tuple[str, str], str] = {
    ("agents", "Agent"): "openai-agents",
    ("pydantic_ai", "AbstractAgent"): "pydantic-ai",
    ("langgraph", "Pregel"): "langgraph",
}

# The call form of each kind, for "could not call" messages.
_FORMS = {IN_PROCESS: "agent(task, model, tools)", SDK: "agent(task) or agent(task, env)",
          "openai-agents": "an agents.Agent", "pydantic-ai": "a pydantic_ai.Agent",
          "langgraph": "a LangGraph compiled graph"}
ACCEPTED = ("an agent is " + ", ".join(f"{form} ({kind})" for kind, form in _FORMS.items())
            + "; a reference may name the kind: KIND:package.module:attr")


def split(ref: str) -> tuple[str | None, str]:
    """``(kind, "package.module:attr")`` of a reference; the kind is None when it is not named."""
    parts = ref.split(":")
    if len(parts) == 3:
        kind = parts[0]
        if kind == "process":
            raise AgentRefError(f"agent reference {ref!r}: a process agent is named 'cmd:COMMAND LINE' or "
                                f"'preset:NAME'")
        if kind not in KINDS:
            raise AgentRefError(f"agent reference {ref!r}: unknown agent kind {kind!r}{did_you_mean(kind, KINDS)}; "
                                f"kinds: {', '.join(KINDS)}")
        return kind, f"{parts[1]}:{parts[2]}"
    if len(parts) != 2 or not all(parts):
        raise AgentRefError(f"agent reference {ref!r}: expected 'builtin:NAME', 'package.module:attr' "
                            f"or 'KIND:package.module:attr' (kinds: {', '.join(KINDS)})")
    return None, ref


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


def recognise(obj: Any) -> str:
    """The kind of an agent object: a framework's agent by its type, a callable by its signature.

    A callable that fits neither call form is taken as in-process: calling it then fails at
    the call, which the harness reports as an agent it could not call (with ``ACCEPTED``).
    """
    kind = framework_of(obj)
    if kind is not None:
        return kind
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # not callable, or a builtin without a signature: the call will tell
        return IN_PROCESS
    if env_parameter(obj) is not None:
        return SDK
    if _binds(sig, 3):
        return IN_PROCESS
    return SDK if _binds(sig, 1) or _binds(sig, 2) else IN_PROCESS


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


# Per type and per agent object, what framework_of and label found: the engine asks for both on
# every run (a fuzzer makes thousands). Keyed by id with the object kept beside its answer, so an
# entry is only ever read back for that very object, and no agent type's __hash__ or __eq__ runs.
_KNOWN_LIMIT = 256
_frameworks: dict[int, tuple[type, str | None]] = {}
_labels: dict[int, tuple[Any, str]] = {}


def framework_of(obj: Any) -> str | None:
    """The framework kind of an agent object, from its type alone (no framework is imported)."""
    t = type(obj)
    known = _frameworks.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    found = None
    for cls in t.__mro__:
        found = _FRAMEWORK_TYPES.get((cls.__module__.partition(".")[0], cls.__qualname__))
        if found is not None:
            break
    _remember(_frameworks, id(t), (t, found))
    return found


def _remember(table: dict[int, Any], key: int, entry: Any) -> None:
    if len(table) >= _KNOWN_LIMIT:
        table.clear()
    table[key] = entry


def _binds(sig: inspect.Signature, n: int) -> bool:
    try:
        sig.bind(*range(n))
    except TypeError:
        return False
    return True


def label(agent: Any) -> str:
    """How messages and reports name an agent: its reference as given, else ``module:qualname``."""
    if isinstance(agent, str):
        return agent
    known = _labels.get(id(agent))
    if known is not None and known[0] is agent:
        return known[1]
    cls = agent if inspect.isroutine(agent) or inspect.isclass(agent) else type(agent)
    text = f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', type(agent).__name__)}"
    _remember(_labels, id(agent), (agent, text))
    return text


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
            raise AgentCallError(name, exc, ACCEPTED) from None
        raise
