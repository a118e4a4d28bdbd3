"""Fault schedules: first matching rule wins, then the default; every rule kind."""

from __future__ import annotations

import pytest
from toolchaos.fake_tools import DefinitionError, ToolSet, catalogue


def codes(faults, n=6, default=None, args=None, seed=0):
    ts = ToolSet([catalogue.get("fetch_invoice", faults=faults, default=default)], seed=seed)
    return [ts.execute("fetch_invoice", (args or (lambda i: {"invoice_id": "inv_1"}))(i))[1].code for i in range(n)]


def test_by_call_number():
    assert codes([{"call": 3, "outcome": "empty"}]) == ["ok", "ok", "empty", "ok", "ok", "ok"]


def test_by_range_closed_and_open():
    assert codes([{"calls": [2, 3], "outcome": "empty"}]) == ["ok", "empty", "empty", "ok", "ok", "ok"]
    assert codes([{"calls": [5, None], "outcome": "empty"}]) == ["ok"] * 4 + ["empty"] * 2


def test_by_matching_arguments():
    got = codes([{"match": {"invoice_id": "bad"}, "outcome": {"fatal": "not_found"}}],
                n=4, args=lambda i: {"invoice_id": "bad" if i % 2 else "good"})
    assert got == ["ok", "not_found", "ok", "not_found"]


def test_always_and_bare_fault():
    assert codes("empty", n=3) == ["empty"] * 3
    assert codes([{"always": True, "outcome": "empty"}], n=3) == ["empty"] * 3


def test_first_matching_rule_wins_then_default():
    got = codes([{"call": 1, "outcome": "empty"}, {"calls": [1, 2], "outcome": "timeout"}], n=4, default="contradictory")
    assert got == ["empty", "timeout", "contradictory", "contradictory"]


def test_conditions_in_one_rule_must_all_hold():
    got = codes([{"calls": [1, 3], "match": {"invoice_id": "x"}, "outcome": "empty"}], n=4,
                args=lambda i: {"invoice_id": "x" if i != 1 else "y"})
    assert got == ["empty", "ok", "empty", "ok"]


def test_probability_is_seeded_and_reproducible():
    a = codes([{"probability": 0.5, "outcome": "empty"}], n=40, seed=11)
    b = codes([{"probability": 0.5, "outcome": "empty"}], n=40, seed=11)
    c = codes([{"probability": 0.5, "outcome": "empty"}], n=40, seed=12)
    assert a == b and a != c
    assert 5 < a.count("empty") < 35
    assert codes([{"probability": 0, "outcome": "empty"}], n=10) == ["ok"] * 10
    assert codes([{"probability": 1, "outcome": "empty"}], n=10) == ["empty"] * 10


@pytest.mark.parametrize("rule,field,words", [
    ({"call": 0, "outcome": "empty"}, "faults[0].call", ">= 1"),
    ({"calls": [3, 1], "outcome": "empty"}, "faults[0].calls", "first <= last"),
    ({"probability": 2, "outcome": "empty"}, "faults[0].probability", "[0, 1]"),
    ({"match": [1], "outcome": "empty"}, "faults[0].match", "mapping"),
    ({"cal": 2, "outcome": "empty"}, "faults[0].cal", "did you mean 'call'"),
    ({"call": 2}, "faults[0].outcome", "needs an outcome"),
])
def test_bad_rules_name_tool_and_field(rule, field, words):
    with pytest.raises(DefinitionError) as info:
        catalogue.get("fetch_invoice", faults=[rule])
    assert (info.value.tool, info.value.field) == ("fetch_invoice", field)
    assert words in str(info.value)
