"""The log-format registry: every format declared once, and everything that names formats reads it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from toolchaos.cli import build_parser
from toolchaos.logs import FORMATS, REGISTRY, LogFormatError, detect, load, read_records
from toolchaos.scenario import json_schema

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INCIDENT = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "05-incident.trace.jsonl"
FIXTURES = {"openai_chat.json": "openai-chat", "openai_responses.json": "openai-responses",
            "anthropic.json": "anthropic", "otel_spans.json": "otel", "otel_spans.jsonl": "otel"}


def test_formats_are_the_registry_in_order() -> None:
    assert FORMATS == tuple(f.name for f in REGISTRY)
    assert FORMATS == ("toolchaos", "openai-chat", "openai-responses", "anthropic", "otel")
    for fmt in REGISTRY:
        assert fmt.help and "\n" not in fmt.help, fmt.name
        assert fmt.shape and "\n" not in fmt.shape, fmt.name
    assert len({f.precedence for f in REGISTRY}) == len(REGISTRY)  # detection order is never a tie


@pytest.mark.parametrize(("name", "fmt"), [*FIXTURES.items()])
def test_each_fixture_is_detected_and_read_by_its_own_format(name: str, fmt: str) -> None:
    records, _ = read_records(LOGS / name)
    assert detect(records[0][1]) == fmt
    assert {c.format for c in load(LOGS / name)} == {fmt}
    assert {c.format for c in load(LOGS / name, fmt)} == {fmt}


def test_a_trace_is_the_toolchaos_format() -> None:
    records, _ = read_records(INCIDENT)
    assert detect(records[0][1]) == "toolchaos"


def test_an_unknown_shape_names_every_format() -> None:
    with pytest.raises(LogFormatError) as info:
        detect({"something": "else"}, "x.json")
    message = str(info.value)
    for fmt in REGISTRY:
        assert fmt.shape in message
    assert info.value.option == "format"


def _choices(parser: argparse.ArgumentParser, command: str) -> list[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if a.dest == "format")
    return list(action.choices or [])


def test_analyze_and_replay_offer_every_format() -> None:
    parser = build_parser()
    assert _choices(parser, "analyze") == ["auto", *FORMATS]
    assert _choices(parser, "replay") == ["auto", *FORMATS]


def _enums(node: Any) -> list[list[Any]]:
    if isinstance(node, dict):
        found = [node["enum"]] if isinstance(node.get("enum"), list) else []
        return found + [e for v in node.values() for e in _enums(v)]
    if isinstance(node, list):
        return [e for v in node for e in _enums(v)]
    return []


def test_the_scenario_schema_lists_every_format_for_a_recorded_policy() -> None:
    assert ["auto", *FORMATS] in _enums(json_schema())
