"""A user's own freezegun under the plugin: outside a run exactly as without toolchaos, inside a run virtual time wins."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import datetime
import time

import pytest
from freezegun import freeze_time

import toolchaos
from toolchaos.fake_tools import catalogue, faults
from toolchaos import policies

FROZEN = 1580644800.0  # 2020-02-02 12:00 UTC


def test_freeze_time_freezes_every_clock():
    with freeze_time("2020-02-02 12:00"):
        assert time.time() == FROZEN
        assert time.gmtime()[:6] == (2020, 2, 2, 12, 0, 0)
        assert time.monotonic() == FROZEN
        assert datetime.datetime.now() == datetime.datetime(2020, 2, 2, 12, 0)
        assert datetime.date.today() == datetime.date(2020, 2, 2)


def test_tz_offset():
    with freeze_time("2020-02-02 12:00", tz_offset=3):
        assert datetime.datetime.now() == datetime.datetime(2020, 2, 2, 15, 0)
        assert time.time() == FROZEN


def test_auto_tick_seconds():
    with freeze_time("2020-02-02 12:00", auto_tick_seconds=5):
        assert [time.time(), time.time()] == [FROZEN, FROZEN + 5]


def test_tick_true_moves_from_the_frozen_instant():
    with freeze_time("2020-02-02 12:00", tick=True):
        first = time.time()
        assert FROZEN <= first < FROZEN + 5
        assert datetime.datetime.now() >= datetime.datetime(2020, 2, 2, 12, 0)


def test_manual_tick():
    with freeze_time("2020-02-02 12:00") as frozen:
        frozen.tick(60)
        assert time.time() == FROZEN + 60


def test_a_run_inside_freeze_time_sees_virtual_time_then_the_freeze_again():
    seen = {}

    def agent(task, model, tools):
        seen["start"] = time.time()
        time.sleep(30)
        seen["after"] = time.time()
        seen["now"] = datetime.datetime.now()

    with freeze_time("2020-02-02 12:00"):
        toolchaos.run(agent, task="t", tools=[catalogue.get("fetch_invoice", None)],
                      policy=policies.stubborn("fetch_invoice", {"invoice_id": "i"}))
        assert time.time() == FROZEN  # the user's freeze again after the run
    assert seen["after"] - seen["start"] == 30  # virtual time: the run's clock, not the freeze
    assert seen["now"].year == 2026


def test_after_everything_time_is_real_again():
    assert time.time() > FROZEN + 1.5e8  # 2026 or later
"""


@pytest.mark.parametrize("chaos", [False, True], ids=["without --chaos", "with --chaos"])
def test_user_freezegun_tests_pass_with_and_without_chaos(pytester: pytest.Pytester, chaos: bool) -> None:
    pytester.makepyfile(test_user_time=USER_TESTS)
    args = ["-p", "no:randomly", *(["--chaos"] if chaos else [])]
    res = pytester.runpytest_subprocess(*args)
    res.assert_outcomes(passed=7)
