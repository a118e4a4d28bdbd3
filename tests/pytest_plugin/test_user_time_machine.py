"""A user's own time-machine under the plugin: outside a run exactly as without toolchaos, inside a run virtual time wins.

time-machine patches the C functions (``time.time``, ``datetime.now``, ...) in place; the harness's
freezegun replaces module attributes with Python functions. The user tests below run in the
machine zone Asia/Kolkata (so a clock answering in UTC between runs shows), with and without
``--chaos``, and with time-machine's pytest plugin disabled (imported only by the test module).
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = '''
import datetime
import time

import time_machine

import toolchaos
from toolchaos.fake_tools import catalogue
from toolchaos import policies

FROZEN = 1580644800.0  # 2020-02-02 12:00 UTC
DEST = datetime.datetime(2020, 2, 2, 12, 0, tzinfo=datetime.timezone.utc)
TOOLS = lambda: [catalogue.get("fetch_invoice", None)]


def run_once(seen):
    def agent(task, model, tools):
        seen["start"] = time.time()
        seen["mono0"] = time.monotonic()
        time.sleep(30)
        seen["after"] = time.time()
        seen["mono1"] = time.monotonic()
        seen["now"] = datetime.datetime.now()
        seen["gm"] = time.gmtime()[:6]
        seen["local"] = time.localtime()[:6]
        seen["strf"] = time.strftime("%Y-%m-%d %H:%M:%S")
    toolchaos.run(agent, task="t", tools=TOOLS(), policy=policies.stubborn("fetch_invoice", {"invoice_id": "i"}))


def check_virtual(seen):
    assert seen["after"] - seen["start"] == 30
    assert seen["mono1"] - seen["mono0"] == 30
    assert seen["now"].year == 2026
    assert seen["gm"][0] == 2026 and seen["local"][0] == 2026 and seen["strf"].startswith("2026-")


def check_traveled():
    assert time.time() == FROZEN
    assert time.gmtime()[:6] == (2020, 2, 2, 12, 0, 0)
    assert datetime.datetime.now(datetime.timezone.utc) == DEST
    assert datetime.datetime.utcnow() == DEST.replace(tzinfo=None)


def test_travel_tick_false():
    with time_machine.travel(DEST, tick=False):
        check_traveled()


def test_travel_ticking():
    with time_machine.travel(DEST):
        assert FROZEN <= time.time() < FROZEN + 5


def test_travel_before_and_after_a_run():
    with time_machine.travel(DEST, tick=False):
        check_traveled()
    seen = {}
    run_once(seen)
    check_virtual(seen)
    with time_machine.travel(DEST, tick=False):
        check_traveled()
    with time_machine.travel(DEST):
        assert FROZEN <= time.time() < FROZEN + 5


def test_run_inside_travel():
    seen = {}
    with time_machine.travel(DEST, tick=False) as traveller:
        run_once(seen)
        check_traveled()
        traveller.shift(60)
        assert time.time() == FROZEN + 60
    check_virtual(seen)


def test_run_inside_ticking_travel():
    seen = {}
    with time_machine.travel(DEST):
        run_once(seen)
        assert FROZEN <= time.time() < FROZEN + 5
    check_virtual(seen)


def test_fixture(time_machine):
    time_machine.move_to(DEST, tick=False)
    check_traveled()
    seen = {}
    run_once(seen)
    check_virtual(seen)
    check_traveled()


def test_real_again():
    assert time.time() > FROZEN + 1.5e8


def test_local_zone_outside_runs():
    # Under TZ=Asia/Kolkata (the pytester run sets it): the machine's zone, as without toolchaos.
    seen = {}
    run_once(seen)
    offset = datetime.datetime.now() - datetime.datetime.utcnow()
    assert abs(offset.total_seconds() - 19800) < 5
    assert datetime.datetime(2020, 2, 2, 17, 30).timestamp() == FROZEN
    assert datetime.datetime.fromtimestamp(FROZEN) == datetime.datetime(2020, 2, 2, 17, 30)
    assert time.localtime(FROZEN)[3:5] == (17, 30)
    with time_machine.travel(DEST, tick=False):
        # a UTC destination: time-machine switches the zone to UTC for the travel
        assert datetime.datetime.now() == datetime.datetime(2020, 2, 2, 12, 0)
        assert time.strftime("%H:%M") == "12:00"
    with time_machine.travel(datetime.datetime(2020, 2, 2, 12, 0), tick=False):  # naive: UTC, zone kept
        assert datetime.datetime.now() == datetime.datetime(2020, 2, 2, 17, 30)
        assert time.strftime("%H:%M") == time.strftime("%H:%M", time.localtime())
    assert abs((datetime.datetime.now() - datetime.datetime.utcnow()).total_seconds() - 19800) < 5
'''


@pytest.mark.parametrize("args", [[], ["--chaos"], ["--chaos", "-p", "no:time_machine", "-k", "not fixture"]],
                         ids=["without --chaos", "with --chaos", "imported after the harness's clock"])
def test_user_time_machine_tests_pass_with_and_without_chaos(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                            args: list[str]) -> None:
    pytest.importorskip("time_machine")
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    pytester.makepyfile(test_user_time=USER_TESTS)
    res = pytester.runpytest_subprocess("-p", "no:randomly", *args)
    res.assert_outcomes(passed=7 if "-k" in args else 8, deselected=1 if "-k" in args else 0)
