"""A command's part of a suite split across CI jobs: ``--shard I/N``, ``--shard-durations FILE``,
``--store-durations FILE`` (the partition itself: ``toolchaos._internal.shards``).

The same partition as ``pytest --chaos-shard``: the scenarios' ids are the keys, so a shard of
``toolchaos certify`` and a shard of ``pytest --chaos-certify`` hold the same scenarios.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolchaos._internal.shards import Shard, instance_key, partition, read_durations, store_durations
from toolchaos.errors import CommandError


def add_shard_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shard", metavar="I/N",
                        help="run only shard I of N (1-based) of the selected scenarios, split the same way in every "
                             "job (by a stable hash of the scenario id, or by --shard-durations); merge the shards' "
                             "reports with `toolchaos report merge` (docs/ci-shards.md)")
    parser.add_argument("--shard-durations", metavar="FILE",
                        help="with --shard: split by the seconds each scenario takes, from FILE (JSON: scenario id "
                             "-> seconds; --store-durations writes it), longest first into the least loaded shard")
    parser.add_argument("--store-durations", metavar="FILE",
                        help="write the real seconds each scenario took into FILE (JSON, its other ids kept), "
                             "for --shard-durations")


def select_shard(scenarios: Sequence[Any], args: argparse.Namespace) -> tuple[list[Any], dict[str, Any] | None]:
    """The scenarios of ``--shard I/N`` and the report's record of it (None without ``--shard``)."""
    if args.shard is None:
        if args.shard_durations:
            raise CommandError("--shard-durations goes with --shard I/N")
        return list(scenarios), None
    try:
        shard = Shard.parse(args.shard, "--shard")
        durations = read_durations(args.shard_durations, "--shard-durations") if args.shard_durations else None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    split = partition((instance_key(s.name) for s in scenarios), shard.total, durations)
    mine = [s for s in scenarios if split.shard_of(instance_key(s.name)) == shard.index]
    print(f"shard {shard}: {len(mine)} of {len(scenarios)} scenarios (by {split.by})", file=sys.stderr)
    return mine, split.record(shard.index)


def run_timed(scenarios: Sequence[Any], run: Callable[[list[Any]], list[Any]],
              store: str | None) -> list[Any]:
    """``run(scenarios)``; with ``--store-durations FILE``, one at a time, each one's real seconds stored."""
    if store is None:
        return run(list(scenarios))
    try:
        if Path(store).exists():  # a bad file is said before the runs, not after
            read_durations(store, "--store-durations")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    verdicts: list[Any] = []
    seconds: dict[str, float] = {}
    for sc in scenarios:
        t0 = time.perf_counter()  # outside a run the harness's clock answers the real time
        verdicts += run([sc])
        seconds[instance_key(sc.name)] = seconds.get(instance_key(sc.name), 0.0) + time.perf_counter() - t0
    try:
        store_durations(store, seconds, "--store-durations")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    return verdicts
