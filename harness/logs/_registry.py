"""The log formats the importers read, and ``detect``: which of them a record is.

A format is one module declaring a ``LogFormat`` (``_format``); listing it in ``REGISTRY``
is all that makes it known to ``FORMATS``, ``detect``, ``load``/``parse``, the
``--format`` choices of ``toolchaos analyze`` and ``toolchaos replay``, and the
``recorded`` policy's ``format`` (checked and listed in the scenario schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolchaos.errors import LogFormatError, did_you_mean
from toolchaos.logs import _anthropic, _openai_chat, _openai_responses, _otel, _toolchaos
from toolchaos.logs._format import LogFormat

# In the order help texts and messages list them.
REGISTRY: tuple[LogFormat, ...] = (_toolchaos.FORMAT, _openai_chat.FORMAT, _openai_responses.FORMAT,
                                   _anthropic.FORMAT, _otel.FORMAT)
FORMATS = tuple(f.name for f in REGISTRY)
BY_NAME: dict[str, LogFormat] = {f.name: f for f in REGISTRY}

_DETECTION = sorted(REGISTRY, key=lambda f: f.precedence)
# The message naming what a log could be lists the imported formats first, the harness's own trace last.
_SHAPES = [f.shape for f in sorted(REGISTRY, key=lambda f: f is _toolchaos.FORMAT)]


def named(format: str, source: str) -> LogFormat:
    """The format of that name; an unknown name is the caller's ``format`` option at fault."""
    found = BY_NAME.get(format)
    if found is None:
        raise LogFormatError(f"unknown format {format!r}{did_you_mean(format, ('auto', *FORMATS))} "
                             f"(known: auto, {', '.join(FORMATS)})", source, option="format")
    return found


def detect(data: Any, source: str = "<log>", record: str = "document") -> str:
    """The format of one parsed record (see ``FORMATS``)."""
    found = _recognise(data)
    if found is None:
        raise LogFormatError(f"cannot tell the log format (expected {', '.join(_SHAPES[:-1])} or {_SHAPES[-1]}); "
                             "name the format (--format, or `format:` of a recorded policy)", source, record,
                             option="format")
    return found.name


def _recognise(data: Any) -> LogFormat | None:
    if isinstance(data, Mapping):
        return _recognise_object(data)
    if isinstance(data, list) and data:
        return _recognise_list(data)
    return None


def _recognise_object(data: Mapping[str, Any]) -> LogFormat | None:
    for fmt in _DETECTION:
        if fmt.record(data):
            return fmt
    if "messages" in data:  # a request: its messages tell
        return _recognise(data["messages"])
    if "role" in data:  # one message
        return _recognise([data])
    return None


def _recognise_list(data: list[Any]) -> LogFormat | None:
    for fmt in _DETECTION:
        if fmt.listing(data):
            return fmt
    for item in data:  # the first message only one format writes tells
        if isinstance(item, Mapping):
            for fmt in _DETECTION:
                if fmt.message(item):
                    return fmt
    return next((fmt for fmt in _DETECTION if fmt.fallback(data)), None)
