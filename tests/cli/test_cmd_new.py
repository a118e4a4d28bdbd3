"""``toolchaos new``: a scenario scaffold for any catalogue tool and fault, that loads as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from toolchaos.cli import main
from toolchaos.cli._new import TEMPLATES, scaffold
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
