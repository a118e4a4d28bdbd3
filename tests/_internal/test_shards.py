"""The partition of a suite into shards (toolchaos._internal.shards): complete, disjoint, stable, balanced."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolchaos._internal.shards import (
    Shard,
    durations_digest,
    instance_key,
    partition,
    read_durations,
    store_durations,
)

ids = st.lists(st.text(min_size=1, max_size=40), max_size=60)
counts = st.integers(min_value=1, max_value=12)
seconds = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(ids, counts)
def test_every_key_is_in_exactly_one_shard(keys: list[str], n: int) -> None:
    split = partition(keys, n)
    shards = [split.keys(i) for i in range(1, n + 1)]
    assert sorted(k for part in shards for k in part) == sorted(set(keys))  # complete, and no key twice
    assert all(1 <= split.shard_of(k) <= n for k in keys)


@settings(max_examples=200, deadline=None)
@given(ids, counts)
def test_by_hash_the_shards_differ_in_size_by_one_at_most(keys: list[str], n: int) -> None:
    sizes = [len(partition(keys, n).keys(i)) for i in range(1, n + 1)]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=100, deadline=None)
@given(ids, counts)
def test_the_split_does_not_depend_on_the_order_or_repetition_of_the_keys(keys: list[str], n: int) -> None:
    assert partition(keys, n).assignment == partition([*reversed(keys), *keys], n).assignment


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=20), seconds, max_size=40), counts)
def test_by_durations_every_key_is_in_exactly_one_shard_and_the_packing_is_greedy(
        durations: dict[str, float], n: int) -> None:
    keys = sorted(durations)
    split = partition(keys, n, durations)
    assert sorted(k for i in range(1, n + 1) for k in split.keys(i)) == keys
    loads = [sum(durations[k] for k in split.keys(i)) for i in range(1, n + 1)]
    if keys:  # longest-first greedy: no shard is heavier than the lightest by more than one item of it
        heavy = max(range(n), key=lambda i: loads[i])
        smallest = min((durations[k] for k in split.keys(heavy + 1)), default=0.0)
        assert loads[heavy] - min(loads) <= smallest + 1e-6 * max(1.0, loads[heavy])


def test_by_durations_longest_first_into_the_least_loaded_ties_by_id() -> None:
    durations = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 1.0}
    split = partition(durations, 2, durations)
    # a(5)->1; b(4)->2; c(3)->2 (4<5); d(3)->1 (5<7); e(1)->1 (8=7? no: 8>7 -> 2)
    assert (split.keys(1), split.keys(2)) == (["a", "d"], ["b", "c", "e"])
    tied = partition(["y", "x"], 2, {"x": 1.0, "y": 1.0})
    assert (tied.keys(1), tied.keys(2)) == (["x"], ["y"])  # equal seconds: by id, into the lowest shard first


def test_a_key_the_durations_do_not_know_counts_as_their_mean() -> None:
    known = {"a": 10.0, "b": 2.0}  # mean 6: "new" weighs 6, so it joins b (2), not a (10)
    split = partition(["a", "b", "new"], 2, known)
    assert split.shard_of("new") == split.shard_of("b") != split.shard_of("a")
    nothing_known = partition(["x", "y", "z"], 3, {})
    assert sorted(len(nothing_known.keys(i)) for i in (1, 2, 3)) == [1, 1, 1]


def test_the_split_is_the_same_in_another_process_with_another_hash_seed() -> None:
    keys = [f"scenario-{i}[variant-{i % 7}]" for i in range(200)]
    here = {k: partition(keys, 5).shard_of(k) for k in keys}
    code = ("import json, sys; from toolchaos._internal.shards import partition; keys = json.load(sys.stdin); "
            "p = partition(keys, 5); print(json.dumps({k: p.shard_of(k) for k in keys}))")
    for seed in ("1", "2"):  # str hashes differ per seed: a partition that used hash() would move
        out = subprocess.run([sys.executable, "-c", code], input=json.dumps(keys), capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, check=True, timeout=60)
        assert json.loads(out.stdout) == here


def test_the_split_is_pinned_by_sha256() -> None:
    """A change of the hash or the dealing would re-split every user's suite: caught here."""
    keys = ["loop-exact-repeat-timeout", "budget-steps", "side-lost-payment-response", "legit-transient-503"]
    by_digest = sorted(keys, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
    split = partition(keys, 2)
    assert (split.keys(1), split.keys(2)) == (sorted(by_digest[0::2]), sorted(by_digest[1::2]))  # dealt in turn
    assert (split.keys(1), split.keys(2)) == (["loop-exact-repeat-timeout", "side-lost-payment-response"],
                                              ["budget-steps", "legit-transient-503"])


def test_the_digest_names_the_partition() -> None:
    base = partition(["a", "b", "c"], 2)
    assert base.digest == partition(["c", "b", "a", "a"], 2).digest
    assert base.digest != partition(["a", "b"], 2).digest  # another selection
    assert base.digest != partition(["a", "b", "c"], 3).digest  # another count
    by_time = partition(["a", "b", "c"], 2, {"a": 1.0})
    assert by_time.digest != base.digest and by_time.digest != partition(["a", "b", "c"], 2, {"a": 2.0}).digest
    assert base.record(2) == {"index": 2, "total": 2, "by": "hash", "durations": None, "instances": 3,
                              "partition": base.digest}
    assert by_time.record(1)["durations"] == durations_digest({"a": 1.0})


def test_a_trial_extends_the_key_and_trial_zero_is_the_scenario_itself() -> None:
    assert instance_key("loop-x") == instance_key("loop-x", 0) == "loop-x"
    assert instance_key("loop-x", 3) == "loop-x#trial=3"
    keys = [instance_key("s", t) for t in range(4)]
    split = partition(keys, 2)
    assert sorted(split.keys(1) + split.keys(2)) == sorted(keys)


@pytest.mark.parametrize(("text", "index", "total"), [("1/3", 1, 3), (" 3 / 3 ", 3, 3), ("1/1", 1, 1)])
def test_a_shard_is_read_as_i_of_n(text: str, index: int, total: int) -> None:
    assert Shard.parse(text, "--shard") == Shard(index, total)
    assert str(Shard(index, total)) == f"{index}/{total}"


@pytest.mark.parametrize(("text", "said"), [
    ("0/3", "shard 0/3 does not exist: I runs from 1 to N"),
    ("4/3", "shard 4/3 does not exist"),
    ("1/0", "shard 1/0 does not exist"),
    ("2", "expected a shard as I/N (e.g. 1/3: the first of three), got '2'"),
    ("a/b", "expected a shard as I/N"),
    ("-1/3", "expected a shard as I/N"),
])
def test_a_bad_shard_is_refused_naming_the_option(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=r"^--shard: ") as err:
        Shard.parse(text, "--shard")
    assert said in str(err.value)


def test_a_durations_file_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "durations.json"
    good.write_text('{"a": 1, "b": 0.25}')
    assert read_durations(good, "--x") == {"a": 1.0, "b": 0.25}
    cases = {"[1, 2]": "must hold a JSON object of scenario id -> seconds", '{"a": -1}': "the seconds of 'a' must be",
             '{"a": "1"}': "the seconds of 'a' must be", '{"a": true}': "the seconds of 'a' must be",
             "{not json": "is not a JSON durations file"}
    for text, said in cases.items():
        good.write_text(text)
        with pytest.raises(ValueError, match=r"^--x: ") as err:
            read_durations(good, "--x")
        assert said in str(err.value), text
    with pytest.raises(ValueError, match="cannot read the durations file"):
        read_durations(tmp_path / "missing.json", "--x")


def test_stored_durations_keep_the_ids_they_did_not_measure(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    store_durations(path, {"b": 2.00049, "a": 1.0}, "--x")
    assert path.read_text() == '{\n  "a": 1.0,\n  "b": 2.0\n}\n'  # sorted, to the millisecond: a file to commit
    whole = store_durations(path, {"c": 3.0, "a": 1.5}, "--x")
    assert whole == {"a": 1.5, "b": 2.0, "c": 3.0} == read_durations(path, "--x")
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(ValueError, match="cannot write the durations file"):
        store_durations(link, {"a": 1.0}, "--x")
    assert not (tmp_path / "elsewhere.json").exists()
