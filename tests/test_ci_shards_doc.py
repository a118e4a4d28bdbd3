"""docs/ci-shards.md's CI files, run as written on one machine: three shard jobs in parallel, then the merge job.

The GitHub Actions workflow and the GitLab CI file are read from the page, not copied here. What a CI
service does around the commands is done the way it does it: each job gets a fresh copy of the project
(checkout), the matrix and ``parallel:`` variables are set, ``actions/upload-artifact`` and
``actions/download-artifact`` copy a directory to and from an artifact store (each downloaded artifact in
a folder of its name), GitLab hands the merge job the artifacts of every earlier job in its folder. The
install steps are left out: this environment has toolchaos, and the project's folder on ``PYTHONPATH``
stands for its ``pip install -e .``. Every other command runs as the page prints it, through bash.

The merged report must be the report one job running the whole suite writes, apart from the timings.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from report_timings import assert_same_report

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci-shards.md"
AGENT = "from toolchaos import GuardedAgent\n\nrun = GuardedAgent()\n"  # myapp.agent:run, the page's agent
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
CERTIFIED = re.compile(r"^CERTIFIED for (\d+) of \1 applicable scenarios .*: level reached all, required all$", re.M)

pytestmark = pytest.mark.slow  # seven sessions of the certification suite, three at a time


def yaml_block(heading: str) -> Any:
    """The YAML file printed under a heading of the page."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```yaml\n(.*?)^```$", section, flags=re.M | re.S)
    assert block is not None, f"no yaml block under ## {heading}"
    return yaml.safe_load(block.group(1))


def project(where: Path) -> Path:
    """A fresh checkout of a project whose agent is ``myapp.agent:run``."""
    (where / "myapp").mkdir(parents=True)
    (where / "myapp" / "__init__.py").write_text("")
    (where / "myapp" / "agent.py").write_text(AGENT)
    return where


def environment(workdir: Path, extra: Mapping[str, str] = {}) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_", "CI_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # pytest, toolchaos
    env["PYTHONPATH"] = str(workdir)  # the project, as its skipped `pip install -e .` would install it
    return {**env, **extra}


def bash(command: str, workdir: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", command], cwd=workdir, env=dict(env), capture_output=True, text=True,
                          timeout=900)


# --- GitHub Actions ---------------------------------------------------------------------------------------


def expand(text: str, context: Mapping[str, Any]) -> str:
    def value(m: re.Match[str]) -> str:
        assert m.group(1) in context, f"the simulation knows no ${{{{ {m.group(1)} }}}}"
        return str(context[m.group(1)])

    return EXPRESSION.sub(value, text)


def github_job(job: Mapping[str, Any], workdir: Path, context: Mapping[str, Any], store: Path) -> list[str]:
    """Run a job's steps as GitHub's runner would; the output of each command, in order."""
    env = environment(workdir, {"GITHUB_STEP_SUMMARY": str(workdir / "step-summary.md")})
    said = []
    for step in job["steps"]:
        uses, args = step.get("uses", ""), {k: expand(str(v), context) for k, v in (step.get("with") or {}).items()}
        if uses.startswith(("actions/checkout@", "actions/setup-python@")) or step.get("name") == "Install":
            continue  # the project is laid out already; this Python has toolchaos
        if uses.startswith("actions/upload-artifact@"):  # one directory: its contents are the artifact
            shutil.copytree(workdir / args["path"], store / args["name"])
        elif uses.startswith("actions/download-artifact@"):  # several artifacts: each under path/<its name>
            for artifact in sorted(store.iterdir()):
                if fnmatch.fnmatch(artifact.name, args["pattern"]):
                    shutil.copytree(artifact, workdir / args["path"] / artifact.name)
        else:
            assert set(step) <= {"name", "run", "if"}, f"a step the simulation does not know: {step}"
            done = bash(expand(step["run"], context), workdir, env)
            assert done.returncode == 0, (step["run"], done.stdout[-3000:], done.stderr[-3000:])
            said.append(done.stdout + done.stderr)
    return said


def test_the_github_actions_matrix_runs_as_written(tmp_path: Path) -> None:
    workflow = yaml_block("GitHub Actions")
    shard, report = workflow["jobs"]["shard"], workflow["jobs"]["report"]
    assert report["needs"] == "shard" and report["if"] == "always()"
    matrix = shard["strategy"]["matrix"]["shard"]
    assert matrix == [1, 2, 3]
    store = tmp_path / "artifacts"
    store.mkdir()
    with ThreadPoolExecutor(len(matrix)) as pool:  # the three shard jobs at once, each in its own checkout
        outputs = list(pool.map(lambda i: github_job(shard, project(tmp_path / f"shard-job-{i}"),
                                                     {"matrix.shard": i, "strategy.job-total": len(matrix)}, store),
                                matrix))
    for i, said in zip(matrix, outputs, strict=True):
        assert f"SHARD {i}/3 PASSED" in said[0]
    merged_in = project(tmp_path / "report-job")
    said = github_job(report, merged_in, {}, store)
    assert CERTIFIED.search(said[-1]), said[-1]
    assert sorted(p.name for p in store.iterdir()) == ["chaos-report", "chaos-shard-1", "chaos-shard-2",
                                                       "chaos-shard-3"]
    summary = (merged_in / "step-summary.md").read_text()
    assert summary == (merged_in / "chaos-report" / "report.md").read_text()  # the merged report.md, in the summary

    # The same command without its shard: one job running the whole suite.
    command = next(s["run"] for s in shard["steps"] if s.get("name") == "Chaos shard")
    whole = project(tmp_path / "whole-job")
    unsharded = re.sub(r" --chaos-shard=.*?(?= --|$)", "", command)
    assert "${{" not in unsharded and "--chaos-certify" in unsharded
    done = bash(unsharded, whole, environment(whole))
    assert done.returncode == 0, done.stdout[-3000:]
    assert_same_report(merged_in / "chaos-report", whole / "chaos-shard")


# --- GitLab CI --------------------------------------------------------------------------------------------


def gitlab_job(job: Mapping[str, Any], workdir: Path, variables: Mapping[str, str]) -> str:
    """Run a job's script as GitLab's runner would (its before_script installs: left out); the output."""
    assert all(line.startswith("pip install ") for line in job.get("before_script", []))
    done = bash("\n".join(job["script"]), workdir, environment(workdir, variables))
    assert done.returncode == 0, (job["script"], done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout + done.stderr


def artifacts_into(job: Mapping[str, Any], source: Path, target: Path, variables: Mapping[str, str]) -> None:
    """A job's artifacts, extracted into a later job's folder (GitLab keeps their paths)."""
    for raw in job["artifacts"]["paths"]:
        path = raw
        for name, value in variables.items():
            path = path.replace(f"${name}", value).replace(f"${{{name}}}", value)
        shutil.copytree(source / path, target / path, dirs_exist_ok=True)


def test_the_gitlab_parallel_job_runs_as_written(tmp_path: Path) -> None:
    config = yaml_block("GitLab CI")
    shard, report = config["chaos-shard"], config["chaos-report"]
    assert config["stages"] == [shard["stage"], report["stage"]] and report["needs"] == ["chaos-shard"]
    total = int(shard["parallel"])
    assert total == 3
    nodes = [{"CI_NODE_INDEX": str(i), "CI_NODE_TOTAL": str(total)} for i in range(1, total + 1)]
    with ThreadPoolExecutor(total) as pool:
        said = list(pool.map(lambda v: gitlab_job(shard, project(tmp_path / f"node-{v['CI_NODE_INDEX']}"), v), nodes))
    assert all(f"SHARD {v['CI_NODE_INDEX']}/3 PASSED" in s for v, s in zip(nodes, said, strict=True))
    merged_in = project(tmp_path / "report-job")
    for v in nodes:
        artifacts_into(shard, tmp_path / f"node-{v['CI_NODE_INDEX']}", merged_in, v)
    assert CERTIFIED.search(gitlab_job(report, merged_in, {}))
    assert report["artifacts"]["reports"]["junit"] == "chaos-report/junit.xml"
    assert (merged_in / "chaos-report" / "junit.xml").exists()

    command = shard["script"][0]  # without its shard, into a folder of its own: the whole suite in one job
    whole = project(tmp_path / "whole-job")
    done = bash(re.sub(r' --report "[^"]*"', " --report whole", re.sub(r' --shard "[^"]*"', "", command)), whole,
                environment(whole))
    assert done.returncode == 0, done.stderr[-3000:]
    assert_same_report(merged_in / "chaos-report", whole / "whole")
