"""Reading a log into its sessions: ``load`` a file, ``parse`` a document, ``select`` and ``conversation``
for the one session to replay."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolchaos.errors import LogFormatError, did_you_mean
from toolchaos.logs._conversation import Conversation
from toolchaos.logs._files import read_records
from toolchaos.logs._registry import BY_NAME, detect, named


def load(path: str | Path, format: str = "auto") -> list[Conversation]:
    """The sessions of a log file (any of ``FORMATS``, gzip or not)."""
    source = str(path)
    # the name is checked before reading: a typo is reported even for a missing file
    fmt = None if format == "auto" else named(format, source)
    records, jsonl = read_records(path)
    if fmt is None:
        fmt = BY_NAME[detect(records[0][1], source, records[0][0])]
    return fmt.read(records, source, jsonl)


def parse(data: Any, format: str = "auto", source: str = "<data>") -> list[Conversation]:
    """The sessions of an already parsed JSON document."""
    name = detect(data, source, "document") if format == "auto" else format
    return named(name, source).parse(data, source)


def select(conversations: Sequence[Conversation], session: str | None = None, source: str = "<log>") -> Conversation:
    """One session of a log: the one named, or the only one (else the first, by default)."""
    if not conversations:
        raise LogFormatError("no session in the log", source)
    if session is None:
        return conversations[0]
    for c in conversations:
        if c.session == session:
            return c
    names = [c.session for c in conversations]
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    raise LogFormatError(f"no session {session!r}{did_you_mean(session, names)} (sessions: {', '.join(names[:10])}"
                         f"{more})", source, option="session")


def conversation(path: str | Path, format: str = "auto", session: str | None = None) -> Conversation:
    """The session of a log file to replay (default: the first): what ``toolchaos replay`` and the
    ``recorded`` policy read. Every problem, the file's included, is a ``LogFormatError``."""
    source = str(path).replace("\x00", "\\0")
    try:
        return select(load(path, format), session, source)
    except FileNotFoundError:
        raise LogFormatError("no such file", source, option="path") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # a directory, a truncated gzip, a binary file
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise LogFormatError(f"cannot read the file ({why})", source, option="path") from None
