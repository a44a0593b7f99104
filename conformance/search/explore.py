"""Exhaustive exploration: breadth-first search over every operation sequence to a bound.

    result = explore(config, Bounds(depth=6, keys=2, values=2))

From the initial state (SPEC §2) every operation of a finite alphabet (`alphabet`) is
tried on every state; an operation that is not enabled (§3) is no edge. States are
deduplicated by a 128-bit digest of the model's FULL state (`frozen_state`, `digest`:
everything a checkpoint holds, docs/CHECKPOINT.md), so each distinct state is expanded
once, from its first (shortest) path. On every edge P3, P4, P6-P9 and P11 are checked by
the property checker of `conformance.properties.checker`, cloned from the parent's
(`PropertyChecker.clone`); P2, P5 and P12 by `settle` from every explored state (the
`settle` edge itself when settle is in the alphabet, else a settle tried beside the
search). With `impl`, the impl replays each edge's path from its initial state and its
observations and observable state are compared with the model's (P1). The first
violation stops the search (`collect_all`: every one is kept) and its path is a shortest
counterexample: BFS finds it at the smallest depth. With `symmetry`, values (and keys,
when no putall is tried) are interchangeable and states are canonicalised by a
relabelling (`canonical_relabel`). `Expander` expands one state; `explore` runs the
levels here, and `conformance.spark.explore_spark` on Spark.

docs/EXPLORE.md gives the readings: the tick abstraction, what makes two states the
same, how properties are checked along the search, and the symmetry reduction.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from conformance.properties.checker import (
    PropertyChecker,
    Violation,
    fully_connected,
    unordered_senders,
)
from conformance.running.coverage import Coverage
from conformance.running.lockstep import (
    Raised,
    applied_or_raised,
    json_differences,
    malformed,
    observed_or_raised,
    same_state,
)
from model import enabled, initial_state, observe, step
from model.settle import due_time
from model.state import Dispatcher, GatewayEvent, Sender, Site, State
from traces import ops as vocab
from traces.canonical import canonical_json
from traces.config import INT64_MAX, Config
from traces.engine import EngineFactory
from traces.errors import WanconformError
from traces.observations import KINDS, Observation
from traces.ops import OP_NAMES, Op, op_to_json
from traces.text import plural, printable

DEFAULT_MAX_STATES = 2_000_000
MAX_KEYS = 9  # keys k1..k9 and values 1..9: all of one size (R4), as symmetry needs
MAX_VALUES = 9
MAX_ALPHABET = 100_000
"""The most operations tried on one state: putall's grow as (values + 1) ** keys (9 keys
and 9 values: a billion, which would never finish building), each one a step of the
model on every state."""
MAX_TIE_ORDERS = 120  # orders of keys of one signature tried by `canonical_relabel`
EXCEPTION = "Injected"  # the one exception name of `fail`
FIELD = "v"  # the one field of every value: {"v": 1} .. {"v": V}


@dataclass(frozen=True, slots=True)
class Bounds:
    """What is explored: depth (operations per path), keys and values of client writes,
    the operation names (default: all of SPEC §3), and the cap on distinct states."""

    depth: int
    keys: int = 1
    values: int = 1
    ops: tuple[str, ...] = OP_NAMES
    max_states: int = DEFAULT_MAX_STATES
    symmetry: bool = False
    collect_all: bool = False


def key_names(count: int) -> tuple[str, ...]:
    return tuple(f"k{i}" for i in range(1, count + 1))


def client_threads(config: Config, site: int) -> range:
    """The client threads of the writes tried at `site`: 0 only, unless a sender there
    routes by thread (R29), then 0 and 1 (two threads reach two of its dispatchers;
    more would only repeat a route)."""
    by_thread = any(
        s.order_policy == "thread" and s.dispatcher_threads > 1 and not s.parallel
        for s in config.senders_at(site)
    )
    return range(2 if by_thread else 1)


def fail_times(retry_attempts: int) -> tuple[int, ...]:
    """`fail`'s attempt counts with distinct outcomes at a receiver (R16.2): succeeds
    after retries (1, when it retries), fails this delivery exactly (1 + retry_attempts),
    fails this one and the next (2 + retry_attempts); a receiver that retries until
    success (-1) only ever retries (1)."""
    if retry_attempts == -1:
        return (1,)
    return tuple(sorted({1, 1 + retry_attempts, 2 + retry_attempts}))


def alphabet(config: Config, keys: int, values: int, names: Iterable[str]) -> tuple[Op, ...]:
    """The operations tried on every state, in a fixed order (`tick` and `redeliver`,
    which depend on the state, are added by `state_ops`). Client writes over `keys` keys
    and `values` values; putall over every subset of two keys or more with every
    assignment (a putall of one key is exactly a put: `model.client.putall`); deltas set
    the one field; `fail` with the attempt counts of `fail_times`."""
    chosen = set(names)
    ks = key_names(keys)
    vs = tuple({FIELD: i} for i in range(1, values + 1))
    out: list[Op] = []
    for site in config.sites:
        for t in client_threads(config, site):
            if "put" in chosen:
                out += [vocab.Put(site, k, v, t) for k in ks for v in vs]
            if "delta" in chosen:
                out += [vocab.Delta(site, k, v, t) for k in ks for v in vs]
            if "destroy" in chosen:
                out += [vocab.Destroy(site, k, t) for k in ks]
            if "putall" in chosen:
                putalls = (len(vs) + 1) ** len(ks) - 1 - len(ks) * len(vs)  # 2 keys or more
                if len(out) + putalls > MAX_ALPHABET:
                    raise WanconformError(
                        f"explore: putall over {plural(len(ks), 'key')} and "
                        f"{plural(len(vs), 'value')} is {putalls:,} operations to try on "
                        f"every state (at most {MAX_ALPHABET:,} in all): give fewer --keys "
                        "or --values, or leave putall out of --ops"
                    )
                for size in range(2, len(ks) + 1):
                    for subset in itertools.combinations(ks, size):
                        for assignment in itertools.product(vs, repeat=size):
                            entries = dict(zip(subset, assignment, strict=True))
                            out.append(vocab.PutAll(site, entries, t))
    for sender in config.senders:
        for dispatcher in range(sender.dispatcher_threads):  # R29: each dispatcher's messages
            for name, cls in (
                ("deliver", vocab.Deliver),
                ("deliver_ack", vocab.DeliverAck),
                ("drop", vocab.Drop),
                ("drop_ack", vocab.DropAck),
            ):
                if name in chosen:
                    out.append(cls(sender.id, dispatcher))
    for site in config.sites:
        if "site_down" in chosen:
            out.append(vocab.SiteDown(site))
        if "site_up" in chosen:
            out += [vocab.SiteUp(site, False), vocab.SiteUp(site, True)]
    if "fail" in chosen:
        for site in config.sites:
            times = fail_times(config.receiver(site).retry_attempts)
            out += [vocab.Fail(site, k, EXCEPTION, n) for k in ks for n in times]
    for sender in config.senders:  # R36, R37
        for name, made in (
            ("restart_sender", [vocab.RestartSender(sender.id)]),
            ("stop_sender", [vocab.StopSender(sender.id)]),
            ("start_sender", [vocab.StartSender(sender.id), vocab.StartSender(sender.id, True)]),
            ("pause_sender", [vocab.PauseSender(sender.id)]),
            ("resume_sender", [vocab.ResumeSender(sender.id)]),
        ):
            if name in chosen:
                out += made
    if "settle" in chosen:
        out.append(vocab.Settle())
    return tuple(out)


def enabling_groups(ops: Sequence[Op]) -> list[list[Op]]:
    """The operations grouped by what SPEC §3's 'enabled when' column reads of them
    (`traces.enabled`): the site, the key of a delta or destroy, the sender. The ops of
    one group are enabled or not together, so one question per group decides them."""
    groups: dict[tuple[Any, ...], list[Op]] = {}
    for op in ops:
        key = op.key if isinstance(op, vocab.Delta | vocab.Destroy) else None
        reads = (
            type(op),
            getattr(op, "site", None),
            key,
            getattr(op, "sender", None),
            getattr(op, "dispatcher", None),
        )
        groups.setdefault(reads, []).append(op)
    return list(groups.values())


def tick_amounts(config: Config, state: State) -> list[int]:
    """The ticks tried on `state` (docs/EXPLORE.md): 1 ms, and to each distinct due time
    of R15 or R20 still ahead (a sender whose site is up: its in-flight batch's ack
    timeout, else when its queue flushes, `model.settle.due_time`). A tick to a due time
    crosses it and every earlier one: each set of timers that one tick can fire."""
    now = state.time
    amounts = {1}
    for sender in config.senders:
        if not state.sites[sender.site].up:
            continue
        current = state.senders[sender.id]
        flushes = current.running and not current.paused
        for dispatcher in current.dispatchers:  # R30: each dispatcher's timers
            due = due_time(sender, dispatcher, now, flushes)
            if due is not None and now < due <= INT64_MAX:
                amounts.add(due - now)
    return sorted(amounts)


def state_ops(config: Config, state: State, names: frozenset[str]) -> list[Op]:
    """The operations that depend on the state: ticks (`tick_amounts`) and, per sender
    with dead letters, redeliver all of them and, when it holds several, each one."""
    out: list[Op] = []
    if "tick" in names:
        out += [vocab.Tick(ms) for ms in tick_amounts(config, state)]
    if "redeliver" in names:
        for sender in config.senders:
            held = [record.event_id for record in state.senders[sender.id].dead_letters]
            if held:
                out.append(vocab.Redeliver(sender.id))
                if len(held) > 1:
                    out += [vocab.Redeliver(sender.id, (event,)) for event in held]
    return out


# -- what makes two states the same ---------------------------------------------------------


class Relabel:
    """A renaming of keys and values (`--symmetry`); the identity when both maps are
    empty. Values are renamed through their one field."""

    __slots__ = ("keys", "values")

    def __init__(self, keys: Mapping[str, str], values: Mapping[Any, Any]) -> None:
        self.keys = keys
        self.values = values

    def key(self, key: str) -> str:
        return self.keys.get(key, key)

    def value(self, value: Mapping[str, Any] | None) -> Any:
        if value is None:
            return None
        if not self.values:
            return tuple(sorted(value.items()))
        return tuple(sorted((f, self.values.get(x, x)) for f, x in value.items()))


IDENTITY = Relabel({}, {})


def _event(event: GatewayEvent, r: Relabel) -> tuple[Any, ...]:
    return (
        event.event_id,
        event.origin,
        event.seq,
        r.key(event.key),
        event.op,
        r.value(event.value),
        event.version,
        event.base_version,
        r.value(event.delta),
        event.converted,
        tuple(sorted(event.recipients)),
        event.possible_duplicate,
        event.enqueued_at,
        event.thread,
    )


def _site(site_id: int, site: Site, r: Relabel) -> tuple[Any, ...]:
    entries = sorted((r.key(k), r.value(e.value), e.version) for k, e in site.entries.items())
    applied = sorted((k, bits) for k, bits in site.applied.blocks.items() if bits)
    return (site_id, site.up, site.seq, site.timestamp_floor, site.last_issued,
            tuple(entries), tuple(applied), tuple(site.stats))  # fmt: skip


def _dispatcher(d: Dispatcher, r: Relabel) -> tuple[Any, ...]:
    """A dispatcher as a checkpoint has it: events named by id, not by queue position."""
    batch, queue, flight = d.batch_message, d.queue, d.in_flight
    return (
        tuple(_event(e, r) for e in queue),
        tuple(queue.at(p).event_id for p in d.resend),
        d.cursor,
        None
        if flight is None
        else (flight.batch_id, flight.event_ids, flight.sent_at, flight.shipped),
        d.next_retry_at,
        d.last_batch_id,
        None
        if batch is None
        else (batch.batch_id, tuple((_event(e, r), shipped) for e, shipped in batch.events)),
        None if d.ack_message is None else tuple(d.ack_message),
        d.memory_bytes,
        tuple(sorted(queue.at(p).event_id for p in d.on_disk)),
        tuple(sorted(queue.at(p).event_id for p in d.recovered)),  # R32's index follows
    )


def _sender(sender_id: str, s: Sender, r: Relabel) -> tuple[Any, ...]:
    return (
        sender_id,
        s.running,
        s.paused,
        tuple(_dispatcher(d, r) for d in s.dispatchers),
        tuple(s.stats),
        tuple(
            (
                d.event_id,
                r.key(d.key),
                d.op,
                d.exception,
                d.version,
                r.value(d.value) if d.has_value else (),
                d.recipients,
                d.thread,
            )
            for d in s.dead_letters
        ),
    )


def _failures(state: State, r: Relabel) -> tuple[Any, ...]:
    return tuple(
        sorted(
            ((site, r.key(key)), f.exception, f.remaining)
            for (site, key), f in state.failures.items()
            if f.remaining > 0
        )
    )


def frozen_state(state: State, r: Relabel = IDENTITY) -> tuple[Any, ...]:
    """The model's full state as plain nested tuples, in an order that does not depend
    on how it was built (maps sorted, queues from their head, empty bitmaps and spent
    failures left out as a checkpoint leaves them out): equal iff the checkpoints are."""
    sites = tuple(_site(i, site, r) for i, site in sorted(state.sites.items()))
    senders = tuple(_sender(i, s, r) for i, s in sorted(state.senders.items()))
    return (state.time, sites, senders, _failures(state, r))


_PACK = msgspec.msgpack.Encoder().encode


def form_bytes(frozen: tuple[Any, ...]) -> bytes:
    """The tuples as bytes that depend on their content only (MessagePack: unlike
    `marshal`, not on which strings are interned or which objects are shared; True and
    1 stay apart)."""
    return _PACK(frozen)


def digest(frozen: tuple[Any, ...]) -> bytes:
    """128 bits of BLAKE2b over `form_bytes`: the key of the visited set."""
    return hashlib.blake2b(_PACK(frozen), digest_size=16).digest()


def keys_apart(config: Config, bounds: Bounds) -> str | None:
    """Why keys are not interchangeable here (None when they are; values always are).
    A putall of several keys: R10 writes its entries in sorted key order, so renaming
    keys changes the order of their events. A partitioned region: a key's name picks its
    bucket (R28), and so a parallel dispatcher and its bucket FIFO (R29, R31). A sender
    with several dispatchers routing by key or partition: the name picks the dispatcher
    (R29)."""
    if bounds.keys == 1:
        return None
    if "putall" in bounds.ops:
        return "putall writes in key order, R10"
    if any(region.type == "partition" for region in config.regions.values()):
        return "a key's name picks its bucket in a partitioned region, R28"
    if any(s.dispatcher_threads > 1 and s.order_policy != "thread" for s in config.senders):
        return "a key's name picks its dispatcher, R29"
    return None


def canonical_relabel(state: State, keys: Sequence[str], rename_keys: bool = True) -> Relabel:
    """The relabelling that puts `state` in its canonical form under renaming of keys
    and of values (docs/EXPLORE.md). Keys are numbered in order of first appearance in
    what has an order of its own (queues, batches and dead-letter queues, in sender id
    order); the rest by a signature that names no key (their entries' tags and
    tombstones site by site, their injected failures); keys of one signature in the
    order that gives the smallest form (`rename_keys` False: keys keep their names).
    Values are then numbered in order of first appearance in the same walk, then in the
    entries taken in the new key order. Sound by construction: the form is a renaming
    of the state."""
    order: dict[str, None] = {}
    seen_values: dict[Any, None] = {}

    def value_of(value: Mapping[str, Any] | None) -> None:
        if value is not None:
            for _, x in sorted(value.items()):
                seen_values.setdefault(x, None)

    for sender_id in sorted(state.senders):
        s = state.senders[sender_id]
        for dispatcher in s.dispatchers:
            for event in dispatcher.queue:
                order.setdefault(event.key, None)
                value_of(event.value)
                value_of(event.delta)
            if dispatcher.batch_message is not None:
                for event, _ in dispatcher.batch_message.events:
                    order.setdefault(event.key, None)
        for record in s.dead_letters:
            order.setdefault(record.key, None)
            value_of(record.value)

    def signature(key: str) -> tuple[Any, ...]:
        per_site = []
        for site_id in sorted(state.sites):
            entry = state.sites[site_id].entries.get(key)
            failure = state.failures.get((site_id, key))
            per_site.append(
                (
                    () if entry is None else (entry.value is None, entry.version),
                    () if failure is None or failure.remaining == 0 else (failure.remaining,),
                )
            )
        return tuple(per_site)

    if rename_keys:
        rest = sorted((k for k in keys if k not in order), key=lambda k: (signature(k), k))
    else:
        order, rest = {}, sorted(keys)  # every key keeps its name
    absent = signature("")  # a key with no entry and no failure anywhere: not in the state
    ties = (
        []
        if not rename_keys
        else [
            list(group)
            for sig, group in ((sig, list(g)) for sig, g in itertools.groupby(rest, key=signature))
            if len(group) > 1 and sig != absent
        ]
    )

    def relabel(ranked: list[str]) -> Relabel:
        values = dict(seen_values)
        for key in ranked:
            for site_id in sorted(state.sites):
                entry = state.sites[site_id].entries.get(key)
                if entry is not None and entry.value is not None:
                    for _, x in sorted(entry.value.items()):
                        values.setdefault(x, None)
        key_map = dict(zip(ranked, sorted(ranked), strict=True))
        return Relabel(key_map, {old: i for i, old in enumerate(values, start=1)})

    first = list(order) + rest
    if not ties:
        return relabel(first)
    # Keys that nothing above tells apart: each order of each such group is tried, and
    # the smallest form kept (the groups are small: keys of one signature).
    orders = itertools.islice(
        itertools.product(*(itertools.permutations(group) for group in ties)), MAX_TIE_ORDERS
    )
    best: tuple[bytes, Relabel] | None = None
    for choice in orders:
        placed = dict(
            zip((k for g in ties for k in g), (k for g in choice for k in g), strict=True)
        )
        candidate = relabel([placed.get(k, k) for k in first])
        form = form_bytes(frozen_state(state, candidate))
        if best is None or form < best[0]:
            best = (form, candidate)
    assert best is not None
    return best[1]


# -- the search ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """A violation (P2-P12) or a divergence (P1) and the shortest path that shows it."""

    property: str
    message: str
    path: tuple[Op, ...]


@dataclass(slots=True)
class ExploreResult:
    depth: int  # the bound
    depth_reached: int  # the deepest level at which a new state was found
    levels: list[int]  # new distinct states per depth (0: the initial state)
    states: int
    transitions: int
    skipped: int  # operations tried and not enabled (no edges)
    seconds: float
    capped: bool  # the --max-states cap was reached: the bound was NOT covered
    covered_depth: int  # every path of at most this many operations was explored
    coverage: dict[str, int]
    first_depth: dict[str, int]  # coverage item -> the shallowest depth it occurred at
    found: list[Found] = field(default_factory=list)
    alphabet: int = 0  # the fixed operations tried on every state
    concrete: int = 0  # --symmetry: distinct concrete states among the edges' targets
    step_seconds: float = 0.0  # of `seconds`, in `model.step`: transitions, settle checks
    settle_checks: int = 0  # settles beside the search for P2 and P5 (not transitions)

    @property
    def overhead(self) -> float:
        """The search's time over the model's plain steps of the same transitions."""
        return self.seconds / self.step_seconds if self.step_seconds > 0 else 0.0

    @property
    def states_per_s(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def coverage_items(self) -> list[str]:
        """Every observation kind, receiver status, sender and redelivery outcome."""
        return [f"kind.{kind}" for kind in KINDS] + [
            item for item in Coverage().required() if not item.startswith("op.")
        ]


_SKIPPED_KIND = "skipped"


class _Paths:
    """Every visited state's parent and operation, to rebuild a path (compact arrays)."""

    def __init__(self, fixed: tuple[Op, ...]) -> None:
        self.parent = array("q", [-1])
        self.op = array("l", [-1])
        self.ops: list[Op] = list(fixed)
        # the alphabet's operations by identity (values are dicts: not hashable), the
        # state's own (ticks, redelivers) by value
        self._index: dict[Any, int] = {id(op): i for i, op in enumerate(fixed)}

    def add(self, parent: int, op: Op) -> int:
        name = op if isinstance(op, vocab.Tick | vocab.Redeliver) else id(op)
        index = self._index.get(name)
        if index is None:
            index = self._index[name] = len(self.ops)
            self.ops.append(op)
        self.parent.append(parent)
        self.op.append(index)
        return len(self.parent) - 1

    def path(self, node: int) -> tuple[Op, ...]:
        out = []
        while node > 0:
            out.append(self.ops[self.op[node]])
            node = self.parent[node]
        return tuple(reversed(out))


def _impl_divergence(
    config: Config,
    impl: EngineFactory,
    path: tuple[Op, ...],
    op: Op,
    observations: list[Observation],
    model_state: State,
) -> str | None:
    """P1 on one edge: the impl replays `path` from its initial state, then applies
    `op`; its observations and observable state must be the model's (bool and int
    told apart, `conformance.running.lockstep`)."""
    engine = impl(config)
    for earlier in (*path, op):  # a user's engine that raises differs where it raises
        theirs = applied_or_raised(engine, earlier)
        if isinstance(theirs, Raised):
            return f"model and impl observations differ: impl {theirs}"
    first = next(json_differences(observations, theirs, "observations"), None)
    problem = None if first is None else malformed(theirs)  # not a list of JSON objects
    if problem is not None:
        return f"model and impl observations differ: impl {problem}"
    what = "observations"
    if first is None:
        model_view, impl_view = observe(model_state), observed_or_raised(engine)
        if isinstance(impl_view, Raised):
            return f"model and impl states differ: impl {impl_view} in observe"
        if same_state(model_view, impl_view)[0]:
            return None
        first = next(json_differences(model_view, impl_view, "state"), None)
        what = "states"
    shown = (
        ""
        if first is None
        else f": {printable(first.path)}: model {canonical_json(first.model)}, "
        f"impl {canonical_json(first.impl)}"
    )
    return f"model and impl {what} differ{shown}"


def _observer(state: State) -> Callable[[], dict[str, Any]]:
    return lambda: observe(state)


@dataclass(slots=True)
class Tally:
    """What one level (or one node's expansion) did: counted only once its level is
    complete, so that every mode of the search reports the same figures."""

    transitions: int = 0
    skipped: int = 0
    step_seconds: float = 0.0
    settle_checks: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # coverage items, kind.*

    def add(self, other: Tally) -> None:
        self.transitions += other.transitions
        self.skipped += other.skipped
        self.step_seconds += other.step_seconds
        self.settle_checks += other.settle_checks
        self.counts.update(other.counts)


@dataclass(slots=True)
class Successor:
    position: int  # the operation's place in the node's sequence of operations tried
    op: Op
    state: State
    checker: PropertyChecker
    key: bytes  # `digest` of the state's (canonical) form: the visited set's key
    concrete: bytes  # `digest` of its plain form (= key without symmetry)


@dataclass(slots=True)
class Expansion:
    """Every enabled operation of one state, stepped and checked."""

    tally: Tally
    successors: list[Successor]
    found: list[tuple[int, Found]]  # (position, violation), in order


def follow(
    checker: PropertyChecker,
    op: Op,
    observations: list[Observation],
    after: State,
    copy: bool = True,
) -> tuple[PropertyChecker, list[Violation]]:
    """The checker of the state an edge leads to, and what it found on the edge. A node's
    checker is never changed: the edge's is a copy (`copy`), or the same checker when
    nothing the checker follows happened."""
    violations: list[Violation] = []
    if observations or isinstance(op, vocab.SiteUp | vocab.Settle):
        checker = checker.clone() if copy else checker
        violations = checker.after_step(op, observations, _observer(after))
    if not violations and any(obs["kind"] == "dlq" for obs in observations):
        violations = checker.finish(observe(after))  # P7: a new dead letter
    return checker, violations


class Expander:
    """Expands states: the one piece of the search that every mode runs (the local
    loop, and Spark's executors). Pure: the same state, checker and path always give
    the same expansion."""

    def __init__(self, config: Config, bounds: Bounds, impl: EngineFactory | None = None):
        self.config = config
        self.bounds = bounds
        self.impl = impl
        self.names = frozenset(bounds.ops)
        self.fixed = alphabet(config, bounds.keys, bounds.values, self.names)
        self.groups = enabling_groups(self.fixed)
        self.keys = key_names(bounds.keys)
        self.rename_keys = keys_apart(config, bounds) is None
        self.settle_edges = "settle" in self.names

    def key_of(self, state: State) -> tuple[bytes, bytes]:
        """(the visited set's key, the plain form's digest)."""
        plain = digest(frozen_state(state))
        if not self.bounds.symmetry:
            return plain, plain
        relabel = canonical_relabel(state, self.keys, self.rename_keys)
        return digest(frozen_state(state, relabel)), plain

    def settle_check(
        self, path: tuple[Op, ...], state: State, checker: PropertyChecker, tally: Tally
    ) -> Found | None:
        """P2 and P5 from this state: settle to quiescence, as the checker sees it."""
        if not all(site.up for site in state.sites.values()):
            return None  # P2 and P5 apply after a settle with every site up
        clone = checker.clone()
        stepped = time.perf_counter()
        after, observations = step(self.config, state, vocab.Settle())
        tally.step_seconds += time.perf_counter() - stepped
        tally.settle_checks += 1
        violations = clone.after_step(vocab.Settle(), observations, _observer(after))
        if violations:
            return Found(violations[0].property, violations[0].message, (*path, vocab.Settle()))
        return None

    def replay(self, path: tuple[Op, ...]) -> tuple[State, PropertyChecker]:
        """The state and checker of the node reached by `path` (a path the search kept:
        none of its edges violated a property), rebuilt from the initial state: what
        Spark's executors ship instead of states (a path is a few hundred bytes)."""
        state, checker = initial_state(self.config), PropertyChecker(self.config)
        for op in path:
            state, observations = step(self.config, state, op)
            checker, _ = follow(checker, op, observations, state, copy=False)
        return state, checker

    def expand(self, path: tuple[Op, ...], state: State, checker: PropertyChecker) -> Expansion:
        config, tally = self.config, Tally()
        out = Expansion(tally, [], [])
        counts, coverage = tally.counts, Coverage(config)  # R28-R31's branches too
        if not self.settle_edges:
            found = self.settle_check(path, state, checker, tally)
            if found is not None:
                out.found.append((-1, found))
        position = 0
        tried: list[tuple[int, Op]] = []
        for group in (*self.groups, *([op] for op in state_ops(config, state, self.names))):
            if group and not enabled(config, state, group[0]):
                tally.skipped += len(group)  # not enabled (§3): no edges
                counts[f"kind.{_SKIPPED_KIND}"] += len(group)
                coverage.record_skipped(group[0].op, len(group))
            else:
                tried += enumerate(group, position)
            position += len(group)
        for position, op in tried:
            stepped = time.perf_counter()
            after, observations = step(config, state, op)
            tally.step_seconds += time.perf_counter() - stepped
            tally.transitions += 1
            coverage.resume(state)  # each transition starts from `state`
            coverage.record(op, observations)
            counts.update(f"kind.{obs['kind']}" for obs in observations)
            counts[BUILT] += sum(1 for o in observations if o["kind"] == "applied" and "value" in o)
            clone, violations = follow(checker, op, observations, after)
            divergence = None
            if self.impl is not None:
                divergence = _impl_divergence(config, self.impl, path, op, observations, after)
            if divergence is not None:
                out.found.append((position, Found("P1", divergence, (*path, op))))
            elif violations:
                first = violations[0]
                out.found.append((position, Found(first.property, first.message, (*path, op))))
            else:
                key, concrete = self.key_of(after)
                out.successors.append(Successor(position, op, after, clone, key, concrete))
        counts.update(coverage.counts)
        return out


def explore(
    config: Config,
    bounds: Bounds,
    impl: EngineFactory | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> ExploreResult:
    """Breadth-first search to `bounds.depth` (see the module); `impl` adds P1 on every
    edge; `progress(depth, states, transitions)` is called now and then.

    The figures count complete levels only: a level in which the first violation shows
    (without `collect_all`) or which would take the distinct states past the cap is
    not counted (its violation is reported, the cap said), so that the figures do not
    depend on the order in which a level is expanded (`explore_on_spark`)."""
    started = time.perf_counter()
    expander = Expander(config, bounds, impl)
    root = initial_state(config)
    root_key, root_plain = expander.key_of(root)
    visited = {root_key}
    concrete = {root_plain}
    paths = _Paths(expander.fixed)
    total = Tally()
    first_depth: dict[str, int] = {}
    found: list[Found] = []
    frontier: list[tuple[int, State, PropertyChecker]] = [(0, root, PropertyChecker(config))]
    levels = [1]
    capped = stopped = False
    depth = 0
    while frontier and depth < bounds.depth:
        level = Tally()
        level_found: list[Found] = []
        new: set[bytes] = set()
        seen: set[bytes] = set()
        following: list[tuple[int, State, PropertyChecker]] = []
        for node, state, checker in frontier:
            expansion = expander.expand(paths.path(node), state, checker)
            level.add(expansion.tally)
            level_found += [f for _, f in expansion.found]
            if expansion.found and not bounds.collect_all:
                stopped = True  # the first violation in BFS order
                break
            for successor in expansion.successors:
                seen.add(successor.concrete)
                if successor.key in visited or successor.key in new:
                    continue
                if len(visited) + len(new) >= bounds.max_states:
                    capped = True
                    break
                new.add(successor.key)
                following.append(
                    (paths.add(node, successor.op), successor.state, successor.checker)
                )
            if capped:
                break
            if progress is not None:
                progress(depth + 1, len(visited) + len(new), total.transitions + level.transitions)
        found += level_found[:1] if stopped else level_found
        if capped or stopped:
            break
        depth += 1
        total.add(level)
        visited |= new
        concrete |= seen
        for item, count in level.counts.items():
            if count:
                first_depth.setdefault(item, depth)
        if following:
            levels.append(len(following))
        frontier = following
    if not (capped or stopped) and depth == bounds.depth:
        for node, state, checker in frontier:  # P2, P5 from the deepest states too
            check = expander.settle_check(paths.path(node), state, checker, total)
            if check is not None:
                found.append(check)
                if not bounds.collect_all:
                    break
    counts = dict(total.counts)
    return ExploreResult(
        depth=bounds.depth,
        depth_reached=len(levels) - 1,
        levels=levels,
        states=len(visited),
        transitions=total.transitions,
        skipped=total.skipped,
        seconds=time.perf_counter() - started,
        capped=capped,
        covered_depth=bounds.depth if not (capped or stopped) else depth,
        coverage=counts,
        first_depth=first_depth,
        found=found,
        alphabet=len(expander.fixed),
        concrete=len(concrete) if bounds.symmetry else 0,
        step_seconds=total.step_seconds,
        settle_checks=total.settle_checks,
    )


def coverage_rows(result: ExploreResult) -> list[tuple[str, int, int | None]]:
    """(item, count, shallowest depth or None) for every item of the coverage table."""
    return [
        (item, result.coverage.get(item, 0), result.first_depth.get(item))
        for item in result.coverage_items()
    ]


def result_json(name: str, config: Config, bounds: Bounds, result: ExploreResult) -> dict[str, Any]:
    """The figures of an exploration as JSON (no timings: the same for the same input)."""
    return {
        "config": name,
        "depth": bounds.depth,
        "keys": bounds.keys,
        "values": bounds.values,
        "ops": list(bounds.ops),
        "symmetry": bounds.symmetry,
        "states": result.states,
        "transitions": result.transitions,
        "skipped": result.skipped,
        "levels": result.levels,
        "depth_reached": result.depth_reached,
        "covered_depth": result.covered_depth,
        "capped": result.capped,
        "concrete_states_seen": result.concrete if bounds.symmetry else None,
        "coverage": {item: [count, depth] for item, count, depth in coverage_rows(result)},
        "found": [
            {
                "property": f.property,
                "message": f.message,
                "length": len(f.path),
                "path": [op_to_json(op) for op in f.path],
            }
            for f in result.found
        ],
    }


BUILT = "built.from_delta"  # coverage count: values built from a delta (P6 applies)


def held_properties(config: Config, result: ExploreResult) -> str:
    """What a clean exploration showed, property by property; one that never applied
    is said to be not applicable, and why (as `PropertyChecker.verdicts` says it)."""
    checker = PropertyChecker(config)
    reasons = {
        "P3": "" if result.coverage.get("status.ok") else "no event was applied",
        "P4": "" if checker.supported else "the topology is unsupported (R23)",
        "P6": "" if result.coverage.get(BUILT) else "no value was built from a delta",
        "P7": ""
        if any(s.dlq_secure for s in config.senders) and result.coverage.get("kind.dlq")
        else "no secure sender wrote a dead letter",
        "P5": "" if fully_connected(config) else "not every site reaches every other one",
    }
    unordered = list(unordered_senders(config))
    if unordered and len(unordered) == len(config.senders):
        reasons["P8"] = "order_policy thread with several dispatchers (Example R29)"
    elif not config.senders:
        reasons["P8"] = "no sender had two events of one key processed"
    if not any(s.enable_batch_conflation for s in config.senders):
        reasons["P9"] = "no sender has enable_batch_conflation"
    elif not result.coverage.get("kind.conflated"):
        reasons["P9"] = "no event was conflated"
    # P10 compares two runs of one trace; explore runs each behaviour once.
    reasons["P10"] = "it compares two runs of a trace (replay --check-properties runs them)"
    if not result.coverage.get("kind.lifecycle"):
        reasons["P11"] = "no sender was restarted or stopped"
    every_edge = ", ".join(
        p for p in ("P3", "P4", "P6", "P7", "P8", "P9", "P11") if not reasons.get(p)
    )
    settled = ", ".join(p for p in ("P2", "P5", "P12") if not reasons.get(p))
    out = f"{settled} held after settle from every state"
    if every_edge:
        out = f"{every_edge} held on every transition, {out}"
    if unordered and "P8" not in reasons:
        out += f" (P8 not applicable to {', '.join(unordered)}: order_policy thread)"
    return out + "".join(
        f"; {name} not applicable: {why}"
        for name, why in sorted(reasons.items(), key=lambda item: int(item[0][1:]))
        if why
    )


def summary_lines(
    name: str, config: Config, bounds: Bounds, result: ExploreResult, impl: str | None
) -> list[str]:
    """The report of an exploration (no timings: the same bytes for the same input)."""
    ops = "all" if bounds.ops == OP_NAMES else ",".join(bounds.ops)
    derived = [f"{kind}s" for kind in ("tick", "redeliver") if kind in bounds.ops]
    plus = f", plus {' and '.join(derived)}" if derived else ""  # chosen per state
    lines = [
        f"explore {printable(name)}: sites {', '.join(map(str, config.sites))}; "
        f"{plural(len(config.senders), 'sender')}; {plural(bounds.keys, 'key')}, "
        f"{plural(bounds.values, 'value')}; operations: {ops} "
        f"({result.alphabet} fixed per state{plus}); depth {bounds.depth}"
        + ("; symmetry on" if bounds.symmetry else ""),
        "depth  new states",
        *(f"{depth:>5}  {count:>10,}" for depth, count in enumerate(result.levels)),
        f"distinct states: {result.states:,}; transitions: {result.transitions:,} "
        f"(and {result.skipped:,} operations not enabled); depth reached: "
        f"{result.depth_reached}",
    ]
    if bounds.symmetry:
        factor = result.concrete / result.states if result.states else 1.0
        apart = keys_apart(config, bounds)
        what = "keys and values" if apart is None else f"values (not keys: {apart})"
        reduction = f"reduction factor at least {factor:.2f}"
        if result.concrete == result.states:  # say why, not just 1.00
            reduction = "no reduction: no two states reached differ only by a relabelling" + (
                " (one key and one value: nothing to relabel)"
                if bounds.keys * bounds.values == 1
                else ""
            )
        lines.append(
            f"symmetry over {what}: {result.concrete:,} distinct concrete states seen as "
            f"{result.states:,} canonical ones: {reduction}"
        )
    checked = "P1 (against " + impl + "), " if impl else ""
    if result.capped:
        lines.append(
            f"CAP REACHED: --max-states {bounds.max_states:,} passed at depth "
            f"{result.covered_depth + 1}: the bound {bounds.depth} was NOT covered; the "
            "figures are those of every behaviour of at most "
            f"{plural(result.covered_depth, 'operation')}"
        )
    elif result.found:
        lines.append(
            f"{plural(len(result.found), 'violation')} found; {checked}P2-P9, P11 and P12 "
            "were checked on every behaviour of at most "
            f"{plural(result.covered_depth, 'operation')} (P10 compares two runs: replay "
            "--check-properties)"
        )
    else:
        lines.append(
            f"clean: every behaviour of at most {plural(bounds.depth, 'operation')} explored; "
            f"{checked}{held_properties(config, result)}"
        )
    complete = result.capped or result.found  # only the levels below were completed
    lines.append(
        f"coverage of every behaviour of at most {plural(result.covered_depth, 'operation')} "
        "(count, shallowest depth):"
        if complete
        else "coverage (count, shallowest depth):"
    )
    never = []
    for item, count, depth in coverage_rows(result):
        if depth is None:
            never.append(item)
        else:
            lines.append(f"  {item:<28} {count:>12,}  depth {depth}")
    lines.append("never reached: " + (", ".join(never) if never else "none"))
    return lines
