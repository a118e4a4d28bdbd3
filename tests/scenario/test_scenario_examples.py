"""The worked examples in scenarios/examples/ are documentation that runs."""

from __future__ import annotations

import pytest
from toolchaos.certification import run_scenario, suite

EXAMPLES = suite("examples")


def test_there_are_examples_for_each_feature() -> None:
    features = {s.id for s in EXAMPLES}
    assert {"example-first-scenario", "example-fault-schedules", "example-inline-tools", "example-variants",
            "example-replay-incident"} <= features
    for sc in EXAMPLES:
        assert sc.path is not None and sc.path.read_text().count("#") >= 3, f"{sc.name}: explain it in comments"


@pytest.mark.parametrize("scenario", EXAMPLES, ids=[s.name for s in EXAMPLES])
def test_each_example_passes_against_the_reference_agent(scenario: object) -> None:
    verdict = run_scenario(scenario, "builtin:guarded")  # type: ignore[arg-type]
    assert verdict.passed, verdict.headline()


def test_the_loop_and_side_effect_examples_catch_the_naive_agent() -> None:
    for sc in EXAMPLES:
        if sc.category in ("loops", "side_effects"):
            assert not run_scenario(sc, "builtin:naive").passed, sc.name
