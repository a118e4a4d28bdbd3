"""Agent kinds: one registered module per kind of agent the harness can run.

Every way in (``toolchaos.run``, a scenario's ``agent:``, ``pytest --chaos-agent``,
``toolchaos certify --agent``, ``toolchaos.certify()``, ``toolchaos.fuzzing.fuzz()``) resolves
an agent through this registry, so a kind registered once is accepted everywhere. The built-in
kinds, each a module here:

- ``in_process``: ``agent(task, model, tools)``, driven by the engine (``toolchaos.run``);
- ``sdk``: ``agent(task)`` or ``agent(task, env)``, its model answered over HTTP (``toolchaos.wire``);
- ``openai_agents``, ``pydantic_ai``, ``langgraph``: a framework's agent object, through its adapter;
- ``process``: a program in any language (``cmd:...``, ``preset:...``), served over HTTP and MCP.

A kind of your own is one module that registers one ``AgentKind``::

    from toolchaos.kinds import AgentKind, Capabilities, register_kind

    register_kind(AgentKind(
        name="my-framework", help="a MyFramework agent", form="a myframework.Agent",
        recognise=lambda obj: type(obj).__name__ == "Agent" and type(obj).__module__.startswith("myframework"),
        runner=lambda agent, label: lambda spec: toolchaos.wire.run(adapt(agent), spec),
        capabilities=Capabilities(reports_stop=False)))

Importing the module registers it; a reference ``my-framework:pkg.mod:attr`` imports ``pkg.mod``
first, so a kind that lives beside its agents needs nothing more.
"""

from toolchaos._agents import AgentKind, AgentUnderTest, Capabilities, kinds, register_kind, resolve

__all__ = ["AgentKind", "AgentUnderTest", "Capabilities", "kinds", "register_kind", "resolve"]
