"""The world behind the fake tools: idempotency keys honoured as payment APIs do, records a read finds."""

from __future__ import annotations

import pytest
from toolchaos.errors import DefinitionError, ToolInvalidArgument
from toolchaos.fake_tools import EffectLedger, ManualClock, ToolSet, World, catalogue, fake_tool

LOST = [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}]
CHARGE = {"customer_id": "c1", "amount": 42.0, "idempotency_key": "ord_1"}


def test_the_same_key_and_arguments_get_the_original_result_and_apply_once():
    ts = ToolSet([catalogue.get("charge_payment")])
    first = ts.call("charge_payment", CHARGE)
    again = ts.call("charge_payment", CHARGE)
    assert again == first and ts.ledger.applied("charge_payment") == 1
    assert ts.ledger.replayed("charge_payment") == 1 and not ts.ledger.duplicates()
    assert [(e.applied, e.status, e.replayed) for e in ts.ledger.effects] == [(True, "ok", False), (False, "ok", True)]
    assert ts.ledger.summary() == {"charge_payment": {"executions": 2, "applied": 1, "replayed": 1}}
    assert len(ts.world.records("charges")) == 1


def test_the_same_key_with_other_arguments_is_a_precondition_naming_the_key():
    ts = ToolSet([catalogue.get("charge_payment")])
    ts.call("charge_payment", CHARGE)
    err = ts.call("charge_payment", {**CHARGE, "amount": 43.0})["error"]
    assert (err["code"], err["class"], err["field"]) == ("idempotency_key_reused", "PRECONDITION", "idempotency_key")
    assert ts.ledger.applied() == 1 and ts.ledger.effects[-1].status == "failed"
    raising = ToolSet([catalogue.get("charge_payment", delivery="raise")])
    raising.call("charge_payment", CHARGE)
    with pytest.raises(ToolInvalidArgument, match="idempotency_key_reused"):
        raising.call("charge_payment", {**CHARGE, "amount": 43.0})


def test_a_key_expires_after_its_ttl_in_virtual_time():
    clock = ManualClock()
    ts = ToolSet([catalogue.get("send_email", idempotency_ttl=3600)], clock=clock)
    mail = {"to": "a@x.org", "subject": "s", "body": "b", "idempotency_key": "m1"}
    ts.call("send_email", mail)
    clock.advance(3599)
    ts.call("send_email", mail)
    assert ts.ledger.applied() == 1
    clock.advance(1)
    ts.call("send_email", {**mail, "body": "other"})  # a forgotten key is free for another request
    assert ts.ledger.applied() == 2 and ts.ledger.replayed() == 1
    assert catalogue.get("send_email").idempotency_ttl == 86_400


def test_a_retry_after_a_lost_response_is_replayed_by_an_honouring_api():
    ts = ToolSet([catalogue.get("charge_payment", LOST), catalogue.get("get_charge")])
    assert ts.call("charge_payment", CHARGE)["error"]["code"] == "timeout"
    charge = ts.call("charge_payment", CHARGE)  # the response the first call never delivered
    assert charge["status"] == "succeeded" and ts.ledger.applied() == 1 and ts.ledger.replayed() == 1
    assert ts.call("get_charge", idempotency_key="ord_1")["charge_id"] == charge["charge_id"]


@pytest.mark.parametrize(("setting", "applied"), [
    ({}, 1),
    ({"idempotency": "ignored"}, 2),  # the API has no dedupe: the agent must guard itself
    ({"honoured_after_applied": False}, 2),  # the key was stored only once a response went out
])
def test_what_a_retry_with_the_same_key_does_per_setting(setting, applied):
    ts = ToolSet([catalogue.get("charge_payment", LOST, **setting)])
    ts.call("charge_payment", CHARGE)
    ts.call("charge_payment", CHARGE)
    assert ts.ledger.applied() == applied and ts.ledger.replayed() == 2 - applied
    assert len(ts.world.records("charges")) == applied


def test_a_lossy_api_still_dedupes_once_a_response_was_delivered():
    ts = ToolSet([catalogue.get("charge_payment", honoured_after_applied=False)])
    ts.call("charge_payment", CHARGE)
    ts.call("charge_payment", CHARGE)
    assert ts.ledger.applied() == 1 and ts.ledger.replayed() == 1


def test_a_call_without_a_key_applies_every_time_and_each_charge_is_its_own():
    ts = ToolSet([catalogue.get("charge_payment")])
    one = ts.call("charge_payment", customer_id="c1", amount=5.0)
    two = ts.call("charge_payment", customer_id="c1", amount=5.0)
    assert one["charge_id"] != two["charge_id"] and ts.ledger.duplicates()
    assert [c["charge_id"] for c in ts.world.records("charges")] == [one["charge_id"], two["charge_id"]]
    again = ToolSet([catalogue.get("charge_payment")])
    assert again.call("charge_payment", customer_id="c1", amount=5.0) == one  # seeded: the same in every process


def test_reads_find_what_writes_left_and_a_missing_record_is_not_found():
    ts = ToolSet([catalogue.get(n) for n in ("write_record", "read_record", "delete_record", "send_email",
                                             "list_sent_emails", "spawn_subagent", "get_job")])
    assert ts.call("read_record", record_id="r1")["error"]["code"] == "not_found"
    ts.call("write_record", record_id="r1", data={"v": 1})
    ts.call("write_record", record_id="r1", data={"v": 2})
    assert ts.call("read_record", record_id="r1")["data"] == {"v": 2}
    assert len(ts.world.records("records")) == 1
    ts.call("delete_record", record_id="r1")
    assert ts.call("read_record", record_id="r1")["error"]["class"] == "FATAL"
    assert ts.call("list_sent_emails", to="a@x.org") == {"emails": []}
    ts.call("send_email", to="a@x.org", subject="hi", body="one")
    ts.call("send_email", to="b@x.org", subject="hi", body="two")
    assert [m["body"] for m in ts.call("list_sent_emails", to="a@x.org")["emails"]] == ["one"]
    job = ts.call("spawn_subagent", task="summarise")
    assert ts.call("get_job", job_id=job["job_id"])["task"] == "summarise"


def test_a_world_starts_with_records_and_tells_created_from_given():
    world = World({"records": {"r1": {"record_id": "r1", "data": {"v": 0}}},
                   "emails": [{"to": "a@x.org", "body": "old"}]})
    ts = ToolSet([catalogue.get("read_record"), catalogue.get("send_email"), catalogue.get("list_sent_emails")],
                 world=world)
    assert ts.call("read_record", record_id="r1")["data"] == {"v": 0}
    ts.call("send_email", to="a@x.org", subject="s", body="new")
    assert [m["body"] for m in ts.call("list_sent_emails", to="a@x.org")["emails"]] == ["old", "new"]
    assert [m["body"] for m in world.collection("emails").created()] == ["new"]
    assert world.collection("emails").view(behind=1) == world.collection("emails").initial


def test_specs_declare_the_api_contract_a_runtime_can_read():
    pay, look = catalogue.get("charge_payment").spec(), catalogue.get("get_charge").spec()
    assert (pay["x-idempotency-key"], pay["x-idempotency"]) == ("idempotency_key", "honoured")
    assert pay["x-writes"] == {"collection": "charges", "key": None, "delete": False} and pay["x-reads"] is None
    assert look["x-reads"] == {"collection": "charges", "by": "idempotency_key", "field": "idempotency_key",
                               "many": False}
    assert catalogue.get("charge_payment", idempotency="ignored").spec()["x-idempotency"] == "ignored"
    assert catalogue.get("search").spec()["x-idempotency"] is None


@pytest.mark.parametrize(("settings", "declared"), [
    ({}, "honoured"),
    ({"honoured_after_applied": False}, "honoured-after-delivery"),
    ({"idempotency": "ignored"}, "ignored"),
    ({"idempotency": "ignored", "honoured_after_applied": False}, "ignored"),  # nothing to honour after delivery
])
def test_the_spec_declares_every_idempotency_rule_the_fake_applies(settings: dict, declared: str) -> None:
    tool = catalogue.get("charge_payment", **settings)
    assert tool.spec()["x-idempotency"] == declared
    assert ToolSet([tool]).specs()[0]["x-idempotency"] == declared  # what a runtime is handed


P = {"type": "object", "properties": {"id": {"type": "string"}, "key": {"type": "string"}}}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"side_effect": True, "idempotency_key": "key", "idempotency": "sometimes"}, "idempotency"),
    ({"side_effect": True, "idempotency_key": "key", "idempotency_ttl": 0}, "idempotency_ttl"),
    ({"side_effect": True, "idempotency_key": "key", "honoured_after_applied": "no"}, "honoured_after_applied"),
    ({"writes": "orders"}, "writes"),
    ({"side_effect": True, "writes": {"collection": "orders", "key": "nope"}}, "writes.key"),
    ({"side_effect": True, "writes": {"collection": "orders", "delete": True}}, "writes.key"),
    ({"side_effect": True, "writes": {"colection": "orders"}}, "writes.colection"),
    ({"reads": {"collection": "orders", "by": "nope"}}, "reads.by"),
    ({"reads": {"collection": "orders"}}, "reads.by"),
    ({"side_effect": True, "reads": {"collection": "orders", "by": "id"}}, "reads"),
])
def test_bad_world_and_idempotency_definitions_name_the_field(kwargs, field):
    with pytest.raises(DefinitionError) as err:
        fake_tool("orders", parameters=P, **kwargs)
    assert err.value.field == field


def test_a_tool_without_a_key_takes_no_idempotency_setting():
    with pytest.raises(DefinitionError) as err:
        catalogue.get("delete_record", idempotency="ignored")
    assert err.value.field == "idempotency"


def test_an_inline_tool_writes_and_reads_its_own_collection():
    put = fake_tool("put_order", parameters=P, side_effect=True, idempotency_key="key",
                    writes={"collection": "orders", "key": "id"})
    get = fake_tool("get_order", parameters=P, reads={"collection": "orders", "by": "id"})
    ts = ToolSet([put, get], ledger=EffectLedger())
    ts.call("put_order", id="o1", key="k")
    assert ts.call("get_order", id="o1") == {"id": "o1", "key": "k", "ok": True}


def test_a_stale_read_answers_as_the_world_was_some_writes_ago():
    world = World({"records": {"r1": {"record_id": "r1", "data": {"v": 0}}}})
    lagging = [{"call": 1, "outcome": {"stale": 1}}, {"call": 2, "outcome": {"stale": {"behind": 2}}}]
    ts = ToolSet([catalogue.get("write_record"), catalogue.get("read_record", lagging)], world=world)
    ts.call("write_record", record_id="r1", data={"v": 1})
    ts.call("write_record", record_id="r2", data={"v": 1})
    assert ts.call("read_record", record_id="r1")["data"] == {"v": 1}  # one write behind: r2 is not there yet
    assert ts.call("read_record", record_id="r1")["data"] == {"v": 0}  # two behind: r1 as it started
    assert ts.call("read_record", record_id="r1")["data"] == {"v": 1}  # caught up
    assert world.records("records")[0]["data"] == {"v": 1}


def test_reads_that_contradict_each_other_are_seeded():
    def reads(seed):
        world = World({"records": {"r1": {"record_id": "r1", "data": {"v": 0}}}})
        flaky = [{"probability": 0.5, "outcome": "stale"}]
        ts = ToolSet([catalogue.get("write_record"), catalogue.get("read_record", flaky)], seed=seed, world=world)
        ts.call("write_record", record_id="r1", data={"v": 1})
        return [ts.call("read_record", record_id="r1")["data"]["v"] for _ in range(12)]

    assert reads(1) == reads(1) and {0, 1} == set(reads(1))


def test_a_stale_read_needs_a_read_tool():
    with pytest.raises(DefinitionError, match="reads the world") as err:
        catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": {"slow": {"latency": 1, "then": "stale"}}}])
    assert err.value.field == "faults"
    with pytest.raises(DefinitionError, match="behind"):
        catalogue.get("read_record", faults={"stale": 0})


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"side_effect": True, "writes": {"collection": "orders", "key": "id", "delete": "yes"}}, "writes.delete"),
    ({"reads": {"collection": "orders", "by": "id", "many": 1}}, "reads.many"),
    ({"reads": "orders"}, "reads"),
    ({"side_effect": True, "writes": {"collection": ""}}, "writes.collection"),
])
def test_more_bad_world_definitions(kwargs, field):
    with pytest.raises(DefinitionError) as err:
        fake_tool("orders", parameters=P, **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize(("start", "field"), [({"orders": "o1"}, "orders"), ({"orders": ["o1"]}, "orders.orders#1")])
def test_a_world_starts_from_records_only(start, field):
    with pytest.raises(DefinitionError) as err:
        World(start)
    assert err.value.field == field
