"""The bundled certification suite: run it, judge each scenario, and the ablation matrix.

    from toolchaos.certification import certify
    verdicts = certify("mypkg.agent:run")
"""

from toolchaos.certification._suite import (
    Matrix,
    Verdict,
    ablation_matrix,
    agent_label,
    certify,
    render_failure,
    run_scenario,
    suite,
    suite_files,
    suite_root,
)
from toolchaos.certification._verdict import ScenarioVerdict

__all__ = [
    "Matrix", "ScenarioVerdict", "Verdict", "ablation_matrix", "agent_label", "certify", "render_failure",
    "run_scenario", "suite", "suite_files", "suite_root",
]
