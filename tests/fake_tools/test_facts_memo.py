from toolchaos.fake_tools import ToolSet, catalogue


def test_the_facts_of_a_call_are_kept_across_runs_and_shared_by_fault_copies() -> None:
    tool = catalogue.get("fetch_invoice")
    copy = tool.with_faults([{"outcome": "timeout", "call": 1}])
    first, second = ToolSet([tool], seed=1), ToolSet([copy], seed=1)
    norm_a, fp_a = first.fingerprint(tool.name, {"invoice_id": "inv_1"})
    assert tool._facts and copy._facts is tool._facts
    norm_b, fp_b = second.fingerprint(tool.name, {"invoice_id": "inv_1"})
    assert fp_a == fp_b and norm_a == norm_b
    assert norm_a is not norm_b  # each run's trace gets its own copy of the arguments


def test_a_remembered_validation_failure_still_fails_the_call() -> None:
    tool = catalogue.get("fetch_invoice")
    for _ in range(2):
        tools = ToolSet([tool], seed=1)
        outcome = tools.execute(tool.name, {"invoice_id": 7})[1]
        assert outcome.code == "wrong_type"
