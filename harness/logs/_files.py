"""Reading log files: gzip or plain, one JSON document or JSON Lines, as labelled records."""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
from pathlib import Path
from typing import IO, Any

from toolchaos._internal.files import GZIP_MAGIC, MAX_LOG_BYTES, open_regular, read_capped
from toolchaos.errors import LogFormatError

_GZIP_MAGIC = GZIP_MAGIC


# A streamed gzip file (toolchaos analyze reads logs of any size) may decompress to at most this
# many bytes per byte on disk (with MAX_LOG_BYTES at least), and holds no line longer than
# MAX_LOG_BYTES: JSON logs compress 10-100 times, a gzip bomb of zeros or newlines about 1,000
# times, so a bomb ends with an error after a bounded read, never in a hang or a huge line.
GUNZIP_RATIO = 500


class _Gunzip(io.RawIOBase):
    """A gzip file's bytes, decompressed as they are read, within ``GUNZIP_RATIO`` and the line cap."""

    def __init__(self, raw: IO[bytes], path: str) -> None:
        super().__init__()
        self._raw, self._path = raw, path
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._limit = max(MAX_LOG_BYTES, GUNZIP_RATIO * os.fstat(raw.fileno()).st_size)
        self._out = self._line = 0  # bytes decompressed so far, and since the last newline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._gz.read(len(buffer))  # decompresses at most that much
        self._count(data)
        buffer[:len(data)] = data
        return len(data)

    def _count(self, data: bytes) -> None:
        self._out += len(data)
        newline = data.rfind(b"\n")
        self._line = self._line + len(data) if newline < 0 else len(data) - newline - 1
        if self._out > self._limit:
            raise OSError(errno.EFBIG, f"the gzip file decompresses to more than {self._limit:,} bytes "
                                       f"({GUNZIP_RATIO} times its size); a log that large must be given "
                                       f"uncompressed", self._path)
        if self._line > MAX_LOG_BYTES:
            raise OSError(errno.EFBIG, f"the gzip file holds a line longer than {MAX_LOG_BYTES:,} bytes",
                          self._path)

    def close(self) -> None:
        try:
            self._gz.close()
        finally:
            self._raw.close()
            super().close()

# (label, parsed JSON): the label ("document", "line 3") is where a record's errors point.
Record = tuple[str, Any]


def open_text(path: str | Path) -> IO[str]:
    """A text stream over a file, gunzipped when it is gzip (by its magic bytes)."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8")


def open_bytes(path: str | Path) -> IO[bytes]:
    """A byte stream over a file, gunzipped when it is gzip: what a streaming scanner reads."""
    fh = open(open_regular(path), "rb")  # the caller closes it
    if fh.peek(2)[:2] == _GZIP_MAGIC:
        return io.BufferedReader(_Gunzip(fh, str(path)), buffer_size=1 << 17)
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
