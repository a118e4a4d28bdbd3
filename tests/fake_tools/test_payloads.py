"""fake_tools._payloads: a deterministic payload function's data made once, handed out as fresh copies."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest
from toolchaos.fake_tools import ToolSet, catalogue, fake_tool
from toolchaos.fake_tools import _payloads as payloads
from toolchaos.fake_tools._payloads import deterministic


def _payload(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"to": args.get("to"), "n": rng.randrange(10**6), "tags": ["a", {"b": [1.5, None, True]}]}


def _counting(body: Any = _payload) -> tuple[list[int], Any]:
    """A payload function (``body``) that counts its calls."""
    calls: list[int] = []

    def make(args: Mapping[str, Any], rng: random.Random) -> Any:
        calls.append(1)
        return body(args, rng)

    return calls, make


def test_a_deterministic_payload_is_made_once_and_equals_a_fresh_one() -> None:
    calls, make = _counting()
    fresh = make({"to": "x"}, random.Random("t:1"))
    deterministic(make)
    first, second = payloads.make(make, {"to": "x"}, "t:1"), payloads.make(make, {"to": "x"}, "t:1")
    assert first == second == fresh
    assert len(calls) == 2  # the fresh one above, then one for both


def test_the_table_is_bounded_and_starts_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    # a suite of many seeds makes each payload once: the table must not grow with it
    monkeypatch.setattr(payloads, "_KEPT", 3)
    monkeypatch.setattr(payloads, "_made", {})
    calls, make = _counting()
    deterministic(make)
    for i in range(7):
        payloads.make(make, {"to": "x"}, f"seed:{i}")
        assert len(payloads._made) <= 3
    assert len(calls) == 7
    payloads.make(make, {"to": "x"}, "seed:6")  # still kept: made no more
    assert len(calls) == 7


def test_each_caller_gets_its_own_copy_so_an_edit_changes_nothing_for_the_next() -> None:
    make = deterministic(_counting()[1])
    first = payloads.make(make, {"to": "x"}, "t:2")
    first["n"] = -1
    first["tags"][1]["b"].append("edited")
    again = payloads.make(make, {"to": "x"}, "t:2")
    assert again["n"] != -1 and again["tags"][1]["b"] == [1.5, None, True]
    assert again is not first and again["tags"] is not first["tags"]


def test_the_arguments_as_given_and_the_text_tell_payloads_apart() -> None:
    calls, make = _counting()
    make = deterministic(make)
    spaced, plain = payloads.make(make, {"to": " x"}, "t:3"), payloads.make(make, {"to": "x"}, "t:3")
    assert (spaced["to"], plain["to"]) == (" x", "x")  # a payload may echo its arguments exactly
    assert payloads.make(make, {"to": "x"}, "t:4")["n"] == make({"to": "x"}, random.Random("t:4"))["n"]
    assert len(calls) == 4


def test_arguments_that_are_not_plain_scalars_are_not_remembered() -> None:
    # a repr tells apart only plain values: an object's repr may be the same for different contents
    calls, make = _counting(lambda args, rng: {"items": args["items"]})
    make = deterministic(make)
    items = [1, 2]
    out = payloads.make(make, {"items": items}, "t:5")
    assert out["items"] is items  # as the function made it, as before
    payloads.make(make, {"items": [1, 2]}, "t:5")
    assert len(calls) == 2


def test_an_unmarked_function_is_called_every_time() -> None:
    calls, make = _counting()
    payloads.make(make, {}, "t:6")
    payloads.make(make, {}, "t:6")
    assert len(calls) == 2


def test_data_that_is_not_plain_json_is_made_every_time() -> None:
    calls, make = _counting(lambda args, rng: {"when": (1, 2), "n": rng.random()})
    make = deterministic(make)
    assert payloads.make(make, {}, "t:7") == payloads.make(make, {}, "t:7")
    assert len(calls) == 2


def test_the_catalogue_payloads_are_deterministic_and_runs_see_the_same_data() -> None:
    tool = catalogue.get("fetch_invoice")
    assert tool.payload in payloads._DETERMINISTIC
    first = ToolSet([tool], seed=3).call("fetch_invoice", {"invoice_id": "inv_1"})
    first["total"] = -1.0  # an agent that edits what it was handed
    second = ToolSet([tool], seed=3).call("fetch_invoice", {"invoice_id": "inv_1"})
    assert second == tool.payload({"invoice_id": "inv_1"}, random.Random("3:fetch_invoice:" + _key(tool)))
    assert second["total"] != -1.0


def test_a_users_tool_payload_is_not_remembered() -> None:
    calls, make = _counting()
    tool = fake_tool("notify", parameters={"type": "object", "properties": {"to": {"type": "string"}}},
                     payload=make)
    for _ in range(2):
        ToolSet([tool], seed=1).call("notify", {"to": "x"})
    assert len(calls) == 2


def _key(tool: Any) -> str:
    from toolchaos.fake_tools._fingerprint import canonical

    return canonical(tool.normalise({"invoice_id": "inv_1"}))
