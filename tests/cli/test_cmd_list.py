"""``toolchaos list``: every section, one line per entry, text or JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from toolchaos.cli import _lazy, main
from toolchaos.fake_tools import catalogue
from toolchaos.fake_tools.faults import FAULTS
from toolchaos.invariants import INVARIANTS
from toolchaos.policies import POLICIES


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, str]]:
    assert main(["list", *args, "--json"]) == 0
    data: dict[str, dict[str, str]] = json.loads(capsys.readouterr().out)
    return data


def test_json_lists_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    data = listed(capsys)
    assert list(data) == ["faults", "policies", "invariants", "tools", "agents", "levels", "scenarios"]
    assert list(data["faults"]) == list(FAULTS)
    assert list(data["policies"]) == list(POLICIES)
    assert list(data["invariants"]) == list(INVARIANTS)
    assert list(data["tools"]) == list(catalogue.describe())
    assert list(data["agents"]) == ["builtin:naive", "builtin:guarded", "builtin:loopguard", "builtin:doomloop",
                                    "builtin:gemini", "builtin:breaker", "builtin:production", "builtin:sdk-retries",
                                    "package.module:attr"]
    assert list(data["levels"]) == ["critical", "major", "all"]
    for section in data.values():
        for name, desc in section.items():
            assert desc and "\n" not in desc and "``" not in desc, (name, desc)


def test_side_effect_tools_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    tools = listed(capsys, "tools")["tools"]
    assert tools["charge_payment"].endswith("(side effect, idempotency key: idempotency_key)")
    assert tools["delete_record"].endswith("(side effect)")
    assert "side effect" not in tools["search"]


def test_builtin_scenarios_are_listed_with_category_and_severity(capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = listed(capsys, "scenarios")["scenarios"]
    desc = scenarios["loop-exact-repeat-timeout"]
    assert desc.startswith("[certification, loops, critical] ")


def test_a_runner_that_breaks_shows_as_an_internal_error(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A loader bug must show: list never reads the files some other way and prints something else."""
    def broken(name: str) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(_lazy, "suite", broken)  # where the command reads the runner
    assert main(["list", "scenarios"]) == 3
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err


def test_text_output_is_aligned_and_sectioned(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "faults", "levels"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("faults: fault kinds a fake tool can answer with\n  ok             success")
    assert "\n\nlevels: certification levels (--require / --chaos-require)\n  critical  every critical" in out


def test_sections_are_deduplicated_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(listed(capsys, "tools", "faults", "tools")) == ["tools", "faults"]


def test_unknown_section_is_one_line_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "fault"]) == 2
    err = capsys.readouterr().err
    assert err == ("toolchaos list: error: unknown section 'fault'; did you mean 'faults'? (sections: faults, "
                   "policies, invariants, tools, agents, levels, scenarios)\n")
