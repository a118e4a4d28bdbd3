"""Agent kinds: how a reference names one, how an object is recognised, and an agent that cannot be called."""

from __future__ import annotations

from typing import Any

import pytest
from toolchaos import policies, run, wire
from toolchaos._agents import accepted, invoke, kinds_of_type, label, recognise, resolve_agent, split
from toolchaos.errors import AgentCallError, AgentRefError
from toolchaos.fake_tools import catalogue


def test_a_reference_may_name_its_kind() -> None:
    assert split("myapp.agent:run") == (None, "myapp.agent:run")
    assert split("builtin:guarded") == (None, "builtin:guarded")
    assert split("openai-agents:myapp.agents:billing") == ("openai-agents", "myapp.agents:billing")
    with pytest.raises(AgentRefError, match=r"unknown agent kind 'langraph'; did you mean 'langgraph'\?"):
        split("langraph:myapp:graph")
    with pytest.raises(AgentRefError, match=r"expected 'builtin:NAME', 'package\.module:attr' or 'KIND:"):
        split("myapp")


def _framework_object(module: str, name: str) -> Any:
    """An object whose type looks like a framework's, without importing the framework."""
    return type(name, (), {"__module__": module})()


def test_the_kind_is_recognised_from_the_object() -> None:
    def in_process(task: str, model: Any, tools: Any) -> None: ...
    def sdk(task: str) -> None: ...
    def sdk_env(task: str, env: Any) -> None: ...
    def keyword_env(task: str, *, env: Any = None) -> None: ...

    assert [recognise(f) for f in (in_process, sdk, sdk_env, keyword_env)] == ["in-process", "sdk", "sdk", "sdk"]
    assert recognise(_framework_object("agents.agent", "Agent")) == "openai-agents"
    assert recognise(_framework_object("pydantic_ai.agent.abstract", "AbstractAgent")) == "pydantic-ai"
    assert recognise(_framework_object("langgraph.pregel.main", "Pregel")) == "langgraph"
    assert recognise(_framework_object("myapp.agents", "Agent")) == "in-process"  # not callable: the call will say


def test_the_engine_runs_in_process_agents_and_says_what_runs_the_others() -> None:
    assert resolve_agent("in-process:builtin:naive") is resolve_agent("builtin:naive")
    with pytest.raises(AgentRefError, match=r"of kind sdk .* run it with toolchaos\.run, which runs every kind"):
        resolve_agent("sdk:toolchaos._agents:naive")
    with pytest.raises(AgentRefError, match=r"of kind langgraph .*run it with toolchaos\.run"):
        resolve_agent(_framework_object("langgraph.graph.state", "Pregel"))


def test_only_a_type_error_of_the_call_itself_means_the_agent_could_not_be_called() -> None:
    def two(task: str, env: Any) -> None: ...
    def broken(task: str, model: Any, tools: Any) -> None:
        raise TypeError("a bug inside the agent")

    with pytest.raises(AgentCallError, match=r"^could not call agent myapp:two: .*two\(\) takes 2 positional"):
        invoke(two, "myapp:two", "t", None, None)
    with pytest.raises(TypeError, match="a bug inside the agent"):  # the agent ran: its own crash
        invoke(broken, "myapp:broken", "t", None, None)
    with pytest.raises(AgentCallError, match="'dict' object is not callable"):
        invoke({}, "myapp:CONFIG", "t", None, None)
    assert label(AgentRefError) == "toolchaos.errors:AgentRefError" and label("myapp:run") == "myapp:run"


def test_an_agent_the_harness_cannot_call_ends_error_in_process_and_over_the_wire() -> None:
    def four(task: str, model: Any, tools: Any, extra: Any) -> None: ...
    def sdk_three(task: str, env: Any, extra: Any) -> None: ...

    tools = [catalogue.get("search")]
    r = run(four, task="t", tools=tools, policy=policies.scripted([]))
    assert (r.terminal_state, r.harness_stop, r.turns) == ("ERROR", "uncallable", 0)
    assert r.error is not None and r.error.endswith(accepted()) and "missing 1 required positional argument" in r.error
    with pytest.raises(AssertionError, match="the harness could not call the agent: could not call agent"):
        r.check()
    w = wire.run(sdk_three, task="t", tools=tools, policy=policies.scripted([]))
    assert (w.terminal_state, w.harness_stop) == ("ERROR", "uncallable") and w.model_requests == 0


def test_label_and_framework_are_remembered_per_object_never_shared_between_objects() -> None:
    from toolchaos._agents import _registry as _kinds

    class Billing:
        def __call__(self, task: str, model: Any, tools: Any) -> None: ...

    first, second = Billing(), _framework_object("langgraph.pregel.main", "Pregel")
    assert label(first) == label(first) == f"{__name__}:{Billing.__qualname__}"
    assert kinds_of_type(first) is None and kinds_of_type(second) == "langgraph"
    # a remembered entry is read back only for the very object it was made for
    _kinds._labels[id(second)] = (first, "not this one")
    assert label(second) == "langgraph.pregel.main:Pregel"
    for _ in range(_kinds._KNOWN_LIMIT + 5):  # bounded: agents made in a loop are not all kept
        label(Billing())
    assert len(_kinds._labels) <= _kinds._KNOWN_LIMIT


# --- "did you mean" for a misspelled reference ------------------------------------------------------

AGENT_MODULE = """
def run(task, model, tools):
    return None


def rerun(task, model, tools):
    return None
"""


@pytest.fixture
def mypkg(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's package on the path: ``mypkg.agent`` with ``run`` and ``rerun``."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "agent.py").write_text(AGENT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_misspelled_attribute_gets_the_close_names(mypkg: None) -> None:
    with pytest.raises(AgentRefError, match=r"^agent reference 'mypkg\.agent:rnu': 'mypkg\.agent' has no attribute "
                                            r"'rnu'; did you mean 'run'\?$"):
        resolve_agent("mypkg.agent:rnu")
    with pytest.raises(AgentRefError, match=r"no attribute 'rrun'; did you mean 'rerun' or 'run'\?$"):
        resolve_agent("mypkg.agent:rrun")
    with pytest.raises(AgentRefError, match=r"'mypkg\.agent:run' has no attribute 'x'$"):  # nothing close: no guess
        resolve_agent("mypkg.agent:run.x")
    with pytest.raises(AgentRefError, match=r"no attribute 'zzzzzz'$"):
        resolve_agent("mypkg.agent:zzzzzz")
    assert resolve_agent("mypkg.agent:run").__name__ == "run"


def test_a_misspelled_module_gets_its_siblings(mypkg: None) -> None:
    with pytest.raises(AgentRefError, match=r"cannot import 'mypkg\.agnet' .*; did you mean 'mypkg\.agent'\?$"):
        resolve_agent("mypkg.agnet:run")
    with pytest.raises(AgentRefError, match=r"cannot import 'mypkgg\.agent' .*; did you mean 'mypkg'"):
        resolve_agent("mypkgg.agent:run")


def test_a_module_that_fails_to_import_is_not_guessed_at(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brokenagent.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AgentRefError, match=r"cannot import 'brokenagent' \(No module named "
                                            r"'no_such_dependency_xyz'\)$"):
        resolve_agent("brokenagent:run")


def test_a_misspelled_builtin_names_the_reference_to_write() -> None:
    with pytest.raises(AgentRefError, match=r"no built-in agent 'gaurded'; did you mean 'builtin:guarded'\? "
                                            r"\(built-in: builtin:naive, builtin:guarded,"):
        resolve_agent("builtin:gaurded")
