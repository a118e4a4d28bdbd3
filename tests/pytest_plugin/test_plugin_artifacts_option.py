"""``--chaos-artifacts=DIR``: each run's trace as DIR/<test-id>.trace.jsonl, byte-identical across sessions."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

TEST = """
def test_one(chaos):
    chaos.run(task="t", tools=[chaos.tool("search", [{"probability": 0.5, "outcome": "timeout"}])],
              policy=chaos.policies.paraphrase("search", {"query": "a b"}, max_turns=6))
    chaos.run(task="t", tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
"""


def test_traces_are_written_per_test_and_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_art=TEST)
    pytester.runpytest("--chaos", "--chaos-artifacts=out").assert_outcomes(passed=1)
    out = pytester.path / "out"
    names = sorted(p.name for p in out.iterdir())
    # the test id with a short hash of it (ids that sanitise alike never share a file); the second run -2
    assert [n.replace(names[1][22:32], "HASH") for n in names] == ["test_art.py__test_one-HASH-2.trace.jsonl",
                                                                    "test_art.py__test_one-HASH.trace.jsonl"]
    first = (out / names[1]).read_bytes()
    pytester.runpytest("--chaos", "--chaos-artifacts=out2", "-p", "no:randomly").assert_outcomes(passed=1)
    assert (pytester.path / "out2" / names[1]).read_bytes() == first


def test_no_artifacts_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_art=TEST)
    pytester.runpytest("--chaos").assert_outcomes(passed=1)
    assert not list(pytester.path.rglob("*.trace.jsonl"))


IDS = """
import json

import pytest

@pytest.mark.parametrize("x", ["a b", "a_b", "a/b", "a?b"])
def test(chaos, x):
    chaos.run(task=x, tools=[chaos.tool("search")], policy=chaos.policies.scripted([]))
"""


def test_every_test_id_gets_its_own_trace_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ids=IDS)
    pytester.runpytest("--chaos", "--chaos-artifacts=out", "-p", "no:randomly").assert_outcomes(passed=4)
    files = sorted((pytester.path / "out").iterdir())
    assert len(files) == 4 and all(f.name.startswith("test_ids.py__test_a_b-") for f in files)
    tasks = {json.loads(f.read_text().splitlines()[-1])["run"] for f in files}
    assert len(tasks) == 4


def test_a_symlink_planted_in_the_artifacts_directory_is_not_followed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_art=TEST)
    pytester.runpytest("--chaos", "--chaos-artifacts=out").assert_outcomes(passed=1)
    out = pytester.path / "out"
    first = sorted(out.iterdir())[-1]
    victim = pytester.path / "victim.txt"
    victim.write_text("keep me")
    first.unlink()
    first.symlink_to(victim)
    res = pytester.runpytest("--chaos", "--chaos-artifacts=out")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*a symbolic link is in the way*"])
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("where", ["/dev/null", "a-file", "a-file/below"])
def test_an_unusable_artifacts_directory_is_one_usage_error(pytester: pytest.Pytester, where: str) -> None:
    pytester.makepyfile(test_art=TEST)
    (pytester.path / "a-file").write_text("x")
    res = pytester.runpytest("--chaos", f"--chaos-artifacts={where}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*--chaos-artifacts={where}: * give a directory the traces can be written to"])
    assert "Traceback" not in res.stdout.str() + res.stderr.str()
