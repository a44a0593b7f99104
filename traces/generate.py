"""Deterministic trace generators: same arguments, same trace, byte for byte.

`steady_workload` is the benchmark's workload (`wanconform bench`): two sites, one
sender 1->2 with batch_size 100 and delta on, `keys` keys with 10-field values, mostly
delta updates, and the deliver / deliver_ack traffic that keeps one batch in flight.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import islice

from traces.config import Config, parse_config
from traces.ops import Deliver, DeliverAck, Delta, Op, Put, Tick, Value

FIELDS = tuple(f"f{i}" for i in range(10))


def _value(rng: random.Random) -> Value:
    return {
        name: (rng.randrange(1_000_000) if i % 2 == 0 else f"s{rng.randrange(1_000_000)}")
        for i, name in enumerate(FIELDS)
    }


def steady_config(batch_size: int = 100) -> Config:
    """Two sites, one sender ny 1->2 with deltas on."""
    sender = {"id": "ny", "site": 1, "remote": 2, "batch_size": batch_size, "delta": True}
    return parse_config({"sites": [1, 2], "senders": [sender]})


def steady_ops(rng: random.Random, keys: int = 10_000, batch_size: int = 100) -> Iterator[Op]:
    """The steady workload's operations, without end: client writes (first a put per
    key, then 90% deltas) with a deliver and a deliver_ack after every `batch_size` writes
    and a 1 ms tick. Every operation is enabled."""
    written: list[str] = []
    writes = 0
    while True:
        if len(written) < keys:
            key = f"k{len(written):05d}"
            written.append(key)
            yield Put(1, key, _value(rng))
        elif rng.random() < 0.9:
            key = written[rng.randrange(keys)]
            changed = rng.sample(FIELDS, rng.choice((1, 2)))
            yield Delta(1, key, {name: rng.randrange(1_000_000) for name in changed})
        else:
            yield Put(1, written[rng.randrange(keys)], _value(rng))
        writes += 1
        if writes % batch_size == 0:
            yield Deliver("ny")
            yield DeliverAck("ny")
            yield Tick(1)


def steady_workload(
    ops: int, keys: int = 10_000, seed: int = 0, batch_size: int = 100
) -> tuple[Config, list[Op]]:
    """`ops` operations of the steady workload (`steady_ops`) with seed `seed`."""
    rng = random.Random(seed)
    return steady_config(batch_size), list(islice(steady_ops(rng, keys, batch_size), ops))
