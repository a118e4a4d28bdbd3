"""report.html in a real browser: headless Chromium loads it from disk, with the network off.

Driven through Chromium's own command line (``--dump-dom``: the DOM after the page's
scripts ran), so no browser-automation dependency is needed. The test reads the rendered
summary and checks that the browser laid out one timeline per scenario: the page's inline
script counts the timeline SVGs with a non-empty bounding box (``getBBox`` needs layout)
into ``data-timelines-drawn``.

Skipped, with the reason, only when no Chromium is installed (Debian: ``apt-get install
chromium chromium-driver``; CI installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
import report_samples as sup
from toolchaos.reports import write_reports

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((path for name in CANDIDATES if (path := shutil.which(name))), None)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")

pytestmark = pytest.mark.skipif(BROWSER is None, reason="Chromium is not installed (Debian: apt-get install "
                                                        "chromium chromium-driver); the browser check needs it")


def chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    with tempfile.TemporaryDirectory(prefix="toolchaos-chromium-") as profile:
        env = {**os.environ, "HOME": profile}  # nothing of the user's profile, nothing left behind
        return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, env=env, check=False)


class _Text(HTMLParser):
    """The text inside the element with a given id."""

    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id, self.depth, self.parts = element_id, 0, []  # type: ignore[var-annotated]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == self.element_id:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)

    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    verdicts = [sup.timeout_repeat("builtin:naive"), sup.lost_payment("builtin:guarded"),
                sup.paginate("builtin:guarded")]
    write_reports(verdicts, sup.META, out, step_summary=False)
    return out


def test_chromium_renders_the_summary_and_draws_the_timelines(report_dir: Path) -> None:
    page = (report_dir / "report.html").resolve()
    proc = chromium("--dump-dom", page.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<html" in dom, proc.stderr[-2000:]
    drawn = re.search(r'data-timelines-drawn="(\d+)"', dom)
    assert drawn is not None, "the page's script did not run"
    assert int(drawn.group(1)) == 3, "every scenario's timeline has a laid-out, non-empty SVG"
    assert dom.count('data-drawn="true"') == 3
    parser = _Text("summary")
    parser.feed(dom)
    summary = parser.text()
    assert "NOT CERTIFIED: 2 of 3 applicable scenarios passed (all applicable); required level all, reached none" in summary
    assert "builtin:naive" in summary and "1 passed" not in summary and "2 passed, 1 failed, 0 errors" in summary
    assert re.search(r"loops 1 0 1 0/1", summary), summary


# --- the layout, measured in the browser ---------------------------------------------------


def _dom_of(page: Path, width: int = 1400) -> str:
    proc = chromium(f"--window-size={width},1000", "--dump-dom", page.resolve().as_uri())
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def _attr(dom: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', dom)
    assert found is not None, f"the page's script did not write {name}"
    return found.group(1)


@pytest.fixture(scope="module")
def naive_certification(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled suite's report of builtin:naive: every scenario fails but a few, the busiest timelines."""
    from toolchaos.certification import certify, suite

    out = tmp_path_factory.mktemp("naive-certification")
    write_reports(certify("builtin:naive", suite()), {"agent": "builtin:naive", "suite": "certification"}, out,
                  step_summary=False)
    return out


def test_the_naive_report_has_its_charts_axes_and_no_overlapping_label(naive_certification: Path) -> None:
    from toolchaos.reports import read_report

    scenarios = len(read_report(naive_certification / "report.json")["scenarios"])
    dom = _dom_of(naive_certification / "report.html")
    assert int(_attr(dom, "data-timelines-drawn")) == scenarios
    # the two summary charts, and a cost curve per scenario
    assert int(_attr(dom, "data-charts")) == 2 + scenarios
    assert dom.count('class="chart chart-categories"') == 1 and dom.count('class="chart chart-scenarios"') == 1
    assert dom.count('class="time-axis"') == scenarios and "virtual time (seconds)" in dom
    assert int(_attr(dom, "data-axes")) >= 2 * scenarios, "every timeline labels at least two instants"
    assert int(_attr(dom, "data-labels")) > 20 * scenarios, "the labels were measured"
    assert _attr(dom, "data-label-overlaps") == "0", _attr(dom, "data-overlap-examples")


def test_the_overlap_check_finds_labels_that_touch(tmp_path: Path) -> None:
    from toolchaos.reports._html import SCRIPT

    page = tmp_path / "overlap.html"
    page.write_text('<!doctype html><html><body><svg width="300" height="60" xmlns="http://www.w3.org/2000/svg">'
                    '<text x="10" y="20">bounded.executions</text><text x="40" y="24">terminal_state</text>'
                    f'<text x="10" y="50">apart</text></svg><script>{SCRIPT}</script></body></html>')
    dom = _dom_of(page)
    assert _attr(dom, "data-label-overlaps") == "1"
    assert _attr(dom, "data-overlap-examples") == "bounded.executions / terminal_state"


INDEX_COLUMNS = ["Verdict", "Scenario (description)", "Category", "Severity", "First broken", "End state",
                 "Executions", "Side effects", "Tokens", "Cost", "Waste"]


def test_the_scenario_table_shows_every_column_at_1400_px(naive_certification: Path) -> None:
    """The widest table of the report (the suite's longest invariant names, descriptions and ids)
    fits the page at 1400 px: no column, ``Waste`` included, is cut off or needs scrolling."""
    dom = _dom_of(naive_certification / "report.html")
    assert _attr(dom, "data-index-columns").split("|") == INDEX_COLUMNS
    assert _attr(dom, "data-index-shown").split("|") == INDEX_COLUMNS


def test_on_a_narrow_screen_the_scenario_table_scrolls_to_its_last_column(naive_certification: Path) -> None:
    dom = _dom_of(naive_certification / "report.html", width=800)
    shown = _attr(dom, "data-index-shown").split("|")
    assert "Waste" not in shown and shown == INDEX_COLUMNS[:len(shown)], "800 px is too narrow for the whole table"
    assert _attr(dom, "data-index-reachable").split("|") == INDEX_COLUMNS, "its box scrolls to every column"
