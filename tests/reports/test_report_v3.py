"""What report.json v3 adds: the agent's identity, tokens and cost, fault coverage, descriptions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import report_samples as sup
from toolchaos import invariants as inv
from toolchaos import policies, run
from toolchaos.errors import ReportError
from toolchaos.fake_tools import catalogue
from toolchaos.reports import PRICED_AS, PRICES, build_report, git_commit, price_table, scenario_entry
from toolchaos.reports._meta import agent_commit, agent_version

# --- the agent's identity ----------------------------------------------------------------


def test_a_builtin_agent_shows_no_version_of_its_own() -> None:
    assert agent_version("builtin:naive") is None and agent_commit("builtin:guarded") is None
    report, _ = build_report([scenario_entry(sup.paginate("builtin:guarded"))], {"agent": "builtin:guarded"})
    assert report["agent"] == {"ref": "builtin:guarded", "version": None, "commit": None}


def test_the_given_version_and_commit_win() -> None:
    report, _ = build_report([scenario_entry(sup.paginate("builtin:guarded"))],
                             {"agent": "mypkg.agent:run", "agent_version": "2.3.1", "agent_commit": "abc"})
    assert report["agent"] == {"ref": "mypkg.agent:run", "version": "2.3.1", "commit": "abc"}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


@pytest.fixture
def agent_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A package in a git working tree, importable, with one commit."""
    if subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0:  # pragma: no cover
        pytest.skip("git is not installed")
    repo = tmp_path / "proj"
    (repo / "myagent_pkg").mkdir(parents=True)
    (repo / "myagent_pkg" / "__init__.py").write_text("def run(task, model, tools):\n    return 'done'\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    monkeypatch.syspath_prepend(str(repo))
    return repo, _git(repo, "rev-parse", "HEAD")


def test_the_commit_of_the_agents_working_tree_is_read_from_git_files(agent_repo: tuple[Path, str]) -> None:
    repo, sha = agent_repo
    assert agent_commit("myagent_pkg:run") == sha and agent_commit("in-process:myagent_pkg:run") == sha
    assert "myagent_pkg" not in sys.modules  # found, not imported
    _git(repo, "pack-refs", "--all")  # the branch now lives in packed-refs only
    assert git_commit(repo / "myagent_pkg") == sha
    _git(repo, "checkout", "-q", "--detach")
    assert git_commit(repo) == sha


def test_a_linked_worktree_reads_its_branch_from_the_main_repository(agent_repo: tuple[Path, str]) -> None:
    repo, sha = agent_repo
    _git(repo, "worktree", "add", "-q", "-b", "side", str(repo.parent / "side"))
    assert git_commit(repo.parent / "side") == sha


def test_an_installed_package_or_a_broken_git_dir_has_no_commit(tmp_path: Path) -> None:
    assert agent_commit("json:loads") is None  # the standard library: installed, whatever repository holds it
    assert agent_commit("pytest:main") is None  # site-packages too
    (tmp_path / "w" / ".git").mkdir(parents=True)  # no HEAD
    assert git_commit(tmp_path / "w") is None


def test_the_agent_identity_is_shown_beside_the_harness(tmp_path: Path) -> None:
    from toolchaos.reports import write_reports

    write_reports([sup.paginate("builtin:guarded")], {"agent": "mypkg.agent:run", "agent_version": "2.3.1",
                                                      "agent_commit": "0123456789abcdef"}, tmp_path,
                  step_summary=False)
    md = (tmp_path / "report.md").read_text()
    assert "| Agent | `mypkg.agent:run` 2.3.1, commit 0123456789ab |" in md
    assert "2.3.1, commit 0123456789ab" in (tmp_path / "report.html").read_text()


# --- tokens and cost ---------------------------------------------------------------------


def test_tokens_per_turn_and_the_cumulative_cost() -> None:
    entry, _ = scenario_entry(sup.timeout_repeat("builtin:naive"))
    report, _ = build_report([(entry, [])], {})
    s = report["scenarios"][0]
    per_turn = s["tokens"]["per_turn"]
    assert len(per_turn) == s["figures"]["model_turns"] == 40
    assert sum(a + b for a, b in per_turn) == s["figures"]["tokens"]
    assert per_turn[-1][0] > 10 * per_turn[0][0]  # the loop re-sends a growing history: dearer every turn
    pin, pout = PRICES[PRICED_AS]
    assert s["cost"]["usd"] == round((s["tokens"]["input"] * pin + s["tokens"]["output"] * pout) / 1e6, 6)
    cum = s["cost"]["cumulative_usd"]
    assert len(cum) == 40 and cum == sorted(cum) and cum[-1] == s["cost"]["usd"]
    useful = s["grade"]["useful_turns"]
    assert s["cost"]["wasted_usd"] == round(cum[-1] - cum[useful - 1], 6) > 0
    assert report["cost"]["model"] == PRICED_AS and report["cost"]["estimate"] is True
    assert report["cost"]["wasted_usd_failing"] == s["cost"]["wasted_usd"]


def test_a_prices_file_overrides_the_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("model: house-model\ndated: '2026-11'\nprices:\n  house-model: {input: 1000000, output: 0}\n")
    entry, _ = scenario_entry(sup.paginate("builtin:guarded"))
    report, _ = build_report([(entry, [])], {"prices": str(prices)})
    s = report["scenarios"][0]
    assert s["cost"]["usd"] == s["tokens"]["input"]  # a dollar per input token
    assert (report["cost"]["model"], report["cost"]["dated"], report["cost"]["source"]) == (
        "house-model", "2026-11", "prices.yaml")
    report, _ = build_report([(entry, [])], {"prices": str(prices), "price_model": "gpt-4o-mini"})
    assert report["cost"]["input_per_million"] == PRICES["gpt-4o-mini"][0]


def test_bad_prices_are_located_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no price for model 'gpt-5o'; did you mean 'gpt-4o'"):
        price_table(None, "gpt-5o")
    bad = tmp_path / "p.yaml"
    bad.write_text("prices:\n  m: {input: -1, output: 2}\n")
    with pytest.raises(ReportError, match=r"p\.yaml: prices\.m must be \{input: USD, output: USD\}"):
        price_table(bad)
    bad.write_text("pricez: {}\n")
    with pytest.raises(ReportError, match="a prices file is a mapping of model, dated and prices"):
        price_table(bad)
    with pytest.raises(ReportError, match="cannot read the prices file"):
        price_table(tmp_path / "missing.yaml")


# --- fault coverage ----------------------------------------------------------------------


def test_coverage_counts_the_faults_met_and_names_the_rules_that_never_fired() -> None:
    rules = [{"call": 1, "outcome": "timeout"}, {"call": 2, "outcome": {"transient": 503}},
             {"call": 9, "outcome": "fatal"}]
    r = run("builtin:guarded", task="Get invoice inv_1.", tools=[catalogue.get("fetch_invoice", faults=rules)],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    cov = inv.fault_coverage(r)
    row = cov["tools"]["fetch_invoice"]
    assert row["executions"] == r.executions["fetch_invoice"] and row["calls"] >= row["executions"]
    assert row["faults"]["timeout"] == 1 and row["faults"]["transient"] == 1
    assert [(x["rule"], x["fired"]) for x in cov["rules"]] == [(0, 1), (1, 1), (2, 0)]
    assert (cov["declared"], cov["fired"]) == (3, 2)
    assert cov["never_fired"] == ["fetch_invoice faults[2] (call 9 -> fatal)"]
    text = "\n".join(inv.coverage_text(cov))
    assert "never fired: fetch_invoice faults[2] (call 9 -> fatal)" in text and "timeout x1" in text


def test_coverage_when_every_rule_fired() -> None:
    r = run("builtin:guarded", task="Get invoice inv_1.",
            tools=[catalogue.get("fetch_invoice", faults=[{"call": 1, "outcome": "timeout"}])],
            policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}))
    cov = inv.fault_coverage(r)
    assert cov["never_fired"] == [] and (cov["declared"], cov["fired"]) == (1, 1)


def test_the_suite_coverage_sums_the_scenarios(tmp_path: Path) -> None:
    from toolchaos.reports import write_reports

    write_reports(sup.suite("builtin:naive"), sup.META, tmp_path, step_summary=False)
    from toolchaos.reports import read_report

    data = read_report(tmp_path / "report.json")
    cov = data["coverage"]
    assert cov["declared"] == sum(s["coverage"]["declared"] for s in data["scenarios"]) == 3
    assert cov["tools"]["fetch_invoice"]["faults"]["timeout"] == 40
    md = (tmp_path / "report.md").read_text()
    assert "| Fault coverage | 3 of 3 declared fault rules fired |" in md
    assert "Fault coverage: fetch_invoice: 40/40 executed (timeout x40); rules fired 1/1" in md


# --- descriptions and the first broken invariant -----------------------------------------


def test_descriptions_and_first_broken_invariants_reach_every_rendering(tmp_path: Path) -> None:
    from toolchaos.certification import certify, suite
    from toolchaos.reports import read_report, write_reports

    scenario = next(s for s in suite() if s.name == "loop-exact-repeat-timeout")
    write_reports(certify("builtin:naive", [scenario]), {"agent": "builtin:naive"}, tmp_path, step_summary=False)
    s = read_report(tmp_path / "report.json")["scenarios"][0]
    assert s["description"] == scenario.description and s["first_broken"] == "bounded.executions"
    first_line = scenario.description.split("\n")[0][:40]
    md, html = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    assert "| ❌ fail | `bounded.executions` |" in md and first_line in md
    assert "<td class=broke><code>bounded.<wbr>executions</code></td>" in html  # may wrap after the dot
    assert first_line.replace("'", "&#x27;") in html


def test_junit_carries_the_identity_cost_and_coverage(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from toolchaos.reports import write_reports

    write_reports([sup.timeout_repeat("builtin:naive")], {"agent": "builtin:naive", "agent_version": "9"}, tmp_path,
                  step_summary=False)
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suite = {p.get("name"): p.get("value") for p in root.find("testsuite/properties")}  # type: ignore[union-attr]
    assert suite["agent_version"] == "9" and suite["priced_as"] == PRICED_AS and float(suite["cost_usd"]) > 0
    case = {p.get("name"): p.get("value") for p in root.find("testsuite/testcase/properties")}  # type: ignore[union-attr]
    assert case["first_broken"] == "bounded.executions" and case["fault_rules_fired"] == "1/1"
    assert int(case["tokens_input"]) + int(case["tokens_output"]) == int(case["tokens"])


def test_a_failing_scenario_prints_its_fault_coverage() -> None:
    from toolchaos.certification import render_failure, run_scenario, suite

    scenario = next(s for s in suite() if s.name == "loop-exact-repeat-timeout")
    text = render_failure(run_scenario(scenario, "builtin:naive"))
    lines = text.splitlines()
    at = lines.index("fault coverage:")
    assert lines[at + 1:at + 3] == ["  fetch_invoice: 40 calls, 40 executed; answered by: timeout x40",
                                    "  fault rules: 1 of 1 fired; fetch_invoice faults[0] x40"]
