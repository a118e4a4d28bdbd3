"""What a log format declares: its name and help, how a record of it is recognised, how it is read.

Each format fills one ``LogFormat`` in its own module; ``_registry`` lists them, and
``detect``, ``FORMATS``, the ``--format`` choices and the ``recorded`` policy's format
check all read that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolchaos.logs._conversation import Conversation
from toolchaos.logs._files import Record


def never(_: Any) -> bool:
    """A recogniser for a stage where the format has nothing to recognise."""
    return False


@dataclass(frozen=True)
class LogFormat:
    """One log format.

    Detection looks at the first record of a file and asks every format, lowest
    ``precedence`` first (a looser shape goes after a stricter one that could also match
    it: an OpenTelemetry span has a ``kind``, as a trace event does), in four stages:

    - ``record``: this object is a record of the format (a request, a response, a span, a trace event);
    - ``listing``: this list is the format as a whole (spans, trace events);
    - ``message``: this object, one of a list, is a message or item only this format writes;
    - ``fallback``: this list is the format though no message of it told.

    A request's ``messages`` and a lone message (an object with a ``role``) are looked at
    as a list, so message formats need no record stage for them.
    """

    name: str
    help: str  # one line: what the format is
    shape: str  # what a log of it holds, in the message saying none was recognised
    precedence: int
    # the records of a file (label, parsed JSON) and whether it was JSON Lines -> its sessions
    read: Callable[[Sequence[Record], str, bool], list[Conversation]]
    # one already parsed JSON document and the name of its source -> its sessions
    parse: Callable[[Any, str], list[Conversation]]
    record: Callable[[Mapping[str, Any]], bool] = never
    listing: Callable[[list[Any]], bool] = never
    message: Callable[[Mapping[str, Any]], bool] = never
    fallback: Callable[[list[Any]], bool] = never
