"""The README's quickstart and agent contract are real: they run and pass as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    bash = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    assert any(b.strip().endswith("&& toolchaos certify --agent builtin:guarded") for b in bash)
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    tests_cmd = next(b.strip() for b in bash if "'.[dev" in b)
    assert tests_cmd.split("&& ", 2)[-1] in ci  # CI runs the README's test command (after the venv)


def test_ci_runs_the_tests_on_every_other_supported_python() -> None:
    """.ci/run ends with .ci/pythons, which starts at the oldest Python pyproject.toml supports."""
    import tomllib

    ci = README.parent / ".ci"
    assert "bash .ci/pythons" in (ci / "run").read_text(encoding="utf-8")
    requires = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    oldest = re.fullmatch(r">=3\.(\d+)", requires.strip())
    assert oldest, requires
    assert f"seq {oldest.group(1)} " in (ci / "pythons").read_text(encoding="utf-8")
    assert f"Python 3.{oldest.group(1)} and later" in README.read_text(encoding="utf-8")


def test_the_main_job_certifies_the_reference_agent(capsys: pytest.CaptureFixture[str]) -> None:
    """README command 1, after the install: the bundled suite against builtin:guarded, and its verdict line."""
    from toolchaos.cli import main

    assert main(["certify", "--agent", "builtin:guarded"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()  # the verdict goes to stderr, the scenarios to stdout
    assert lines[-1] == "CERTIFIED: level reached all, required all"
    assert re.fullmatch(r"builtin:guarded: (\d+)/\1 scenarios passed", lines[-2])


def test_quickstart_passes_against_the_documented_agent(pytester: pytest.Pytester) -> None:
    quickstart, contract = python_blocks()[:2]
    head, first, *_ = quickstart.split("\n\n@pytest.mark.chaos")  # imports, then the first test
    assert len((head + first).strip().splitlines()) < 20
    pytester.mkpydir("myapp")
    (pytester.path / "myapp" / "agent.py").write_text(contract)
    pytester.makepyfile(test_my_agent=quickstart)
    pytester.syspathinsert()
    pytester.runpytest("--chaos").assert_outcomes(passed=2)
    pytester.runpytest().assert_outcomes(skipped=2)


CRASHES_ON_AN_ERROR = """
def run_agent(task, model, tools):
    messages = [{"role": "user", "content": task}]
    turn = model.complete(messages, tools.specs)
    for call in turn.tool_calls:
        result = tools.call(call.name, call.arguments, call_id=call.id)
        if isinstance(result, dict) and "error" in result:
            raise RuntimeError(f"{call.name} failed")  # the first error payload ends it: CRASHED
    return turn.text
"""


def test_quickstart_fails_for_an_agent_that_crashes(pytester: pytest.Pytester) -> None:
    quickstart = python_blocks()[0]
    pytester.mkpydir("myapp")
    (pytester.path / "myapp" / "agent.py").write_text(CRASHES_ON_AN_ERROR)
    pytester.makepyfile(test_my_agent=quickstart)
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos")
    # the lost-payment test's own expectations hold (one charge, no duplicate): `terminated` fails it
    res.assert_outcomes(failed=2)
    res.stdout.fnmatch_lines(["*invariant terminated broke*the agent crashed: RuntimeError: charge_payment failed*"])
