"""Certification: run scenarios into verdicts, find the bundled suite, prove the suite.

    from toolchaos.certification import certify
    verdicts = certify("mypkg.agent:run")

- ``scenario_spec(scenario)``: the run a scenario describes, as a ``RunSpec`` (what
  ``toolchaos.serve.Server`` takes).
- ``run_scenario(scenario, agent)`` runs one loaded scenario (twice, sharing the agent's
  ``store``, when it has a ``restart``) and ``judge``s it: a ``Verdict`` (a
  ``ScenarioVerdict`` that also knows which expectation each violation broke, for reports).
  A scenario that ``needs`` what the agent's kind lacks is not run: its verdict is N/A
  (``Verdict.not_applicable`` says why); a kind that cannot report a stop is judged by harm.
- ``suite()`` loads the bundled certification suite (the package ``toolchaos_scenarios``);
  ``certify(agent)`` runs it against one agent.
- ``AGENT_VARIANTS``, ``ABLATIONS``, ``PORTS``: the reference agent, its variants and the ports of
  published designs that ``toolchaos.matrices.ablation`` runs the suite against.

The modules: ``_verdict`` (what reports consume), ``_judge`` (expectations checked, the
verdict, the failure text), ``_run`` (in-process runs), ``_suite`` (the bundled suites),
``_variants`` (the reference agent's variants), ``_grade``
(what a run wasted beyond its scenario's useful work), ``_applicable`` (what a scenario asks of
the agent's kind: N/A, and how a kind that cannot report a stop is judged).
"""

from toolchaos.certification._grade import Grade
from toolchaos.certification._judge import Verdict, check_invariant, combine, judge, render_failure
from toolchaos.certification._run import run_scenario, scenario_spec
from toolchaos.certification._suite import SUITE_VERSION, certify, suite, suite_files, suite_root
from toolchaos.certification._variants import ABLATIONS, AGENT_VARIANTS, PORTS, SOUND_PORTS, agent_label
from toolchaos.certification._verdict import ScenarioVerdict

# isort: split
# What the commands, the pytest plugin and the matrices need beyond the public names: importable here, not
# part of the API.
from toolchaos.certification._applicable import NOT_RUN as NOT_RUN
from toolchaos.certification._applicable import not_applicable_to as not_applicable_to
from toolchaos.certification._judge import not_run as not_run
from toolchaos.certification._run import run_live_at_once as run_live_at_once
from toolchaos.certification._run import waits_on_live_model as waits_on_live_model

__all__ = [
    "ABLATIONS", "AGENT_VARIANTS", "PORTS", "SOUND_PORTS", "SUITE_VERSION", "Grade", "ScenarioVerdict", "Verdict",
    "agent_label", "certify", "check_invariant", "combine", "judge", "render_failure",
    "run_scenario", "scenario_spec", "suite", "suite_files", "suite_root",
]
