"""The trace table a failure prints: arguments whole where they matter, effects per event, readable run names."""

from __future__ import annotations

from toolchaos import invariants as inv
from toolchaos import policies, run
from toolchaos._internal.trace import args_text, is_key_field
from toolchaos.fake_tools import catalogue

CHARGE = {"customer_id": "cust_000000123456", "amount": 4999.99, "currency": "EUR",
          "description": "Invoice INV-2026-000123 for the annual subscription renewal, paid by card",
          "idempotency_key": "idem-2026-000123-attempt", "metadata": {"source": "checkout", "retry": True}}


def test_short_arguments_are_shown_whole() -> None:
    assert args_text({"invoice_id": "inv_1"}) == '{"invoice_id":"inv_1"}'


def test_long_arguments_keep_every_key_field_whole() -> None:
    text = args_text(CHARGE, width=200)
    for value in ('"amount":4999.99', '"idempotency_key":"idem-2026-000123-attempt"',
                  '"customer_id":"cust_000000123456"', '"currency":"EUR"'):
        assert value in text, text
    assert "annual subscription" not in text  # the free text is what gets shortened
    assert text.index('"amount"') < text.index('"description"')  # the key fields first
    assert len(text) <= 200 and '"description":"Invoice INV…"' in text


def test_when_even_the_key_fields_do_not_fit_they_stay_whole_and_the_rest_goes() -> None:
    text = args_text(CHARGE, width=40)
    assert '"idempotency_key":"idem-2026-000123-attempt"' in text and '"amount":4999.99' in text
    assert text.endswith(",…}") and "description" not in text


def test_key_fields_are_ids_amounts_and_keys() -> None:
    assert all(map(is_key_field, ("id", "customer_id", "invoice_ids", "amount", "idempotency_key", "Idempotency-Key",
                                  "key", "to", "currency")))
    assert not any(map(is_key_field, ("description", "body", "note", "query", "width")))


def _lost_charge(args: dict[str, object]):  # type: ignore[no-untyped-def]
    lost = [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}]
    return run("builtin:naive", task="Charge c1.", name="lost-charge",
               tools=[catalogue.get("charge_payment", idempotency="ignored", faults=lost)],
               policy=policies.stubborn("charge_payment", args))


def test_the_effects_column_is_per_event_with_the_total_after_it() -> None:
    r = _lost_charge({"customer_id": "c1", "amount": 4.5, "idempotency_key": "k-1"})
    table = r.trace.table()
    rows = [line for line in table.splitlines() if "charge_payment  {" in line]
    assert rows[0].rstrip().endswith("+1 (1)") and rows[1].rstrip().endswith("+1 (2)"), table


def test_an_operation_is_named_by_its_key_or_by_the_call() -> None:
    keyed = _lost_charge({"customer_id": "c1", "amount": 4.5, "idempotency_key": "k-1"})
    [v] = keyed.violations(inv.idempotent())
    assert v.expected == "operation charge_payment key 'k-1' applied at most once"
    unkeyed = _lost_charge({"customer_id": "c1", "amount": 4.5})  # the ledger keys it by a hash of the arguments
    [v] = unkeyed.violations(inv.idempotent())
    assert v.expected == 'operation charge_payment{"currency":"EUR","customer_id":"c1","amount":4.5} applied at most once'


def test_a_run_is_named_as_given() -> None:
    r = _lost_charge({"customer_id": "c1", "amount": 4.5})
    assert r.run_id == "lost-charge#0" and r.name == "lost-charge"
    assert r.summary().startswith("run lost-charge (seed 0): COMPLETED")


def test_a_violation_prints_the_fault_coverage() -> None:
    import pytest
    from toolchaos.errors import InvariantViolation

    r = _lost_charge({"customer_id": "c1", "amount": 4.5, "idempotency_key": "k-1"})
    with pytest.raises(InvariantViolation) as info:
        r.check(inv.idempotent())
    lines = str(info.value).splitlines()
    at = lines.index("fault coverage:")
    assert lines[at + 1:at + 3] == ["  charge_payment: 2 calls, 2 executed; answered by: ok x1, timeout x1",
                                    "  fault rules: 1 of 1 fired; charge_payment faults[0] x1"]
