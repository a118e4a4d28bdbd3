"""``toolchaos new``: a scenario scaffold for any catalogue tool and fault, that loads as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from toolchaos.cli import main
from toolchaos.cli._new import TEMPLATES, _template, python_scaffold, scaffold
from toolchaos.errors import CommandError
from toolchaos.fake_tools import catalogue
from toolchaos.fake_tools.faults import FAULTS
from toolchaos.scenario import SCHEMA_URL, Scenario, load_text


def load(text: str, name: str) -> Scenario:
    """The scenario as the loader sees it."""
    (scenario,) = load_text(text, name)
    return scenario


@pytest.mark.parametrize("tool", catalogue.NAMES)
def test_every_tool_and_fault_scaffold_loads(tool: str) -> None:
    for fault in FAULTS:
        if fault == "stale" and catalogue.get(tool).reads is None:
            with pytest.raises(CommandError, match="a stale read needs a tool that reads the world"):
                scaffold(tool, fault)
            continue
        text = scaffold(tool, fault)
        scenario = load(text, f"{tool}-{fault}.chaos.yaml")
        doc = yaml.safe_load(text)
        assert doc["id"] == f"{tool}-{fault}".replace("_", "-") and list(doc["tools"])[-1] == tool
        assert scenario.id == doc["id"] and [t.name for t in scenario.tools][-1] == tool
        assert (scenario.category, scenario.severity) == (doc["category"], doc["severity"])


def test_every_fault_kind_has_a_template() -> None:
    assert set(TEMPLATES) == set(FAULTS)


@pytest.mark.parametrize("tool", ["fetch_invoice", "charge_payment", "read_record"])
def test_scaffolds_pass_against_the_reference_agent(tool: str) -> None:
    """A scaffold is a correct test: the guarded reference passes it, the naive loop fails the loop ones."""
    run_scenario = pytest.importorskip("toolchaos.certification").run_scenario
    for fault in FAULTS:
        if fault == "stale" and tool != "read_record":
            continue
        scenario = load(scaffold(tool, fault), "s.chaos.yaml")
        guarded = run_scenario(scenario, "builtin:guarded")
        assert guarded.passed, (tool, fault, guarded.violations)
        if scenario.category in ("loops", "side_effects") or fault == "fatal":
            assert not run_scenario(scenario, "builtin:naive").passed, (tool, fault)


def test_side_effect_tools_check_their_effects() -> None:
    doc = yaml.safe_load(scaffold("send_email", "empty"))
    assert doc["expect"][:2] == [{"max_side_effects": {"n": 1, "tool": "send_email"}}, "idempotent"]
    lost = yaml.safe_load(scaffold("charge_payment", "timeout"))
    assert lost["category"] == "side_effects"
    assert lost["tools"]["charge_payment"]["faults"] == [{"call": 1, "outcome": {"timeout": {"after": 30,
                                                                                            "applied": True}}}]


def test_scaffold_starts_with_the_schema_line_for_editors() -> None:
    first = scaffold("search", "empty").splitlines()[0]
    assert first == f"# yaml-language-server: $schema={SCHEMA_URL}"
    assert SCHEMA_URL.endswith("scenario.schema.json")


def test_writes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "fetch_invoice", "timeout"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "fetch-invoice-timeout.chaos.yaml"
    assert out == f"wrote {path.name}\ntry it:  toolchaos run {path.name} --agent builtin:guarded\n"
    assert yaml.safe_load(path.read_text())["category"] == "loops"
    load(path.read_text(), str(path))


def test_output_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "sub" / "pay.chaos.yaml"
    assert main(["new", "charge_payment", "timeout", "-o", str(target), "--id", "pay-lost", "--severity", "minor",
                 "--category", "custom"]) == 0
    doc = yaml.safe_load(target.read_text())
    assert (doc["id"], doc["severity"], doc["category"]) == ("pay-lost", "minor", "custom")
    assert main(["new", "search", "empty", "-o", str(tmp_path)]) == 0  # a directory: the default name in it
    assert (tmp_path / "search-empty.chaos.yaml").exists()
    capsys.readouterr()
    assert main(["new", "search", "empty", "--stdout"]) == 0
    assert capsys.readouterr().out == scaffold("search", "empty")


@pytest.mark.parametrize(("argv", "message"), [
    (["new", "fetch_invoce", "timeout"], "no catalogue tool 'fetch_invoce'; did you mean 'fetch_invoice'?"),
    (["new", "fetch_invoice", "timout"], "unknown fault kind 'timout'; did you mean 'timeout'?"),
    (["new", "search", "empty", "--id", "bad id!"], "--id 'bad id!': use letters, digits"),
    (["new", "search", "empty", "-o", "x.yaml"], "x.yaml: scenario files are named *.chaos.yaml"),
    (["new", "charge_payment", "timeout", "--python-tool", "refund-order"], "--python-tool 'refund-order': the tool"),
    (["new", "fetch_invoce", "timeout", "--python-tool", "own"], "no catalogue tool 'fetch_invoce'; did you mean"),
    (["new", "read_record", "stale", "--python-tool", "own"], "a stale read needs the catalogue write it lags behind"),
    (["new", "fetch_invoice", "timeout", "--python-tool", "own", "--lossy"], "fetch_invoice takes no idempotency key"),
    (["new", "charge_payment", "timeout", "--python-tool", "own", "--lookup"], "--lookup: for a scenario file"),
    (["new", "search", "empty", "--python-tool", "own", "--id", "a", "--severity", "minor"], "--id, --severity: for"),
    (["new", "search", "empty", "--python-tool", "own", "-o", "own.py"], "-o own.py: with --python-tool, -o is a dir"),
])
def test_user_errors_are_one_line(argv: list[str], message: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolchaos new: error: {message}") and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_does_not_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a.chaos.yaml"
    target.write_text("mine\n")
    assert main(["new", "search", "empty", "-o", str(target)]) == 2
    assert "exists (pass --force to overwrite it)" in capsys.readouterr().err
    assert target.read_text() == "mine\n"
    assert main(["new", "search", "empty", "-o", str(target), "--force"]) == 0
    assert target.read_text() == scaffold("search", "empty")


@pytest.mark.parametrize(("argv", "yaml_has"), [
    (["charge_payment", "timeout", "--idempotency", "ignored"], ("idempotency: ignored",)),
    (["charge_payment", "timeout", "--lossy", "--lookup"], ("honoured_after_applied: false", "get_charge: {}")),
    (["send_email", "timeout", "--lookup"], ("list_sent_emails: {}",)),
    (["fetch_invoice", "transient", "--retry-form", "http_date"], ("retry_form: http_date",)),
    (["list_sent_emails", "stale"], ("send_email: {}", "emails:", "stale: {behind: 1}")),
])
def test_world_idempotency_and_retry_forms_scaffold(argv: list[str], yaml_has: tuple[str, ...],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", *argv, "--stdout"]) == 0
    text = capsys.readouterr().out
    assert all(part in text for part in yaml_has), text
    scenario = load(text, "s.chaos.yaml")
    run_scenario = pytest.importorskip("toolchaos.certification").run_scenario
    assert run_scenario(scenario, "builtin:guarded").passed
    assert not run_scenario(scenario, "builtin:naive").passed


@pytest.mark.parametrize(("argv", "message"), [
    (["fetch_invoice", "stale"], "a stale read needs a tool that reads the world"),
    (["delete_record", "timeout", "--idempotency", "ignored"], "takes no idempotency key"),
    (["fetch_invoice", "timeout", "--lookup"], "no catalogue read finds what fetch_invoice writes"),
    (["fetch_invoice", "timeout", "--retry-form", "ms"], "goes with the fault transient"),
    (["fetch_invoice", "transient", "--retry-form", "minutes"], "one of seconds, http_date"),
])
def test_options_that_do_not_fit_are_one_line_errors(argv: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", *argv, "--stdout"]) == 2
    assert message in capsys.readouterr().err


def test_every_python_tool_scaffold_passes_against_the_reference_agent(pytester: pytest.Pytester) -> None:
    """``--python-tool``, for every catalogue tool's shape and fault: the module and its test run under pytest --chaos.

    The guarded reference passes every one; the naive loop fails at least the loop, side-effect and fatal ones.
    """
    must_fail = set()
    for tool in catalogue.NAMES:
        for fault in (f for f in FAULTS if f != "stale"):  # a stale read is a scenario file's (its write is a pair)
            for name, text in python_scaffold(tool, fault, f"own_{tool}_on_{fault}").items():
                (pytester.path / name).write_text(text, encoding="utf-8")
            if _template(fault, catalogue.get(tool).side_effect).category in ("loops", "side_effects") or fault == "fatal":
                must_fail.add(f"test_own_{tool}_on_{fault}_{fault}")
    written = len(list(pytester.path.glob("test_*.py")))
    assert written == len(catalogue.NAMES) * (len(FAULTS) - 1)
    pytester.runpytest("--chaos").assert_outcomes(passed=written)
    _, _, failed = pytester.inline_run("--chaos", "--chaos-agent=builtin:naive").listoutcomes()
    assert must_fail <= {report.nodeid.rsplit("::", 1)[1] for report in failed}


@pytest.mark.parametrize("tool", catalogue.NAMES)
def test_the_python_tool_is_the_scenario_scaffold_s_tool_under_its_own_name(tool: str) -> None:
    for fault in (f for f in FAULTS if f != "stale"):
        defined: dict[str, Any] = {}
        exec(python_scaffold(tool, fault, "own")["fake_own.py"], defined)
        in_yaml = load(scaffold(tool, fault), "s.chaos.yaml").tools[-1]
        assert defined["own"].spec() == {**in_yaml.spec(), "name": "own"}, fault
        assert defined["own"].schedule == in_yaml.schedule, fault


def test_python_tool_api_options_and_retry_form() -> None:
    files = python_scaffold("charge_payment", "transient", "refund_order", idempotency="ignored", lossy=True,
                            retry_form="http_date")
    defined: dict[str, Any] = {}
    exec(files["fake_refund_order.py"], defined)
    tool = defined["refund_order"]
    assert (tool.idempotency, tool.honoured_after_applied) == ("ignored", False)
    assert tool.schedule.rules[0].outcome.retry_form == "http_date"
    assert ("toolchaos new charge_payment transient --idempotency ignored --lossy --retry-form http_date "
            "--python-tool refund_order") in files["test_refund_order_transient.py"]


def test_writes_the_python_tool_and_its_test(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["new", "charge_payment", "timeout", "--python-tool", "refund_order", "-o", "tests"]
    assert main(argv) == 0
    module, test = Path("tests", "fake_refund_order.py"), Path("tests", "test_refund_order_timeout.py")
    assert capsys.readouterr().out == f"wrote {module}\nwrote {test}\ntry it:  pytest --chaos {test}\n"
    assert "refund_order = fake_tool(" in module.read_text() and "from fake_refund_order import" in test.read_text()
    pytester.runpytest("--chaos", "tests").assert_outcomes(passed=1)

    test.write_text("mine\n")
    assert main(argv) == 2
    assert f"already there: {module}, {test} (pass --force to overwrite)" in capsys.readouterr().err
    assert test.read_text() == "mine\n"
    assert main([*argv, "--force"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {module}\nwrote {test}\n")
    assert main(["new", "charge_payment", "timeout", "--python-tool", "refund_order", "--stdout"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# ---- fake_refund_order.py ----\n") and test.read_text() in printed
