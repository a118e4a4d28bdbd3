"""Cassettes: a run against a real model recorded once, then replayed as a regression test.

    live = policies.openai_chat("https://api.openai.com/v1", model="gpt-4o-mini")  # key: $OPENAI_API_KEY
    policy = policies.cassette("tests/cassettes/refund.cassette.json", live=live, record=True)

Recording (``record=True``; ``pytest --chaos --chaos-record``) sends each of the agent's model
requests to the live model and writes every request and answer to the cassette, turn by turn.
Nothing is recorded unless asked: without ``record`` the cassette is only read, and a missing
one is an error that says how to record it. Replaying answers each turn through the recorded
policy (``policies.recorded`` with the cassette's decisions) after checking that the agent asked
exactly what it asked when recorded (its messages and the tools it offered); the first request
that differs fails the run with ``CassetteDiverged``, a diff naming the turn. A run that stops
asking before the recording's last turn diverges too (``check_complete``, which ``Chaos.run``
calls after the run).

What a cassette holds (JSON, ``"format": "toolchaos.cassette"``, ``"version": 1``): the model
and the endpoint (its scheme, host and path: no credentials, no query), and per turn the
``request`` (``messages``, ``tools``) and the ``answer`` (``calls``: ``[tool, arguments]`` pairs,
``text``). No header is written, and every occurrence of the API key in the text is replaced by
``<redacted>`` before the file is written, wherever the agent may have put it.
"""

from __future__ import annotations

import difflib
import email.utils
import json
import math
import os
from collections.abc import Callable, Mapping
from datetime import UTC
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolchaos._internal.model import Decision, ModelView
from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing import isolation as _isolation
from toolchaos.errors import CassetteDiverged, CassetteError, PolicyError
from toolchaos.policies._builtin import Recorded

FORMAT, VERSION = "toolchaos.cassette", 1
SUFFIX = ".cassette.json"
REDACTED = "<redacted>"
LiveModel = Callable[[ModelView], Decision]  # what answers a turn while recording: the real model


# --- the live model: an OpenAI-compatible chat completions endpoint ------------------------


RETRY_STATUSES = (429, 503)  # rate limited, overloaded: the server says when to ask again (Retry-After)
RETRIES = 3  # asks after the first, at most: a server still refusing after them is down, not busy
MAX_WAIT = 30.0  # real seconds the client waits at most before asking again (a longer Retry-After is an error)


class OpenAIChat:
    """A real model behind an OpenAI-compatible ``/chat/completions`` endpoint, called with httpx.

    The key is read from ``api_key`` or the ``api_key_env`` variable when a turn is asked, sent
    as the Authorization header and never kept anywhere else (``secrets`` lists it for the cassette
    to scrub). ``specs`` gives the tools' JSON schemas (name -> parameters schema); a tool without
    one is offered with open parameters.

    An answer 429 or 503 is asked again, up to ``retries`` more times, after the wait its
    ``Retry-After`` header names (seconds, or an HTTP date), else 1, 2, 4... seconds; real time,
    since the server is real (the run's virtual clock does not move, so the trace is the same as
    without the wait). A wait longer than ``max_wait`` seconds is an error, not a stalled run.
    """

    def __init__(self, base_url: str, *, model: str, api_key: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 specs: Mapping[str, Mapping[str, Any]] | None = None, timeout: float = 60.0,
                 retries: int = RETRIES, max_wait: float = MAX_WAIT) -> None:
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            raise PolicyError(f"openai_chat: base_url must be an http(s) URL, got {base_url!r}", field="base_url")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise PolicyError(f"openai_chat: retries must be a whole number >= 0, got {retries!r}", field="retries")
        if isinstance(max_wait, bool) or not isinstance(max_wait, (int, float)) or not max_wait >= 0:
            raise PolicyError(f"openai_chat: max_wait must be a number of seconds >= 0, got {max_wait!r}",
                              field="max_wait")
        self.retries, self.max_wait = retries, float(max_wait)
        u = urlsplit(base_url)
        self.url = urlunsplit((u.scheme, u.netloc, u.path.rstrip("/") + "/chat/completions", u.query, ""))
        self.model, self.timeout = model, timeout
        self._key, self.api_key_env = api_key, api_key_env
        self.specs = {k: dict(v) for k, v in (specs or {}).items()}

    @property
    def endpoint(self) -> str:
        """Where the requests go, as a cassette may show it: no user, password or query."""
        u = urlsplit(self.url)
        host = u.hostname or ""
        return urlunsplit((u.scheme, host if u.port is None else f"{host}:{u.port}", u.path, "", ""))

    @property
    def secrets(self) -> list[str]:
        key = self._api_key()
        return [key] if key else []

    def _api_key(self) -> str | None:
        return self._key or os.environ.get(self.api_key_env) or None

    def body(self, view: ModelView) -> dict[str, Any]:
        tools = [{"type": "function", "function": {"name": t, "parameters": self.specs.get(t, {"type": "object"})}}
                 for t in view.tools]
        return {"model": self.model, "messages": [_openai_message(m) for m in view.messages],
                **({"tools": tools} if tools else {})}

    def __call__(self, view: ModelView) -> Decision:
        import httpx  # a core dependency; only a recording calls a real model

        key = self._api_key()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        body = self.body(view)
        with _isolation.allow_network(), httpx.Client(timeout=self.timeout, verify=_tls()) as client:
            for attempt in range(self.retries + 1):
                response = client.post(self.url, json=body, headers=headers)
                if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                    break
                _clock.real_sleep(self._wait(response, attempt))
        if response.status_code != 200:
            tried = f" (asked {attempt + 1} times)" if attempt else ""
            raise CassetteError(f"the live model at {self.endpoint} answered HTTP {response.status_code}{tried}: "
                                f"{response.text[:300]}")
        return _decision(response.json())

    def warm(self) -> None:
        """Load what a first request loads (httpx's transport, the TLS context) now: trials about to fork
        (``toolchaos._engine.trials``) then share it instead of each child loading it again."""
        import httpx

        with httpx.Client(timeout=self.timeout, verify=_tls()) as client:
            client.build_request("POST", self.url, json={"model": self.model, "messages": []})

    def _wait(self, response: Any, attempt: int) -> float:
        """Real seconds to wait before asking again: the answer's Retry-After, else 1, 2, 4..., at most ``max_wait``."""
        raw = response.headers.get("retry-after")
        wait = retry_after(raw) if raw is not None else None
        if wait is None:  # absent or unreadable: back off on our own
            return float(min(2 ** attempt, self.max_wait))
        if wait > self.max_wait:
            raise CassetteError(f"the live model at {self.endpoint} answered HTTP {response.status_code} and asks to "
                                f"wait {wait:g}s (Retry-After: {raw}), more than max_wait={self.max_wait:g}s: try "
                                f"again later, or give openai_chat(..., max_wait=SECONDS)")
        return wait


_context: Any = None


def _tls() -> Any:
    """The TLS context of every request, made once per process (its certificates take ~20 ms to load)."""
    global _context
    if _context is None:
        import httpx

        _context = httpx.create_ssl_context()
    return _context


def retry_after(value: str) -> float | None:
    """A Retry-After header's wait in seconds (delay-seconds, or an HTTP date from the real clock's now);
    None when it is neither."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - _clock.real_time()  # the real now: a run's clock is virtual
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _openai_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A neutral chat message in OpenAI's chat completions form."""
    out: dict[str, Any] = {"role": m.get("role"), "content": _text(m.get("content"))}
    if m.get("tool_calls"):
        out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                              "function": {"name": c.get("name"), "arguments": json.dumps(c.get("arguments") or {})}}
                             for c in m["tool_calls"]]
    if m.get("role") == "tool":
        out["tool_call_id"] = m.get("tool_call_id")
    return out


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, default=str)


def _decision(data: Mapping[str, Any]) -> Decision:
    """The model's answer: its tool calls, else its text."""
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise CassetteError(f"the live model's answer has no choices[0].message: {json.dumps(data)[:300]}") from None
    calls = []
    for c in message.get("tool_calls") or []:
        fn = c.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {"_unparsed": fn.get("arguments")}  # kept as sent: the agent meets what the model really said
        calls.append((str(fn.get("name")), args if isinstance(args, dict) else {"_value": args}))
    return Decision.many(calls) if calls else Decision.final(str(message.get("content") or ""))


def openai_chat(base_url: str, *, model: str, api_key: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                specs: Mapping[str, Mapping[str, Any]] | None = None, timeout: float = 60.0,
                retries: int = RETRIES, max_wait: float = MAX_WAIT) -> OpenAIChat:
    """A live model for recording a cassette: an OpenAI-compatible chat completions endpoint
    (429 and 503 asked again after their Retry-After, ``retries`` times at most)."""
    return OpenAIChat(base_url, model=model, api_key=api_key, api_key_env=api_key_env, specs=specs, timeout=timeout,
                      retries=retries, max_wait=max_wait)


# --- the cassette ------------------------------------------------------------------------


def _request(view: ModelView) -> dict[str, Any]:
    """What the agent asked the model this turn, as plain JSON data (compared on replay)."""
    data = {"messages": view.messages, "tools": list(view.tools)}
    return json.loads(json.dumps(data, sort_keys=True, default=str))  # type: ignore[no-any-return]


def _answer(d: Decision) -> dict[str, Any]:
    return {"calls": [[name, args] for name, args in d.calls], "text": d.text}


def _as_decision(answer: Mapping[str, Any]) -> Decision:
    calls = [(str(name), dict(args)) for name, args in answer.get("calls") or []]
    return Decision.many(calls) if calls else Decision.final(str(answer.get("text") or ""))


class Cassette:
    """Records a run's model turns from a live model, or replays them and fails where the requests diverge."""

    name = "cassette"

    def __init__(self, path: str | Path, *, live: LiveModel | None = None, record: bool = False) -> None:
        if not isinstance(path, (str, Path)):
            raise PolicyError(f"cassette: path must be the cassette file, got {path!r}", field="path")
        if not isinstance(record, bool):
            raise PolicyError(f"cassette: record must be true or false, got {record!r}", field="record")
        if record and live is None:
            raise PolicyError("cassette: recording needs the live model to record (live=policies.openai_chat(...))",
                              field="live")
        self.path, self.live, self.record = Path(path), live, record
        self.shown = _shown(self.path)
        self.turns: list[dict[str, Any]] = [] if record else self._load()
        self._replay: Any = None
        self.asked = 0  # the turns the replayed run has asked so far

    def _load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            raise CassetteError(f"no cassette at {self.shown}: record it first (pytest --chaos --chaos-record, "
                                f"or cassette(..., record=True) with a live model)")
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CassetteError(f"{self.shown}: not a readable cassette: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise CassetteError(f"{self.shown}: not a toolchaos cassette (format {FORMAT!r}, version {VERSION})")
        self.model, self.endpoint = data.get("model"), data.get("endpoint")
        return list(data.get("turns") or [])

    def for_trial(self, trial: int) -> Cassette:
        """This cassette for trial ``trial`` of a run: itself for trial 0, else its own file beside it,
        ``<name>.trial-<trial>.cassette.json`` (each trial asks the live model afresh)."""
        if trial == 0:
            return self
        name = self.path.name
        stem = name[:-len(SUFFIX)] if name.endswith(SUFFIX) else self.path.stem
        return Cassette(self.path.with_name(f"{stem}.trial-{trial}{SUFFIX}"), live=self.live, record=self.record)

    @property
    def reaches_network(self) -> bool:
        """Whether a run of it asks the live model (recording): an isolated run keeps the network for it."""
        return self.record and self.live is not None

    def decide(self, view: ModelView) -> Decision:
        return self._record(view) if self.record else self._check(view)

    # recording

    def _record(self, view: ModelView) -> Decision:
        assert self.live is not None
        if view.step == 1:
            self.turns = []  # a new run records afresh
        decision = self.live(view)
        self.turns.append({"turn": view.step, "request": _request(view), "answer": _answer(decision)})
        self._save()  # after every turn: a run that dies half-way keeps what it asked
        return decision

    def _save(self) -> None:
        data = {"format": FORMAT, "version": VERSION, "model": getattr(self.live, "model", None),
                "endpoint": getattr(self.live, "endpoint", None), "turns": self.turns}
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        for secret in getattr(self.live, "secrets", []):
            if secret and len(secret) >= 4:  # a key the agent echoed into a message never reaches the file
                text = text.replace(secret, REDACTED)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(text, encoding="utf-8")

    # replaying

    def _check(self, view: ModelView) -> Decision:
        if view.step == 1 or self._replay is None:
            self._replay = Recorded(self.path, turns=[_as_decision(t["answer"]) for t in self.turns])
        n = self.asked = view.step
        now = _request(view)
        if n > len(self.turns):
            raise CassetteDiverged(f"turn {n}: the agent asked the model once more than when {self.shown} was "
                                   f"recorded ({len(self.turns)} turns)\n" + _diff({}, now) + _again(), turn=n)
        was = self.turns[n - 1]["request"]
        if was != now:
            raise CassetteDiverged(f"turn {n}: the agent's request differs from the one {self.shown} recorded "
                                   f"({_first_difference(was, now)})\n" + _diff(was, now) + _again(), turn=n)
        decision: Decision = self._replay.decide(view)
        return decision


    def check_complete(self) -> None:
        """After a replayed run: the agent asked every turn it asked when recorded (a run that stops
        asking early diverges too; ``Chaos.run`` checks it)."""
        if self.record or self.asked >= len(self.turns):
            return
        n = self.asked + 1
        raise CassetteDiverged(f"turn {n}: the agent stopped after {self.asked} model turns; {self.shown} recorded "
                               f"{len(self.turns)}\n" + _diff(self.turns[n - 1]["request"], {}) + _again(), turn=n)


def _shown(path: Path) -> str:
    """A path as a message shows it: relative to the working directory when under it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def _again() -> str:
    return "\nif the change is intended, record the cassette again: pytest --chaos --chaos-record"


def _first_difference(was: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    if was.get("tools") != now.get("tools"):
        return f"the tools offered: {was.get('tools')} then, {now.get('tools')} now"
    a, b = list(was.get("messages") or []), list(now.get("messages") or [])
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first at messages[{i}] ({y.get('role', '?')})"
    return f"{len(a)} messages then, {len(b)} now"


def _diff(was: Mapping[str, Any], now: Mapping[str, Any], most: int = 60) -> str:
    a = json.dumps(was, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    b = json.dumps(now, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(a, b, "recorded", "now", n=2, lineterm=""))
    cut = lines[:most] + ([f"... {len(lines) - most} more diff lines"] if len(lines) > most else [])
    return "\n".join(cut)


def cassette(path: str | Path, *, live: LiveModel | None = None, record: bool = False) -> Cassette:
    """Record (``record=True``) or replay a run's model turns in a cassette file."""
    return Cassette(path, live=live, record=record)

