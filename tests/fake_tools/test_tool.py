"""Fake tool definitions, argument validation, fingerprints and the standalone ToolSet."""

from __future__ import annotations

import dataclasses

import pytest
from toolchaos.fake_tools import DefinitionError, ToolSet, UnknownTool, catalogue, fake_tool, fingerprint, normalise


def test_missing_argument_is_a_precondition_naming_the_field():
    ts = ToolSet([catalogue.get("charge_payment")])
    out = ts.call("charge_payment", customer_id="c1")
    assert out["error"] == {"code": "missing_argument", "class": "PRECONDITION", "retryable": False,
                            "message": "missing required argument 'amount'", "field": "amount"}
    assert ts.ledger.applied("charge_payment") == 0


def test_wrong_type_and_enum_and_unknown_argument():
    t = fake_tool("t", parameters={"type": "object", "additionalProperties": False, "properties": {
        "n": {"type": "integer"}, "mode": {"type": "string", "enum": ["a", "b"]}}})
    ts = ToolSet([t])
    assert ts.call("t", n="3")["error"]["field"] == "n"
    assert ts.call("t", n=True)["error"]["code"] == "wrong_type"  # a bool is not an integer
    assert ts.call("t", mode="c")["error"]["code"] == "invalid_argument"
    assert ts.call("t", extra=1)["error"] == {"code": "unknown_argument", "class": "PRECONDITION",
                                              "retryable": False, "message": "unknown argument 'extra'",
                                              "field": "extra"}
    assert ts.call("t", n=3, mode="a") == {"ok": True}


@pytest.mark.parametrize("kwargs,field", [
    ({"parameters": {"type": "array"}}, "parameters"),
    ({"parameters": {"type": "object", "properties": {"x": {"type": "strnig"}}}}, "parameters.properties.x.type"),
    ({"parameters": {"type": "object", "properties": {}, "required": ["x"]}}, "parameters.required"),
    ({"parameters": {"type": "object", "properties": {}, "required": [[]]}}, "parameters.required"),
    ({"side_effect": True, "idempotency_key": "nope"}, "idempotency_key"),
    ({"idempotency_key": "x", "parameters": {"type": "object", "properties": {"x": {}}}}, "idempotency_key"),
    ({"delivery": "throw"}, "delivery"),
])
def test_bad_tool_definitions(kwargs, field):
    with pytest.raises(DefinitionError) as info:
        fake_tool("pay", **kwargs)
    assert (info.value.tool, info.value.field) == ("pay", field)


def test_unknown_tool_lists_what_is_registered():
    ts = ToolSet([catalogue.get("search")])
    with pytest.raises(UnknownTool, match=r"'serch'; did you mean 'search'\?; registered: search"):
        ts.call("serch", query="x")


def test_duplicate_tool_names_are_rejected():
    with pytest.raises(DefinitionError, match="two tools share this name"):
        ToolSet([catalogue.get("search"), catalogue.get("search")])


def test_catalogue_lookup_suggests():
    with pytest.raises(DefinitionError, match="did you mean 'send_email'"):
        catalogue.get("send_mail")


def test_fingerprint_ignores_meaningless_differences_only():
    a = normalise({"q": " refund  policy", "request_id": "r1", "page": 2}, volatile=("request_id",))
    b = normalise({"page": 2, "request_id": "r2", "q": "refund policy "}, volatile=("request_id",))
    c = normalise({"page": 3, "q": "refund policy"}, volatile=("request_id",))
    assert fingerprint("search", a) == fingerprint("search", b) != fingerprint("search", c)
    assert normalise({}, defaults={"limit": 3}) == normalise({"limit": 3})


def test_operation_key_is_the_idempotency_key_or_the_fingerprint():
    ts = ToolSet([catalogue.get("send_email", idempotency="ignored")])
    ts.call("send_email", to="a", subject="s", body="b", idempotency_key="k1")
    ts.call("send_email", to="a", subject="s", body="b", idempotency_key="k1")
    ts.call("send_email", to="a", subject="s", body="b")
    ts.call("send_email", to="a", subject="s", body="b")
    keys = ts.ledger.keys("send_email")
    assert keys["k1"] == 2 and sorted(keys.values()) == [2, 2] and ts.ledger.duplicates()


def test_with_faults_keeps_the_definition():
    base = catalogue.get("send_email")
    t = base.with_faults("timeout", delivery="raise")
    assert (t.name, t.side_effect, t.idempotency_key, t.delivery) == ("send_email", True, "idempotency_key", "raise")


def test_with_faults_is_the_same_tool_with_another_schedule():
    # with_faults copies the fields instead of re-running the constructor: the copy must equal a
    # tool built with that schedule, keep what the constructor derived, and still refuse a stale
    # read on a tool that reads nothing
    base = catalogue.get("charge_payment")
    t = base.with_faults([{"call": 2, "outcome": "timeout"}])
    assert t == dataclasses.replace(base, schedule=t.schedule) and t is not base
    assert (t.creates, t.honours_keys, t._cacheable, t._worldly) == (
        base.creates, base.honours_keys, base._cacheable, base._worldly)
    assert base.schedule.rules == () and len(t.schedule.rules) == 1
    with pytest.raises(DefinitionError, match="a stale read needs a tool that reads the world"):
        base.with_faults("stale")
    from toolchaos.fake_tools import faults as F

    for nested in (F.pending(2, then=F.stale()), F.slow(3, then=F.pending(1, then=F.stale()))):
        with pytest.raises(DefinitionError, match="a stale read needs a tool that reads the world"):
            base.with_faults([{"call": 1, "outcome": nested}])
        with pytest.raises(DefinitionError, match="a stale read needs a tool that reads the world"):
            base.with_faults(None, default=nested)
    assert base.with_faults(delivery="return").delivery == "return" and base.with_faults(delivery="").delivery == "return"
    with pytest.raises(DefinitionError, match="delivery"):
        base.with_faults(delivery="carrier pigeon")


def test_catalogue_has_its_tools_with_specs():
    assert set(catalogue.NAMES) == {"search", "read_document", "fetch_invoice", "get_job_status", "list_records",
                                    "send_email", "charge_payment", "write_record", "delete_record", "spawn_subagent",
                                    "get_charge", "list_sent_emails", "read_record", "get_job"}
    for name in catalogue.NAMES:
        spec = catalogue.get(name).spec()
        assert spec["name"] == name and spec["parameters"]["type"] == "object" and spec["description"]


def test_with_faults_checks_the_delivery_and_leaves_the_original_alone():
    base = catalogue.get("send_email")
    with pytest.raises(DefinitionError, match=r"send_email.*delivery.*'throw'"):
        base.with_faults("timeout", delivery="throw")
    t = base.with_faults("timeout")
    args = {"to": "a", "subject": "s", "body": "b"}
    assert ToolSet([t]).call("send_email", args)["error"]["code"] == "timeout"
    assert ToolSet([base]).call("send_email", args)["status"] == "sent"
    assert t.validate({"to": "a"}) is not None  # the shared compiled schema still validates


@pytest.mark.parametrize(("name", "args"), [
    ("read_document", {"doc_id": "d1"}), ("fetch_invoice", {"invoice_id": "inv_1"})])
def test_every_faker_backed_payload_is_seeded_and_varies_by_seed(name, args):
    one, again, other = (ToolSet([catalogue.get(name)], seed=s).call(name, args) for s in (1, 1, 2))
    assert one == again and one != other
    text = one.get("content") or one.get("customer")
    assert isinstance(text, str) and len(text) > 5


def test_catalogue_payloads_are_seeded_and_vary_by_seed():
    one = ToolSet([catalogue.get("search")], seed=1).call("search", query="refund")
    again = ToolSet([catalogue.get("search")], seed=1).call("search", query="refund")
    other = ToolSet([catalogue.get("search")], seed=2).call("search", query="refund")
    assert one == again and one != other
    titles = {r["title"] for r in one["results"]}
    assert len(titles) == 3 and all(t[:1].isupper() for t in titles)


def test_the_rules_fired_and_their_hits_come_from_one_pass_as_each_alone_gives_them():
    from toolchaos.fake_tools import FaultSchedule, Rule
    from toolchaos.fake_tools import faults as F

    rules = (Rule(F.timeout(5), call=1), Rule(F.empty(), call=9), Rule(F.timeout(5), calls=(3, 4)))
    tools = [catalogue.get("fetch_invoice").with_faults(FaultSchedule(rules, F.ok())), catalogue.get("get_job_status")]
    ts = ToolSet(tools, seed=1)
    for _ in range(5):
        ts.call("fetch_invoice", {"invoice_id": "inv_1"})
    fired, hits = ts.fired()
    assert fired == ts.rules_fired() == {"fetch_invoice": (0, 2), "get_job_status": ()}
    assert hits == ts.rule_hits() == {"fetch_invoice": {0: 1, 2: 2}, "get_job_status": {}}
