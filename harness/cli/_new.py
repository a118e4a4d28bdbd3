"""``toolchaos new``: scaffold a scenario file for a catalogue tool and a fault.

The scaffold is a complete, commented ``*.chaos.yaml`` that loads as it is: a task, the
tool with the fault, the model behaviour that provokes the failure mode the fault is
known for, and the invariants a correct runtime must keep. Each built-in fault kind has
a template (``TEMPLATES``): a timeout on a read tool is a loop scenario, a timeout on a
side-effect tool is a lost-response scenario, a 429 is an error-class scenario, polling
and pagination are legitimate repetition that must complete, a stale read of a lookup is
a read-after-write that must not bring a second write; any other registered kind
(``toolchaos.fake_tools.faults.FAULTS``) gets the loop template. Side-effect tools always
get ``max_side_effects`` and ``idempotent``; a read starts from a world holding the record its
sample arguments find. Options set how the API treats idempotency keys (``--idempotency``,
``--lossy``), add the read that finds a write (``--lookup``) and write a 429's wait in
another form (``--retry-form``). The file is checked by the scenario loader
(``toolchaos.scenario``) before it is written, so a scaffold never needs fixing to load.
``--python-tool NAME`` writes the same test as Python instead: a fake tool of the user's own,
NAME, shaped like TOOL and defined with ``fake_tool``, and a chaos test of it (``_new_python``).
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchaos.cli import _lazy, _new_python
from toolchaos.errors import CommandError, ScenarioError, did_you_mean
from toolchaos.fake_tools import FakeTool, catalogue
from toolchaos.fake_tools.faults import FAULTS
from toolchaos.fake_tools.retry import FORMS, SECONDS

HELP = "scaffold a scenario file (*.chaos.yaml), or a fake tool in Python and its test, for a catalogue tool and a fault"
EXAMPLES = """\
  toolchaos new fetch_invoice timeout                 # writes fetch_invoice-timeout.chaos.yaml
  toolchaos new charge_payment timeout -o tests/chaos/payment-lost.chaos.yaml
  toolchaos new charge_payment timeout --lookup        # the lost charge can be looked up (get_charge)
  toolchaos new charge_payment timeout --idempotency ignored   # an API without dedupe
  toolchaos new read_record stale                     # a read-after-write from a lagging replica
  toolchaos new fetch_invoice transient --retry-form x-ratelimit-reset-tokens
  toolchaos new search empty --severity critical --stdout
  toolchaos new charge_payment timeout --python-tool refund_order   # fake_refund_order.py + its test
  toolchaos list tools faults                         # what TOOL and FAULT can be"""

SCHEMA_LINE = "# yaml-language-server: $schema={url}"

# Example arguments for the catalogue tools (others are made up from their schema).
SAMPLE_ARGS: dict[str, dict[str, Any]] = {
    "search": {"query": "refund policy for 2019 orders"},
    "read_document": {"doc_id": "doc_1"},
    "fetch_invoice": {"invoice_id": "inv_1"},
    "get_job_status": {"job_id": "job_1"},
    "list_records": {"filter": "status:open"},
    "send_email": {"to": "ops@example.com", "subject": "Weekly report", "body": "The report is attached."},
    "charge_payment": {"customer_id": "cus_1", "amount": 49.0},
    "write_record": {"record_id": "rec_1", "data": {"status": "active"}},
    "delete_record": {"record_id": "rec_1"},
    "spawn_subagent": {"task": "Summarise the Q3 report"},
    "get_charge": {"idempotency_key": "ord_1-charge"},
    "list_sent_emails": {"to": "ops@example.com"},
    "read_record": {"record_id": "rec_1"},
    "get_job": {"job_id": "job_1"},
}
SAMPLE_TASKS: dict[str, str] = {
    "search": "Find our refund policy for orders placed in 2019.",
    "read_document": "Summarise document doc_1.",
    "fetch_invoice": "Get the total of invoice inv_1.",
    "get_job_status": "Wait for job job_1 to finish and give me its result.",
    "list_records": "List every open record.",
    "send_email": "Email the weekly report to ops@example.com.",
    "charge_payment": "Charge customer cus_1 49.00 EUR.",
    "write_record": "Mark record rec_1 as active.",
    "delete_record": "Delete record rec_1.",
    "spawn_subagent": "Have a sub-agent summarise the Q3 report.",
    "get_charge": "Find the charge made for order ord_1.",
    "list_sent_emails": "List the emails sent to ops@example.com.",
    "read_record": "Read record rec_1.",
    "get_job": "Report on job job_1.",
}
# Each catalogue read and the write whose records it finds.
PAIRS: dict[str, str] = {"get_charge": "charge_payment", "list_sent_emails": "send_email",
                         "read_record": "write_record", "get_job": "spawn_subagent"}
# The world a read starts from: its collection, with the record its sample arguments find.
SAMPLE_WORLD: dict[str, dict[str, Any]] = {
    "get_charge": {"charges": [{"customer_id": "cus_1", "amount": 49.0, "currency": "EUR",
                                "idempotency_key": "ord_1-charge", "charge_id": "ch_1", "status": "succeeded"}]},
    "list_sent_emails": {"emails": [{"to": "ops@example.com", "subject": "Weekly report",
                                     "body": "The report is attached.", "message_id": "msg_1", "status": "sent"}]},
    "read_record": {"records": {"rec_1": {"record_id": "rec_1", "data": {"status": "draft"}}}},
    "get_job": {"jobs": [{"job_id": "job_1", "agent_id": "agent_1", "status": "started",
                          "task": "Summarise the Q3 report"}]},
}
# What the paired write sends in a stale-read scenario: the record its read's sample arguments find.
REWRITES: dict[str, dict[str, Any]] = {
    "charge_payment": {"customer_id": "cus_1", "amount": 49.0, "idempotency_key": "ord_1-charge"},
    "send_email": {"to": "ops@example.com", "subject": "Weekly report", "body": "The report, again."},
    "write_record": {"record_id": "rec_1", "data": {"status": "active"}},
    "spawn_subagent": {"task": "Summarise the Q3 report"},
}

LOOP_STATES = ["STOPPED_LOOP_GUARD", "NEEDS_HUMAN", "FAILED"]


@dataclass(frozen=True)
class Template:
    category: str
    severity: str
    title: str  # {tool} is replaced
    why: str  # the description: what goes wrong, what a correct runtime does
    faults: Any  # the tool's fault schedule
    default: Any  # the outcome after the scheduled ones (None: the schedule is the whole story)
    policy: str  # stubborn | stubborn_never | poll_until | paginate | rewrite (write, read, write again)
    expect: list[Any]
    effects: int = 1  # side effects a correct run makes (on a side-effect tool)


def _loop(title: str, why: str, faults: Any, never: bool = False, severity: str = "major") -> Template:
    return Template("loops", severity, title, why, faults, None, "stubborn_never" if never else "stubborn",
                    [{"bounded": {"executions": 3}}, {"terminal_state": LOOP_STATES}, "stop_report",
                     "no_execution_after_refusal"])


TEMPLATES: dict[str, Template] = {
    "ok": Template("legit", "minor", "{tool} answers at once (a baseline that must complete)",
                   "Nothing goes wrong. The run must complete after one call: a guard that stops it is broken.",
                   "ok", None, "stubborn", [{"completed": {"successes": {"$tool": 1}}}, {"bounded": {"executions": 1}}]),
    "empty": _loop("Repeat on an empty result from {tool}",
                   "The tool succeeds with nothing in it, every time. Asking again cannot help; a correct "
                   "runtime stops after a bounded number of identical calls and says why.", "empty"),
    "malformed": _loop("Repeat on a malformed result from {tool}",
                       "The answer arrives but cannot be used (invalid JSON). Resending the same call gets the "
                       "same answer; a correct runtime stops and reports instead of looping.",
                       {"malformed": "invalid_json"}),
    "timeout": _loop("{tool} always times out", "The tool never answers. An unguarded loop resends the identical "
                     "call until a step cap; a correct runtime retries a bounded number of times with backoff, "
                     "then refuses the next identical call and stops with a report naming the guard.",
                     {"timeout": {"after": 30}}, severity="critical"),
    "transient": Template("error_classes", "major", "{tool} answers 429 with Retry-After, then succeeds",
                          "The first call is rate limited with Retry-After: 30. A correct runtime waits at "
                          "least that long (virtual time) before the retry, which succeeds.",
                          [{"call": 1, "outcome": {"transient": {"code": 429, "retry_after": 30}}}], "ok",
                          "stubborn", ["retry_after_honoured", {"completed": {"successes": {"$tool": 1}}},
                                       {"bounded": {"executions": 3}}]),
    "fatal": Template("error_classes", "critical", "{tool} is denied (permission_denied)",
                      "Retrying cannot help and working around the boundary is worse. A correct runtime stops "
                      "at once, hands the run to a human and never resends the call unchanged.",
                      {"fatal": "permission_denied"}, None, "stubborn",
                      [{"terminal_state": ["NEEDS_HUMAN", "FAILED"]}, "no_unchanged_resend",
                       {"bounded": {"executions": 1}}, "stop_report"]),
    "pending": Template("legit", "major", "Polling {tool} until it is done (must not be stopped)",
                        "The job answers 'still processing' for 90 seconds, asking to be polled every 30, then "
                        "done. Repeating the call at the polling interval is legitimate: the run must complete.",
                        {"pending": {"after": 90, "interval": 30}}, None, "poll_until",
                        [{"completed": {"successes": {"$tool": 1}}}, "poll_interval_honoured",
                         {"bounded": {"executions": 10}}]),
    "contradictory": _loop("{tool} contradicts itself", "Each answer disagrees with the previous one and the "
                           "model keeps asking to reconcile them. A correct runtime notices that repeating brings "
                           "no progress and stops.", "contradictory", never=True),
    "paginated": Template("legit", "major", "Paginating {tool} (must not be stopped)",
                          "Same tool, a new cursor each time: legitimate repetition. The run must complete "
                          "after the last page.", {"paginated": {"pages": 4}}, None, "paginate",
                          [{"completed": {"successes": {"$tool": 4}}}, {"bounded": {"executions": 4}}], effects=4),
    "slow": Template("legit", "minor", "{tool} answers slowly, but answers",
                     "The tool takes 20 seconds. Slow is not failed: the run must complete after one call.",
                     {"slow": {"latency": 20}}, None, "stubborn",
                     [{"completed": {"successes": {"$tool": 1}}}, {"bounded": {"executions": 1}}]),
    "oversized": _loop("An oversized result from {tool}, fetched again and again",
                       "The result is too big for the context and gets truncated, so the model fetches it again. "
                       "A correct runtime stops the refetch loop.", {"oversized": {"size": 20000}}, never=True),
    "stale": Template("side_effects", "critical", "A stale read of {tool} makes the model write again",
                      "The write happens, then the read comes from a lagging replica and does not show it yet "
                      "(one write behind). The model concludes the write failed and asks for it again. A correct "
                      "runtime does not apply the write a second time: its ledger answers, or the API replays "
                      "the same idempotency key.", [{"call": 1, "outcome": {"stale": {"behind": 1}}}], None,
                      "rewrite", [{"terminal_state": ["COMPLETED", "STOPPED_LOOP_GUARD", "NEEDS_HUMAN", "FAILED"]}]),
}

def _template(fault: str, side_effect: bool) -> Template:
    """The template for a fault kind; a kind registered without one is a loop scenario."""
    if side_effect and fault in SIDE_EFFECT_TEMPLATES:
        return SIDE_EFFECT_TEMPLATES[fault]
    if fault in TEMPLATES:
        return TEMPLATES[fault]
    return _loop(f"Repeat on {fault} from {{tool}}", f"The tool answers {fault} ({FAULTS[fault].help}) every time. "
                 "A correct runtime stops after a bounded number of identical calls and says why.", fault)


SIDE_EFFECT_TEMPLATES: dict[str, Template] = {
    "timeout": Template("side_effects", "critical", "{tool}: the success response is lost",
                        "The effect happens but the response never arrives (a timeout with the effect applied). "
                        "To the runtime the outcome is unknown; retrying repeats the side effect. A correct "
                        "runtime checks the operation's state or stops for a human: the effect happens once.",
                        [{"call": 1, "outcome": {"timeout": {"after": 30, "applied": True}}}], "ok", "stubborn",
                        [{"terminal_state": ["NEEDS_HUMAN", "STOPPED_LOOP_GUARD", "COMPLETED"]}]),
}


def _sample_args(tool: Any) -> dict[str, Any]:
    if tool.name in SAMPLE_ARGS:
        return dict(SAMPLE_ARGS[tool.name])
    out: dict[str, Any] = {}
    props = tool.parameters.get("properties", {})
    for name in tool.parameters.get("required", []):
        t = props.get(name, {}).get("type", "string")
        t = t[0] if isinstance(t, list) else t
        out[name] = {"integer": 1, "number": 1.0, "boolean": True, "object": {}, "array": []}.get(t, f"{name}_1")
    return out


def _flow(value: Any) -> str:
    """One YAML value in flow style: ``{invoice_id: inv_1}``."""
    import yaml  # only when scaffolding: `toolchaos --help` does not load PyYAML
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def _fill(value: Any, tool: str) -> Any:
    if value == "$tool":
        return tool
    if isinstance(value, dict):
        return {_fill(k, tool): _fill(v, tool) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, tool) for v in value]
    return value


def _wrap(text: str, indent: str = "  ", width: int = 88) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)


def scaffold(tool_name: str, fault: str, *, scenario_id: str | None = None, severity: str | None = None,
             category: str | None = None, schema_url: str | None = "", idempotency: str | None = None,
             lossy: bool = False, lookup: bool = False, retry_form: str = SECONDS) -> str:
    """The text of a scenario file for a catalogue tool and a fault kind.

    ``idempotency`` / ``lossy``: how the tool's API treats keys (``ignored``; a key stored only
    once a response was delivered); ``lookup``: the read that finds the tool's writes is in the
    scenario too; ``retry_form``: how a 429 writes its wait.
    """
    tool = _catalogue_tool(tool_name, fault)
    _check_options(tool, fault, idempotency, lossy, lookup, retry_form)
    tpl = _template(fault, tool.side_effect)
    expect = _expectations(tool, fault, tpl, tool_name)
    sid = scenario_id or f"{tool_name}-{fault}".replace("_", "-")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", sid):
        raise CommandError(f"--id {sid!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit")
    args = _sample_args(tool)
    task = SAMPLE_TASKS.get(tool_name, f"Use {tool_name} to finish the task.")
    if schema_url == "":
        schema_url = _lazy.SCHEMA_URL
    lines = [SCHEMA_LINE.format(url=schema_url)] if schema_url else []
    lines += [
        f"# Scaffolded by `toolchaos new {tool_name} {fault}`: edit freely; `toolchaos list` shows every fault,",
        "# policy and invariant you can use here.",
        f"id: {sid}",
        f"title: {_flow(tpl.title.format(tool=tool_name))}",
        f"category: {category or tpl.category}",
        f"severity: {severity or tpl.severity}",
        f"tags: {_flow([fault, tool_name])}",
        "description: >",
        *_wrap(_why(tpl, retry_form)),
        f"task: {_flow(task)}",
    ]
    if tool_name in SAMPLE_WORLD:
        lines.append("world:  # the state behind the tools at the start: collection -> records")
        lines += [f"  {name}: {_flow(records)}" for name, records in SAMPLE_WORLD[tool_name].items()]
    lines.append("tools:")
    if fault == "stale":
        lines.append(f"  {PAIRS[tool_name]}: {{}}  # the write the read lags behind")
    lines.append(f"  {tool_name}:  # from the catalogue: `toolchaos list tools`")
    lines += _api_lines(idempotency, lossy)
    faults = _with_form(tpl.faults, retry_form)
    if isinstance(faults, list):
        lines.append("    faults:  # rules, first match wins: call / calls / match / probability")
        lines += [f"      - {_flow(rule)}" for rule in faults]
    else:
        lines.append(f"    faults: {_flow(faults)}  # every call")
    if tpl.default is not None:
        lines.append(f"    default: {_flow(tpl.default)}  # when no rule matches")
    if lookup:
        lines.append(f"  {LOOKUPS[tool_name]}: {{}}  # finds what {tool_name} wrote, also after a lost response")
    lines.append("policy:  # the model double: `toolchaos list policies`")
    if tpl.policy == "rewrite":
        write, again = PAIRS[tool_name], REWRITES[PAIRS[tool_name]]
        lines.append("  scripted:  # write, read (stale), write the same again, answer")
        lines += [f"    - {{call: {write}, args: {_flow(again)}}}", f"    - {{call: {tool_name}, args: {_flow(args)}}}",
                  f"    - {{call: {write}, args: {_flow(again)}}}", "    - {final: Done.}"]
    elif tpl.policy == "stubborn_never":
        lines.append(f"  stubborn: {{tool: {tool_name}, args: {_flow(args)}, until: never}}  # never satisfied")
    else:
        lines.append(f"  {tpl.policy}: {{tool: {tool_name}, args: {_flow(args)}}}")
    lines.append("expect:  # what must hold after the run: `toolchaos list invariants`")
    lines += [f"  - {e if isinstance(e, str) else _flow(e)}" for e in expect]
    return "\n".join(lines) + "\n"


LOOKUPS = {write: read for read, write in PAIRS.items()}


def _catalogue_tool(tool_name: str, fault: str) -> FakeTool:
    if tool_name not in catalogue.NAMES:
        raise CommandError(f"no catalogue tool {tool_name!r}{did_you_mean(tool_name, catalogue.NAMES)} "
                           f"(tools: {', '.join(catalogue.NAMES)})")
    if fault not in FAULTS:
        raise CommandError(f"unknown fault kind {fault!r}{did_you_mean(fault, FAULTS)} (faults: {', '.join(FAULTS)})")
    return catalogue.get(tool_name)


def _why(tpl: Template, retry_form: str) -> str:
    if retry_form == SECONDS:
        return tpl.why
    return f"{tpl.why} The wait comes as {retry_form}, not as seconds: the runtime must read that form."


def _expectations(tool: FakeTool, fault: str, tpl: Template, name: str) -> list[Any]:
    """The template's invariants for the tool called ``name``; a side effect's count and idempotency first."""
    expect = [_fill(e, name) for e in tpl.expect]
    writer = PAIRS.get(tool.name) if fault == "stale" else name if tool.side_effect else None
    if writer is not None:
        expect = [{"max_side_effects": {"n": tpl.effects, "tool": writer}}, "idempotent", *expect]
    return expect


def python_scaffold(tool_name: str, fault: str, name: str, *, idempotency: str | None = None, lossy: bool = False,
                    retry_form: str = SECONDS) -> dict[str, str]:
    """File name -> text: a fake tool of your own, ``name``, shaped like a catalogue tool, and its chaos test.

    The same template as ``scaffold`` (schedule, model behaviour, invariants), written in Python.
    """
    if not name.isidentifier() or keyword.iskeyword(name):
        raise CommandError(f"--python-tool {name!r}: the tool's name is a Python name too (letters, digits and '_', "
                           "not starting with a digit), e.g. refund_order")
    tool = _catalogue_tool(tool_name, fault)
    _check_options(tool, fault, idempotency, lossy, False, retry_form)
    if fault == "stale":
        raise CommandError("a stale read needs the catalogue write it lags behind: scaffold it as a scenario file "
                           "(leave out --python-tool)")
    tpl = _template(fault, tool.side_effect)
    flags, api = _api_settings(idempotency, lossy)
    flags += [f"--retry-form {retry_form}"] * (retry_form != SECONDS)
    own = tool.schedule.default.to_data()  # the catalogue tool's own default answer (list_records pages)
    return _new_python.render(_new_python.Sketch(
        command=" ".join(["toolchaos new", tool_name, fault, *flags, "--python-tool", name]),
        name=name, shape=tool, fault=fault, title=tpl.title.format(tool=name), why=_why(tpl, retry_form),
        faults=_with_form(tpl.faults, retry_form), default=tpl.default if tpl.default is not None or own == "ok" else own,
        policy=tpl.policy, args=_sample_args(tool), expect=_expectations(tool, fault, tpl, name),
        task=SAMPLE_TASKS.get(tool_name, f"Use {name} to finish the task."), world=SAMPLE_WORLD.get(tool_name), api=api))


def _api_settings(idempotency: str | None, lossy: bool) -> tuple[list[str], tuple[tuple[str, Any], ...]]:
    """The command's flags for how the API treats keys, and the ``fake_tool`` arguments they stand for."""
    flags: list[str] = []
    api: tuple[tuple[str, Any], ...] = ()
    if idempotency is not None:
        flags, api = [f"--idempotency {idempotency}"], (("idempotency", idempotency),)
    if lossy:
        flags, api = [*flags, "--lossy"], (*api, ("honoured_after_applied", False))
    return flags, api


def _check_options(tool: Any, fault: str, idempotency: str | None, lossy: bool, lookup: bool, form: str) -> None:
    if fault == "stale" and tool.name not in PAIRS:
        raise CommandError(f"a stale read needs a tool that reads the world: {', '.join(PAIRS)}")
    if (idempotency is not None or lossy) and tool.idempotency_key is None:
        raise CommandError(f"{tool.name} takes no idempotency key: --idempotency and --lossy are for "
                           f"{', '.join(n for n in catalogue.NAMES if catalogue.get(n).idempotency_key)}")
    if lookup and tool.name not in LOOKUPS:
        raise CommandError(f"no catalogue read finds what {tool.name} writes; --lookup is for {', '.join(LOOKUPS)}")
    if form != SECONDS and fault != "transient":
        raise CommandError(f"--retry-form writes the wait of a 429: it goes with the fault transient, not {fault}")
    if form not in FORMS:
        raise CommandError(f"--retry-form {form!r}: one of {', '.join(FORMS)}")


def _api_lines(idempotency: str | None, lossy: bool) -> list[str]:
    out = []
    if idempotency is not None:
        out.append(f"    idempotency: {idempotency}  # honoured: a known key gets the original result; ignored: none")
    if lossy:
        out.append("    honoured_after_applied: false  # a key is stored only once a response was delivered")
    return out


def _with_form(faults: Any, form: str) -> Any:
    """The template's schedule with its 429 writing the wait in ``form``."""
    if form == SECONDS:
        return faults
    return [{**r, "outcome": {"transient": {**r["outcome"]["transient"], "retry_form": form}}} for r in faults]


def validate(text: str, path: Path) -> None:
    """Load the scaffold the way a test run will."""
    try:
        _lazy.load_text(text, path)
    except ScenarioError as exc:
        raise CommandError(f"the scaffold does not load (please report this): {exc}", code=3) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", metavar="TOOL", help="a catalogue tool (toolchaos list tools)")
    parser.add_argument("fault", metavar="FAULT", help="a fault kind (toolchaos list faults)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="file to write (default: TOOL-FAULT.chaos.yaml here); a directory gets that name in it")
    parser.add_argument("--id", dest="scenario_id", metavar="ID", help="scenario id (default: TOOL-FAULT)")
    parser.add_argument("--severity", choices=("critical", "major", "minor"), help="override the template's")
    parser.add_argument("--category", choices=("loops", "error_classes", "side_effects", "budgets", "legit", "resume",
                                               "custom"), help="override the template's")
    parser.add_argument("--idempotency", choices=("honoured", "ignored"),
                        help="how the tool's API treats idempotency keys (default: honoured, as Stripe)")
    parser.add_argument("--lossy", action="store_true",
                        help="the API stores a key only once a response was delivered (honoured_after_applied: false)")
    parser.add_argument("--lookup", action="store_true",
                        help="add the catalogue read that finds the tool's writes (get_charge for charge_payment, ...)")
    parser.add_argument("--retry-form", default=SECONDS, metavar="FORM",
                        help=f"how a 429 writes its wait (with the fault transient): {', '.join(FORMS)}")
    parser.add_argument("--python-tool", metavar="NAME",
                        help="instead of a scenario: a fake tool of your own, NAME, shaped like TOOL, in Python "
                             "(fake_NAME.py, defined with fake_tool) and a chaos test of it (test_NAME_FAULT.py); "
                             "-o is then a directory")
    parser.add_argument("--stdout", action="store_true", help="print the scenario instead of writing a file")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")


def run(args: argparse.Namespace) -> int:
    if args.python_tool is not None:
        return _run_python(args)
    text = scaffold(args.tool, args.fault, scenario_id=args.scenario_id, severity=args.severity,
                    category=args.category, idempotency=args.idempotency, lossy=args.lossy, lookup=args.lookup,
                    retry_form=args.retry_form)
    default_name = f"{args.scenario_id or (args.tool + '-' + args.fault).replace('_', '-')}.chaos.yaml"
    path = Path(args.output) if args.output else Path(default_name)
    if args.output and (path.is_dir() or args.output.endswith(("/", "\\"))):
        path = path / default_name
    validate(text, path)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if not path.name.endswith(".chaos.yaml"):
        raise CommandError(f"{path}: scenario files are named *.chaos.yaml (that is how pytest --chaos finds them)")
    if path.exists() and not args.force:
        raise CommandError(f"{path} exists (pass --force to overwrite it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    print(f"try it:  toolchaos run {path} --agent builtin:guarded")
    return 0


def _run_python(args: argparse.Namespace) -> int:
    """``--python-tool``: the tool's module and its test, written into a directory (or printed)."""
    given = [flag for flag, value in (("--id", args.scenario_id), ("--severity", args.severity),
                                      ("--category", args.category), ("--lookup", args.lookup)) if value]
    if given:
        raise CommandError(f"{', '.join(given)}: for a scenario file; --python-tool writes a Python test, which has "
                           "no such field (leave out one or the other)")
    files = python_scaffold(args.tool, args.fault, args.python_tool, idempotency=args.idempotency, lossy=args.lossy,
                            retry_form=args.retry_form)
    for name, text in files.items():
        validate_python(text, name)
    if args.stdout:
        sys.stdout.write("\n".join(f"# ---- {name} ----\n{text}" for name, text in files.items()))
        return 0
    directory = Path(args.output or ".")
    if directory.is_file() or directory.suffix in (".py", ".yaml", ".yml"):
        raise CommandError(f"-o {args.output}: with --python-tool, -o is a directory (the tool's module and its test "
                           "are written in it)")
    paths = _write_all(directory, files, args.force)
    print(f"try it:  pytest --chaos {paths[-1]}")
    return 0


def _write_all(directory: Path, files: dict[str, str], force: bool) -> list[Path]:
    """Every file or none: one that is there already stops them all (unless ``force``)."""
    paths = [directory / name for name in files]
    existing = [str(path) for path in paths if path.exists()]
    if existing and not force:
        raise CommandError(f"already there: {', '.join(existing)} (pass --force to overwrite)")
    directory.mkdir(parents=True, exist_ok=True)
    for path, text in zip(paths, files.values()):
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return paths


def validate_python(text: str, name: str) -> None:
    """Compile the file; run the tool's module, so ``fake_tool`` checks every field of the definition."""
    try:
        code = compile(text, name, "exec")
        if name.startswith("fake_"):
            exec(code, {"__name__": name.removesuffix(".py")})
    except Exception as exc:  # the scaffold's own bug, not the user's input
        raise CommandError(f"the scaffold {name} does not load (please report this): {exc}", code=3) from None
