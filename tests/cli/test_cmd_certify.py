"""``toolchaos certify``: the bundled suite against an agent, and the ablation matrix."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from toolchaos.certification import SUITE_VERSION, suite
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_agent_is_certified(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify"]) == 0
    out, err = capsys.readouterr()
    assert out.count("PASS  ") == len(suite()) and "FAIL" not in out
    assert f"builtin:guarded: {len(suite())}/{len(suite())} scenarios passed" in err
    # every bundled scenario applies to an in-process agent, and the certificate says so
    assert (f"CERTIFIED for {len(suite())} of {len(suite())} applicable scenarios (all applicable): level reached all, "
            "required all") in err and "N/A" not in err and "N/A" not in out


def test_the_naive_agent_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--agent", "builtin:naive", "-k", "loop-*", "--json"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(not r["passed"] and r["agent"] == "builtin:naive" for r in rows)
    assert all(r["id"].startswith("loop-") for r in rows)


def test_verbose_failures_and_another_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--suite", str(ROOT / "scenarios" / "examples"), "--agent", "builtin:naive",
                 "-k", "example-first*", "-v"]) == 1
    out = capsys.readouterr().out
    assert "invariant bounded.executions broke" in out and "reproduce: toolchaos run" in out


def test_the_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "matrix.md"
    # a part of the suite cannot prove itself: no legit scenario catches the ablations
    assert main(["certify", "--matrix", "-k", "legit-*", "--output", str(out_file)]) == 1
    text = capsys.readouterr().out
    assert "legit-transient-503" in text and "PROBLEM: ablation -budgets (no budgets): no scenario catches it" in text
    md = out_file.read_text()
    assert md.startswith("# Certification matrix") and "| `legit-transient-503` | legit | critical | ok |" in md


def test_a_report_and_a_required_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the naive agent survives only the legitimate-repetition scenarios that need no waiting: level "none"
    assert main(["certify", "--agent", "builtin:naive", "--report", str(tmp_path), "--require", "critical"]) == 1
    err = capsys.readouterr().err
    assert "NOT CERTIFIED: " in err and "(all applicable); level reached none, required critical" in err
    assert "report.html" in err
    data = json.loads((tmp_path / "report.json").read_text())
    # the bundled suite's version (not the harness's), as the pytest plugin writes it
    assert data["suite"]["name"] == "certification" and data["suite"]["version"] == SUITE_VERSION
    assert len(data["scenarios"]) == len(suite()) and "builtin:naive" in json.dumps(data["agent"])
    assert main(["certify", "-k", "legit-*", "--agent", "builtin:naive", "--require", "major"]) == 1
    assert "FAIL  legit-poll-to-completion" in capsys.readouterr().out  # it polls a pending job without waiting
    legit = [s.name for s in suite() if s.name.startswith("legit-") and s.name != "legit-poll-to-completion"]
    assert main(["certify", "-k", ",".join(legit), "--agent", "builtin:naive", "--require", "major"]) == 0


def test_user_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--output", "x.md"]) == 2
    assert "--output goes with --matrix" in capsys.readouterr().err
    assert main(["certify", "-k", "nothing-matches"]) == 2
    assert main(["certify", "--agent", "no_such_module:agent"]) == 2
    assert "cannot import" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["-k", "budget-wall*", "-k", "loop-argument-jitter"],  # repeated
    ["-k", "budget-wall*,loop-argument-jitter"],  # comma-separated
    ["-k", "budget-wall*,", "-k", "loop-argument-jitter,budget-wall*"],  # both, with an empty part and a repeat
])
def test_k_takes_several_patterns(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", *args, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ["budget-wall-clock", "loop-argument-jitter"]  # the suite's order, each once
    assert all(r["verdict"] == "pass" and r["not_applicable"] is None for r in rows)


def test_a_k_pattern_that_matches_nothing_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "-k", "loop-argument-jitter", "-k", "lop-*,nothing"]) == 2
    assert capsys.readouterr().err.strip() == "toolchaos certify: error: no scenario matches -k 'lop-*', -k 'nothing'"


@pytest.mark.parametrize("command", ["certify", "run", "replay"])
def test_the_help_shows_every_form_of_agent_reference(command: str, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--agent` names a process agent as 'preset:NAME' (each preset listed) or 'cmd:COMMAND LINE', and
    lists as KIND only the kinds a 'KIND:package.module:attr' reference accepts."""
    import re

    from toolchaos._agents import PRESETS, process_ref, split

    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: no name broken at a hyphen
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "'preset:NAME'" in text and "'cmd:COMMAND LINE'" in text
    listed = re.search(r"'preset:NAME' \(NAME: ([^)]*)\)", text)
    assert listed is not None and listed.group(1).split(", ") == list(PRESETS)
    for name in listed.group(1).split(", "):
        assert process_ref(f"preset:{name}").preset == name
    kinds = re.search(r"'KIND:package\.module:attr' \(KIND: ([^)]*)\)", text)
    assert kinds is not None
    for kind in kinds.group(1).split(", "):
        assert split(f"{kind}:myapp.agent:run") == (kind, "myapp.agent:run")


def test_a_process_agent_from_the_help_is_certified(capsys: pytest.CaptureFixture[str]) -> None:
    """The help's 'cmd:COMMAND LINE' form, as printed, runs a program in its own process."""
    pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")
    import shlex
    import sys

    command = shlex.join([sys.executable, "-c", "print('no tools used')"])
    assert main(["certify", "--agent", f"cmd:{command}", "-k", "legit-transient-503", "--json"]) == 1
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["id"] == "legit-transient-503" and row["executions"] == 0 and not row["passed"]


# --- agents of every kind -----------------------------------------------------------------------

KINDS = "tests.cli.agents_of_every_kind"


def _legit() -> list[str]:
    """What `-k legit-*` runs: the legitimate-repetition scenarios, each quick with any framework."""
    return [s.name for s in suite() if s.name.startswith("legit-")]


@pytest.fixture
def agents_module(monkeypatch: pytest.MonkeyPatch) -> str:
    # found, not imported: the agents' module is imported by the command, as a user's would be
    if any(importlib.util.find_spec(m) is None for m in ("agents", "pydantic_ai", "langgraph", "langchain_openai",
                                                           "anthropic")):
        pytest.skip("needs the frameworks: pip install 'toolchaos[all-frameworks]'")
    monkeypatch.syspath_prepend(str(ROOT))  # `tests.` importable, as a user's package would be
    return KINDS


@pytest.mark.parametrize("attr,kind,failed", [
    # the Agents SDK's default max_turns=10 stops the 12 pages and the 12 reads of two feeds
    # none of them waits a pending job's poll interval (legit-poll-to-completion: polls past 3 per interval)
    ("openai_agent", "openai-agents", ["legit-paginate-12-pages", "legit-poll-to-completion", "legit-two-feeds-in-turn"]),
    ("pydantic_agent", "pydantic-ai", ["legit-poll-to-completion"]),
    ("langgraph_agent", "langgraph", ["legit-poll-to-completion"]),
    ("anthropic_loop", "sdk", ["legit-paginate-12-pages", "legit-poll-to-completion",  # its own 10-step cap, too
                               "legit-two-feeds-in-turn"]),
])
def test_an_agent_of_any_kind_gets_a_real_certificate(agents_module: str, attr: str, kind: str, failed: list[str],
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{agents_module}:{attr}"
    code = main(["certify", "--agent", ref, "-k", "legit-*", "--report", str(tmp_path)])
    err = capsys.readouterr().err
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["agent"]["ref"] == ref and data["could_not_certify"] is None
    n = len(_legit())
    assert data["totals"] == {"scenarios": n, "applicable": n, "passed": n - len(failed), "failed": len(failed),
                              "errors": 0, "not_applicable": 0}
    assert [s["id"] for s in data["scenarios"] if s["verdict"] == "fail"] == failed
    ran = [s for s in data["scenarios"] if s["verdict"] == "pass"]
    assert all(s["figures"]["executions"] > 0 and s["figures"]["model_turns"] > 1 for s in ran)  # it really ran
    assert code == (1 if failed else 0) and ("NOT CERTIFIED" in err) == bool(failed)
    assert main(["certify", "--agent", f"{kind}:{ref}", "-k", "legit-transient*"]) == 0  # the kind named explicitly


def test_an_agent_the_harness_cannot_call_is_an_error_not_a_failure(
        agents_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{agents_module}:wrong_signature"
    assert main(["certify", "--agent", ref, "-k", "legit-*", "--report", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    message = (f"could not call agent {ref}: wrong_signature() missing 1 required positional argument: 'config'; "
               "an agent is agent(task, model, tools) (in-process), agent(task) or agent(task, env) (sdk)")
    assert f"COULD NOT CERTIFY: {message}" in err and "level reached" not in err
    n = len(_legit())
    assert out.count("ERROR  legit-") == n and "FAIL" not in out
    assert f"{ref}: 0/{n} scenarios passed, {n} errors" in err
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["could_not_certify"].startswith(message) and data["certified"] is False
    assert data["totals"] == {"scenarios": n, "applicable": n, "passed": 0, "failed": 0, "errors": n,
                              "not_applicable": 0}
    assert {s["terminal_state"] for s in data["scenarios"]} == {"ERROR"}
    assert "COULD NOT CERTIFY" in (tmp_path / "report.md").read_text()
    assert "COULD NOT CERTIFY" in (tmp_path / "report.html").read_text()
    assert main(["certify", "--agent", ref, "-k", "legit-transient*", "-v"]) == 2  # the failure: why, not invariants
    assert f"chaos scenario legit-transient-503 could not run: {message}" in capsys.readouterr().out


def test_a_kind_named_wrong_is_a_clear_error(agents_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certify", "--agent", f"langgraph:{agents_module}:anthropic_loop"]) == 2
    assert "is named as langgraph" in capsys.readouterr().err
    assert main(["certify", "--agent", f"sdx:{agents_module}:anthropic_loop"]) == 2
    assert "unknown agent kind 'sdx'; did you mean 'sdk'?" in capsys.readouterr().err
