"""The ``recorded`` policy over any log the importers read: ``recorded: {path, format, session}``.

A production log (here an OpenAI Chat Completions log, two conversations as JSON Lines)
becomes a regression scenario; the scenario replays the same turns as ``toolchaos
replay``, and every mistake in the policy's keys is located in the scenario file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from toolchaos import policies
from toolchaos.certification import run_scenario
from toolchaos.cli import main
from toolchaos.logs import FORMATS, conversation
from toolchaos.policies import PolicyError
from toolchaos.scenario import ScenarioError, load_file, load_text

ROOT = Path(__file__).resolve().parents[2]


def chat(session: str, invoice: str, calls: int) -> dict[str, Any]:
    """One conversation: the model asks for the invoice ``calls`` times, each call times out."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Get the total of {invoice}."}]
    for i in range(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "fetch_invoice", "arguments": json.dumps({"invoice_id": invoice})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "Error: the billing service timed out."})
    messages.append({"role": "assistant", "content": "I could not get the total."})
    return {"model": "gpt-4.1", "metadata": {"conversation_id": session}, "messages": messages}


SCENARIO = """\
id: incident-refund
title: Replay of a production conversation
task: Get the total of the invoice.
tools:
  fetch_invoice:
    faults: {timeout: {after: 30}}
policy:
  recorded: POLICY
expect:
  - bounded: {executions: 10}
"""


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """logs/incident.jsonl: conv_billing asks for inv_1 twice, then conv_refund asks for inv_2 four times."""
    path = tmp_path / "logs" / "incident.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(chat("conv_billing", "inv_1", 2)) + "\n" + json.dumps(chat("conv_refund", "inv_2", 4))
                    + "\n")
    return path


def scenario(tmp_path: Path, policy: str) -> tuple[Path, str]:
    text = SCENARIO.replace("POLICY", policy)
    f = tmp_path / "incident.chaos.yaml"
    f.write_text(text)
    return f, text


def executed(f: Path) -> list[tuple[str, Any]]:
    """The calls the agent received and executed when the scenario ran (the naive agent runs every one)."""
    (sc,) = load_file(f)
    result = run_scenario(sc, "builtin:naive").result
    return [(e["tool"], e["args"]) for e in result.trace.of_kind("tool")]


def error(f: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_file(f)
    return info.value


def at(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first ``needle`` in the scenario text."""
    before = text[: text.index(needle)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


INV_1, INV_2 = ("fetch_invoice", {"invoice_id": "inv_1"}), ("fetch_invoice", {"invoice_id": "inv_2"})


# --- the new form, in YAML and in Python ---------------------------------------------------------------


def test_a_scenario_replays_the_chosen_session_of_an_openai_chat_log(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, format: openai-chat, session: conv_refund}")
    assert executed(f) == [INV_2] * 4


def test_without_a_session_the_first_one_replays(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, format: openai-chat}")
    assert executed(f) == [INV_1] * 2


def test_the_format_is_detected_when_not_given(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, session: conv_refund}")
    assert executed(f) == [INV_2] * 4
    (sc,) = load_file(f)
    assert sc.policy().format == "auto"


def test_the_format_given_is_the_one_read(tmp_path: Path, log: Path) -> None:
    # Read as Anthropic messages, the chat log is not valid: the format key is not ignored.
    f, text = scenario(tmp_path, "{path: logs/incident.jsonl, format: anthropic}")
    err = error(f)
    assert "incident.jsonl: line 1: messages[2].role: anthropic: expected 'user' or 'assistant'" in err.message
    assert (err.line, err.col) == at(text, "logs/incident.jsonl")


def test_the_plain_string_form_still_replays(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "logs/incident.jsonl")
    assert executed(f) == [INV_1] * 2


def test_the_python_api_takes_format_and_session(log: Path) -> None:
    policy: Any = policies.recorded(log, format="openai-chat", session="conv_refund")
    assert (policy.path, policy.format, policy.session) == (log, "openai-chat", "conv_refund")
    assert [d.calls for d in policy.turns] == [(INV_2,)] * 4 + [()]
    assert policy.turns == conversation(log, "openai-chat", "conv_refund").decisions()
    with pytest.raises(PolicyError, match=r"no session 'conv_refnd'; did you mean 'conv_refund'\?") as info:
        policies.recorded(log, session="conv_refnd")
    assert info.value.field == "session"


def test_the_scenario_and_the_cli_replay_the_same_calls(tmp_path: Path, log: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(log), "--format", "openai-chat", "--session", "conv_refund", "--agent", "builtin:naive",
                 "--max-executions", "10", "--json", "--artifacts", str(tmp_path / "cli")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"] == "conv_refund" and data["executions"] == 4
    cli = [(e["tool"], e["args"]) for e in map(json.loads, Path(data["trace"]).read_text().splitlines())
           if e["kind"] == "tool"]
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, format: openai-chat, session: conv_refund}")
    assert executed(f) == cli == [INV_2] * 4


def test_the_log_is_read_once_when_the_file_loads(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, session: conv_refund}")
    (sc,) = load_file(f)
    log.unlink()  # the runs replay what was read and checked at load time
    first, second = sc.policy(), sc.policy()
    assert first is not second and [d.calls for d in first.turns] == [(INV_2,)] * 4 + [()]


def test_a_tool_the_log_calls_must_be_defined(tmp_path: Path) -> None:
    (tmp_path / "chat.json").write_text(json.dumps([
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "search", "arguments": "{}"}}]}]))
    f, _ = scenario(tmp_path, "{path: chat.json}")
    assert "the policy calls the tool 'search', which this scenario does not define" in error(f).message


# --- mistakes, located in the scenario file ------------------------------------------------------------


def test_an_unknown_format_is_located_with_a_hint(tmp_path: Path, log: Path) -> None:
    f, text = scenario(tmp_path, "{path: logs/incident.jsonl, format: openai_chat}")
    err = error(f)
    assert "unknown format 'openai_chat'; did you mean 'openai-chat'?" in err.message
    assert f"(known: auto, {', '.join(FORMATS)})" in err.message
    assert (err.line, err.col) == at(text, "openai_chat")
    assert str(err).startswith(f"{f}:{err.line}:{err.col}: policy 'recorded': ") and "^^^^^^^^^^^" in str(err)


def test_the_key_at_fault_is_the_one_the_policy_names(tmp_path: Path, log: Path) -> None:
    # The message names a file under session/: the caret still goes to `format`, the key at fault.
    (tmp_path / "session").mkdir()
    log.rename(tmp_path / "session" / "incident.jsonl")
    f, text = scenario(tmp_path, "{session: conv_refund, path: session/incident.jsonl, format: openai_chat}")
    assert (error(f).line, error(f).col) == at(text, "openai_chat")


def test_an_unknown_session_is_located_and_lists_the_sessions(tmp_path: Path, log: Path) -> None:
    f, text = scenario(tmp_path, "{path: logs/incident.jsonl, session: conv_refnd}")
    err = error(f)
    assert "no session 'conv_refnd'; did you mean 'conv_refund'? (sessions: conv_billing, conv_refund)" in err.message
    assert (err.line, err.col) == at(text, "conv_refnd")


def test_a_missing_file_names_the_resolved_path(tmp_path: Path) -> None:
    f, text = scenario(tmp_path, "{path: logs/gone.jsonl, format: openai-chat}")
    err = error(f)
    assert f"{tmp_path / 'logs' / 'gone.jsonl'}: no such file" in err.message
    assert (err.line, err.col) == at(text, "logs/gone.jsonl")


def test_an_unknown_key_is_located_with_a_hint(tmp_path: Path, log: Path) -> None:
    f, text = scenario(tmp_path, "{path: logs/incident.jsonl, sesion: conv_refund}")
    err = error(f)
    assert "policy 'recorded': unknown parameter 'sesion'; did you mean 'session'?" in err.message
    known = err.message.partition("(known: ")[2].rstrip(")").split(", ")
    assert known == ["path", "format", "session", "respect_refusals", "max_turns",
                     "side_answer", "give_up"]  # not `turns`: Python only
    assert (err.line, err.col) == at(text, "sesion")


def test_a_broken_log_names_the_record_and_the_field(tmp_path: Path) -> None:
    doc = chat("conv_billing", "inv_1", 1)
    doc["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{bad"
    (tmp_path / "broken.jsonl").write_text(json.dumps(chat("ok", "inv_1", 1)) + "\n" + json.dumps(doc) + "\n")
    f, text = scenario(tmp_path, "{path: broken.jsonl, session: conv_billing}")
    err = error(f)
    assert "broken.jsonl: line 2: messages[1].tool_calls[0].function.arguments: openai-chat: not valid JSON" in (
        err.message)
    assert (err.line, err.col) == at(text, "broken.jsonl")


@pytest.mark.parametrize(("policy", "words", "needle"), [
    ("{format: openai-chat}", "missing 1 required positional argument: 'path'", "{format"),
    ("{path: logs/incident.jsonl, session: 42}", "session must be text (quote it in YAML), got 42", "42"),
])
def test_other_mistakes_are_located(tmp_path: Path, log: Path, policy: str, words: str, needle: str) -> None:
    f, text = scenario(tmp_path, policy)
    err = error(f)
    assert words in err.message
    assert (err.line, err.col) == at(text, needle)


# --- the schema ------------------------------------------------------------------------------------------


def test_the_schema_describes_the_new_form() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "scenario.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    doc = yaml.safe_load(SCENARIO.replace("POLICY", "x.jsonl"))

    def valid(policy: Any) -> bool:
        return not list(validator.iter_errors({**doc, "policy": {"recorded": policy}}))

    assert valid("incident.trace.jsonl")
    assert valid({"path": "incident.json", "format": "openai-chat", "session": "conv_42"})
    assert valid({"path": "incident.json", "max_turns": 5})
    assert not valid({"path": "incident.json", "format": "openai_chat"})
    assert not valid({"format": "openai-chat"})
    assert not valid({"path": "incident.json", "sesion": "conv_42"})
    assert not valid({"path": "incident.json", "turns": []})


# --- toolchaos replay --scenario -----------------------------------------------------------------------------


def test_replay_as_a_scenario_keeps_the_chosen_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolchaos import run
    from toolchaos.fake_tools import catalogue

    def recording(name: str, invoice: str, times: int) -> Any:
        steps = [{"call": "fetch_invoice", "args": {"invoice_id": invoice}}] * times
        return run("builtin:naive", task="t", tools=[catalogue.get("fetch_invoice")],
                   policy=policies.scripted(steps), name=name)

    first, second = recording("first", "inv_1", 1), recording("second", "inv_2", 2)
    trace = tmp_path / "two-runs.trace.jsonl"  # one file, two sessions: the second is the incident
    trace.write_text("".join(r.trace.write(tmp_path / f"{r.run_id}.jsonl").read_text() for r in (first, second)))
    assert main(["replay", str(trace), "--session", second.run_id, "--scenario"]) == 0
    f = tmp_path / "incident.chaos.yaml"
    f.write_text(capsys.readouterr().out)
    steps = yaml.safe_load(f.read_text())["policy"]["scripted"]["steps"]  # self-contained: no path to the log
    assert [s.get("args") for s in steps] == [{"invoice_id": "inv_2"}] * 2 + [None]
    assert executed(f) == [INV_2] * 2


def test_replay_as_a_scenario_saved_elsewhere_still_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchaos import run
    from toolchaos.fake_tools import catalogue

    incident = run("builtin:naive", task="t", tools=[catalogue.get("fetch_invoice")],
                   policy=policies.scripted([{"call": "fetch_invoice", "args": {"invoice_id": "inv_1"}}] * 3),
                   name="incident")
    incident.trace.write(tmp_path / "incident.trace.jsonl")
    monkeypatch.chdir(tmp_path)  # `toolchaos replay incident.trace.jsonl --scenario > scenarios/incident.chaos.yaml`
    assert main(["replay", "incident.trace.jsonl", "--scenario"]) == 0
    saved = tmp_path / "scenarios" / "incident.chaos.yaml"
    saved.parent.mkdir()
    saved.write_text(capsys.readouterr().out)
    assert executed(saved) == [INV_1] * 3


def test_a_fuzz_case_written_as_yaml_keeps_the_format_and_session(tmp_path: Path, log: Path) -> None:
    from toolchaos.fuzzing._core import policy_data

    data = policy_data(policies.recorded(log, format="openai-chat", session="conv_refund"))
    assert data == {"recorded": {"path": str(log), "format": "openai-chat", "session": "conv_refund"}}
    f, _ = scenario(tmp_path, json.dumps(data["recorded"]))
    assert executed(f) == [INV_2] * 4  # the same session replays, not the file's first one
    assert policy_data(policies.recorded(log)) == {"recorded": str(log)}
    assert policy_data(policies.recorded(log, respect_refusals=True)) == {
        "recorded": {"path": str(log), "respect_refusals": True}}


def test_the_scenarios_hash_covers_the_log_it_replays(tmp_path: Path, log: Path) -> None:
    f, _ = scenario(tmp_path, "{path: logs/incident.jsonl, session: conv_refund}")
    (before,) = load_file(f)
    log.write_text(log.read_text().replace("inv_2", "inv_9"))  # the scenario file itself is unchanged
    (after,) = load_file(f)
    assert before.content_hash != after.content_hash
    text = SCENARIO.replace("  recorded: POLICY\n", "  scripted: []\n")
    (plain,) = load_text(text, tmp_path / "p.chaos.yaml")
    assert plain.content_hash == hashlib.sha256(text.encode()).hexdigest()  # no log: the file's bytes alone
