"""Fuzzing: hypothesis generates fault schedules and model behaviour, shrinks a failure, and
writes it out as a YAML regression scenario.

    from toolchaos.fuzzing import fuzz
    report = fuzz("mypkg.agent:run", tools=[...], examples=200)
"""

from toolchaos.errors import FuzzFailed
from toolchaos.fuzzing._core import (
    FuzzFailure,
    FuzzReport,
    FuzzSpec,
    FuzzTarget,
    fuzz,
    fuzz_scenario,
    fuzz_target,
    must_hold,
    scenario_target,
)

# isort: split
# What other packages of toolchaos (the scenario loader, the pytest plugin, toolchaos replay) need beyond the
# public names: importable from this facade, not part of the API (not in __all__).
from toolchaos.fuzzing._core import BRIEF_LINES as BRIEF_LINES
from toolchaos.fuzzing._core import FUZZ_KEYS as FUZZ_KEYS
from toolchaos.fuzzing._core import invariant_data as invariant_data
from toolchaos.fuzzing._core import policy_data as policy_data
from toolchaos.strategies import tool_data as tool_data  # with the two above: a run as a scenario's data

__all__ = [
    "FuzzFailed", "FuzzFailure", "FuzzReport", "FuzzSpec", "FuzzTarget", "fuzz", "fuzz_scenario", "fuzz_target",
    "must_hold", "scenario_target",
]
