"""``give_up: p``: a model double that gives up, each turn, with a chance drawn from the run's seed."""

from __future__ import annotations

import pytest
from toolchaos import policies, run
from toolchaos.errors import PolicyError
from toolchaos.fake_tools import catalogue
from toolchaos.policies import POLICIES


def ends(seed: int, p: float) -> tuple[str | None, int]:
    policy = policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}, until="never", max_turns=8, give_up=p)
    r = run("builtin:naive", task="t", tools=[catalogue.get("fetch_invoice")], policy=policy, seed=seed)
    return r.answer, r.turns


def test_it_gives_up_on_a_turn_the_seed_decides() -> None:
    seen = {seed: ends(seed, 0.3) for seed in range(12)}
    assert {a for a, _ in seen.values()} == {"I give up on this task.", "I give up: too many attempts."}
    assert len({t for _, t in seen.values()}) > 2  # the seed moves the turn it gives up on
    assert all(ends(seed, 0.3) == got for seed, got in seen.items())  # the same seed, the same turn


def test_never_and_always() -> None:
    assert ends(0, 0.0) == ("I give up: too many attempts.", 9)  # 0 draws nothing: the run it always was
    assert ends(0, 1.0) == ("I give up on this task.", 1)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "often", True])
def test_a_chance_outside_0_to_1_is_refused(bad: object) -> None:
    with pytest.raises(PolicyError, match="give_up is a probability from 0 to 1") as err:
        policies.stubborn("fetch_invoice", give_up=bad)  # type: ignore[arg-type]
    assert err.value.field == "give_up"


def test_it_is_written_back_only_when_set() -> None:
    assert "give_up" not in POLICIES.to_data(policies.jitter("fetch_invoice"))["jitter"]
    assert POLICIES.to_data(policies.jitter("fetch_invoice", give_up=0.25))["jitter"]["give_up"] == 0.25
