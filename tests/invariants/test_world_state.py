"""world_state: the world a run left, checked by count, new records and the values they hold."""

from __future__ import annotations

import pytest
from toolchaos import invariants as inv
from toolchaos import policies, run
from toolchaos.errors import InvariantError
from toolchaos.fake_tools import catalogue

MAIL = {"to": "ana@example.com", "subject": "Order ord_7", "body": "On its way."}
START = {"emails": [{"to": "ana@example.com", "subject": "Welcome", "body": "Hello."}],
         "records": {"r1": {"record_id": "r1", "data": {"status": "draft", "owner": "ana"}}}}


def sent(times: int) -> object:
    steps = [{"call": "send_email", "args": MAIL}] * times + [{"call": "write_record",
                                                              "args": {"record_id": "r1", "data": {"status": "paid"}}}]
    return run("builtin:naive", task="t", tools=[catalogue.get("send_email"), catalogue.get("write_record")],
               policy=policies.scripted(steps), world=START)


def broken(result: object, *invariants: inv.Invariant) -> list[tuple[str, str, str]]:
    return [(v.invariant, v.expected, v.actual) for v in result.violations(*invariants)]  # type: ignore[attr-defined]


def test_it_holds_when_the_world_has_what_the_task_needed() -> None:
    one = sent(1)
    checks = [inv.world_state("emails", where={"to": "ana@example.com"}, count=2, created=1),
              inv.world_state("records", where={"record_id": "r1"}, holds={"data": {"status": "paid"}})]
    assert broken(one, *checks) == []
    assert [c.actual_text(one) for c in checks] == ["2 matching, 1 new", "1 matching, 0 new; all holding it"]
    assert checks[0].expected_text() == ('exactly 2 records in emails with {"to":"ana@example.com"}; '
                                         'exactly 1 new records in emails with {"to":"ana@example.com"}')


def test_it_fires_on_a_count_a_new_record_or_a_value_the_world_does_not_have() -> None:
    twice = sent(2)
    assert broken(twice, inv.world_state("emails", created=1)) == [
        ("world_state.created", "exactly 1 new records in emails", "2 created")]
    assert broken(twice, inv.world_state("emails", count=2)) == [("world_state.count", "exactly 2 records in emails",
                                                                   "3")]
    wrong = broken(twice, inv.world_state("records", holds={"data": {"status": "paid", "owner": "ana"}}))
    assert wrong == [("world_state.holds", 'records in records holding {"data":{"owner":"ana","status":"paid"}}',
                      '{"data":{"status":"paid"},"record_id":"r1","status":"written","version":40}')]
    assert broken(twice, inv.world_state("charges", holds={"amount": 1}))[0][2] == "no such record"


def test_it_needs_something_to_check() -> None:
    with pytest.raises(InvariantError, match="count, created or holds"):
        inv.world_state("emails")
    assert inv.world_state("emails", created=1).to_data() == {"world_state": {"collection": "emails", "created": 1}}
