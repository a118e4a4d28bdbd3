"""``toolchaos analyze``: table and JSON output, exit 1 on a looping session, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolchaos.cli import main

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INCIDENT = str(ROOT / "scenarios" / "examples" / "05-incident.trace.jsonl")


def test_a_looping_session_exits_1_with_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", INCIDENT]) == 1
    out = capsys.readouterr().out
    assert "LOOPING" in out and "repeated     40x fetch_invoice" in out


def test_healthy_logs_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(LOGS / "otel_spans.jsonl"), str(LOGS / "openai_responses.json")]) == 0
    assert "healthy" in capsys.readouterr().out


def test_fail_on_suspicious(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(LOGS / "openai_chat.json")]) == 0
    assert main(["analyze", str(LOGS / "openai_chat.json"), "--fail-on", "suspicious"]) == 1


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", INCIDENT, str(LOGS / "anthropic.json"), "--json", "--top", "1"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["looping"] == 2 and data["events"] > 80
    first = data["sessions"][0]
    assert first["verdict"] == "looping" and len(first["top"]) == 1 and first["interval_median"] == 30.0


def test_session_filter_and_thresholds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(LOGS / "otel_spans.json"), "--session", "conv_42", "--loop-repeats", "50",
                 "--json"]) == 0
    (session,) = json.loads(capsys.readouterr().out)["sessions"]
    assert session["session"] == "conv_42" and session["verdict"] == "suspicious"
    assert main(["analyze", INCIDENT, "--session", "nope"]) == 2
    assert "no session 'nope'" in capsys.readouterr().err


def test_format_option_and_errors_name_record_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(LOGS / "anthropic.json"), "--format", "anthropic"]) == 1
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f",
                                                                                           "arguments": "{x"}}]}]))
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolchaos analyze: error: ") and "tool_calls[0].function.arguments" in err
    assert main(["analyze", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["analyze", INCIDENT, "--loop-streak", "0"]) == 2
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6)
    assert main(["analyze", str(truncated)]) == 2


def test_a_gzip_bomb_ends_with_an_error_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """100 MiB of zeros in 100 KB of gzip (one endless line), streamed: refused after 64 MiB, not read to the end."""
    import gzip
    import time

    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        for _ in range(100):
            fh.write(bytes(1 << 20))
    t0 = time.monotonic()
    assert main(["analyze", str(bomb)]) == 2
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err
    assert f"{bomb}: cannot read (the gzip file decompresses to more than 67,108,864 bytes" in err


@pytest.mark.parametrize("ratio, why", [(500, "bytes (500 times its size); a log that large must be given uncompressed"),
                                        (10**6, "holds a line longer than 1,048,576 bytes")])
def test_a_gzip_file_is_read_up_to_its_ratio_and_line_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], ratio: int,
                                                          why: str) -> None:
    """A bomb of newlines stops at the ratio, one endless line at the line cap; a real log under both reads."""
    import gzip

    from toolchaos.logs import _files

    monkeypatch.setattr(_files, "MAX_LOG_BYTES", 1 << 20)
    monkeypatch.setattr(_files, "GUNZIP_RATIO", ratio)
    lines = Path(INCIDENT).read_bytes()
    real = tmp_path / "incident.jsonl.gz"
    real.write_bytes(gzip.compress(lines))
    assert main(["analyze", str(real)]) == 1  # the looping incident, read whole
    capsys.readouterr()
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(lines + (b"\n" if ratio == 500 else b" ") * (8 << 20)))
    assert main(["analyze", str(bomb)]) == 2
    assert why in capsys.readouterr().err
