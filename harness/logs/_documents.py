"""What the chat-style formats (OpenAI chat, OpenAI Responses, Anthropic) share.

Their logs are conversations, not event streams: a file is one conversation (a list of
messages, a request, a response), JSON Lines of messages, or JSON Lines of whole
conversations. ``document_format`` builds a ``LogFormat`` from a function reading one
conversation's turns; the helpers below are what those functions have in common.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolchaos._internal.model import interpret
from toolchaos.errors import LogFormatError
from toolchaos.logs._conversation import Conversation, RecordedTurn
from toolchaos.logs._fields import BadField
from toolchaos.logs._files import Record
from toolchaos.logs._format import LogFormat, never

Usage = tuple[int | None, int | None]  # (input tokens, output tokens) a response reports


def has_role(record: Any) -> bool:
    """A message of a chat log (rather than a request holding messages)."""
    return isinstance(record, Mapping) and "role" in record and "messages" not in record


def document_format(name: str, help: str, shape: str, precedence: int, turns: Callable[[Any], list[RecordedTurn]], *,
                    message_like: Callable[[Any], bool] = has_role,
                    record: Callable[[Mapping[str, Any]], bool] = never,
                    message: Callable[[Mapping[str, Any]], bool] = never,
                    fallback: Callable[[list[Any]], bool] = never) -> LogFormat:
    """A chat-style format: ``turns`` reads one conversation; ``message_like`` tells a JSON Lines
    record that is one message of a conversation from one that is a whole conversation."""

    def read(records: Sequence[Record], source: str, jsonl: bool) -> list[Conversation]:
        # JSON Lines of messages (or items) is one conversation; JSON Lines of documents is one each
        if jsonl and all(message_like(r) for _, r in records):
            records = [("document", [r for _, r in records])]
        out: list[Conversation] = []
        for label, data in records:
            try:
                found = turns(data)
            except BadField as exc:
                raise LogFormatError(exc.problem, source, label, exc.field, name) from None
            base = Path(source).name
            default = base if len(records) == 1 else f"{base}:{label.replace(' ', '')}"
            out.append(Conversation(session_id(data) or default, name, found, source))
        return out

    def parse(data: Any, source: str) -> list[Conversation]:
        try:
            return [Conversation(session_id(data) or source, name, turns(data), source)]
        except BadField as exc:
            raise LogFormatError(exc.problem, source, "document", exc.field, name) from None

    return LogFormat(name, help, shape, precedence, read, parse, record=record, message=message, fallback=fallback)


def session_id(data: Any) -> str | None:
    """The conversation's own id, when the document carries one (at the top or in its metadata)."""
    if not isinstance(data, Mapping):
        return None
    meta = data.get("metadata")
    for holder in (data, meta if isinstance(meta, Mapping) else {}):
        for key in ("conversation_id", "session_id"):
            if isinstance(holder.get(key), str):
                return str(holder[key])
    return None


class Estimator:
    """Input tokens of each turn estimated from the conversation so far (~4 characters a token)."""

    def __init__(self) -> None:
        self.chars = 0

    def add(self, message: Any) -> None:
        self.chars += len(json.dumps(message, default=str, ensure_ascii=False, separators=(",", ":")))

    def tokens(self) -> int:
        return 8 + self.chars // 4


def attach(turns: list[RecordedTurn], call_id: Any, result: Any, is_error: bool | None, where: str) -> None:
    """Give the latest call with this id its result (a refusal: a call that was never executed)."""
    for turn in reversed(turns):
        for c in turn.calls:
            if c.id == call_id:
                c.result, c.is_error = result, is_error
                if _refused(result):
                    c.executed = False
                return
    raise BadField(where, f"answers the call id {call_id!r}, which no earlier turn asked for")


def _refused(result: Any) -> bool:
    if isinstance(result, Mapping) and result.get("refused"):
        return True
    return isinstance(result, str) and interpret(result)[0] == "refused"


def usage_of(data: Any) -> Usage:
    """A response's reported usage, whichever API's names it uses."""
    if not isinstance(data, Mapping):
        return None, None
    u = data.get("usage")
    if not isinstance(u, Mapping):
        return None, None
    tin = u.get("input_tokens", u.get("prompt_tokens"))
    tout = u.get("output_tokens", u.get("completion_tokens"))
    return (int(tin) if isinstance(tin, (int, float)) else None, int(tout) if isinstance(tout, (int, float)) else None)


def apply_usage(turns: list[RecordedTurn], usage: Usage) -> None:
    """A response's real usage replaces the estimate only when it is the sole turn (mixing the
    two would make the growth per turn meaningless)."""
    if len(turns) == 1 and usage != (None, None):
        turns[0].tokens_in, turns[0].tokens_out, turns[0].estimated = usage[0], usage[1], False
