"""SQLite persistence: tools.store and the effect ledger survive a process restart, with exact counts."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest
from toolchaos import SqliteLedger, SqliteStore, invariants, policies, run
from toolchaos.fake_tools import EffectLedger, catalogue, faults


def pay_policy(*keys):
    return policies.scripted([{"call": "charge_payment", "args": {"customer_id": "c", "amount": 5,
                                                                  "idempotency_key": k}} for k in keys]
                             + [{"final": "paid"}])


def test_the_store_is_a_mapping_of_json_values(tmp_path):
    s = SqliteStore(tmp_path / "s.db")
    s["a"] = {"x": [1, 2, (3, 4)]}
    s["b"] = "text"
    assert s["a"] == {"x": [1, 2, [3, 4]]} and s.get("missing") is None and len(s) == 2
    assert sorted(s) == ["a", "b"] and "a" in s and "zz" not in s
    del s["b"]
    with pytest.raises(KeyError):
        s["b"]
    with pytest.raises(TypeError, match="JSON"):
        s["bad"] = object()
    s.close()
    with SqliteStore(tmp_path / "s.db") as again:
        assert dict(again) == {"a": {"x": [1, 2, [3, 4]]}}


def test_containers_read_from_the_store_write_through(tmp_path):
    s = SqliteStore(tmp_path / "s.db")
    ops = s.setdefault("ops", {})
    ops["k1"] = "applied"  # the way agents keep idempotency records
    ops.setdefault("k2", {"tries": []})["tries"].append(1)
    s.setdefault("log", []).extend(["a", "b"])
    s["log"].pop(0)
    s["n"] = {"v": 1}
    s["n"].update(v=2, w=3)
    s["n"] |= {"z": 0}
    s.close()
    again = SqliteStore(tmp_path / "s.db")
    assert dict(again) == {"ops": {"k1": "applied", "k2": {"tries": [1]}}, "log": ["b"],
                           "n": {"v": 2, "w": 3, "z": 0}}
    assert again["ops"] is again["ops"]  # one object per key, like a dict


def test_namespaces_share_a_file_without_mixing(tmp_path):
    a, b = SqliteStore(tmp_path / "s.db", namespace="a"), SqliteStore(tmp_path / "s.db", namespace="b")
    a["k"], b["k"] = 1, 2
    assert (a["k"], b["k"], len(a), len(b)) == (1, 2, 1, 1)


def test_a_guarded_agent_resumed_after_a_restart_does_not_repeat_the_payment(tmp_path):
    path = tmp_path / "state.db"
    pay = [catalogue.get("charge_payment")]
    with SqliteStore(path) as s:
        first = run("builtin:guarded", task="pay", tools=pay, policy=pay_policy("k1"), store=s)
    assert first.ledger.applied() == 1
    with SqliteStore(path) as s:  # a new "process": nothing in memory survives
        second = run("builtin:guarded", task="pay", tools=pay, policy=pay_policy("k1"), store=s)
        assert isinstance(second.ledger, SqliteLedger) and second.ledger.opened == 2
        assert second.ledger.applied() == 1 and not second.ledger.duplicates()
        assert [e["kind"] for e in second.trace] == ["model", "refusal", "model", "end"]
        second.check(invariants.idempotent())


def test_a_naive_agent_resumed_after_a_restart_is_caught_duplicating(tmp_path):
    path = tmp_path / "state.db"
    pay = [catalogue.get("charge_payment")]
    for _ in range(3):
        with SqliteStore(path) as s:
            r = run("builtin:naive", task="pay", tools=pay, policy=pay_policy("k1"), store=s)
    assert r.ledger.applied_for("charge_payment", "k1") == 3
    assert r.trace.tool_events[0]["effects"] == 3  # the count continues across processes
    assert r.violations(invariants.idempotent())


def test_run_accepts_an_existing_ledger_and_keeps_counting():
    ledger = EffectLedger()
    pay = [catalogue.get("charge_payment")]
    run("builtin:naive", task="pay", tools=pay, policy=pay_policy("a", "b"), ledger=ledger)
    r = run("builtin:naive", task="pay", tools=pay, policy=pay_policy("c"), ledger=ledger)
    assert r.ledger is ledger and ledger.applied() == 3 and r.trace.tool_events[0]["effects"] == 3
    assert EffectLedger(ledger.effects).applied() == 3  # a ledger rebuilt from a history


RESTART = textwrap.dedent("""
    import json, os, sys
    from toolchaos.fake_tools import fake_tool
    from toolchaos import SqliteStore, policies, run

    path, phase = sys.argv[1], sys.argv[2]

    def payload(args, rng):
        if phase == "crash" and args["key"] == "k3":
            os._exit(17)  # a real process death in the middle of the third payment: no cleanup, no atexit
        return {"charged": args["key"]}

    charge = fake_tool("charge", parameters={"type": "object", "properties": {"key": {"type": "string"}},
                                             "required": ["key"]},
                       side_effect=True, idempotency_key="key", payload=payload)
    steps = [{"call": "charge", "args": {"key": k}} for k in ("k1", "k2", "k3")] + [{"final": "paid"}]
    with SqliteStore(path) as store:
        r = run("builtin:guarded", task="pay", tools=[charge], policy=policies.scripted(steps), store=store)
        print(json.dumps({"state": r.terminal_state, "keys": r.ledger.keys("charge"),
                          "effects": [[e.key, e.status] for e in r.ledger.effects], "opened": r.ledger.opened,
                          "ops": dict(store["guarded.ops"])}))
""")


def test_a_real_process_death_loses_no_effect(tmp_path):
    path = str(tmp_path / "state.db")
    script = tmp_path / "restart.py"
    script.write_text(RESTART)
    died = subprocess.run([sys.executable, str(script), path, "crash"], capture_output=True, text=True, timeout=120)
    assert died.returncode == 17, died.stderr
    resumed = subprocess.run([sys.executable, str(script), path, "resume"], capture_output=True, text=True,
                             timeout=120, check=True)
    out = json.loads(resumed.stdout)
    # k1 and k2 were applied (and on disk) before the death; k3 died before its effect
    assert out["effects"] == [["k1", "ok"], ["k2", "ok"], ["k3", "ok"]] and out["opened"] == 2
    assert out["keys"] == {"k1": 1, "k2": 1, "k3": 1} and out["state"] == "COMPLETED"  # nothing repeated


def test_the_sqlite_ledger_is_exact_under_threads(tmp_path):
    ledger = SqliteLedger(tmp_path / "l.db")
    got: list[int] = []

    def worker(w):
        for i in range(200):
            got.append(ledger.record("t", f"{w}-{i}", True, "ok", i))

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(got) == list(range(1, 801))
    ledger.close()
    again = SqliteLedger(tmp_path / "l.db")
    assert again.applied("t") == 800 and again.record("t", "new", True, "ok", 0) == 801


def test_a_store_survives_a_crashed_run(tmp_path):
    path = tmp_path / "state.db"
    tool = [catalogue.get("charge_payment", faults=[{"call": 2, "outcome": faults.fatal("permission_denied")}])]

    def crashes(task, model, tools):
        tools.store.setdefault("ops", {})["k1"] = "started"
        tools.call("charge_payment", {"customer_id": "c", "amount": 1, "idempotency_key": "k1"})
        tools.store["ops"]["k1"] = "applied"
        raise SystemExit(1)

    with SqliteStore(path) as s:
        r = run(crashes, task="t", tools=tool, policy=policies.scripted([]), store=s)
    assert r.terminal_state == "CRASHED"
    with SqliteStore(path) as s:
        assert s["ops"] == {"k1": "applied"} and s.ledger.applied() == 1


def test_the_sqlite_ledger_keeps_replays_and_reads_a_file_written_before_them(tmp_path):
    ledger = SqliteLedger(tmp_path / "l.db")
    ledger.record("pay", "k1", True, "ok", 1)
    ledger.record("pay", "k1", False, "ok", 2, replayed=True)
    ledger.close()
    again = SqliteLedger(tmp_path / "l.db")
    assert again.replayed("pay") == 1 and again.applied("pay") == 1 and not again.duplicates()
    again.close()
    old = sqlite3.connect(tmp_path / "old.db")  # the table as it was before replays were recorded
    old.execute("CREATE TABLE effects (id INTEGER PRIMARY KEY AUTOINCREMENT, ledger TEXT NOT NULL, tool TEXT NOT "
                "NULL, key TEXT NOT NULL, applied INTEGER NOT NULL, status TEXT NOT NULL, seq INTEGER NOT NULL, "
                "opened INTEGER NOT NULL)")
    old.execute("INSERT INTO effects (ledger, tool, key, applied, status, seq, opened) "
                "VALUES ('default', 'pay', 'k1', 1, 'ok', 1, 1)")
    old.commit()
    old.close()
    reopened = SqliteLedger(tmp_path / "old.db")
    assert reopened.applied("pay") == 1 and reopened.replayed() == 0
    reopened.record("pay", "k1", False, "ok", 2, replayed=True)
    assert reopened.replayed() == 1
    reopened.close()
