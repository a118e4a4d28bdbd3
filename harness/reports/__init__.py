"""Certification reports: what a release manager reads before an agent ships.

    from toolchaos.reports import RunMeta, write_reports
    write_reports(verdicts, RunMeta(agent="mypkg.agent:run"), "chaos-report/")

``write_reports(verdicts, meta, out_dir)`` turns scenario verdicts into four files:

- ``report.json``: the machine-readable record (schema: docs/report-schema.md), the
  single source the other three are rendered from;
- ``report.md``: the summary for a pull request or a CI step summary (appended to
  ``$GITHUB_STEP_SUMMARY`` when that variable is set);
- ``report.html``: one self-contained page with a timeline picture of every run;
- ``junit.xml``: one testcase per scenario, the figures as properties;

plus ``traces/<scenario>.trace.jsonl``, the evidence each scenario's entry points to.

**Levels** say how much of the suite an agent survives (see ``LEVELS``): ``critical``
(every critical scenario passes), ``major`` (every critical and major one), ``all``
(every scenario). ``certified(verdicts, level)`` is the gate; a report records the
highest level reached and whether the required one was.

**Determinism**: two reports of the same agent, seed and suite are byte-identical
except for ``started``, ``ended`` and ``duration_seconds``. Scenarios are sorted by id,
paths are relative, and nothing else reads the wall clock.

The modules: ``_levels`` (levels and the verdict logic), ``_meta`` (the run's metadata),
``_core`` (report.json's data), ``_markdown``, ``_html``, ``_junit`` (the renderings),
``_write`` (the files and the step summary), ``_command`` (the options of a command),
``_cost`` (the price table and the estimated cost), ``_trials`` (a scenario's trials: pass@k, pass^k, the
Wilson interval, ``--require-pass-k``), ``_diff`` (two reports compared:
regressions, fixes, changed figures), ``_merge`` (the reports of a suite's shards, run in
separate CI jobs, merged into one: ``merge_reports``).
"""

from toolchaos.errors import ReportError
from toolchaos.reports._command import add_report_arguments, finish_command
from toolchaos.reports._core import SCHEMA, SCHEMA_VERSION, build_report, scenario_entry
from toolchaos.reports._cost import PRICED_AS, PRICES, PRICES_DATED, PriceTable, price_table
from toolchaos.reports._diff import diff_lines, diff_reports, load_report
from toolchaos.reports._levels import (
    DEFAULT_LEVEL,
    LEVEL_ORDER,
    LEVELS,
    certified,
    check_level,
    could_not_call,
    exit_code,
    level_reached,
    verdict_status,
)
from toolchaos.reports._merge import merge_reports
from toolchaos.reports._meta import RunMeta, git_commit
from toolchaos.reports._trials import pass_at_k, pass_hat_k, trial_stats, wilson
from toolchaos.reports._write import append_step_summary, read_report, write_entries, write_reports

# isort: split
# What other packages of toolchaos (the command line, the pytest plugin) need beyond the public names:
# importable from this facade, not part of the API (not in __all__).
from toolchaos.reports._levels import NOT_APPLICABLE as NOT_APPLICABLE
from toolchaos.reports._levels import applicable as applicable
from toolchaos.reports._levels import certificate as certificate
from toolchaos.reports._levels import not_applicable_lines as not_applicable_lines
from toolchaos.reports._levels import required_severities as required_severities
from toolchaos.reports._markdown import baseline_section as baseline_section
from toolchaos.reports._meta import now as now
from toolchaos.reports._trials import gated as gated
from toolchaos.reports._trials import parse_pass_k as parse_pass_k
from toolchaos.reports._trials import pass_k_shortfalls as pass_k_shortfalls

__all__ = [
    "DEFAULT_LEVEL", "LEVELS", "LEVEL_ORDER", "PRICED_AS", "PRICES", "PRICES_DATED", "SCHEMA", "SCHEMA_VERSION",
    "PriceTable", "ReportError", "RunMeta",
    "add_report_arguments", "append_step_summary", "build_report", "certified", "check_level", "could_not_call",
    "diff_lines", "diff_reports", "exit_code",
    "finish_command", "git_commit", "level_reached", "load_report", "merge_reports", "pass_at_k", "pass_hat_k",
    "price_table", "read_report", "scenario_entry", "trial_stats",
    "verdict_status", "wilson", "write_entries", "write_reports",
]
