"""Canonical arguments: the C encoder called directly writes what json.dumps writes."""

from __future__ import annotations

import json

import pytest
from toolchaos.fake_tools._fingerprint import canonical, fingerprint


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [1.5, "é ü", None, True, {"z": 2, "y": float("inf")}]},
    "text", 3, 2.0, [], {}, {"nested": {"k": [object]}},
])
def test_canonical_is_sorted_compact_json(value):
    want = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert canonical(value) == want


def test_key_order_does_not_change_a_fingerprint():
    assert fingerprint("t", {"a": 1, "b": [2]}) == fingerprint("t", {"b": [2], "a": 1})
    assert fingerprint("t", {"a": 1}) != fingerprint("t", {"a": 2})
