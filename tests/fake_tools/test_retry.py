"""Retry-After in every form: written by a server on the virtual clock, read back by a client."""

from __future__ import annotations

import datetime as dt

import pytest
from toolchaos._plumbing import clock
from toolchaos.fake_tools._retry import EPOCH, FORMS, duration, headers, wait


@pytest.mark.parametrize("form", FORMS)
def test_every_form_reads_back_as_the_wait_it_was_written_with(form):
    sent = dict(headers(form, 20.0, now=30.0))
    assert len(sent) == 1 and wait(sent, now=30.0) == 20.0
    assert wait(sent, now=45.0) == (5.0 if form in ("http_date",) or form.startswith("anthropic") else 20.0)


def test_the_forms_as_real_apis_write_them():
    assert headers("seconds", 2.5, 0) == (("retry-after", "3"),)
    assert headers("http_date", 20, 30) == (("retry-after", "Thu, 01 Jan 2026 00:00:50 GMT"),)
    assert headers("ms", 1.5, 0) == (("retry-after-ms", "1500"),)
    assert headers("x-ratelimit-reset-tokens", 360, 0) == (("x-ratelimit-reset-tokens", "6m0s"),)
    assert headers("anthropic-ratelimit-requests-reset", 20, 30.5) == (
        ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:51Z"),)  # rounded up: never early
    with pytest.raises(ValueError, match="unknown Retry-After form"):
        headers("retry-at", 1, 0)


@pytest.mark.parametrize(("seconds", "text"), [(360, "6m0s"), (3723.5, "1h2m3.5s"), (20, "20s"), (1.25, "1.25s"),
                                                (0.25, "250ms")])
def test_go_durations_both_ways(seconds, text):
    assert duration(seconds) == text
    assert wait({"x-ratelimit-reset-requests": text}, 0) == pytest.approx(seconds)


def test_a_client_takes_the_longest_wait_and_ignores_what_it_cannot_read():
    assert wait({"Retry-After": "5", "retry-after-ms": "7000", "x-request-id": "r1"}, 0) == 7.0
    assert wait({"retry-after": "soon", "x-ratelimit-reset-tokens": "6 minutes",
                 "anthropic-ratelimit-tokens-reset": "tomorrow", "retry-after-ms": "-1"}, 0) is None
    assert wait({"retry-after": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=60) == 0.0  # a date in the past: go now
    assert wait({}, 0) is None


def test_the_epoch_is_the_virtual_clocks():
    assert EPOCH == clock.EPOCH.replace(tzinfo=dt.UTC)
