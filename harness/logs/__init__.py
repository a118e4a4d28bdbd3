"""Agent logs from production (toolchaos traces, OpenAI and Anthropic logs, ...) read as conversations
a recorded policy replays.

    from toolchaos.logs import conversation
    decisions = conversation("incident.jsonl").decisions()
"""

from toolchaos.errors import LogFormatError
from toolchaos.logs._importers import (
    FORMATS,
    Conversation,
    RecordedCall,
    RecordedTurn,
    conversation,
    detect,
    fault_of,
    load,
    open_text,
    parse,
    read_records,
    replay_tools,
    select,
)

__all__ = [
    "FORMATS", "Conversation", "LogFormatError", "RecordedCall", "RecordedTurn", "conversation", "detect",
    "fault_of", "load", "open_text", "parse", "read_records", "replay_tools", "select",
]
