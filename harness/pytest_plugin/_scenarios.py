"""What the plugin needs of scenarios, imported here at module level: the scenario loader and the
certification runner (YAML and pydantic).

Read through ``_lazy`` (``_lazy.load_file``, ...), never imported by the plugin's other modules: only a
session that collects, runs or reports a scenario loads it (see ``_lazy``).
"""

from toolchaos.certification import (
    SUITE_VERSION,
    ScenarioVerdict,
    render_failure,
    run_live_at_once,
    run_scenario,
    suite_files,
    waits_on_live_model,
)
from toolchaos.scenario import expand_trials, load_file

__all__ = ["SUITE_VERSION", "ScenarioVerdict", "expand_trials", "load_file", "render_failure", "run_live_at_once",
           "run_scenario", "suite_files", "waits_on_live_model"]
