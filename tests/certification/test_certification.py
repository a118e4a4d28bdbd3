"""The certification suite proves itself.

Every scenario passes against the reference agent (``builtin:guarded``); every loop,
error-class, side-effect and budget scenario fails against the naive loop; each guard
switched off (an ablation) fails at least one scenario or wastes more than the reference
in one (the bounds leave room for every sound guard, so a guard whose absence another one
makes up for within that room shows in the waste grade); an over-eager guard fails every
legitimate-repetition scenario, and the legitimate counterparts catch an over-eager cycle
detector; the sound published design passes every loop scenario; no scenario is failed
by no variant. Every bound says why. The matrix is printed, and
docs/certification-matrix.md must be its current rendering.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import toolchaos.certification as _certify
from toolchaos import GuardedAgent
from toolchaos._agents.guarded import _Guard
from toolchaos.certification import ABLATIONS, AGENT_VARIANTS, suite
from toolchaos.matrices import NAIVE_MUST_FAIL, Matrix, ablation_matrix

ROOT = Path(__file__).resolve().parents[2]
MATRIX_DOC = ROOT / "docs" / "certification-matrix.md"

# Every failure mode the suite must cover (the list) -> (scenario id, category).
REQUIRED = {
    "exact repeat on a timing-out tool": ("loop-exact-repeat-timeout", "loops"),
    "repeat on an empty result": ("loop-empty-result", "loops"),
    "repeat on a malformed result": ("loop-malformed-result", "loops"),
    "A-B-A-B between contradicting tools": ("loop-abab-contradictory", "loops"),
    "search-read-search cycle": ("loop-search-read-cycle", "loops"),
    "argument jitter": ("loop-argument-jitter", "loops"),
    "paraphrased queries, same documents": ("loop-paraphrase-same-docs", "loops"),
    "exploration with no new facts": ("loop-no-progress-exploration", "loops"),
    "a model that ignores refusals": ("loop-ignores-refusals", "loops"),
    "oversized result fetched again and again": ("loop-oversized-refetch", "loops"),
    "almost results, two of three conditions": ("loop-almost-two-of-three", "loops"),
    "429 with Retry-After": ("err-rate-limit-retry-after", "error_classes"),
    **{f"429 with the wait as {form}": (f"err-rate-limit-reset-forms[{form}]", "error_classes") for form in (
        "http-date", "retry-after-ms", "openai-reset-requests", "openai-reset-tokens", "anthropic-requests-reset",
        "anthropic-tokens-reset", "anthropic-input-tokens-reset", "anthropic-output-tokens-reset")},
    "invalid argument": ("err-invalid-argument", "error_classes"),
    "permission denied": ("err-permission-denied", "error_classes"),
    "not found for a nonexistent id": ("err-not-found-poll", "error_classes"),
    "payment whose success response is lost": ("side-lost-payment-response", "side_effects"),
    "email asked for repeatedly": ("side-email-asked-repeatedly", "side_effects"),
    "two workers with the same idempotency key": ("side-concurrent-same-key", "side_effects"),
    "write before the guard fired, not repeated on resume": ("side-write-before-guard-resume", "side_effects"),
    "lost payment response, the charge can be looked up": ("side-lost-payment-lookup", "side_effects"),
    "lost payment response from an API without dedupe": ("side-no-dedupe-retry-duplicates", "side_effects"),
    "an API that dedupes only after a delivered response": ("side-lossy-dedupe-lookup", "side_effects"),
    "a stale read that makes the model write again": ("side-stale-read-rewrite", "side_effects"),
    "step budget": ("budget-steps", "budgets"),
    "virtual wall-clock budget": ("budget-wall-clock", "budgets"),
    "token budget with growing context": ("budget-tokens-growing-context", "budgets"),
    "pending job that never finishes": ("budget-pending-never-finishes", "budgets"),
    "polling a job to completion": ("legit-poll-to-completion", "legit"),
    "paginating 12 pages": ("legit-paginate-12-pages", "legit"),
    "exploration that keeps finding new facts": ("legit-exploration-new-facts", "legit"),
    "a 503 that succeeds on the second try": ("legit-transient-503", "legit"),
    "a same-key retry against an honouring API": ("side-retry-same-key-honoured", "side_effects"),
    "a read after a write that must see the write": ("legit-read-after-write", "legit"),
    "two productive feeds read in turn": ("legit-two-feeds-in-turn", "legit"),
    "an email asked for again with jittered arguments": ("side-email-jittered-resend", "side_effects"),
    "restart redoes only unfinished work": ("resume-redo-only-unfinished", "resume"),
}

# The scenarios built to catch each ablation by a failure (each must be among those that do).
CATCHES = {
    "-normalise_args": {"side-email-jittered-resend"},
    "-detect_cycles": set(),
    "-check_progress": {"loop-no-progress-exploration", "loop-paraphrase-same-docs", "legit-two-feeds-in-turn"},
    "-idempotency": {"side-lost-payment-response", "side-email-asked-repeatedly", "side-concurrent-same-key",
                     "side-write-before-guard-resume", "resume-redo-only-unfinished", "side-lost-payment-lookup",
                     "side-no-dedupe-retry-duplicates", "side-lossy-dedupe-lookup", "side-stale-read-rewrite",
                     "side-retry-same-key-honoured"},
    "-honour_retry_after": {"err-rate-limit-retry-after", "err-rate-limit-reset-forms[http-date]",
                            "err-rate-limit-reset-forms[openai-reset-tokens]",
                            "err-rate-limit-reset-forms[anthropic-requests-reset]"},
    "-classify_errors": {"err-invalid-argument", "err-permission-denied", "err-not-found-poll"},
    "-budgets": {"budget-steps", "budget-wall-clock", "budget-tokens-growing-context", "budget-pending-never-finishes"},
    "-stop_report": {"loop-exact-repeat-timeout", "err-permission-denied"},
}

# ... and where an ablation passes but wastes more than the reference: exact repeats and cycles
# are also stopped, a few calls later, by the guards left (exact repeat, no progress).
WASTES = {
    "-normalise_args": {"loop-argument-jitter"},
    "-detect_cycles": {"loop-abab-contradictory", "loop-search-read-cycle"},
}


@functools.lru_cache(maxsize=1)
def matrix() -> Matrix:
    return ablation_matrix()


def test_the_suite_proves_itself() -> None:
    m = matrix()
    print("\n" + m.text())
    assert m.problems() == []
    names = [s.name for s in m.scenarios]
    assert not m.caught_by("guarded")
    assert {s.name for s in m.scenarios if s.category in NAIVE_MUST_FAIL} <= set(m.caught_by("naive"))
    assert {s.name for s in m.scenarios if s.category == "legit"} <= set(m.caught_by("eager"))
    for flag in ABLATIONS:
        caught, more = set(m.caught_by(f"-{flag}")), set(m.wastes_more(f"-{flag}"))
        assert caught or more, flag
        assert CATCHES[f"-{flag}"] <= caught, (flag, CATCHES[f"-{flag}"] - caught)
        assert WASTES.get(f"-{flag}", set()) <= more, (flag, WASTES[f"-{flag}"] - more)
    assert not {s.name for s in m.scenarios if s.category == "loops"} & set(m.caught_by("loopguard"))
    for name in names:
        assert any(m.failed(name, v) for v in m.variants if v != "guarded"), name


def test_the_matrix_in_the_docs_is_current() -> None:
    assert MATRIX_DOC.read_text(encoding="utf-8") == matrix().markdown(), (
        "docs/certification-matrix.md is out of date: run "
        "`toolchaos certify --matrix --output docs/certification-matrix.md`")


def test_the_problems_a_matrix_reports() -> None:
    """The proof itself can fail: a weak scenario or an uncaught ablation is reported."""
    weak = [s for s in suite() if s.name in ("legit-transient-503", "loop-exact-repeat-timeout")]
    m = ablation_matrix(weak, {"guarded": AGENT_VARIANTS["guarded"], "-budgets": AGENT_VARIANTS["-budgets"]})
    problems = m.problems()
    assert "legit-transient-503: no agent variant fails it; it catches nothing" in problems
    assert any(p.startswith("ablation -budgets (no budgets): no scenario catches it") for p in problems)
    m = ablation_matrix(weak, {"guarded": AGENT_VARIANTS["naive"], "naive": AGENT_VARIANTS["guarded"],
                               "eager": AGENT_VARIANTS["guarded"]})
    problems = m.problems()
    assert any("the reference agent (guarded) fails it" in p for p in problems)
    assert any("the naive agent passes a loops scenario" in p for p in problems)
    assert any("the over-eager guard passes" in p for p in problems)
    m = ablation_matrix(weak, {"loopguard": AGENT_VARIANTS["naive"]})
    assert any(p.startswith("loop-exact-repeat-timeout: the sound published design loopguard fails this loop "
                            "scenario, its bounds leave no room for it") for p in m.problems())


def _blind_cycle(self: object, key: str) -> bool:
    """The reference's cycle detector as it was: a second identical round, whatever the calls returned."""
    keys = [*self.history, key]  # type: ignore[attr-defined]
    return any(len(keys) >= 2 * p and keys[-2 * p:-p] == keys[-p:] and len(set(keys[-p:])) > 1 for p in (2, 3))


def test_the_legitimate_counterparts_catch_an_over_eager_cycle_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Guard, "closes_cycle", _blind_cycle)
    legit = [s for s in suite() if s.category == "legit"]
    failed = {v.id: v for v in _certify.certify(GuardedAgent(), legit) if not v.passed}
    assert set(failed) == {"legit-two-feeds-in-turn"}
    assert failed["legit-two-feeds-in-turn"].result.trace.of_kind("refusal")[0]["guard"] == "cycle"


BOUNDS = ("bounded", "max_side_effects", "completed")


def _needs_why(name: str, params: dict[str, object]) -> bool:
    """A bound (a number the scenario chose) or a stop report asking for more than the default fields."""
    if name == "stop_report":
        return tuple(params.get("fields", ())) != ("guard", "reason", "completed", "resume_condition")
    return name in BOUNDS and (name != "completed" or bool(params.get("successes")))


def test_every_bound_says_why_and_every_scenario_its_useful_work() -> None:
    scenarios = suite()
    missing = [f"{s.name}: {e.name}" for s in scenarios for e in s.expect
               if e.line is not None and _needs_why(e.name, e.invariant.params()) and not e.why]
    assert not missing, f"bounds without a why: {missing}"
    assert not [s.name for s in scenarios if s.useful is None]


def test_every_required_failure_mode_is_covered() -> None:
    by_name = {s.name: s for s in suite()}
    for mode, (name, category) in REQUIRED.items():
        assert name in by_name, f"no scenario for {mode!r}"
        assert by_name[name].category == category, (mode, by_name[name].category)
    assert set(by_name) == {n for n, _ in REQUIRED.values()}, "a scenario the list above does not know"


def test_every_scenario_is_complete_and_named_after_its_file() -> None:
    for sc in suite():
        assert sc.path is not None and sc.path.name == f"{sc.id}.chaos.yaml"
        assert sc.title and len(sc.description) > 80 and sc.tags
        assert sc.category in ("loops", "error_classes", "side_effects", "budgets", "legit", "resume")
        assert sc.severity in ("critical", "major", "minor") or (sc.severity == "advisory" and sc.severity_why)
        assert sc.path.read_text().startswith("# yaml-language-server: $schema=../../docs/scenario.schema.json\n")
        assert not sc.agent, "the certification suite runs against the agent it is given"


def test_the_suite_is_found_through_the_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = _certify.suite_root()
    assert Path(str(root)).name == "scenarios" or Path(str(root)).name == "toolchaos_scenarios"
    files = sorted({f"{s.id}.chaos.yaml" for s in suite()})  # the variants of a file share it
    assert [Path(str(f)).name for f in _certify.suite_files()] == files
    assert len(suite("examples")) >= 5


def test_same_seed_byte_identical_traces() -> None:
    scenarios = suite()
    first = [v.result.trace.jsonl() for v in _certify.certify("builtin:guarded", scenarios)]
    again = [v.result.trace.jsonl() for v in _certify.certify("builtin:guarded", scenarios)]
    assert first == again
    jittered = next(s for s in scenarios if s.name == "loop-argument-jitter")
    other_seed = _certify.run_scenario(jittered, "builtin:naive", seed=1).result.trace.jsonl()
    assert other_seed != _certify.run_scenario(jittered, "builtin:naive").result.trace.jsonl()


def test_verdicts_carry_what_reports_need() -> None:
    sc = next(s for s in suite() if s.name == "side-write-before-guard-resume")
    v = _certify.run_scenario(sc, "builtin:naive")
    assert not v.passed and v.agent == "builtin:naive" and v.category == "side_effects"
    assert v.content_hash == sc.content_hash and v.path == sc.path
    # the first run's false COMPLETED ("Gave up on the invoice.") is the goal's: a reporting failure, major
    assert {"max_side_effects", "idempotent", "goal"} <= {x.invariant for x in v.violations}
    assert {x.severity for x in v.violations if x.invariant == "goal"} == {"major"}
    assert v.failure_severity == v.severity == "critical"  # the duplicate write counts at the scenario's own
    assert v.result.ledger.applied("write_record") == 2 and len(v.runs) == 2
    before = [e for e, _ in v.failures if e.phase == "before"]
    assert before and before[0].name == "goal"  # the first run of the naive agent "completed"
    text = _certify.render_failure(v)  # violations in trace order: the first run's end comes first
    assert text.startswith("invariant goal broke at step 5") and "[first run, before the restart]" in text
    assert "expected: a COMPLETED claim only with the goal met: at least 1 usable results of fetch_invoice" in text
