"""``toolchaos schema``: the JSON Schema of scenario files, and the copy in docs/ that editors use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "toolchaos scenario" and schema["additionalProperties"] is False
    assert set(schema["required"]) == {"id", "title", "task", "tools", "policy", "expect"}
    assert {"Fault", "Rule", "FaultSchedule", "Policy", "Invariant", "ToolSpec"} <= set(schema["$defs"])
    policy_names = schema["$defs"]["Policy"]["anyOf"][0]["enum"]
    assert "stubborn" in policy_names and "recorded" in policy_names


def test_writes_the_schema_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scenario.schema.json"
    assert main(["schema", "--output", str(out)]) == 0
    assert json.loads(out.read_text())["title"] == "toolchaos scenario"
    assert main(["schema", "--output", str(tmp_path / "no" / "such" / "dir" / "x.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_the_copy_in_docs_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    main(["schema"])
    assert (ROOT / "docs" / "scenario.schema.json").read_text() == capsys.readouterr().out, (
        "run `toolchaos schema --output docs/scenario.schema.json`")


def test_every_bundled_scenario_validates_and_mistakes_do_not() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "scenario.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted((ROOT / "scenarios").rglob("*.chaos.yaml"))
    assert len(files) > 30
    for f in files:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(f.read_text()))]
        assert not errors, (f.name, errors[:3])
    doc = yaml.safe_load((ROOT / "scenarios" / "examples" / "01-first-scenario.chaos.yaml").read_text())
    for mistake in ({"titel": "x"}, {"severity": "huge"}, {"seed": "zero"},
                    {"tools": {"fetch_invoice": {"falts": []}}}, {"policy": {"stubborn": {"tol": "x"}}},
                    {"expect": [{"bounded": {"execution": 3}}]}):
        assert list(validator.iter_errors({**doc, **mistake})), mistake
