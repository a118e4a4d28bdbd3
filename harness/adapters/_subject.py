"""Any agent under test, resolved to the run of its kind: ``agent_under_test(reference or object)``.

The kind is named in the reference (``sdk:myapp.agent:run``) or recognised from the object
(``toolchaos._agents.KINDS``); each kind runs its own way:

- ``in-process``: ``toolchaos.run(agent, ...)``;
- ``sdk``: ``toolchaos.wire.run(agent, ...)``, its model requests answered over HTTP;
- ``openai-agents``: the Agents SDK's ``Runner`` on a clone of your ``agents.Agent`` with the
  scenario's tools (``openai_agents.agent(base=...)``), through the wire;
- ``pydantic-ai``: your ``Agent.run`` with the scenario's tools in place of its own
  (``pydantic_ai.agent(base=...)``), through the wire;
- ``langgraph``: your compiled graph's ``invoke`` with the scenario's tools in its tool nodes
  (``langgraph.agent(graph=...)``), through the wire;
- ``process``: a command in any language (``cmd:node agent.mjs``, ``preset:codex``, a
  ``ProcessAgent``) started as a contained child against a served run (``toolchaos.process.run``).

The result is an ``AgentUnderTest``: ``toolchaos.run`` takes it like any agent, so do the chaos
fixture and the certification runner. ``toolchaos certify --agent``, ``toolchaos run --agent``,
``pytest --chaos-agent`` and a scenario's ``agent:`` resolve their reference here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from toolchaos._agents import (
    FRAMEWORKS,
    IN_PROCESS,
    KINDS,
    PROCESS,
    SDK,
    ProcessAgent,
    framework_of,
    import_ref,
    is_process_ref,
    label,
    process_ref,
    recognise,
    resolve_agent,
    split,
)
from toolchaos._engine import AgentUnderTest, RunResult, RunSpec, run
from toolchaos.errors import AgentRefError, did_you_mean


def agent_under_test(agent: Any, kind: str | None = None) -> AgentUnderTest:
    """``agent`` (a reference, an object, or already an ``AgentUnderTest``) with the run of its kind.

    ``kind`` names the kind when the reference does not; by default it is recognised from the object.
    """
    if isinstance(agent, AgentUnderTest):
        return agent
    if kind is not None and kind not in KINDS:
        raise AgentRefError(f"unknown agent kind {kind!r}{did_you_mean(kind, KINDS)}; kinds: {', '.join(KINDS)}",
                            field="agent")
    if isinstance(agent, ProcessAgent) or (isinstance(agent, str) and is_process_ref(agent)):
        return _process(agent, kind)
    obj, named = _target(agent)
    if kind is not None and named is not None and kind != named:
        raise AgentRefError(f"agent {agent!r} names the kind {named}, not {kind}", field="agent")
    kind = kind or named or recognise(obj)
    name = label(agent)
    if kind in FRAMEWORKS and framework_of(obj) != kind:
        raise AgentRefError(f"agent {name} is named as {kind} ({KINDS[kind]}), but it is a "
                            f"{type(obj).__module__}.{type(obj).__qualname__} (recognised: {recognise(obj)})",
                            field="agent")
    if kind == IN_PROCESS:  # the reference as given: the engine names it so in its messages
        return AgentUnderTest(name, kind, functools.partial(run, agent))
    return AgentUnderTest(name, kind, _wire_runner(obj if kind == SDK else _FRAMEWORKS[kind](obj), name))


def _process(agent: ProcessAgent | str, kind: str | None) -> AgentUnderTest:
    described = agent if isinstance(agent, ProcessAgent) else process_ref(agent)
    if kind is not None and kind != PROCESS:
        raise AgentRefError(f"agent {described.label} is a process agent, not {kind}", field="agent")

    def runner(spec: RunSpec) -> RunResult:
        from toolchaos import process  # the server (uvicorn, starlette, mcp): only for a process agent

        return process.run(described, spec)

    return AgentUnderTest(described.label, PROCESS, runner)


def _target(agent: Any) -> tuple[Any, str | None]:
    """The agent object and the kind its reference names (None when it names none)."""
    if not isinstance(agent, str):
        return agent, None
    named, target = split(agent)
    if target.startswith("builtin:"):
        return resolve_agent(target), named
    return import_ref(target), named


def _wire_runner(sdk_agent: Any, name: str) -> Callable[[RunSpec], RunResult]:
    def runner(spec: RunSpec) -> RunResult:
        if spec.ledger is not None:
            raise AgentRefError(f"agent {name}: an effect ledger to continue is for in-process agents; "
                                f"an SDK or framework agent's run starts its own", field="ledger")
        from toolchaos import wire  # respx and the SDK shims: only for an agent that talks HTTP

        return wire.run(sdk_agent, spec)

    return runner


def _openai_agents(obj: Any) -> Any:
    from toolchaos.adapters import openai_agents  # the framework SDK: imported for its agents only

    return openai_agents.agent(base=obj)


def _pydantic_ai(obj: Any) -> Any:
    from toolchaos.adapters import pydantic_ai  # the framework SDK: imported for its agents only

    return pydantic_ai.agent(base=obj)


def _langgraph(obj: Any) -> Any:
    from toolchaos.adapters import langgraph  # the framework SDK: imported for its graphs only

    return langgraph.agent(graph=obj)


# kind -> the SDK agent (task, env) that drives a framework's object through the wire
_FRAMEWORKS: dict[str, Callable[[Any], Any]] = {
    "openai-agents": _openai_agents, "pydantic-ai": _pydantic_ai, "langgraph": _langgraph,
}
