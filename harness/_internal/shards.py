"""Shards: one suite split across CI jobs, computed the same way in every job.

A shard is ``i/n`` (1-based: ``1/3``, ``2/3``, ``3/3``). What is split are *instance keys*: a
scenario's id as the report names it (``loop-exact-repeat-timeout``,
``err-rate-limit-reset-forms[http-date]``, a chaos test's node id). ``instance_key(id, trial)``
appends a trial index; trial 0 is the id itself, so adding trials to a suite leaves every existing
instance where it was.

Every job must compute the same partition from nothing but what it shares with the others (the
suite, the seed, a file in the repository), so two ways, both free of process state:

- by hash (the default): the keys ordered by the sha256 of their text (never Python's ``hash()``,
  which is salted per process) and dealt round-robin, so the shards' sizes differ by at most one;
- by durations: a JSON file mapping keys to seconds (``read_durations``), the keys packed longest
  first (ties broken by key) into the shard with the least total so far (ties: the lowest index),
  greedy bin packing. A key the file does not know counts as the mean of the known durations of
  the keys being split (1 s when none is known), so a new scenario does not unbalance a shard.

``Partition.record(i)`` is what a shard's report.json says of it (``shard``): the partition's
digest is the same in every shard of one partition, so a merge can tell shards of another
selection, another suite or another durations file apart.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchaos._internal.files import open_new, read_capped

SHARD_FORM = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
DURATIONS_CAP = 16 * 1024 * 1024  # a durations file of a suite of hundreds of thousands of instances
UNKNOWN_SECONDS = 1.0  # a key's duration when the file knows none of the keys split


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``total`` (1-based)."""

    index: int
    total: int

    @classmethod
    def parse(cls, text: str, source: str) -> Shard:
        """``i/n`` with ``1 <= i <= n``, or ``ValueError`` naming ``source`` and saying the form."""
        m = SHARD_FORM.fullmatch(str(text))
        if m is None:
            raise ValueError(f"{source}: expected a shard as I/N (e.g. 1/3: the first of three), got {text!r}")
        index, total = int(m.group(1)), int(m.group(2))
        if total < 1 or not 1 <= index <= total:
            raise ValueError(f"{source}: shard {index}/{total} does not exist: I runs from 1 to N, N >= 1 "
                             f"(e.g. 1/3, 2/3, 3/3)")
        return cls(index, total)

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def instance_key(scenario_id: str, trial: int = 0) -> str:
    """The key of one instance: the scenario's id, ``#trial=K`` appended for trial K > 0."""
    return scenario_id if trial == 0 else f"{scenario_id}#trial={trial}"


def read_durations(path: str | Path, source: str) -> dict[str, float]:
    """A durations file: a JSON object of instance key -> seconds (numbers >= 0); ``ValueError`` naming
    ``source``, the file and what is wrong otherwise."""
    try:
        data = json.loads(read_capped(path, DURATIONS_CAP).decode("utf-8"))
    except OSError as exc:
        raise ValueError(f"{source}: cannot read the durations file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise ValueError(f"{source}: {path} is not a JSON durations file: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: {path} must hold a JSON object of scenario id -> seconds, "
                         f"e.g. {{\"loop-exact-repeat-timeout\": 0.8}}; got a {type(data).__name__}")
    bad = [k for k, v in data.items() if isinstance(v, bool) or not isinstance(v, (int, float))
           or not math.isfinite(v) or v < 0]
    if bad:
        raise ValueError(f"{source}: {path}: the seconds of {bad[0]!r} must be a finite number >= 0, "
                         f"got {data[bad[0]]!r}")
    return {str(k): float(v) for k, v in data.items()}


def durations_digest(durations: Mapping[str, float]) -> str:
    """The durations as the partition saw them (their canonical JSON, not the file's layout)."""
    text = json.dumps(dict(sorted(durations.items())), separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _by_hash(keys: list[str], total: int) -> dict[str, int]:
    ordered = sorted(keys, key=lambda k: (_hash(k), k))
    return {k: i % total + 1 for i, k in enumerate(ordered)}


def _by_durations(keys: list[str], total: int, durations: Mapping[str, float]) -> dict[str, int]:
    known = [durations[k] for k in keys if k in durations]
    fallback = sum(known) / len(known) if known else UNKNOWN_SECONDS
    seconds = {k: durations.get(k, fallback) for k in keys}
    least = [(0.0, i) for i in range(total)]  # (load, shard): the least loaded first, ties to the lowest shard
    out: dict[str, int] = {}
    for k in sorted(keys, key=lambda k: (-seconds[k], k)):
        load, shard = heapq.heappop(least)
        out[k] = shard + 1
        heapq.heappush(least, (load + seconds[k], shard))
    return out


@dataclass(frozen=True)
class Partition:
    """Every instance key's shard, and how they were assigned."""

    total: int
    assignment: Mapping[str, int]  # key -> shard index (1-based)
    by: str  # "hash" or "durations"
    durations: str | None = None  # durations_digest of the file, by durations

    def shard_of(self, key: str) -> int:
        return self.assignment[key]

    def keys(self, index: int) -> list[str]:
        """The keys of shard ``index``, sorted."""
        return sorted(k for k, i in self.assignment.items() if i == index)

    @property
    def digest(self) -> str:
        """The same in every shard of this partition: the method, the count, the durations and every key."""
        text = json.dumps({"by": self.by, "total": self.total, "durations": self.durations,
                           "keys": sorted(self.assignment)}, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def record(self, index: int) -> dict[str, Any]:
        """What shard ``index``'s report.json says of it (``shard``)."""
        return {"index": index, "total": self.total, "by": self.by, "durations": self.durations,
                "instances": len(self.assignment), "partition": self.digest}


def partition(keys: Iterable[str], total: int, durations: Mapping[str, float] | None = None) -> Partition:
    """Assign every key (duplicates are one key) to one of ``total`` shards: by hash, or by ``durations``."""
    if total < 1:
        raise ValueError(f"a partition needs at least one shard, got {total}")
    unique = sorted(set(keys))
    if durations is None:
        return Partition(total, _by_hash(unique, total), "hash")
    return Partition(total, _by_durations(unique, total, durations), "durations", durations_digest(durations))


def store_durations(path: str | Path, measured: Mapping[str, float], source: str) -> dict[str, float]:
    """Write ``measured`` (key -> seconds) into the durations file at ``path``, keeping the keys it
    already holds that were not measured (another shard's, a deselected scenario's); returns the
    whole. Sorted by key, to the millisecond: a file to commit, whose diffs stay small."""
    p = Path(path)
    known = read_durations(p, source) if p.exists() else {}
    known.update({k: round(float(v), 3) for k, v in measured.items()})
    whole = dict(sorted(known.items()))
    try:
        with open_new(p) as fh:  # never through a link planted where the file goes
            fh.write((json.dumps(whole, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
    except OSError as exc:
        raise ValueError(f"{source}: cannot write the durations file {path}: {exc.strerror or exc}") from None
    return whole
