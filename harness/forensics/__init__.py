"""Loop forensics: read call logs and say, per session, whether the agent was looping.

    from toolchaos.forensics import analyze, render_table
    print(render_table(analyze(["incident.jsonl"])))

``analyze([paths])`` streams toolchaos traces (JSON Lines, gzip or not) and the log
formats of ``toolchaos.logs`` (OpenAI chat / Responses, Anthropic, OpenTelemetry GenAI
spans), and reports for every session:

- **calls** executed (and refused), **unique fingerprints**, **repeat rate**
  (``1 - unique / calls``) and the **most repeated fingerprints** with their counts;
- **cycles**: the longest run of calls going round the same 2, 3 or 4 fingerprints in the
  same order (A-B-A-B, search -> read -> summarize -> search -> ...), with its period and
  one round of it;
- the **longest streak without progress**: consecutive calls none of which brought
  anything new. A call is progress when its fingerprint was never seen in the session,
  or when the same call now answers differently than last time (another outcome code,
  or other content in an imported log). PENDING answers (``processing``) are polls:
  counted apart, they neither make nor break a streak;
- **interval regularity**: median gap between calls and its spread (interquartile
  range / median): a machine-regular spacing at machine speed is how runaway loops look;
- **token growth per turn**: input tokens of the first and last turn, the mean growth
  per turn and the ratio (estimated from the conversation's length when the log has
  no usage);
- a **verdict**, ``looping`` / ``suspicious`` / ``healthy``, with the reason
  (``Thresholds`` holds the rules; docs/forensics.md explains them).

Memory stays flat however long the file (``Session`` bounds the state of each session).
The concerns are apart: ``_scan`` reads files into sessions (a byte-level scanner for
toolchaos traces), ``_session`` keeps one session's state and builds its report,
``_verdict`` judges it, ``_render`` prints the table or the JSON.
"""

from toolchaos.forensics._render import as_json, render_table
from toolchaos.forensics._report import Cycle, Repeated, SessionReport, Tokens
from toolchaos.forensics._scan import Analysis, analyze, sniff
from toolchaos.forensics._session import MAX_PERIOD, MAX_TRACKED, Session
from toolchaos.forensics._verdict import Thresholds, judge

__all__ = [
    "MAX_PERIOD", "MAX_TRACKED", "Analysis", "Cycle", "Repeated", "Session", "SessionReport", "Thresholds",
    "Tokens", "analyze", "as_json", "judge", "render_table", "sniff",
]
