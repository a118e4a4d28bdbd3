"""Loading scenario files: what a valid file becomes, and where every error points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from toolchaos.certification import run_scenario
from toolchaos.scenario import Scenario, ScenarioError, load_file, load_text

BASE = """\
id: t1
title: A timing-out invoice tool
task: Get the total.
tools:
  fetch_invoice:
    faults: {timeout: {after: 30}}
policy:
  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}
expect:
  - bounded: {executions: 3}
"""


def load(text: str, **kw: object) -> list[Scenario]:
    return load_text(textwrap.dedent(text), "s.chaos.yaml", **kw)  # type: ignore[arg-type]


def error(text: str, **kw: object) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load(text, **kw)
    return info.value


def with_(replace: str, by: str, text: str = BASE) -> str:
    assert replace in text, replace
    return text.replace(replace, by)


# --- a valid file ---------------------------------------------------------------------------


def test_a_valid_scenario_becomes_harness_objects() -> None:
    [sc] = load(BASE)
    assert (sc.id, sc.name, sc.category, sc.severity, sc.seed) == ("t1", "t1", "custom", "major", 0)
    assert [t.name for t in sc.tools] == ["fetch_invoice"]
    assert sc.policy().name == "stubborn"
    names = [e.name for e in sc.expect]
    assert names == ["bounded", "terminated", "no_execution_after_refusal", "faults_fired"]  # the last three: always
    assert sc.expect[0].text == "bounded: {executions: 3}" and sc.expect[0].line == 10
    assert sc.expect[1].line is None and sc.expect[1].phase == "each"
    assert len(sc.content_hash) == 64


def test_an_expectation_keeps_its_yaml_source_across_lines() -> None:
    [sc] = load(with_("  - bounded: {executions: 3}\n", "  - bounded:\n      executions: 3\n      turns: 4\n"
                                                        "  # trailing comment\n  - idempotent\n"))
    assert sc.expect[0].text == "bounded:\n  executions: 3\n  turns: 4"
    assert sc.expect[1].text == "idempotent" and sc.expect[1].line == 14


def test_defaults_listed_explicitly_are_not_added_twice() -> None:
    [sc] = load(with_("  - bounded: {executions: 3}\n", "  - bounded: {executions: 3}\n  - terminated\n"))
    assert [e.name for e in sc.expect].count("terminated") == 1


def test_shorthands_for_policies_faults_and_invariants() -> None:
    [sc] = load("""\
        id: t2
        title: shorthands
        task: t
        tools:
          search: {faults: empty}
          get_job_status:
          list_records: {default: {paginated: 4}}
        policy: {ignores_refusals: {stubborn: {tool: search, args: {query: q}}}}
        expect:
          - terminal_state: STOPPED_LOOP_GUARD
          - max_side_effects: 0
          - stop_report: [guard, reason]
        """)
    assert sc.policy().name == "ignores_refusals"
    inv = {e.name: e.invariant for e in sc.expect}
    assert inv["terminal_state"].states == ("STOPPED_LOOP_GUARD",)
    assert inv["max_side_effects"].n == 0 and inv["stop_report"].fields == ("guard", "reason")


# --- stage 1: YAML --------------------------------------------------------------------------


def test_broken_yaml_points_at_the_place() -> None:
    err = error(with_("faults: {timeout: {after: 30}}", "faults: {timeout: {after: 30}"))
    assert err.line == 7 and "invalid YAML" in err.message
    assert str(err).startswith("s.chaos.yaml:7:")


def test_tabs_are_explained() -> None:
    err = error(with_("  fetch_invoice:\n    faults", "  fetch_invoice:\n\tfaults"))
    assert "tab" in err.message and err.line == 6


def test_duplicate_keys_are_errors_at_the_second_one() -> None:
    err = error(BASE + "task: again\n")
    assert err.line == 11 and "duplicate key 'task' (first at line 3)" in err.message


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!custom 1"])
def test_tags_that_build_objects_are_refused(tag: str) -> None:
    err = error(with_("task: Get the total.", f"task: {tag}"))
    assert "not allowed" in err.message and err.line == 3


def test_more_than_one_document() -> None:
    err = error(BASE + "---\nid: other\n")
    assert "more than one YAML document" in err.message and err.line == 11


def test_deep_nesting_is_refused_without_recursing() -> None:
    err = error(with_("args: {invoice_id: inv_1}", "args: " + "[" * 5000 + "]" * 5000))
    # refused by our composer, or first by libyaml's own depth limit in newer builds: both located
    assert ("nested more than" in err.message or "nesting depth" in err.message) and err.line == 8


def test_alias_bombs_are_refused() -> None:
    bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        bomb.append(f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]")
    err = error("\n".join(bomb) + "\n")
    assert "expands to more than" in err.message


def test_aliases_within_limits_work() -> None:
    text = with_("args: {invoice_id: inv_1}", "args: &a {invoice_id: inv_1}")
    [sc] = load(text + "restart:\n  policy: {jitter: {tool: fetch_invoice, args: *a}}\n")
    assert sc.restart is not None and sc.restart.policy().args == {"invoice_id": "inv_1"}


def test_empty_file_and_wrong_top_level() -> None:
    assert "found an empty file" in error("").message
    assert "found a list" in error("- a\n- b\n").message
    assert error("just text\n").line == 1


def test_files_too_large_or_not_utf8(tmp_path: Path) -> None:
    big = tmp_path / "big.chaos.yaml"
    big.write_text("a: '" + "x" * 1_100_000 + "'\n")
    with pytest.raises(ScenarioError, match="limited to"):
        load_file(big)
    latin = tmp_path / "latin.chaos.yaml"
    latin.write_bytes(b"id: t\ntitle: caf\xe9\n")
    with pytest.raises(ScenarioError, match="not UTF-8") as info:
        load_file(latin)
    assert (info.value.line, info.value.col) == (2, 11)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_file(tmp_path / "missing.chaos.yaml")


def test_dates_stay_text() -> None:
    [sc] = load(with_("args: {invoice_id: inv_1}", "args: {invoice_id: 2026-01-01}"))
    assert sc.policy().args == {"invoice_id": "2026-01-01"}


# --- stage 2: structure ---------------------------------------------------------------------


def test_unknown_key_with_did_you_mean_and_excerpt() -> None:
    err = error(with_("title:", "titel:"))
    assert (err.line, err.col) == (2, 1)
    assert "unknown key 'titel' in the scenario; did you mean 'title'?" in err.message
    assert " > 2 | titel: A timing-out invoice tool\n" in str(err)
    assert str(err).endswith("| ^^^^^")


def test_unknown_key_inside_a_tool() -> None:
    err = error(with_("faults:", "falts:"))
    assert "unknown key 'falts' in tools.fetch_invoice; did you mean 'faults'?" in err.message
    assert (err.line, err.col) == (6, 5)


def test_missing_required_key() -> None:
    err = error(BASE.replace("task: Get the total.\n", ""))
    assert "missing the required key 'task'" in err.message and err.line == 1


def test_wrong_types_say_what_was_expected() -> None:
    err = error(BASE + "seed: seven\n")
    assert "seed: expected an integer, got 'seven'" in err.message and err.line == 11
    assert "expected an integer" in error(BASE + "seed: true\n").message
    assert "expected a number >= 0" in error(BASE + "seed: -1\n").message
    err = error(BASE + "budgets: {max_steps: 0}\n")
    assert "budgets.max_steps: expected a number >= 1, got 0" in err.message


def test_choices_with_did_you_mean() -> None:
    err = error(BASE + "category: loop\n")
    assert "expected one of loops, error_classes" in err.message and "did you mean 'loops'?" in err.message
    assert "did you mean 'critical'" in error(BASE + "severity: critcal\n").message


def test_bad_ids() -> None:
    assert "not a valid id" in error(with_("id: t1", "id: 'has spaces'")).message


# --- stage 3: meaning -----------------------------------------------------------------------


def test_unknown_fault_kind_points_at_the_kind() -> None:
    err = error(with_("faults: {timeout: {after: 30}}", "faults:\n      - {call: 1, outcome: {timeot: 3}}"))
    assert "unknown fault kind 'timeot'; did you mean 'timeout'?" in err.message
    assert (err.line, err.col) == (7, 29)


def test_fault_parameter_errors_point_at_the_value() -> None:
    err = error(with_("after: 30", "after: -5"))
    assert "faults[0].outcome.after: expected a number >= 0, got -5" in err.message
    assert (err.line, err.col) == (6, 31)
    err = error(with_("after: 30", "aftr: 30"))
    assert "did you mean 'after'" in err.message and err.col == 24


def test_rule_keys_have_did_you_mean() -> None:
    err = error(with_("faults: {timeout: {after: 30}}", "faults:\n      - {cal: 1, outcome: timeout}"))
    assert "unknown rule key; did you mean 'call'?" in err.message and err.line == 7


def test_nested_fault_errors_are_located() -> None:
    err = error(with_("faults: {timeout: {after: 30}}", "faults: {pending: {polls: 2, then: {timeout: {after: x}}}}"))
    assert "then" in err.message and "expected a number" in err.message and err.line == 6


def test_unknown_catalogue_tool() -> None:
    err = error(with_("  fetch_invoice:\n", "  fetch_invoce:\n"))
    assert "'fetch_invoce' is not in the catalogue; did you mean 'fetch_invoice'?" in err.message
    assert "give it `parameters:`" in err.message and (err.line, err.col) == (5, 3)


def test_inline_only_fields_on_a_catalogue_tool() -> None:
    err = error(with_("    faults:", "    side_effect: true\n    faults:"))
    assert "only for tools defined inline" in err.message and err.line == 6


def test_inline_tool_definition_errors() -> None:
    text = with_("""  fetch_invoice:
    faults: {timeout: {after: 30}}""", """  fetch_invoice:
    parameters:
      type: object
      properties: {invoice_id: {type: strng}}
    faults: {timeout: {after: 30}}""")
    err = error(text)
    assert "unknown JSON type 'strng'" in err.message and err.line == 8
    err = error(with_("    parameters:", "    idempotency_key: nope\n    parameters:", text.replace("strng", "string")))
    assert "idempotency_key" in err.message and err.line == 6


def test_unknown_policy_and_parameters() -> None:
    err = error(with_("  stubborn: {tool:", "  stubbron: {tool:"))
    assert "unknown policy 'stubbron'; did you mean 'stubborn'?" in err.message and (err.line, err.col) == (8, 3)
    err = error(with_("args: {invoice_id: inv_1}", "arg: {invoice_id: inv_1}"))
    assert "unknown parameter 'arg'; did you mean 'args'?" in err.message and err.line == 8
    err = error(with_("{tool: fetch_invoice, args: {invoice_id: inv_1}}", "{args: {invoice_id: inv_1}}"))
    assert "bad parameters (missing 1 required positional argument: 'tool')" in err.message
    err = error(with_("args: {invoice_id: inv_1}", "args: {invoice_id: inv_1}, until: always"))
    assert "until must be 'success' or 'never'" in err.message


def test_policy_naming_an_unknown_tool_is_rejected_at_load_time() -> None:
    err = error(with_("{tool: fetch_invoice,", "{tool: fetch_invoices,"))
    assert "calls the tool 'fetch_invoices', which this scenario does not define" in err.message
    assert "did you mean 'fetch_invoice'?" in err.message and (err.line, err.col) == (8, 20)


def test_policy_shape_errors() -> None:
    err = error(with_("  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}",
                      "  stubborn: {tool: fetch_invoice}\n  jitter: {tool: fetch_invoice}"))
    assert "expected one policy" in err.message and "2 keys" in err.message
    err = error(with_("policy:\n  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}", "policy: 5"))
    assert "expected one policy" in err.message and "got 5" in err.message and err.line == 7


def test_unknown_invariant_and_parameters() -> None:
    err = error(with_("  - bounded: {executions: 3}", "  - bounded: {executions: 3}\n  - idempotnt"))
    assert "unknown invariant 'idempotnt'; did you mean 'idempotent'?" in err.message and err.line == 11
    err = error(with_("{executions: 3}", "{executions: 3, turn: 2}"))
    assert "unknown parameter 'turn'; did you mean 'turns'?" in err.message
    err = error(with_("{executions: 3}", "{executions: three}"))
    assert "executions: expected an integer >= 0, got 'three'" in err.message
    assert "needs at least one bound" in error(with_("{executions: 3}", "{}")).message
    err = error(with_("  - bounded: {executions: 3}", "  - terminal_state: [STOPED_LOOP_GUARD]"))
    assert "did you mean 'STOPPED_LOOP_GUARD'?" in err.message and err.line == 10
    assert "takes no parameters" in error(with_("  - bounded: {executions: 3}", "  - idempotent: 3")).message


def test_an_expectation_says_why_beside_its_invariant() -> None:
    (sc,) = load(with_("  - bounded: {executions: 3}",
                       "  - bounded: {executions: 3}\n    why: >\n      the call and\n      two retries\n  - idempotent"))
    assert [(e.name, e.why) for e in sc.expect[:2]] == [("bounded", "the call and two retries"), ("idempotent", None)]
    assert "why: >" in sc.expect[0].text  # the failure message shows the reason with the YAML
    err = error(with_("  - bounded: {executions: 3}", "  - bounded: {executions: 3}\n    why: 3"))
    assert "expect[0].why: expected text saying why" in err.message and (err.line, err.col) == (11, 10)
    err = error(with_("  - bounded: {executions: 3}", "  - bounded: {executions: 3}\n    wy: more"))
    assert "'wy' next to the invariant: only why may sit beside it; did you mean 'why'?" in err.message
    assert err.line == 11
    assert "got a mapping with 1 keys (why)" in error(with_("  - bounded: {executions: 3}", "  - why: x")).message


def test_a_scenario_says_what_its_useful_work_is() -> None:
    useful = "useful: {executions: 2, turns: 4, why: the call and one retry}\nexpect:"
    (sc,) = load(with_("expect:", useful))
    assert (sc.useful.executions, sc.useful.turns, sc.useful.why) == (2, 4, "the call and one retry")
    assert load(BASE)[0].useful is None
    assert "useful.turns: expected a number >= 1" in error(with_("turns: 4", "turns: 0", with_("expect:", useful))).message
    assert "why" in error(with_(", why: the call and one retry", "", with_("expect:", useful))).message


def test_bounds_that_cannot_both_be_met_are_rejected() -> None:
    err = error(with_("  - bounded: {executions: 3}",
                      "  - bounded: {per_tool: {fetch_invoice: 2}}\n  - completed: {successes: {fetch_invoice: 5}}"))
    assert "cannot both be met" in err.message and "at most 2" in err.message and err.line == 11
    err = error(with_("  - bounded: {executions: 3}",
                      "  - bounded: {executions: 1}\n  - completed: {successes: {fetch_invoice: 2}}"))
    assert "cannot both be met" in err.message
    err = error(with_("  - bounded: {executions: 3}", "  - completed\n  - terminal_state: [FAILED]"))
    assert "completed requires the state COMPLETED" in err.message


def test_invariants_on_tools_the_scenario_does_not_define() -> None:
    err = error(with_("  - bounded: {executions: 3}", "  - bounded: {per_tool: {search: 1}}"))
    assert "names the tool 'search', which this scenario does not define" in err.message and err.line == 10
    err = error(with_("  - bounded: {executions: 3}", "  - max_side_effects: {n: 1, tool: fetch_invoice}"))
    assert "a tool without side effects" in err.message


# --- Python references ----------------------------------------------------------------------


def test_python_references_need_chaos_allow_imports() -> None:
    text = BASE + "agent: toolchaos._agents:naive\n"
    err = error(text)
    assert "names Python code" in err.message and "chaos_allow_imports" in err.message and err.line == 11
    [sc] = load(text, allow_imports=True)
    assert sc.agent == "toolchaos._agents:naive"
    assert "has no attribute" in error(BASE + "agent: toolchaos._agents:nope\n", allow_imports=True).message
    assert "cannot import" in error(BASE + "agent: no_such_pkg.mod:x\n", allow_imports=True).message
    assert "no built-in agent 'gaurded'" in error(BASE + "agent: builtin:gaurded\n").message


def test_an_agent_of_any_kind_by_reference() -> None:
    [sc] = load(BASE + "agent: sdk:toolchaos._agents:naive\n", allow_imports=True)  # the kind named: kept as given
    assert sc.agent == "sdk:toolchaos._agents:naive"
    err = error(BASE + "agent: sdx:toolchaos._agents:naive\n", allow_imports=True)
    assert "unknown agent kind 'sdx'; did you mean 'sdk'?" in err.message and err.line == 11
    err = error(BASE + "agent: langgraph:toolchaos._agents:naive\n", allow_imports=True)
    assert "names the kind langgraph" in err.message
    err = error(BASE + "agent: toolchaos._agents:KINDS\n", allow_imports=True)
    assert "is not callable, nor an agent of a kind recognised by its type" in err.message


def test_custom_policy_and_invariant_by_reference() -> None:
    text = with_("  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}",
                 "  toolchaos.policies._builtin:stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}")
    text = with_("  - bounded: {executions: 3}",
                 "  - bounded: {executions: 3}\n  - toolchaos.invariants._builtin:idempotent",
                 text)
    assert "chaos_allow_imports" in error(text).message
    [sc] = load(text, allow_imports=True)
    assert sc.policy().name == "stubborn" and sc.expect[1].name == "idempotent"
    v = run_scenario(sc, "builtin:guarded")
    assert v.passed


def test_a_function_invariant_by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))  # `tests.` importable
    text = with_("  - bounded: {executions: 3}", "  - tests.scenario.test_scenario_loader:_never_more_than_one_turn")
    [sc] = load(text, allow_imports=True)
    v = run_scenario(sc, "builtin:naive")
    assert not v.passed and v.violations[0].invariant == "tests.scenario.test_scenario_loader:_never_more_than_one_turn"


def _never_more_than_one_turn(result: object) -> bool:
    return getattr(result, "turns", 0) <= 1


# --- policy arguments that no fault could see -------------------------------------------------


@pytest.mark.parametrize("policy", [
    "  stubborn: {tool: fetch_invoice, args: {invoce_id: inv_1}}",
    "  scripted:\n    - {call: fetch_invoice, args: {invoce_id: inv_1}}",
    "  ignores_refusals:\n    stubborn: {tool: fetch_invoice, args: {invoce_id: inv_1}}",
])
def test_policy_arguments_that_fail_the_schema_are_a_located_error(policy: str) -> None:
    err = error(with_("  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}", policy))
    assert ("the policy calls fetch_invoice with {'invoce_id': 'inv_1'}, which its argument schema rejects "
            "(missing required argument 'invoice_id'; 'invoce_id' is not one of its parameters; did you mean "
            "'invoice_id'?)") in err.message
    assert "the scenario would test none of them" in err.message
    assert err.excerpt.splitlines()[-1].endswith(" " + "^" * len("invoce_id"))  # the caret: the misspelled key


def test_a_fault_rule_that_never_fires_fails_the_scenario_saying_why() -> None:
    [sc] = load(with_("    faults: {timeout: {after: 30}}\n", "    faults:\n      - {call: 5, outcome: timeout}\n"))
    v = run_scenario(sc, "builtin:guarded")  # one call answers the model: call 5 never comes
    [(exp, violation)] = v.failures
    assert exp.text == "(implicit) faults_fired" and violation.invariant == "faults_fired[fetch_invoice]"
    assert violation.actual == "it never matched: call 5 of fetch_invoice never came as a valid call (valid calls: 1)"


def test_invalid_arguments_to_a_tool_without_faults_may_be_what_a_scenario_tests() -> None:
    text = with_("    faults: {timeout: {after: 30}}\n", "", with_("{invoice_id: inv_1}", "{invoice_id: 42}"))
    [sc] = load(text)  # a wrong type on purpose: the PRECONDITION itself is the fault under test
    assert run_scenario(sc, "builtin:guarded").result.trace.tool_events[0]["code"] == "wrong_type"


# --- the goal ---------------------------------------------------------------------------------


GOAL = with_("task: Get the total.\n", "task: Get the total.\ngoal: {successes: {fetch_invoice: 1}}\n",
             with_("  - bounded: {executions: 3}\n", "  - bounded: {executions: 3}\n"
                                                     "  - terminal_state: [STOPPED_LOOP_GUARD]\n"))


def test_a_goal_judges_every_completed_claim_and_terminal_state_leaves_it_to_the_goal() -> None:
    [sc] = load(GOAL)
    by_name = {e.name: e for e in sc.expect}
    goal = by_name["goal"]
    assert (goal.text, goal.line, goal.phase) == ("goal: {successes: {fetch_invoice: 1}}", 4, "run")
    assert by_name["terminal_state"].invariant.completed_by_goal
    v = run_scenario(sc, "builtin:doomloop")  # bounded, then a false COMPLETED: the goal's, not terminal_state's
    assert [x.invariant for x in v.violations] == ["goal"] and v.failure_severity == "major"
    assert run_scenario(sc, "builtin:guarded").passed


def test_a_restarted_scenario_checks_its_goal_on_the_first_run_too() -> None:
    [sc] = load(GOAL + "restart:\n  tools:\n    fetch_invoice: {faults: []}\n")
    assert [e.phase for e in sc.expect if e.name == "goal"] == ["run", "before"]


@pytest.mark.parametrize("goal,message,line", [
    ("goal: {}", "goal: name at least one part", 4),
    ("goal: {successes: {fetch_invoce: 1}}", "goal: successes names the tool 'fetch_invoce', which this scenario "
                                             "does not define", 4),
    ("goal: {effects: {fetch_invoice: 1}}", "goal: effects of 'fetch_invoice', a tool without side effects", 4),
    ("goal: {successes: {fetch_invoice: 0}}", "goal.successes.fetch_invoice: expected a number >= 1, got 0", 4),
    ("goal: {sucesses: {fetch_invoice: 1}}", "unknown key 'sucesses' in goal; did you mean 'successes'?", 4),
])
def test_a_goal_is_validated_where_it_is_written(goal: str, message: str, line: int) -> None:
    err = error(with_("task: Get the total.\n", f"task: Get the total.\n{goal}\n"))
    assert message in err.message and err.line == line


# --- variants and restarts --------------------------------------------------------------------


def test_variants_become_items_and_merge_tools_per_key() -> None:
    scs = load(BASE + """\
variants:
  - id: empty
    tools:
      fetch_invoice: {faults: empty}
  - id: seven
    seed: 7
""")
    assert [s.name for s in scs] == ["t1[empty]", "t1[seven]"]
    assert [s.variant for s in scs] == ["empty", "seven"] and scs[1].seed == 7 and scs[0].seed == 0
    assert scs[0].tools[0].schedule.rules[0].outcome.kind == "empty"
    assert scs[1].tools[0].schedule.rules[0].outcome.kind == "timeout"
    assert scs[0].line == 12


def test_variant_errors_point_into_the_variant() -> None:
    err = error(BASE + "variants:\n  - id: a\n    tools:\n      fetch_invoice: {faults: emptty}\n")
    assert "unknown fault kind 'emptty'" in err.message and err.line == 14
    err = error(BASE + "variants:\n  - id: a\n    sed: 3\n")
    assert "unknown key 'sed' in variants[0]; did you mean 'seed'?" in err.message and err.line == 13
    err = error(BASE + "variants:\n  - id: a\n  - id: a\n")
    assert "used twice" in err.message and err.line == 13


def test_restart_builds_a_second_run_with_tool_overrides() -> None:
    [sc] = load(with_("{executions: 3}", "{executions: 4}") + """\
restart:
  tools:
    fetch_invoice: {faults: []}
  expect_before:
    - terminal_state: [STOPPED_LOOP_GUARD]
""")
    assert sc.restart is not None and sc.restart.task == sc.task
    assert sc.restart.tools[0].schedule.rules == () and sc.tools[0].schedule.rules != ()
    assert [e.phase for e in sc.expect] == ["run", "before", "each", "each", "each"]
    v = run_scenario(sc, "builtin:guarded")
    assert v.passed, v.headline()
    assert len(v.runs) == 2 and v.result.run_id.endswith("+restart")
    assert v.result.turns == v.runs[0].turns + v.runs[1].turns
    assert v.result.virtual_seconds == pytest.approx(v.runs[0].virtual_seconds + v.runs[1].virtual_seconds)
    seqs = [e["seq"] for e in v.result.trace.events]
    assert seqs == sorted(set(seqs))


def test_restart_errors_are_located() -> None:
    err = error(BASE + "restart:\n  tools:\n    fetch_invoice: {faults: [{cal: 1}]}\n")
    assert "unknown fault kind 'cal'; did you mean the rule key 'call'?" in err.message
    assert (err.line, err.col) == (13, 31)
    err = error(BASE + "restart:\n  policy: {stubborn: {tool: search}}\n")
    assert "calls the tool 'search'" in err.message and err.line == 12


# --- recorded policies --------------------------------------------------------------------------


def test_recorded_paths_resolve_against_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "rec").mkdir()
    trace = tmp_path / "rec" / "incident.trace.jsonl"
    trace.write_text('{"kind":"model","calls":[{"tool":"fetch_invoice","args":{"invoice_id":"inv_1"}}]}\n' * 5
                     + '{"kind":"model","final":"gave up"}\n')
    f = tmp_path / "replay.chaos.yaml"
    stubborn = "  stubborn: {tool: fetch_invoice, args: {invoice_id: inv_1}}"
    f.write_text(with_(stubborn, "  recorded: rec/incident.trace.jsonl"))
    [sc] = load_file(f)
    v = run_scenario(sc, "builtin:naive")
    assert v.result.total_executions == 5
    f.write_text(with_(stubborn, "  recorded: nope.jsonl"))
    with pytest.raises(ScenarioError, match="no such file") as info:
        load_file(f)
    assert info.value.line == 8 and f"{tmp_path / 'nope.jsonl'}: no such file" in info.value.message


def test_the_public_api_loads_scenario_support_lazily() -> None:
    import subprocess
    import sys

    code = ("import sys, toolchaos; assert 'pydantic' not in sys.modules and 'yaml' not in sys.modules; "
            "assert toolchaos.load_scenarios and toolchaos.certify and toolchaos.run_scenario "
            "and toolchaos.ScenarioError; "
            "assert 'pydantic' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    import toolchaos

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        toolchaos.nope  # noqa: B018


def test_a_fuzz_block_is_validated_by_the_fuzzer_and_located() -> None:
    [sc] = load(BASE + "fuzz: {vary: [fetch_invoice], kinds: [timeout], examples: 5}\n")
    assert sc.fuzz is not None and sc.fuzz.vary == ("fetch_invoice",) and sc.fuzz.examples == 5
    assert load(BASE)[0].fuzz is None
    err = error(BASE + "fuzz: {kinds: [timeot]}\n")
    assert "fuzz.kinds[0]: unknown fault kind 'timeot'; did you mean 'timeout'?" in err.message
    assert (err.line, err.col) == (11, 16)
    err = error(BASE + "fuzz: {exampels: 3}\n")
    assert "did you mean 'examples'?" in err.message and (err.line, err.col) == (11, 8)
