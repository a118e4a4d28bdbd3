"""The advisory severity: scenarios reported apart and required by no level.

The rate-limit waits carried only in quota headers (``x-ratelimit-reset-*``,
``anthropic-ratelimit-*-reset``) are advisory: the official SDKs' retry logic does not read
them. The Retry-After directive forms (an HTTP-date, ``retry-after-ms``) stay critical. A
runtime that reads only the directive fails the advisory variants, reaches every level and is
certified under ``--require all``, and every report still shows those failures, apart.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from toolchaos.certification import certify, suite
from toolchaos.errors import ScenarioError
from toolchaos.reports import certificate, certified, level_reached, read_report, write_reports
from toolchaos.scenario import SEVERITIES, load_file

RESET_FORMS = "err-rate-limit-reset-forms"
DIRECTIVE = {f"{RESET_FORMS}[http-date]", f"{RESET_FORMS}[retry-after-ms]"}
QUOTA = {f"{RESET_FORMS}[{form}]" for form in (
    "openai-reset-requests", "openai-reset-tokens", "anthropic-requests-reset", "anthropic-tokens-reset",
    "anthropic-input-tokens-reset", "anthropic-output-tokens-reset")}
META = {"agent": "builtin:guarded", "seed": 0, "suite": "certification", "started": "2026-01-02T03:04:05Z",
        "ended": "2026-01-02T03:04:15Z"}


@pytest.fixture()
def directive_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """builtin:guarded reading only the Retry-After directive, as the official SDKs' retry logic does."""
    guarded = importlib.import_module("toolchaos._agents.guarded")
    real = guarded.wait

    def directive_wait(headers: Mapping[str, str], now: float) -> float | None:
        return real({k: v for k, v in headers.items() if k.lower() in ("retry-after", "retry-after-ms")}, now)

    monkeypatch.setattr(guarded, "wait", directive_wait)
    yield


def _reset_forms() -> list[Any]:
    return [s for s in suite() if s.id == RESET_FORMS]


def test_quota_header_forms_are_advisory_with_why_and_the_directive_stays_critical() -> None:
    by = {s.name: s for s in _reset_forms()}
    assert set(by) == DIRECTIVE | QUOTA
    assert {by[n].severity for n in DIRECTIVE} == {"critical"}
    assert {by[n].severity for n in QUOTA} == {"advisory"}
    assert all("quota header" in (by[n].severity_why or "") for n in QUOTA)
    assert all(by[n].severity_why is None for n in DIRECTIVE)
    assert SEVERITIES[-1] == "advisory"  # the least severe: required by no level


def test_an_advisory_scenario_without_a_why_is_refused(tmp_path: Path) -> None:
    text = (Path(_reset_forms()[0].path or "").read_text(encoding="utf-8")
            .replace("severity_why: &quota", "notes: &quota").replace("severity_why: *quota", "notes: *quota"))
    p = tmp_path / "no-why.chaos.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError, match="notes"):  # an unknown key first: the schema is closed
        load_file(p)
    p.write_text(text.replace("    notes: &quota >\n", "    description: >\n").replace("    notes: *quota\n", ""),
                 encoding="utf-8")
    with pytest.raises(ScenarioError, match="advisory scenario is required by no level, so it must say why"):
        load_file(p)


def test_directive_forms_still_fail_a_runtime_that_ignores_them() -> None:
    """The advice does not soften the directive: a runtime blind to every form fails the critical level."""
    blind = importlib.import_module("toolchaos._agents.guarded").GuardedAgent(honour_retry_after=False)
    verdicts = certify(blind, _reset_forms())
    assert {v.id for v in verdicts if not v.passed} >= DIRECTIVE
    assert level_reached(verdicts) == "none" and not certified(verdicts, "critical")


@pytest.mark.usefixtures("directive_only")
def test_a_runtime_failing_only_the_advisory_forms_is_certified_and_shown(tmp_path: Path) -> None:
    verdicts = certify("builtin:guarded")
    failed = {v.id for v in verdicts if not v.passed}
    assert failed == QUOTA
    assert {v.failure_severity for v in verdicts if not v.passed} == {"advisory"}
    assert level_reached(verdicts) == "all" and certified(verdicts, "all")
    assert certificate(verdicts, "all").startswith("CERTIFIED for 38 of 44 applicable scenarios")
    assert certificate(verdicts, "all").endswith("; advisory: 6 of 6 failed (required by no level)")

    write_reports(verdicts, META, tmp_path, step_summary=False)
    data = read_report(tmp_path / "report.json")
    assert data["certified"] and data["level"] == "all"
    assert data["levels"]["all"]["scenarios"] == 38 and data["levels"]["all"]["passed"] == 38
    assert data["advisory"]["scenarios"] == 6 and data["advisory"]["passed"] == 0
    assert data["advisory"]["failed"] == sorted(QUOTA)
    by = {s["id"]: s for s in data["scenarios"]}
    assert all(by[n]["severity"] == "advisory" and "quota header" in by[n]["severity_why"] for n in QUOTA)
    assert all(by[n]["severity_why"] is None for n in DIRECTIVE)

    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    failures, advisory = md.split("### Failures", 1)[1].split("### Advisory (6)", 1)
    assert "None that a level requires: the advisory failures are listed apart below." in failures
    assert "0 of 6 advisory scenarios passed (required by no level)." in advisory
    assert all(f"`{n}`" in advisory for n in QUOTA) and not any(f"`{n}`" in failures for n in QUOTA)
    assert advisory.count("*Advisory:* The wait is carried only in a quota header") == 6
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<p class="advisory">0 of 6 advisory scenarios passed (required by no level); failed: ' in html
    assert html.count("Advisory, required by no level: The wait is carried only in a quota header") == 6

def test_guarded_passes_the_advisory_forms_too(tmp_path: Path) -> None:
    verdicts = certify("builtin:guarded", _reset_forms())
    assert all(v.passed for v in verdicts)
    assert certificate(verdicts, "all") == ("CERTIFIED for 8 of 8 applicable scenarios (all applicable): "
                                            "level reached all, required all")
    write_reports(verdicts, META, tmp_path, step_summary=False)
    data = read_report(tmp_path / "report.json")
    assert data["advisory"] == {"scenarios": 6, "passed": 6, "failed": [],
                                "meaning": data["advisory"]["meaning"]}
    assert "| advisory |" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_a_run_of_advisory_scenarios_alone_certifies_nothing() -> None:
    """No level requires them, so a run of nothing else tested nothing a level counts."""
    verdicts = [v for v in certify("builtin:guarded", _reset_forms()) if v.severity == "advisory"]
    assert all(v.passed for v in verdicts) and level_reached(verdicts) == "none"
    assert not certified(verdicts, "critical")
