"""Agent logs from production read as conversations: the model's decisions (to replay) and the calls
(to analyse).

    from toolchaos.logs import conversation
    decisions = conversation("incident.jsonl").decisions()

Formats (``FORMATS``; ``format="auto"`` detects them), one module each:

- ``toolchaos``: the harness's own JSON Lines traces (one session per ``run``).
- ``openai-chat``: OpenAI Chat Completions messages, a request body or a ``chat.completion`` response.
- ``openai-responses``: OpenAI Responses items, a request (``input``), a response (``output``) or both.
- ``anthropic``: Anthropic Messages conversations (``tool_use`` and ``tool_result`` blocks).
- ``otel``: OpenTelemetry spans with the GenAI semantic conventions, exported as JSON.

``REGISTRY`` holds each format's ``LogFormat``: its name, help, how a record of it is
recognised and how it is read. A file is one JSON document or JSON Lines (one record per
line), gzip or not. A log that cannot be read raises ``LogFormatError`` naming the file,
the record (line) and the field (``messages[3].tool_calls[0].function.arguments``).

Replay: ``conversation(path, format, session)`` is the one session to replay and
``Conversation.decisions()`` its model turns: the one conversion ``toolchaos replay``
and the ``recorded`` policy (``policy: {recorded: {path, format, session}}`` in a
scenario) both use; ``replay_tools(conversation)`` gives fake tools whose schedules
answer each call as the log says it was answered (a timeout, a 503, the recorded data),
so the pre-fix call sequence meets the same tool behaviour.
"""

from toolchaos.errors import LogFormatError
from toolchaos.logs._conversation import Conversation, RecordedCall, RecordedTurn
from toolchaos.logs._faults import fault_of
from toolchaos.logs._files import open_text, read_records
from toolchaos.logs._format import LogFormat
from toolchaos.logs._load import conversation, load, parse, select
from toolchaos.logs._registry import FORMATS, REGISTRY, detect
from toolchaos.logs._replay import replay_tools

# isort: split
# What other packages of toolchaos (forensics) need beyond the public names: importable from this facade, not
# part of the API (not in __all__).
from toolchaos.logs._files import open_bytes as open_bytes

__all__ = [
    "FORMATS", "REGISTRY", "Conversation", "LogFormat", "LogFormatError", "RecordedCall", "RecordedTurn",
    "conversation", "detect", "fault_of", "load", "open_text", "parse", "read_records", "replay_tools", "select",
]
