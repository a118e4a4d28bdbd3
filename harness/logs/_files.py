"""Reading log files: gzip or plain, one JSON document or JSON Lines, as labelled records."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import IO, Any

from toolchaos._internal.files import GZIP_MAGIC, MAX_LOG_BYTES, open_regular, read_capped
from toolchaos.errors import LogFormatError

_GZIP_MAGIC = GZIP_MAGIC


class _Gunzip(gzip.GzipFile):
    """A gzip stream that closes the file under it too."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()

# (label, parsed JSON): the label ("document", "line 3") is where a record's errors point.
Record = tuple[str, Any]


def open_text(path: str | Path) -> IO[str]:
    """A text stream over a file, gunzipped when it is gzip (by its magic bytes)."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8")


def open_bytes(path: str | Path) -> IO[bytes]:
    """A byte stream over a file, gunzipped when it is gzip: what a streaming scanner reads."""
    fh = open(open_regular(path), "rb")  # the caller closes it
    if fh.peek(2)[:2] == _GZIP_MAGIC:
        return _Gunzip(fh)  # type: ignore[return-value]
    return fh


def read_records(path: str | Path) -> tuple[list[Record], bool]:
    """(record label, parsed JSON) for the file: one document, or one record per JSON Lines line.

    The second value tells whether the file was JSON Lines.
    """
    source = str(path)
    text = read_capped(path, MAX_LOG_BYTES, gunzip=True).decode("utf-8")
    stripped = text.strip()
    if not stripped:
        raise LogFormatError("the file is empty", source)
    try:
        return [("document", json.loads(stripped))], False
    except json.JSONDecodeError as whole:
        return _json_lines(text, whole, source), True


def _json_lines(text: str, whole: json.JSONDecodeError, source: str) -> list[Record]:
    records: list[Record] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((f"line {n}", json.loads(line)))
        except json.JSONDecodeError as exc:
            if not records:  # not JSON Lines either: report the document's own error
                raise LogFormatError(f"not valid JSON ({whole.msg} at line {whole.lineno}, column "
                                     f"{whole.colno})", source) from None
            raise LogFormatError(f"not valid JSON ({exc.msg} at column {exc.colno})", source,
                                 f"line {n}") from None
    return records
