"""Certification: run scenarios into verdicts, find the bundled suite, prove the suite.

    from toolchaos.certification import certify
    verdicts = certify("mypkg.agent:run")

- ``run_scenario(scenario, agent)`` runs one loaded scenario (twice, sharing the agent's
  ``store``, when it has a ``restart``) and ``judge``s it: a ``Verdict`` (a
  ``ScenarioVerdict`` that also knows which expectation each violation broke, for reports).
- ``suite()`` loads the bundled certification suite (the package ``toolchaos_scenarios``);
  ``certify(agent)`` runs it against one agent.
- ``ablation_matrix()`` runs the suite against the reference agent and its variants and
  lists what would make the suite untrustworthy (``Matrix.problems``).

The modules: ``_verdict`` (what reports consume), ``_judge`` (expectations checked, the
verdict, the failure text), ``_run`` (in-process runs), ``_suite`` (the bundled suites),
``_variants`` (the reference agent's variants), ``_matrix`` (the ablation matrix), ``_grade``
(what a run wasted beyond its scenario's useful work).
"""

from toolchaos.certification._grade import Grade
from toolchaos.certification._judge import Verdict, check_invariant, combine, judge, render_failure
from toolchaos.certification._matrix import NAIVE_MUST_FAIL, Matrix, ablation_matrix
from toolchaos.certification._run import run_scenario
from toolchaos.certification._suite import SUITE_VERSION, certify, suite, suite_files, suite_root
from toolchaos.certification._variants import ABLATIONS, AGENT_VARIANTS, agent_label
from toolchaos.certification._verdict import ScenarioVerdict

__all__ = [
    "ABLATIONS", "AGENT_VARIANTS", "NAIVE_MUST_FAIL", "SUITE_VERSION", "Grade", "Matrix", "ScenarioVerdict", "Verdict",
    "ablation_matrix", "agent_label", "certify", "check_invariant", "combine", "judge", "render_failure",
    "run_scenario", "suite", "suite_files", "suite_root",
]
