"""Files read at load time are bounded: regular files only, capped before they are read, gzip capped too."""

from __future__ import annotations

import gzip
import json
import os
import time

import pytest
from toolchaos._internal import files as _files
from toolchaos.cli import main
from toolchaos.errors import LogFormatError, PolicyError, ScenarioError
from toolchaos.logs import conversation
from toolchaos.policies import recorded
from toolchaos.scenario import load_file, load_text

SCENARIO = """\
id: replay
title: replays a log
task: Get it.
tools: {search: {}}
policy: {recorded: LOG}
expect: [terminated]
"""


def trace_line() -> str:
    return json.dumps({"run": "r#0", "seq": 1, "step": 1, "kind": "model", "t": 0.0, "calls": [], "final": "ok",
                       "tokens_in": 1, "tokens_out": 1}) + "\n"


def special_paths(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    return {"fifo": (fifo, "FIFO"), "device": ("/dev/zero", "character device"), "loop": (loop, "symbolic links"),
            "nul": (str(tmp_path / "a\x00b"), "NUL byte"), "directory": (tmp_path, "directory")}


needs_posix = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX files")


@needs_posix
@pytest.mark.parametrize("kind", ["fifo", "device", "loop", "nul", "directory"])
def test_special_files_are_refused_everywhere_with_a_located_error(kind, tmp_path):
    path, why = special_paths(tmp_path)[kind]
    t0 = time.monotonic()
    with pytest.raises(ScenarioError, match=why):
        load_file(path)
    with pytest.raises(PolicyError, match=why):
        recorded(path)
    with pytest.raises(LogFormatError, match=why):
        conversation(path)
    scenario = SCENARIO.replace("LOG", json.dumps(str(path)))
    with pytest.raises(ScenarioError, match=why) as err:
        load_text(scenario, tmp_path / "s.chaos.yaml")
    assert err.value.line == 5
    assert time.monotonic() - t0 < 5  # refused, never read


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.chaos.yaml"
    with big.open("wb") as fh:  # sparse: 8 GB that reading whole would take minutes and all the memory
        fh.truncate(8 * 1024**3)
    t0 = time.monotonic()
    with pytest.raises(ScenarioError, match="limited to"):
        load_file(big)
    with pytest.raises(PolicyError, match="limited to"):
        recorded(big)
    assert time.monotonic() - t0 < 2


def test_a_gzip_bomb_is_refused_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(_files, "MAX_LOG_BYTES", 1_000_000)
    monkeypatch.setattr("toolchaos.logs._files.MAX_LOG_BYTES", 1_000_000)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(trace_line().encode() * 100_000))  # ~20 MB of text, a few kB on disk
    with pytest.raises(PolicyError, match="decompresses to more than 1,000,000 bytes"):
        recorded(bomb)
    small = tmp_path / "small.jsonl.gz"
    small.write_bytes(gzip.compress(trace_line().encode()) + gzip.compress(trace_line().encode()))  # two members
    assert len(recorded(small).turns) >= 1


def test_capped_reads_hold_for_ordinary_files(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert _files.read_capped(p, 100) == b"x" * 100
    with pytest.raises(OSError, match="limited to 99"):
        _files.read_capped(p, 99)
    p.write_bytes(gzip.compress(b"y" * 100))
    assert _files.read_capped(p, 100, gunzip=True) == b"y" * 100
    with pytest.raises(OSError, match="truncated"):
        _files.gunzip_capped(gzip.compress(b"abc")[:-4], 100)


def test_analyze_on_a_binary_file_or_a_special_file_is_a_clear_error(tmp_path, capsys):
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 40)
    assert main(["analyze", str(binary)]) == 2
    err = capsys.readouterr().err
    assert "not a text log (not UTF-8)" in err and "internal error" not in err
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        assert main(["analyze", str(fifo)]) == 2
        assert "a FIFO (named pipe), not a regular file" in capsys.readouterr().err


def test_fuzz_example_counts_have_a_ceiling():
    text = SCENARIO.replace("{recorded: LOG}", "{stubborn: {tool: search, args: {query: q}}}")
    with pytest.raises(ScenarioError, match=r"fuzz\.examples: expected an integer from 1 to 10,000") as err:
        load_text(text + "fuzz: {examples: 1000000000}\n", "s.chaos.yaml")
    assert err.value.line is not None


@needs_posix
def test_a_baseline_report_that_is_a_device_is_refused_not_read(tmp_path):
    from toolchaos.reports import read_report

    with pytest.raises(OSError, match="character device, not a regular file"):
        read_report("/dev/zero")


@needs_posix
def test_a_baseline_given_as_a_fifo_is_one_clear_error(tmp_path):
    from toolchaos.errors import ReportError
    from toolchaos.reports import load_report

    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(ReportError, match="a FIFO"):
        load_report(fifo)
