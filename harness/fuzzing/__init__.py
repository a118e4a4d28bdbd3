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

__all__ = [
    "FuzzFailed", "FuzzFailure", "FuzzReport", "FuzzSpec", "FuzzTarget", "fuzz", "fuzz_scenario", "fuzz_target",
    "must_hold", "scenario_target",
]
