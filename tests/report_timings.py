"""Two report directories compared apart from their timings: what a merge of shards must reproduce."""

from __future__ import annotations

import re
from pathlib import Path

FILES = ("report.json", "report.md", "report.html", "junit.xml")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SECONDS = re.compile(r'("duration_seconds": )[\d.]+|( time=")[\d.]+(")')


def without_timings(text: str) -> str:
    """A report file with its timings blanked: started, ended, duration_seconds, junit's times."""
    return SECONDS.sub(lambda m: (m.group(1) or m.group(2)) + "T" + (m.group(3) or ""), TIMESTAMP.sub("T", text))


def assert_same_report(merged: Path, whole: Path) -> None:
    """Every file of the two report directories byte for byte, apart from the timings."""
    for name in FILES:
        assert without_timings((merged / name).read_text()) == without_timings((whole / name).read_text()), name
    traces = sorted(p.name for p in (whole / "traces").iterdir())
    assert traces and sorted(p.name for p in (merged / "traces").iterdir()) == traces
    for name in traces:
        assert (merged / "traces" / name).read_bytes() == (whole / "traces" / name).read_bytes(), name
