"""``--chaos-fuzz=N`` and a scenario's ``fuzz:`` block: the scenario's schedules are fuzzed after its run."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from chaos_samples import PAY_SCENARIO
from toolchaos.cli import main

pytest_plugins = ["pytester"]

SCENARIO = PAY_SCENARIO


def test_chaos_fuzz_finds_what_the_fixed_schedule_misses(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", pay=SCENARIO)
    pytester.runpytest("--chaos", "--chaos-agent=builtin:naive").assert_outcomes(passed=1)
    res = pytester.runpytest("--chaos", "--chaos-agent=builtin:naive", "--chaos-fuzz=60")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*idempotent*"])


def test_chaos_fuzz_holds_for_the_guarded_agent(pytester: pytest.Pytester) -> None:
    pytester.makefile(".chaos.yaml", pay=SCENARIO)
    pytester.runpytest("--chaos", "--chaos-fuzz=30").assert_outcomes(passed=1)


# --- what a fuzz failure prints: short by default, everything with -v -----------------------------

# A user's own agent: the plain loop, which charges again after an answer it could not read.
USER_AGENT = """
from toolchaos import tool_message


def run(task, model, tools):
    messages = [{"role": "user", "content": task}]
    for _ in range(40):
        turn = model.complete(messages, tools.specs)
        messages.append(turn.as_message())
        if turn.final:
            return turn.text
        for call in turn.tool_calls:
            try:
                result = tools.call(call.name, call.arguments, call_id=call.id)
            except Exception as exc:
                result = f"Error: {exc}. Please try again."
            messages.append(tool_message(call, result))
"""

FUZZED = SCENARIO + "fuzz: {examples: 60}\n"


def _fuzz_session(pytester: pytest.Pytester, *args: str) -> tuple[str, list[str]]:
    """A session whose one scenario's fuzz block breaks the user's agent: its output and the failure's lines."""
    pytester.makepyfile(myagent=USER_AGENT)
    pytester.makefile(".chaos.yaml", pay=FUZZED)
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos", "--chaos-agent=myagent:run", "-p", "no:randomly", *args)
    res.assert_outcomes(failed=1)
    lines = res.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"_+ chaos scenario pay _+", line))
    end = next(i for i, line in enumerate(lines) if i > start and re.fullmatch(r"=+ .* =+", line))
    failure = lines[start + 1:end]  # up to the next section (warnings, the short summary)
    # pytest prints a failure whole in the short summary on CI machines unless it knows its first line
    summary = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    assert lines[summary + 1].startswith("FAILED pay.chaos.yaml::pay - fuzzing myagent:run: "), lines[summary:]
    assert lines[summary + 2][0] == "=", lines[summary:]
    # the user's agent by its reference, never the harness's wrapper; none of pytest's and pluggy's frames
    text = "\n".join(failure)
    assert "AgentUnderTest" not in text and "pluggy" not in text and "_pytest" not in text, text
    assert "Traceback" not in text and "raise " not in text, text
    return text, failure


@pytest.fixture(autouse=True)
def _derandomised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")  # the fuzzer explores the same cases on every run (hypothesis's ci profile)


def _saved(failure: list[str], pytester: pytest.Pytester, invariant: str = "idempotent") -> Path:
    """The regression scenario the failure names for ``invariant``: it exists."""
    prefix = f"fuzz-{invariant.replace('_', '-')}-"
    [line] = [line for line in failure if line.startswith("  regression scenario: ") and prefix in line]
    path = pytester.path / line.split(": ", 1)[1]
    assert path.is_file(), line
    return path


def test_a_fuzz_failure_is_short_and_names_the_users_agent(pytester: pytest.Pytester,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    text, failure = _fuzz_session(pytester)
    assert len(failure) <= 60, text
    assert re.match(r"fuzzing myagent:run: \d distinct failure\(s\) in \d+ runs", failure[0]), failure[0]
    assert "idempotent broke (shrunk to 1 faulty call(s)):" in failure
    assert re.search(r"^  schedule: charge_payment call \d+ \S+", text, re.M), text
    assert "  trace around event #" in text  # the first failure's
    saved = _saved(failure, pytester)
    assert saved.parent == pytester.path / ".pytest_cache" / "d" / "toolchaos-fuzz"
    assert saved.name.endswith(".chaos.yaml")
    reproduce = f"reproduce: toolchaos run {saved.relative_to(pytester.path)} --agent myagent:run"
    assert f"  {reproduce}" in failure
    assert failure[-1] == "the full detail (each run, its fault coverage, the scenario's YAML): pytest -v"
    # the saved file is the regression: a complete scenario that fails the same way, by the printed command
    data = yaml.safe_load(saved.read_text())
    assert data["id"] == saved.name.removesuffix(".chaos.yaml") and "idempotent" in data["expect"]
    assert reproduce in saved.read_text()  # its header says how to run it
    capsys.readouterr()
    assert main(shlex.split(reproduce.removeprefix("reproduce: toolchaos "))) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"FAIL: {data['id']}: idempotent broke at step ")


def test_with_verbose_a_fuzz_failure_shows_the_full_detail(pytester: pytest.Pytester) -> None:
    text, _ = _fuzz_session(pytester, "-v")
    [saved] = pytester.path.glob(".pytest_cache/d/toolchaos-fuzz/fuzz-idempotent-*.chaos.yaml")
    shown = saved.relative_to(pytester.path)
    for part in ("fuzzing myagent:run broke idempotent (shrunk to 1 faulty call(s)):", "fault coverage:",
                 f"trace file: {saved.parent / saved.name.replace('.chaos.yaml', '.trace.jsonl')}",
                 f"reproduce: toolchaos run {shown} --agent myagent:run", f"saved as {shown}:",
                 "# Regression found by `toolchaos` fuzzing against myagent:run:", "- idempotent"):
        assert part in text, (part, text)
    assert saved.read_text().strip() in text  # the YAML shown is the file saved
    assert "pytest -v" not in text


def test_the_regression_goes_to_the_artifacts_directory(pytester: pytest.Pytester) -> None:
    _, failure = _fuzz_session(pytester, "--chaos-artifacts=out")
    saved = _saved(failure, pytester)
    assert saved.parent == pytester.path / "out"
    assert (saved.parent / saved.name.replace(".chaos.yaml", ".trace.jsonl")).is_file()  # the failing case's run


def test_without_pytests_cache_the_regression_goes_to_a_temporary_directory(pytester: pytest.Pytester) -> None:
    _, failure = _fuzz_session(pytester, "-p", "no:cacheprovider")
    saved = _saved(failure, pytester)  # an absolute path, outside the project
    try:
        assert saved.is_absolute() and pytester.path not in saved.parents
        assert saved.parent.name.startswith("toolchaos-fuzz-")
    finally:
        shutil.rmtree(saved.parent)
