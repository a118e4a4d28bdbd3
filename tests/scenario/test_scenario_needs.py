"""A scenario's ``needs:``: what it cannot be judged without, of the agent's kind.

Validated like every other key (one of the known needs, a "did you mean" for a misspelling, at
its line and column); two needs follow from the file itself (a ``restart:`` block, a budget of
virtual seconds); a variant may say its own; the JSON Schema lists the names.
"""

from __future__ import annotations

import typing

import pytest
from toolchaos._agents import NEEDS
from toolchaos.scenario import ScenarioError, json_schema, load_text
from toolchaos.scenario._spec import NeedName

BASE = ("id: s\ntitle: t\ntask: Get the invoice.\ntools: {fetch_invoice: {}}\n"
        "policy: {stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}}\nexpect: [terminated]\n")


def test_the_declared_needs_are_kept_in_the_order_of_the_known_ones() -> None:
    (s,) = load_text(BASE + "needs: [two_workers, stop_report, two_workers]\n")
    assert s.needs == ("stop_report", "two_workers")
    (plain,) = load_text(BASE)
    assert plain.needs == () and plain.spec is not None and plain.spec.needs is None
    (empty,) = load_text(BASE + "needs: []\n")
    assert empty.needs == () and empty.spec is not None and empty.spec.needs == []


def test_a_misspelled_need_is_an_error_at_its_place_with_a_did_you_mean() -> None:
    with pytest.raises(ScenarioError) as err:
        load_text(BASE + "needs: [stop_report, virtual_tme]\n", "s.chaos.yaml")
    text = str(err.value)
    assert text.startswith("s.chaos.yaml:7:22: needs[1]: expected one of stop_report, virtual_time, budgets, "
                           "restart, two_workers; got 'virtual_tme'; did you mean 'virtual_time'?")
    with pytest.raises(ScenarioError, match="needs: expected a list"):
        load_text(BASE + "needs: virtual_time\n")


def test_a_restart_and_budgets_imply_their_needs() -> None:
    (restarted,) = load_text(BASE + "restart: {task: Again.}\n")
    assert restarted.needs == ("restart",)
    (deadline,) = load_text(BASE + "budgets: {max_seconds: 60}\nneeds: [two_workers]\n")
    assert deadline.needs == ("virtual_time", "budgets", "two_workers")
    (steps,) = load_text(BASE + "budgets: {max_steps: 3}\n")  # the agent must be told it: of the run's budgets
    assert steps.needs == ("budgets",)
    (none,) = load_text(BASE)
    assert none.needs == ()


def test_a_variant_says_its_own_needs() -> None:
    text = BASE + "needs: [virtual_time]\nvariants:\n  - id: quick\n    needs: []\n  - id: slow\n"
    quick, slow = load_text(text)
    assert (quick.name, quick.needs) == ("s[quick]", ())
    assert (slow.name, slow.needs) == ("s[slow]", ("virtual_time",))


def test_the_names_are_the_registry_of_needs_and_the_json_schema_lists_them() -> None:
    assert typing.get_args(NeedName) == tuple(NEEDS)
    prop = json_schema()["properties"]["needs"]
    assert prop["anyOf"][0]["items"]["enum"] == list(NEEDS)
    assert "N/A" in prop["description"]
