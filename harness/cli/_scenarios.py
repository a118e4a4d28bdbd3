"""What the commands need of scenarios, imported here at module level: the scenario loader and the
certification runner (YAML and pydantic).

Read through ``_lazy`` (``_lazy.load_file``, ...), never imported by the command modules: ``toolchaos
--help`` and the commands that load no scenario do not pay for it (see ``_lazy``).
"""

from toolchaos.certification import (
    SUITE_VERSION,
    judge,
    render_failure,
    run_live_at_once,
    run_scenario,
    scenario_spec,
    suite,
)
from toolchaos.matrices import ablation_matrix
from toolchaos.scenario import SCHEMA_URL, expand_trials, find_files, json_schema, load_file, load_text

__all__ = ["SCHEMA_URL", "SUITE_VERSION", "ablation_matrix", "expand_trials", "find_files", "json_schema", "judge",
           "load_file", "load_text", "render_failure", "run_live_at_once", "run_scenario", "scenario_spec", "suite"]
