"""Generated traces: each one a pure function of (seed, trace id, profile, operations
and, when given, the configuration).

`generate_trace(seed, trace_id, profile, ops, config)` returns the configuration and a
stream of exactly `ops` operations. Its randomness comes from a `random.Random` seeded
with a hash of those arguments (never from Spark's per-partition `rand`), so the same
trace comes out whatever machine, partition or executor makes it, byte for byte.

Without a configuration a profile draws its own (below). With one (`--config`, or
`--site` files imported from Geode), the configuration is kept exactly as given (sites,
senders, batch sizes, timeouts, listeners, receivers) and the profile decides only the
operation mix: `steady` puts, deltas and their traffic; `faults`, `dlq`, `chaos` and
`multisite` their mixes below (`multisite`'s is writes and traffic with a few losses;
its shapes come from the configuration).

Profiles (what each exercises):

- `steady`: the bench workload (`traces.generate.steady_ops`): 2 sites, one delta
  sender, puts then 90% deltas, a deliver and an ack every 100 writes. Nothing skipped.
- `faults`: 2-3 sites (pair both ways, or a chain), small batches and timeouts; lost
  batches and acks (`drop`, `drop_ack`), timeouts and resends (R20), sites down and up,
  wipes (R21), `settle` (R25).
- `multisite`: 3-6 sites in a mesh, one-way ring, star or chain, and sometimes the
  unsupported diamond (R23; P4 is then reported not applicable); forwarding (R22).
- `dlq`: injected receiver failures (`fail`, R16), receiver retries including -1 (R7),
  the dead-letter listener, secure or not (R24, P7), drops without a listener (R18),
  redelivery of dead letters, all or some of them (R26).
- `chaos`: all of it: any shape, any options, every operation of SPEC §3.
- `parallel` (v2.0): 2-4 sites whose regions are partitioned with few buckets or
  Geode's 113 (R27, R28), parallel and serial senders with 1-5 dispatchers and every
  valid order policy (R29), writes from several client threads over many keys, lost
  batches and acks per dispatcher, timeouts, sites down and up, `settle` (R30, R31, R39).
- `lifecycle` (v2.0): 2-3 sites, serial or parallel senders with batch conflation and
  queue persistence each on or off, queue memory from none to the default (R35),
  alert thresholds, sometimes a manual start; `restart_sender`, `stop_sender`,
  `start_sender` (with or without clean queues), `pause_sender`, `resume_sender` among
  updates of few keys, lost batches and acks, sites down and up (R32-R38).

Except `steady`, a generator drives the impl (`impl.Engine`) alongside and reads its
observations to pick operations that are enabled (a deliver when a batch is in the
network, a delta on a live key), so that few operations are skipped (§3). The impl is
deterministic, so the trace stays a pure function of the four arguments.
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import accumulate, islice
from typing import Any

from conformance.properties.topology import topology_edges
from impl import Engine
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.errors import WanconformError
from traces.generate import Row, steady_config, steady_ops, steady_rows
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Op,
    PauseSender,
    Put,
    PutAll,
    Redeliver,
    RestartSender,
    ResumeSender,
    Scalar,
    Settle,
    SiteDown,
    SiteUp,
    StartSender,
    StopSender,
    Tick,
    Value,
)

SITE_POOL = (1, 2, 3, 9, 10, 23, 100, 255)  # string order differs from numeric (R25)
EXCEPTIONS = ("LowMemoryException", "CacheWriterException", "RegionDestroyedException")
FIELDS = ("a", "b", "c", "d")


def trace_seed(
    seed: int, trace_id: str, profile: str, ops: int, config: Config | None = None
) -> int:
    """The seed of one trace's generator: a hash of everything the trace depends on."""
    text = f"wanconform-trace:{seed}:{trace_id}:{profile}:{ops}"
    if config is not None:
        text += ":" + canonical_json(config.to_json())
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


# -- configurations ----------------------------------------------------------------------


def _sender_options(rng: random.Random, listener: str | None) -> dict[str, Any]:
    return {
        "batch_size": rng.choice((1, 2, 3, 5, 10, 50)),
        "batch_time_interval_ms": rng.choice((0, 10, 100, 1000)),
        "ack_timeout_ms": rng.choice((50, 500, 10_000)),
        "retry_interval_ms": rng.choice((0, 20, 5000)),
        "delta": rng.random() < 0.5,
        "failure_listener": listener,
        "dlq_secure": listener == "dlq" and rng.random() < 0.5,
    }


def _config(
    rng: random.Random,
    shapes: tuple[str, ...],
    listener: Callable[[random.Random], str | None],
    retries: tuple[int, ...],
) -> Config:
    shape = rng.choice(shapes)
    count = {"pair": 2, "diamond": 4}.get(shape) or rng.randint(3, 6)
    sites = rng.sample(SITE_POOL, count)
    senders = [
        {"id": f"s{site}-{remote}", "site": site, "remote": remote}
        | _sender_options(rng, listener(rng))
        for site, remote in topology_edges(shape, sites)
    ]
    receivers = [
        {
            "site": site,
            "retry_attempts": rng.choice(retries),
            "wait_time_between_retry_attempts_ms": rng.choice((0, 10, 100)),
        }
        for site in sites
    ]
    return parse_config({"sites": sites, "senders": senders, "receivers": receivers})


# -- operations: the impl alongside tells what is enabled --------------------------------


Lane = tuple[str, int]
"""A sender and one of its dispatchers (R29)."""


class _Shadow:
    """What the generator believes is enabled, read from the impl's observations. Only a
    hint: a wrong guess costs one skipped operation and corrects the belief."""

    def __init__(self, config: Config) -> None:
        self.engine = Engine(config)
        self.config = config
        self.up = set(config.sites)
        self.batch: set[Lane] = set()  # dispatchers whose batch is in the network
        self.ack: set[Lane] = set()  # dispatchers whose ack is in the network
        self.live: dict[int, set[str]] = {site: set() for site in config.sites}
        self.dead: dict[str, list[str]] = {s.id: [] for s in config.senders}  # R24 records
        self.stopped = {s.id for s in config.senders if s.manual_start}  # R37
        self.paused: set[str] = set()
        self.skipped = 0

    def apply(self, op: Op) -> None:
        observations = self.engine.apply(op)
        if observations and observations[0]["kind"] == "skipped":
            self.skipped += 1
            self._refute(op)
            return
        if isinstance(op, Deliver | Drop):
            self.batch.discard((op.sender, op.dispatcher))
            if isinstance(op, Deliver):
                self.ack.add((op.sender, op.dispatcher))
        elif isinstance(op, DeliverAck | DropAck):
            self.ack.discard((op.sender, op.dispatcher))
        elif isinstance(op, SiteDown):
            self.up.discard(op.site)
        elif isinstance(op, SiteUp):
            self.up.add(op.site)
            if op.wipe:
                self.live[op.site].clear()
                for sender in self.config.senders_at(op.site):  # as configured (R21)
                    self.paused.discard(sender.id)
                    if sender.manual_start:
                        self.stopped.add(sender.id)
                    else:
                        self.stopped.discard(sender.id)
        elif isinstance(op, Settle):
            self.batch.clear()
            self.ack.clear()
        for obs in observations:
            kind = obs["kind"]
            if kind == "sent":
                self.batch.add((obs["sender"], obs["dispatcher"]))
            elif kind == "enqueued":
                keys = self.live[obs["site"]]
                if obs["op"] == "destroy":
                    keys.discard(obs["key"])
                else:
                    keys.add(obs["key"])
            elif kind == "applied" and obs["status"] == "ok":
                self.live[obs["site"]].add(obs["key"])
            elif kind == "dlq":
                self.dead[obs["sender"]].append(obs["event"])
            elif kind == "redelivery":
                self.dead[obs["sender"]].remove(obs["event"])
            elif kind == "lifecycle":
                sender, action = obs["sender"], obs["action"]
                if action == "stop":
                    self.stopped.add(sender)
                elif action in ("start", "restart"):
                    self.stopped.discard(sender)
                if action == "pause":
                    self.paused.add(sender)
                else:
                    self.paused.discard(sender)
                if action in ("stop", "restart"):  # the batches in flight are given up
                    self.batch = {lane for lane in self.batch if lane[0] != sender}
                    self.ack = {lane for lane in self.ack if lane[0] != sender}

    def _refute(self, op: Op) -> None:
        if isinstance(op, Deliver | Drop):
            self.batch.discard((op.sender, op.dispatcher))
        elif isinstance(op, DeliverAck | DropAck):
            self.ack.discard((op.sender, op.dispatcher))
        elif isinstance(op, Delta | Destroy):
            self.live[op.site].discard(op.key)


def _scalar(rng: random.Random) -> Scalar:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice((0, 7, -3, 42, 999, 10_000, -123_456, 2**40, -(2**63), 2**63 - 1))
    if roll < 0.85:
        return rng.choice(("", "v", "é", "line\nbreak", 'quote"d', "𝄞", "x" * 40))
    return rng.choice((True, False, None))


def _value(rng: random.Random) -> Value:
    return {name: _scalar(rng) for name in rng.sample(FIELDS, rng.randint(1, 3))}


@dataclass(frozen=True, slots=True)
class Mix:
    """The weights of each operation kind in a profile."""

    weights: dict[str, int]
    _names: tuple[str, ...] = field(init=False)
    _cumulative: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", tuple(self.weights))
        object.__setattr__(self, "_cumulative", tuple(accumulate(self.weights.values())))

    def draw(self, rng: random.Random) -> str:
        """`rng.choices(names, weights)[0]`, the same draw (Python 3.11's `choices`:
        one `random()` bisected into the cumulative weights), without rebuilding them."""
        total = self._cumulative[-1] + 0.0
        return self._names[bisect(self._cumulative, rng.random() * total, 0, len(self._names) - 1)]


def _driven_ops(
    rng: random.Random,
    config: Config,
    mix: Mix,
    threads: int = 1,
    key_counts: tuple[int, ...] = (4, 16, 64),
) -> Iterator[Op]:
    """Operations of `mix` that the impl alongside says are likely enabled; writes come
    from `threads` client threads (1: every write is thread 0, no draw, as in v1.2)."""
    shadow = _Shadow(config)
    keys = [f"k{i}" for i in range(rng.choice(key_counts))]
    senders = [s.id for s in config.senders]
    sites = list(config.sites)
    while True:
        op = _choose(rng, mix.draw(rng), shadow, keys, senders, sites)
        if op is None:
            continue
        if threads > 1 and isinstance(op, Put | Delta | Destroy | PutAll):
            op = replace(op, thread=rng.randrange(threads))
        shadow.apply(op)
        yield op


def _choose(
    rng: random.Random,
    kind: str,
    shadow: _Shadow,
    keys: list[str],
    senders: list[str],
    sites: list[int],
) -> Op | None:
    up = sorted(shadow.up)
    if kind == "put":
        return Put(rng.choice(up), rng.choice(keys), _value(rng)) if up else None
    if kind in ("delta", "destroy"):
        candidates = [(site, key) for site in up for key in sorted(shadow.live[site])]
        if not candidates:
            return None
        site, key = rng.choice(candidates)
        if kind == "delta":
            return Delta(site, key, _value(rng))
        return Destroy(site, key)
    if kind == "putall":
        chosen = rng.sample(keys, rng.randint(1, min(3, len(keys))))
        return PutAll(rng.choice(up), {k: _value(rng) for k in sorted(chosen)}) if up else None
    if kind == "tick":
        return Tick(rng.choice((1, 10, 100, 1000, 6000, 12_000)))
    if kind in ("deliver", "drop"):
        waiting = sorted(shadow.batch)
        if not waiting:
            return None
        lane = rng.choice(waiting)
        return Deliver(*lane) if kind == "deliver" else Drop(*lane)
    if kind in ("deliver_ack", "drop_ack"):
        waiting = sorted(shadow.ack)
        if not waiting:
            return None
        lane = rng.choice(waiting)
        return DeliverAck(*lane) if kind == "deliver_ack" else DropAck(*lane)
    if kind == "site_down":
        return SiteDown(rng.choice(up)) if len(up) > 1 else None
    if kind == "site_up":
        down = sorted(set(sites) - shadow.up)
        return SiteUp(rng.choice(down), rng.random() < 0.2) if down else None
    if kind == "fail":
        return Fail(rng.choice(sites), rng.choice(keys), rng.choice(EXCEPTIONS), rng.randint(1, 3))
    if kind == "settle":
        return Settle()
    if kind == "redeliver":  # R26: a sender holding dead letters; all, or some of them
        holding = [sender for sender in senders if shadow.dead[sender]]
        if not holding:
            return None
        sender = rng.choice(holding)
        if rng.random() < 0.5:
            return Redeliver(sender)
        records = shadow.dead[sender]
        return Redeliver(sender, tuple(rng.sample(records, rng.randint(1, len(records)))))
    if kind in _LIFECYCLE:  # R36, R37: a sender at an up site, in a state that allows it
        home = {s.id: s.site for s in shadow.config.senders}
        running = [s for s in senders if home[s] in shadow.up and s not in shadow.stopped]
        if kind == "restart_sender":
            chosen = [s for s in senders if home[s] in shadow.up]
        elif kind == "stop_sender":
            chosen = running
        elif kind == "start_sender":
            chosen = [s for s in senders if home[s] in shadow.up and s in shadow.stopped]
        elif kind == "pause_sender":
            chosen = [s for s in running if s not in shadow.paused]
        else:
            chosen = [s for s in running if s in shadow.paused]
        if not chosen:
            return None
        sender = rng.choice(chosen)
        if kind == "start_sender":
            return StartSender(sender, rng.random() < 0.25)
        return _LIFECYCLE[kind](sender)
    raise AssertionError(kind)


_LIFECYCLE: dict[str, Callable[[str], Op]] = {
    "restart_sender": RestartSender,
    "stop_sender": StopSender,
    "start_sender": StartSender,
    "pause_sender": PauseSender,
    "resume_sender": ResumeSender,
}


# -- the profiles --------------------------------------------------------------------------

_WRITES = {"put": 20, "delta": 15, "destroy": 3, "putall": 2}
_TRAFFIC = {"tick": 8, "deliver": 18, "deliver_ack": 15}
_FAULTS = {"drop": 4, "drop_ack": 4, "site_down": 2, "site_up": 2, "settle": 1}
ALL_SHAPES = ("pair", "chain", "ring", "mesh", "star", "diamond")


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    summary: str  # what it exercises (shown by `wanconform generate --help`)
    config: Callable[[random.Random], Config]
    mix: Mix | None  # None: the steady workload
    threads: int = 1  # client threads of the writes (R29's "thread" policy)
    key_counts: tuple[int, ...] = (4, 16, 64)  # how many keys a trace writes, one drawn

    def mix_on_given_config(self) -> Mix:
        """The operation mix on a configuration given by the user."""
        return self.mix or _STEADY_MIX


_STEADY_MIX = Mix({"put": 10, "delta": 30, **_TRAFFIC})
"""`steady` on a given configuration: the workload's puts and deltas, on every sender."""


def _parallel_config(rng: random.Random) -> Config:
    """R27-R29: a small topology whose sites are partitioned (each with few buckets or
    Geode's 113) and whose senders are parallel or serial, each with 1-5 dispatchers and
    a valid order policy; the other options as the `faults` profile draws them."""
    shape = rng.choice(("pair", "pair", "chain", "ring", "mesh", "star"))
    count = 2 if shape == "pair" else rng.randint(3, 4)
    sites = rng.sample(SITE_POOL, count)
    regions = {
        str(site): {"type": "partition", "total_num_buckets": rng.choice((1, 2, 3, 4, 7, 113))}
        for site in sites
    }
    senders = []
    for site, remote in topology_edges(shape, sites):
        parallel = rng.random() < 0.6
        policies = ("key", "partition") if parallel else ("key", "thread", "partition")
        senders.append(
            {"id": f"s{site}-{remote}", "site": site, "remote": remote}
            | _sender_options(rng, None)
            | {
                "parallel": parallel,
                "dispatcher_threads": rng.randint(1, 5),
                "order_policy": rng.choice(policies),
            }
        )
    return parse_config({"sites": sites, "senders": senders, "regions": regions})


def _lifecycle_config(rng: random.Random) -> Config:
    """R32-R38: 2-3 sites, sometimes partitioned with parallel senders; each sender with
    batch conflation and persistence on or off, a queue memory limit from none to the
    default (R35), an alert threshold or none, and now and then a manual start."""
    shape = rng.choice(("pair", "pair", "chain", "ring"))
    sites = rng.sample(SITE_POOL, 2 if shape == "pair" else 3)
    partitioned = rng.random() < 0.4
    regions = (
        {
            str(site): {"type": "partition", "total_num_buckets": rng.choice((2, 7, 113))}
            for site in sites
        }
        if partitioned
        else {}
    )
    senders = []
    for site, remote in topology_edges(shape, sites):
        senders.append(
            {"id": f"s{site}-{remote}", "site": site, "remote": remote}
            | _sender_options(rng, rng.choice((None, "dlq")))
            | {
                "parallel": partitioned and rng.random() < 0.6,
                "dispatcher_threads": rng.choice((1, 1, 2, 3)),
                "enable_batch_conflation": rng.random() < 0.5,
                "enable_persistence": rng.random() < 0.5,
                "maximum_queue_memory_bytes": rng.choice((0, 40, 400, 104_857_600)),
                "alert_threshold_ms": rng.choice((0, 0, 100, 1000)),
                "manual_start": rng.random() < 0.1,
            }
        )
    return parse_config({"sites": sites, "senders": senders, "regions": regions})


def _no_listener(rng: random.Random) -> str | None:
    return None


def _mostly_dlq(rng: random.Random) -> str | None:
    return "dlq" if rng.random() < 0.75 else None


def _any_listener(rng: random.Random) -> str | None:
    return rng.choice((None, "dlq"))


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "steady",
            "the bench workload: puts and deltas, one sender",
            lambda r: steady_config(),
            None,
        ),
        Profile(
            "faults",
            "lost batches and acks, timeouts, sites down and up, wipes",
            lambda r: _config(r, ("pair", "chain"), _no_listener, (0,)),
            Mix({**_WRITES, **_TRAFFIC, "tick": 12, **_FAULTS}),
        ),
        Profile(
            "multisite",
            "mesh, one-way ring, star, chain of 3-6 sites; the unsupported diamond",
            lambda r: _config(
                r,
                ("mesh", "ring", "star", "chain", "mesh", "ring", "star", "chain", "diamond"),
                _no_listener,
                (0,),
            ),
            Mix({**_WRITES, **_TRAFFIC, "drop": 1, "drop_ack": 1, "settle": 1}),
        ),
        Profile(
            "dlq",
            "injected failures, retries (including -1), dead letters, secure mode",
            lambda r: _config(r, ("pair", "chain"), _mostly_dlq, (-1, 0, 1, 2, 3)),
            Mix({**_WRITES, **_TRAFFIC, "fail": 8, "settle": 1, "redeliver": 2}),
        ),
        Profile(
            "chaos",
            "all of it: any shape, any options, every operation",
            lambda r: _config(r, ALL_SHAPES, _any_listener, (-1, 0, 1, 2)),
            Mix({**_WRITES, **_TRAFFIC, **_FAULTS, "fail": 4, "redeliver": 1}),
        ),
        Profile(
            "parallel",
            "partitioned regions (few buckets and 113), parallel and serial senders with 1-5 "
            "dispatchers and every order policy, faults per dispatcher",
            _parallel_config,
            Mix({**_WRITES, **_TRAFFIC, "tick": 12, **_FAULTS}),
            threads=4,
            key_counts=(16, 64, 256),
        ),
        Profile(
            "lifecycle",
            "batch conflation and queue persistence on and off, overflow, alerts; senders "
            "restarted, stopped, started (clean or not), paused and resumed among faults",
            _lifecycle_config,
            Mix(
                {
                    "put": 30,
                    "delta": 12,
                    "destroy": 2,
                    "putall": 2,
                    **_TRAFFIC,
                    **_FAULTS,
                    "fail": 1,
                    "redeliver": 1,
                    "restart_sender": 2,
                    "stop_sender": 2,
                    "start_sender": 3,
                    "pause_sender": 2,
                    "resume_sender": 2,
                }
            ),
            key_counts=(2, 4, 16),
        ),
    )
}


def check_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise WanconformError(f"--profile: unknown profile {name!r} (one of {', '.join(PROFILES)})")
    return PROFILES[name]


def generate_trace(
    seed: int, trace_id: str, profile: str, ops: int, config: Config | None = None
) -> tuple[Config, Iterator[Op]]:
    """The configuration and the `ops` operations of one trace (streamed); on `config`
    when given (the profile then decides only the operation mix)."""
    chosen = check_profile(profile)
    rng = random.Random(trace_seed(seed, trace_id, profile, ops, config))
    if config is not None:
        mix = chosen.mix_on_given_config()
        return config, islice(_driven_ops(rng, config, mix, chosen.threads), ops)
    config = chosen.config(rng)
    if chosen.mix is None:
        stream = steady_ops(rng, keys=_steady_keys(ops))
    else:
        stream = _driven_ops(rng, config, chosen.mix, chosen.threads, chosen.key_counts)
    return config, islice(stream, ops)


def generate_rows(
    seed: int, trace_id: str, profile: str, ops: int, config: Config | None = None
) -> tuple[Config, Iterator[Row]]:
    """`generate_trace` as `ops` table columns (op, site, sender, key, canonical JSON): the
    same operations, made faster (`steady_rows`, `op_line`)."""
    chosen = check_profile(profile)
    if chosen.mix is not None or config is not None:
        config, stream = generate_trace(seed, trace_id, profile, ops, config)
        from traces.parquet import op_columns  # pyarrow: only where rows are made

        return config, map(op_columns, stream)
    rng = random.Random(trace_seed(seed, trace_id, profile, ops))
    config = chosen.config(rng)
    return config, islice(steady_rows(rng, keys=_steady_keys(ops)), ops)


def _steady_keys(ops: int) -> int:
    return max(10, min(10_000, ops // 10))


def trace_ids(profiles: list[str], traces: int) -> list[tuple[str, str]]:
    """(trace id, profile) of a campaign's traces: round robin over the profiles."""
    return [
        (f"{profiles[i % len(profiles)]}-{i:06d}", profiles[i % len(profiles)])
        for i in range(traces)
    ]
