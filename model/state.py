"""The model's state: immutable records only (R1, R2, R12, R13, R24's dead letters, and
v2.0's dispatchers, R29-R31, R35, §16.6).

Nothing here is ever mutated once built; a step returns new records and shares the rest.
Records are NamedTuples (tuples: they cannot change; `_replace` builds a changed copy).
Maps are `immutables.Map` (a hash array mapped trie) so that one step costs the same
whatever the number of keys or events already seen, queues are `Seq`, a persistent
sequence on top of such a map, and R16.1's applied-event memory is `AppliedIds`, bitmaps
in such a map (one bit per event, so a long run does not fill memory with event ids).

A sender (v2.0) is its `dispatchers`, each with its own queue, batch in flight, network
slots and timers (R29). A queue is a `Seq` in append order; an event that leaves it
leaves a hole at its position (a parallel dispatcher's batch is not a prefix, R31), so
batches, resend lists and the memory accounting name events by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from immutables import Map

from traces.ops import Value

T = TypeVar("T")

Tag = tuple[int, int, int]  # R2: [entry_version, timestamp, dsid]
OpLabel = Literal["create", "update", "destroy"]
Status = Literal["ok", "duplicate", "conflict", "failed", "invalid_delta"]


class Seq(Generic[T]):
    """A persistent FIFO sequence of positioned items: O(log n) append, read and removal.

    Each item keeps the position it was appended at (`end` before the append): the map
    key. Removing items leaves holes; `start` is the first live position (or `end`), so
    the head is found at once and a walk costs the live items plus the holes among them.
    Never changed once built (a plain slotted class, not a frozen dataclass: every
    append builds one, and a frozen dataclass's construction costs three times as much).
    """

    __slots__ = ("end", "items", "start")

    def __init__(self, start: int = 0, end: int = 0, items: Map[int, T] | None = None) -> None:
        self.start = start
        self.end = end
        self.items: Map[int, T] = _EMPTY if items is None else items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Seq) and (self.start, self.end, self.items) == (
            other.start,
            other.end,
            other.items,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Seq({list(self.positioned())!r})"

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[T]:
        items = self.items
        if self.end - self.start == len(items):
            return (items[i] for i in range(self.start, self.end))
        return (items[i] for i in range(self.start, self.end) if i in items)

    def positioned(self) -> Iterator[tuple[int, T]]:
        """(position, item) pairs, oldest first."""
        items = self.items
        return ((i, items[i]) for i in range(self.start, self.end) if i in items)

    def head(self) -> T:
        """The oldest item (the sequence must not be empty)."""
        return self.items[self.start]

    def at(self, position: int) -> T:
        return self.items[position]

    def append(self, item: T) -> Seq[T]:
        return Seq(self.start, self.end + 1, self.items.set(self.end, item))

    def first(self, count: int) -> list[tuple[int, T]]:
        """The oldest `count` items (fewer if shorter), with their positions."""
        items = self.items
        if self.end - self.start == len(items):  # no holes
            return [(p, items[p]) for p in range(self.start, min(self.end, self.start + count))]
        out: list[tuple[int, T]] = []
        position = self.start
        while len(out) < count and position < self.end:
            item = items.get(position, _HOLE)
            if item is not _HOLE:
                out.append((position, item))  # type: ignore[arg-type]
            position += 1
        return out

    def replace(self, changed: dict[int, T]) -> Seq[T]:
        """The sequence with the items at these positions replaced (in place, same order)."""
        items = self.items.mutate()  # a private copy: `self.items` never changes
        for position, item in changed.items():
            items[position] = item
        return Seq(self.start, self.end, items.finish())

    def remove(self, positions: Iterable[int]) -> Seq[T]:
        """The sequence without the items at `positions`."""
        items = self.items.mutate()
        for position in positions:
            del items[position]
        start = self.start
        while start < self.end and start not in items:
            start += 1
        return Seq(start, self.end, items.finish())


_HOLE = object()
_EMPTY: Map[Any, Any] = Map()


BLOCK = 1024
"""Sequence numbers per bitmap of `AppliedIds`."""


class AppliedIds:
    """A persistent set of event ids (origin, seq): R16.1's memory of one site.

    Bit `seq % BLOCK` of the integer at key `(origin, seq // BLOCK)` is set iff the event
    `origin:seq` is in the set; an absent key is the bitmap 0 (none of its events).
    Never changed once built (slotted, as `Seq`).
    """

    __slots__ = ("blocks",)

    def __init__(self, blocks: Map[tuple[int, int], int] | None = None) -> None:
        self.blocks: Map[tuple[int, int], int] = _EMPTY if blocks is None else blocks

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AppliedIds) and self.blocks == other.blocks

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, event_id: tuple[int, int]) -> bool:
        origin, seq = event_id
        return (self.blocks.get((origin, seq // BLOCK), 0) >> (seq % BLOCK)) & 1 == 1

    def add(self, event_id: tuple[int, int]) -> AppliedIds:
        origin, seq = event_id
        key = (origin, seq // BLOCK)
        return AppliedIds(self.blocks.set(key, self.blocks.get(key, 0) | 1 << (seq % BLOCK)))


class Entry(NamedTuple):
    """R2: a region entry; `value` None is a tombstone."""

    value: Value | None
    version: Tag


class GatewayEvent(NamedTuple):
    """R11/R22: one queued gateway event. It always keeps its full value (or tombstone).

    `size` is R4's size of the value (0 for a destroy): what a full value ships (R14) and
    what it holds of queue memory (R35). `bucket` is the key's bucket at the site whose
    queue holds it (R28; None at a replicated site)."""

    event_id: str  # "origin:seq"
    origin: int
    seq: int  # R3: the origin's sequence number of the write
    key: str
    op: OpLabel
    value: Value | None
    version: Tag
    base_version: Tag | None  # the entry's tag before a delta update (R10)
    delta: Value | None  # the changes of a `delta` operation, else None
    converted: bool  # R19: converted to ship its full value
    recipients: frozenset[int]
    possible_duplicate: bool
    enqueued_at: int
    thread: int  # v2.0: the client thread of the write (R27, R29's "thread" policy)
    size: int
    bucket: int | None


class BatchMessage(NamedTuple):
    """A batch in the network (R15): events as shipped, each with 'ships as delta' (R14)."""

    batch_id: int
    events: tuple[tuple[GatewayEvent, bool], ...]


class AckMessage(NamedTuple):
    """R17: the receiver's answer: one (status, exception) per event of the batch."""

    batch_id: int
    statuses: tuple[tuple[Status, str | None], ...]


class InFlight(NamedTuple):
    """R13: a dispatcher's one unacknowledged batch: its members' queue positions and ids,
    in batch order (a serial dispatcher's are its queue's first events, R15; a parallel
    one's its buckets' first events, R31), and the ids of those shipped (R33: batch
    conflation keeps some members back)."""

    batch_id: int
    positions: tuple[int, ...]
    event_ids: tuple[str, ...]
    sent_at: int
    shipped: tuple[str, ...]
    members: frozenset[int]  # `positions` as a set (R32 asks "is it in flight?")


class DeadLetter(NamedTuple):
    """R24: a dead-letter record; `value` is absent (None, has_value False) when secure."""

    event_id: str
    sender: str
    key: str
    op: OpLabel
    exception: str
    version: Tag
    value: Value | None
    has_value: bool
    recipients: tuple[int, ...]  # v1.2: the event's recipients, sorted (for R26)
    thread: int  # v2.0: the event's client thread, so R26 requeues it by the same route


class SiteStats(NamedTuple):
    applied: int = 0
    duplicates: int = 0
    conflicts: int = 0
    failures: int = 0
    retries: int = 0
    invalid_deltas: int = 0


class SenderStats(NamedTuple):
    """A sender's counters (§10, §16.6); R35's gauges `entries_overflowed` and
    `bytes_overflowed` are sums over its dispatchers, computed when observed."""

    batches_sent: int = 0
    events_sent: int = 0
    events_resent: int = 0
    bytes_full: int = 0
    bytes_delta: int = 0
    batches_timed_out: int = 0
    connection_failures: int = 0
    events_dropped: int = 0
    invalid_deltas: int = 0
    dlq_records: int = 0
    redelivered: int = 0  # R26 (v1.2)
    redelivery_superseded: int = 0
    redelivery_unrecoverable: int = 0
    events_conflated_in_queue: int = 0  # v2.0, §16.6
    events_conflated_from_batches: int = 0
    conflation_full_values: int = 0
    events_lost_on_restart: int = 0
    events_not_queued_stopped: int = 0
    events_discarded_clean_start: int = 0
    events_exceeding_alert_threshold: int = 0


class Site(NamedTuple):
    """R1: one distributed system: its region, its applied-event memory (R16.1), counters."""

    up: bool = True
    seq: int = 0  # R3: the last sequence number given out
    timestamp_floor: int = 0  # R9, R21: no tag issued here has a smaller timestamp
    last_issued: int = -1  # R21: the largest timestamp of a tag issued here (-1: none)
    entries: Map[str, Entry] = Map()
    applied: AppliedIds = AppliedIds()  # R16.1: (origin, seq) of events applied with status ok
    stats: SiteStats = SiteStats()


class Dispatcher(NamedTuple):
    """One dispatcher of a sender (R29): its own queue, batch in flight (R13), timers,
    network slots and batch ids; R31's buckets, resend list and cursor when parallel;
    R35's queue memory."""

    queue: Seq[GatewayEvent] = Seq()
    buckets: Map[int, Seq[int]] = Map()  # parallel: bucket -> queue positions (R31's FIFOs)
    resend: tuple[int, ...] = ()  # parallel: positions to send first (R31, R19, R20)
    cursor: int | None = None  # parallel: the bucket R31 looks at first; None when serial
    in_flight: InFlight | None = None
    next_retry_at: int = 0
    last_batch_id: int = 0  # R15: batch ids 1, 2, ... per dispatcher, never reset
    batch_message: BatchMessage | None = None
    ack_message: AckMessage | None = None
    memory_bytes: int = 0  # R35: the sizes of the queued events held in memory
    on_disk: Map[int, int] = Map()  # R35: positions of the events on disk -> their size
    recovered: Map[int, bool] = Map()  # R32, R36, R37: positions kept across a restart
    conflation: Map[str, tuple[int, ...]] = Map()  # R32: key -> positions of indexed updates


class Sender(NamedTuple):
    """A gateway sender's state (R12-R15, R18-R20, R24, R29): its dispatchers, whether
    it runs (R37), its counters and its dead letters."""

    dispatchers: tuple[Dispatcher, ...]
    running: bool = True
    paused: bool = False
    stats: SenderStats = SenderStats()
    dead_letters: Seq[DeadLetter] = Seq()


class Failure(NamedTuple):
    """An injected receiver failure (`fail`): attempts left and the exception name."""

    exception: str
    remaining: int


class State(NamedTuple):
    time: int
    sites: Map[int, Site]
    senders: Map[str, Sender]
    failures: Map[tuple[int, str], Failure]


_KEEP = object()


def _straight_replace(record: type[tuple[object, ...]]) -> None:
    """Give a record class a `_replace` that builds the changed copy in one expression.

    NamedTuple's own `_replace` goes through a dict of keywords, `map` and `_make`: 0.8 µs
    for a `Site`, and a client write calls it three times (a tenth of the model's step).
    This one takes the same keywords, the field names (another name is a TypeError), and
    returns the same record in 0.3 µs. It is built from source text as NamedTuple builds
    its own `__new__`; tests/test_model_speed_structures.py checks it against the original.
    """
    fields: tuple[str, ...] = record._fields  # type: ignore[attr-defined]
    keywords = ", ".join(f"{name}=_KEEP" for name in fields)
    values = ", ".join(f"self[{i}] if {name} is _KEEP else {name}" for i, name in enumerate(fields))
    source = f"def _replace(self, /, *, {keywords}):\n    return _new(_record, ({values},))\n"
    namespace = {"_new": tuple.__new__, "_record": record, "_KEEP": _KEEP}
    exec(source, namespace)  # the names in it are this class's own field names
    record._replace = namespace["_replace"]  # type: ignore[attr-defined]


RECORDS: tuple[type[tuple[object, ...]], ...] = (
    Entry,
    GatewayEvent,
    BatchMessage,
    AckMessage,
    InFlight,
    DeadLetter,
    SiteStats,
    SenderStats,
    Site,
    Dispatcher,
    Sender,
    Failure,
    State,
)
"""Every record class of the state (tests check that none is missing)."""

for _record in RECORDS:
    _straight_replace(_record)
