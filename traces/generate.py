"""Deterministic trace generators: same arguments, same trace, byte for byte.

`steady_workload` is the benchmark's workload (`wanconform bench`): two sites, one
sender 1->2 with batch_size 100 and delta on, `keys` keys with 10-field values, mostly
delta updates, and the deliver / deliver_ack traffic that keeps one batch in flight.
With `dispatchers` N > 1 the sender is parallel over a site partitioned into Geode's
113 buckets (SPEC v2.0, R27-R31), and the traffic delivers and acknowledges each
dispatcher's batch after every `parallel_period` writes: few enough that no
dispatcher's queue grows (the workload stays steady).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import islice

from traces.config import Config, parse_config
from traces.ops import Deliver, DeliverAck, Delta, Op, Put, Settle, Tick, Value

FIELDS = tuple(f"f{i}" for i in range(10))
Row = tuple[str, int | None, str | None, str | None, str]  # op, site, sender, key, JSON


def _value(rng: random.Random) -> Value:
    return {
        name: (rng.randrange(1_000_000) if i % 2 == 0 else f"s{rng.randrange(1_000_000)}")
        for i, name in enumerate(FIELDS)
    }


def steady_config(batch_size: int = 100, dispatchers: int = 1, conflation: bool = False) -> Config:
    """Two sites, one sender ny 1->2 with deltas on (and batch conflation if
    `conflation`); with several dispatchers a parallel one, site 1 partitioned into 113
    buckets."""
    sender = {"id": "ny", "site": 1, "remote": 2, "batch_size": batch_size, "delta": True}
    if conflation:
        sender["enable_batch_conflation"] = True
    if dispatchers == 1:
        return parse_config({"sites": [1, 2], "senders": [sender]})
    sender |= {"parallel": True, "dispatcher_threads": dispatchers}
    regions = {"1": {"type": "partition", "total_num_buckets": PARALLEL_BUCKETS}}
    return parse_config({"sites": [1, 2], "senders": [sender], "regions": regions})


PARALLEL_BUCKETS = 113
"""Geode's default `total-num-buckets`: the steady workload's partitioned site."""


def parallel_period(batch_size: int, dispatchers: int) -> int:
    """Writes between two rounds of traffic with several dispatchers: the busiest one
    (owning ceil(113 / N) buckets, R31) is then offered 90% of a batch per round on
    average (the keys are uniform), so that its queue stays short. With a period of N x
    batch_size instead, a dispatcher of 23 of the 113 buckets gets 101.8 events a round
    and ships 100: its queue, and every cost that follows it, grows with the trace."""
    busiest = -(-PARALLEL_BUCKETS // dispatchers)
    return batch_size * PARALLEL_BUCKETS * 9 // (10 * busiest)


def steady_ops(
    rng: random.Random, keys: int = 10_000, batch_size: int = 100, dispatchers: int = 1
) -> Iterator[Op]:
    """The steady workload's operations, without end: client writes (first a put per
    key, then 90% deltas) with a deliver and a deliver_ack after every `batch_size` writes
    and a 1 ms tick (with several dispatchers: of each dispatcher, after every
    `parallel_period` writes). Every operation is enabled with one dispatcher; with
    several, a dispatcher with no batch out skips its deliveries."""
    every = batch_size if dispatchers == 1 else parallel_period(batch_size, dispatchers)
    traffic: list[Op] = [
        op for d in range(dispatchers) for op in (Deliver("ny", d), DeliverAck("ny", d))
    ]
    traffic.append(Tick(1))
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
        if writes % every == 0:
            yield from traffic


_PUT = (
    '{"key":"%s","op":"put","site":1,"value":{'
    + ",".join(f'"{name}":%d' if i % 2 == 0 else f'"{name}":"s%d"' for i, name in enumerate(FIELDS))
    + "}}"
)
_DELTA_1 = '{"changes":{"%s":%d},"key":"%s","op":"delta","site":1}'
_DELTA_2 = '{"changes":{"%s":%d,"%s":%d},"key":"%s","op":"delta","site":1}'
_TRAFFIC: tuple[Row, ...] = (
    ("deliver", None, "ny", None, '{"op":"deliver","sender":"ny"}'),
    ("deliver_ack", None, "ny", None, '{"op":"deliver_ack","sender":"ny"}'),
    ("tick", None, None, None, '{"ms":1,"op":"tick"}'),
)


def steady_rows(rng: random.Random, keys: int = 10_000, batch_size: int = 100) -> Iterator[Row]:
    """`steady_ops` as (op, site, sender, key, canonical JSON) rows, with no Op objects: the
    same operations from the same draws of `rng` (each `randrange`, `choice` and `sample`
    is replaced by the `getrandbits` calls Python 3.11's `random` makes for it), the JSON
    written directly (keys, field names and values are plain ASCII, so the text is
    `canonical_json`'s). tests/test_profiles.py checks it against `steady_ops`."""
    getrandbits = rng.getrandbits
    uniform = rng.random
    key_bits = keys.bit_length()

    def value() -> int:  # rng.randrange(1_000_000)
        r = getrandbits(20)
        while r >= 1_000_000:
            r = getrandbits(20)
        return r

    def below(n: int, bits: int) -> int:  # rng.randrange(n), n.bit_length() == bits
        r = getrandbits(bits)
        while r >= n:
            r = getrandbits(bits)
        return r

    written: list[str] = []
    put = _PUT
    writes = 0
    while True:
        if len(written) < keys:
            key = f"k{len(written):05d}"
            written.append(key)
        elif uniform() < 0.9:
            key = written[below(keys, key_bits)]
            # rng.sample(FIELDS, rng.choice((1, 2))): the pool algorithm of 3.11's sample
            if below(2, 2) == 0:
                first = below(10, 4)
                yield ("delta", 1, None, key, _DELTA_1 % (FIELDS[first], value(), key))
            else:
                first = below(10, 4)
                second = below(9, 4)
                if second == first:
                    second = 9  # sample moved the last field into the vacancy
                a, b = value(), value()
                if first < second:
                    text = _DELTA_2 % (FIELDS[first], a, FIELDS[second], b, key)
                else:
                    text = _DELTA_2 % (FIELDS[second], b, FIELDS[first], a, key)
                yield ("delta", 1, None, key, text)
            writes += 1
            if writes % batch_size == 0:
                yield from _TRAFFIC
            continue
        else:
            key = written[below(keys, key_bits)]
        yield ("put", 1, None, key, put % (key, *[value() for _ in FIELDS]))
        writes += 1
        if writes % batch_size == 0:
            yield from _TRAFFIC


RING_SETTLE_EVERY = 100


def ring_workload(ops: int, keys: int = 10_000, seed: int = 0) -> tuple[Config, list[Op]]:
    """The properties' workload (`wanconform bench`, issue 32): three sites in a one-way
    ring (1->2->3->1, so every write is forwarded once), 10-field puts at a random site over
    `keys` keys, and a `settle` every 100 operations (where P2, P5 and P12 are checked)."""
    rng = random.Random(seed)
    senders = [
        {"id": f"to{remote}", "site": site, "remote": remote}
        for site, remote in ((1, 2), (2, 3), (3, 1))
    ]
    config = parse_config({"sites": [1, 2, 3], "senders": senders})
    out: list[Op] = []
    for index in range(1, ops + 1):
        if index % RING_SETTLE_EVERY == 0:
            out.append(Settle())
        else:
            out.append(Put(rng.choice((1, 2, 3)), f"k{rng.randrange(keys):05d}", _value(rng)))
    return config, out


def steady_workload(
    ops: int,
    keys: int = 10_000,
    seed: int = 0,
    batch_size: int = 100,
    dispatchers: int = 1,
    conflation: bool = False,
) -> tuple[Config, list[Op]]:
    """`ops` operations of the steady workload (`steady_ops`) with seed `seed` (the same
    operations whether `conflation` is on or off)."""
    rng = random.Random(seed)
    stream = steady_ops(rng, keys, batch_size, dispatchers)
    return steady_config(batch_size, dispatchers, conflation), list(islice(stream, ops))
