"""A scenario's ``api_faults:``: built by the wire's own constructors (located errors), applied to an
agent answered over HTTP, refused for an in-process one (where they could never fire)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from toolchaos.certification import run_scenario
from toolchaos.errors import UserError
from toolchaos.scenario import ScenarioError, load_text

openai = pytest.importorskip("openai", reason="needs the openai extra")

DOC = """\
id: model-api-429
title: The model API refuses the first request
task: Say hi.
tools:
  search: {}
policy:
  scripted: [{final: hi}]
api_faults:
  1: {rate_limited: {retry_after: 20}}
expect:
  - terminal_state: COMPLETED
"""


def _load(text: str) -> Any:
    return load_text(textwrap.dedent(text), "s.chaos.yaml")[0]


def test_api_faults_are_loaded_and_applied_to_an_sdk_agent() -> None:
    from toolchaos.adapters import agent_under_test

    def agent(task: str) -> str:
        r = openai.OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": task}])
        return str(r.choices[0].message.content)

    scenario = _load(DOC)
    assert scenario.api_faults.pick(1).retry_after == 20
    verdict = run_scenario(scenario, agent_under_test(agent))
    assert verdict.passed, verdict.violations
    assert [r.status for r in verdict.result.requests] == [429, 200] and verdict.result.virtual_seconds >= 20


def test_api_faults_for_an_in_process_agent_are_an_error() -> None:
    with pytest.raises(UserError, match="in-process agent's model is not answered over HTTP"):
        run_scenario(_load(DOC), "builtin:guarded")


def test_a_bad_api_fault_is_located() -> None:
    with pytest.raises(ScenarioError, match=r"s.chaos.yaml:9:3: api_faults: unknown model-API fault 'rate_limitd'"):
        _load(DOC.replace("rate_limited", "rate_limitd"))
    with pytest.raises(ScenarioError, match="request numbers start at 1"):
        _load(DOC.replace("  1: {", "  0: {"))
