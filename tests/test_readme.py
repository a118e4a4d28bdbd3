"""The README's commands, quickstart and agent contract are real: they run and pass as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def python_block(start: str) -> str:
    """The README's Python block that starts so (its file-name comment, or its first line)."""
    return next(b for b in python_blocks() if b.startswith(start))


QUICKSTART, CONTRACT = "# test_my_agent.py", "from toolchaos import AgentResult"


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
    assert re.fullmatch(r"CERTIFIED for (\d+) of \1 applicable scenarios \(all applicable\): level reached all, "
                        r"required all", lines[-1])
    assert re.fullmatch(r"builtin:guarded: (\d+)/\1 scenarios passed", lines[-2])


def test_quickstart_passes_against_the_documented_agent(pytester: pytest.Pytester) -> None:
    quickstart, contract = python_block(QUICKSTART), python_block(CONTRACT)
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
    quickstart = python_block(QUICKSTART)
    pytester.mkpydir("myapp")
    (pytester.path / "myapp" / "agent.py").write_text(CRASHES_ON_AN_ERROR)
    pytester.makepyfile(test_my_agent=quickstart)
    pytester.syspathinsert()
    res = pytester.runpytest("--chaos")
    # the lost-payment test's own expectations hold (one charge, no duplicate): `terminated` fails it
    res.assert_outcomes(failed=2)
    res.stdout.fnmatch_lines(["*invariant terminated broke*the agent crashed: RuntimeError: charge_payment failed*"])


# A user's chaos test: it must run with the copy the README's commands installed, not with this checkout.
USERS_CHAOS_TEST = """
import os
from pathlib import Path

import pytest
import toolchaos


@pytest.mark.chaos
def test_a_chaos_test_runs_with_the_installed_copy(chaos):
    assert Path(os.environ["VIRTUAL_ENV"]).resolve() in Path(toolchaos.__file__).resolve().parents
    invoice = chaos.tool("fetch_invoice", chaos.faults.timeout(after=30))
    chaos.run(task="Get invoice inv_1", tools=[invoice],
              policy=chaos.policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
              expect=[chaos.invariants.bounded(executions=3), chaos.invariants.terminal_state("STOPPED_LOOP_GUARD")])
"""


def section(title: str) -> str:
    return README.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def shell(command: str, cwd: Path) -> str:
    """``command`` run by bash, as a user types it, outside this test session's environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "VIRTUAL_ENV")}
    out = subprocess.run(["bash", "-c", f"set -eo pipefail\n{command}"], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert out.returncode == 0, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def clone_of_the_checkout(dest: Path) -> None:
    """What a clone of the working tree holds (tracked and new files, not the ignored), committed: git+file reads commits."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is not part of it
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    identity = "-c user.name=readme -c user.email=readme@example.invalid -c commit.gpgsign=false"  # not the user's
    shell(f"git init -q && git add -A && git {identity} commit -q --no-verify -m clone", dest)


@pytest.mark.slow
def test_the_install_commands_work_in_a_project_of_ones_own(tmp_path: Path) -> None:
    """Each way the README installs toolchaos into a project, from a clone beside it, in one venv outside the checkout.

    The dependencies come from the package index once; each form then installs toolchaos itself again
    (uninstalled in between, so none of them is a no-op) and runs a chaos test with ``pytest --chaos``.
    """
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout (the clone is copied with git ls-files; one form installs with git)")
    lines = [line for block in re.findall(r"```bash\n(.*?)```", section("Use it in your project"), flags=re.S)
             for line in block.splitlines() if line.strip()]
    venv, check = lines[0], next(line for line in lines if line.startswith("pytest"))
    installs = [line for line in lines if line.startswith("pip ")]
    assert len(installs) == 3 and len(lines) == 5, lines  # the venv, three ways to install, the chaos tests
    clone_of_the_checkout(tmp_path / "toolchaos")  # the name the README's commands give the clone
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_x.py").write_text(USERS_CHAOS_TEST, encoding="utf-8")
    shell(venv, project)
    for install in installs:
        out = shell(f". .venv/bin/activate\n{install}\n{check}", project)
        assert "1 passed" in out, (install, out[-3000:])
        shell(". .venv/bin/activate && pip uninstall -y -q toolchaos", project)


def test_every_pip_install_of_toolchaos_in_the_docs_works_from_a_clone() -> None:
    """No doc tells a user to install toolchaos from an index it is not on, or with an extra it does not have.

    A form works from a clone: editable in the clone (``-e .``), from the clone's folder (``../toolchaos``:
    as is, as a wheelhouse, through ``git+file``, as the install test runs them); any other says what it needs.
    """
    table = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("\n[project.optional-dependencies]\n")[1]
    extras = set(re.findall(r"^([\w-]+) = ", table.split("\n[", 1)[0], flags=re.M))  # as declared, installed or not
    assert {"serve", "openai", "dev"} <= extras
    works = re.compile(r"pip install -e (\.|'\.\[[\w,-]+\]')|.*\.\./toolchaos.*|pip install --no-index --find-links .*")
    for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for command in re.findall(r"pip (?:install|wheel) [^`#&\n]*", line):
                if "toolchaos" not in command and " -e " not in command:
                    continue  # another package (a profiler, ...)
                where = f"{doc.name}:{n}: {command}"
                assert {e for group in re.findall(r"\[([\w,-]+)\]", command) for e in group.split(",")} <= extras, where
                assert works.fullmatch(command.strip()) or re.search(r"published|ADDRESS-OF-THE-REPOSITORY", line), where
