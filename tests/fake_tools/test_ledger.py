"""The effect ledger: exact counts, per key, under concurrency."""

from __future__ import annotations

import threading

from toolchaos.fake_tools import EffectLedger


def test_counts_applied_and_executions_separately():
    led = EffectLedger()
    led.record("pay", "k1", True, "ok", 1)
    led.record("pay", "k1", False, "failed", 2)
    led.record("pay", "k1", True, "unknown", 3)
    assert led.executions("pay") == 3 and led.applied("pay") == 2 and led.applied_for("pay", "k1") == 2
    assert led.duplicates() == [("pay", "k1", 2)]
    assert led.summary() == {"pay": {"executions": 3, "applied": 2}}


def test_an_operation_is_answered_only_when_it_applied_and_its_caller_was_told():
    led = EffectLedger()
    led.record("pay", "lost", True, "unknown", 1)  # applied, the response lost
    led.record("pay", "failed", False, "failed", 2)
    led.record("pay", "done", True, "ok", 3)
    assert [led.answered("pay", k) for k in ("lost", "failed", "done")] == [False, False, True]
    assert not led.answered("mail", "done")  # another tool's operation of the same key


def test_no_duplicates_when_each_key_applies_once():
    led = EffectLedger()
    for i in range(5):
        led.record("mail", f"k{i}", True, "ok", i)
    assert led.duplicates() == [] and led.applied() == 5


def test_exact_under_concurrent_workers():
    led = EffectLedger()

    def worker() -> None:
        for i in range(2000):
            led.record("pay", f"k{i % 7}", True, "ok", i)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert led.applied("pay") == 16000 and sum(led.keys("pay").values()) == 16000
