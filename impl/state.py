"""The mutable state of the fast engine: gateway events, sites, senders and their
dispatchers, network messages.

Rules: R2 (entries: a value and its version tag; tombstones have value None), R4 (sizes,
counted field by field, once per event), R11 (the fields of a queued gateway event), R13
(one in-flight batch per dispatcher), R17 (the ack message), R22 (the forwarded copy of
an event), R29-R31 (dispatchers; a parallel one's append order and bucket FIFOs), R35
(queue memory).

Values (dicts of field -> scalar) are never mutated once stored: a write or a delta
builds a new dict, so events, entries and observations can share them.
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Final, final

from mypy_extensions import i64, mypyc_attr

from impl.applied import AppliedRanges
from traces.config import ReceiverConfig, SenderConfig

Scalar = int | str | bool | None
Value = dict[str, Scalar]


@final
@mypyc_attr(acyclic=True)
class Entry:
    """A region entry (R2): the value (None for a tombstone) and its version tag.

    The tag `(entry_version, timestamp, dsid)` is kept as three plain ints; `tag()` and
    `version_list()` rebuild it. Entries are immutable once stored, so the origin's entry
    object is shared with the events and the receivers (see `Event`). `size` is R4's size
    of the value when it was counted (a write at a site with senders), else -1: a delta
    on the entry counts its own from it (`resized`).
    """

    __slots__ = ("dsid", "size", "timestamp", "value", "version")

    def __init__(
        self, value: Value | None, version: int, timestamp: int, dsid: int, size: int = -1
    ) -> None:
        self.value = value
        self.version = version
        self.timestamp = timestamp
        self.dsid = dsid
        self.size = size

    def tag(self) -> tuple[int, int, int]:
        """The version tag `(entry_version, timestamp, dsid)` (R2)."""
        return (self.version, self.timestamp, self.dsid)

    def version_list(self) -> list[int]:
        """The tag as the JSON list of observations and state (§10)."""
        return [self.version, self.timestamp, self.dsid]


def _unencodable(value: object) -> object:
    raise TypeError(f"not a JSON scalar: {value!r}")


# R4's encoder without `sort_keys` (key order does not change the length), built once:
# `json.dumps` builds a new encoder on every call, which costs more than the encoding.
# It sizes what the fast path below does not know (a non-str key, an int subclass ...).
_C_ENCODER: Final = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _unencodable, encode_basestring_ascii, None, ":", ",", False, False, True
    )
)
_ENCODE: Final = json.JSONEncoder(separators=(",", ":")).encode


def _compiled() -> bool:
    """Whether this module runs compiled by mypyc: its functions have no bytecode."""
    return not hasattr(_compiled, "__code__")


_COMPILED: Final = _compiled()
"""Sizes are counted field by field when compiled (`_value_size`: fast in C, slow in
Python), by the C encoder when interpreted (the sizes are the same)."""


def _encoded_size(value: object) -> int:
    """Byte length of the compact JSON encoding of any JSON-able `value`."""
    if _C_ENCODER is not None:
        return len("".join(_C_ENCODER(value, 0)))
    return len(_ENCODE(value))


def _int_size(number: int) -> i64:
    """The length of `str(number)`, counted without building the string."""
    if number < 0:
        return 1 + _int_size(-number)
    if number < 10_000:
        return 1 if number < 10 else 2 if number < 100 else 3 if number < 1_000 else 4
    digits = 5
    limit = 100_000
    while number >= limit:
        limit *= 10
        digits += 1
    return digits


_SHORT_ESCAPES: Final = frozenset({0x22, 0x5C, 0x08, 0x0C, 0x0A, 0x0D, 0x09})
"""The characters JSON escapes with one backslash: `"`, backslash, \\b \\f \\n \\r \\t."""


def _string_size(text: str) -> i64:
    """The length of `text` as a JSON string with `ensure_ascii`, quotes included.

    What `json.encoder.encode_basestring_ascii` writes: printable ASCII as is, except
    `"` and `\\` (escaped by a backslash, as are \\b \\f \\n \\r \\t); any other
    character as `\\uXXXX`, a pair of them beyond the BMP.
    """
    length: i64 = len(text)
    size: i64 = length + 2
    for index in range(length):
        code: i64 = ord(text[index])
        if code < 0x20 or code > 0x7E or code == 0x22 or code == 0x5C:
            if code in _SHORT_ESCAPES:
                size += 1
            elif code > 0xFFFF:
                size += 11
            else:
                size += 5
    return size


def _value_size(value: dict[Any, Any]) -> int:
    """R4 for one value or delta: `{"k":v,...}` counted field by field.

    The exact types of JSON scalars are counted here; anything else is left to the
    encoder, so the size is always that of the JSON text. (The items are typed Any so
    that compiled code does not check them against `Scalar`: any value sizes as it
    would interpreted.)
    """
    if not value:
        return 2
    total: i64 = 1 + len(value)  # the braces and n - 1 commas
    for key, item in value.items():
        if type(key) is not str:
            return _encoded_size(value)
        total += _string_size(key) + 1  # the name, its colon
        if type(item) is int:  # the item: the common types first, without a call
            total += _int_size(item)
        elif type(item) is str:
            total += _string_size(item)
        else:
            total += _item_size(item)
    return total


def _item_size(item: Any) -> int:
    """R4: the length of one field's value in JSON."""
    if type(item) is int:
        return _int_size(item)
    if type(item) is str:
        return _string_size(item)
    if item is None:
        return 4
    if type(item) is bool:
        return 4 if item else 5
    return _encoded_size(item)


_ABSENT: Final = object()


def resized(old: Value, old_size: int, changes: Value) -> tuple[int, int]:
    """R4's sizes of a delta (R10): of `old` updated by `changes`, counted from `old`'s
    size `old_size` (a changed field's value replaced, a new field added with its name,
    colon and comma), and of `changes` itself (what the delta ships, R14), in one pass;
    (-1, -1) when they are not counted so (interpreted, where `size` is one encoder call;
    `old_size` not counted, -1; an empty `old`; a key that is not a string)."""
    if not _COMPILED or old_size < 0 or not old:
        return -1, -1
    total = old_size
    own = 1 + len(changes) if changes else 2  # the braces and n - 1 commas
    for key, item in changes.items():
        if type(key) is not str:
            return -1, -1
        key_size = _string_size(key)
        item_size = _item_size(item)
        own += key_size + 1 + item_size
        before: Any = old.get(key, _ABSENT)
        if before is _ABSENT:
            total += key_size + 2 + item_size
        else:
            total += item_size - _item_size(before)
    return total, own


def size(value: Value | None) -> int:
    """R4: byte length of the canonical JSON of a value or delta; a destroy (None) is 0.

    `ensure_ascii` keeps its default, as in `traces.canonical`, so characters are bytes.
    """
    if value is None:
        return 0
    if _COMPILED:
        return _value_size(value)
    return _encoded_size(value)


def total_size(values: list[Value]) -> int:
    """R4 summed over `values` (the payloads of one batch).

    Compiled, field by field; interpreted, with one encoder call for the batch, as a
    sender serializes it once: the JSON list `[v1,...,vn]` is the items, n - 1 commas
    and two brackets long.
    """
    if not values:
        return 0
    if _COMPILED:
        total = 0
        for value in values:
            total += _value_size(value)
        return total
    return _encoded_size(values) - len(values) - 1


def java_hash(key: str) -> int:
    """R28: Java's `String.hashCode` of `key`, over its UTF-16 code units (a character
    outside the BMP is two surrogates), as a signed 32-bit integer."""
    h: i64 = 0  # below 2**32 between characters: machine integers when compiled
    for character in key:
        code: i64 = ord(character)
        if code > 0xFFFF:
            code -= 0x10000
            h = (31 * h + 0xD800 + (code >> 10)) & 0xFFFFFFFF
            h = (31 * h + 0xDC00 + (code & 0x3FF)) & 0xFFFFFFFF
        else:
            h = (31 * h + code) & 0xFFFFFFFF
    return h - 0x100000000 if h >= 0x80000000 else h


def bucket_of(key: str, buckets: int) -> int:
    """R28: `|hashCode rem B|`, Java's `%` truncating toward zero."""
    return abs(java_hash(key)) % buckets


@final
@mypyc_attr(acyclic=True)
class Event:
    """One gateway event in one sender's queue (R11, R22).

    The payload (id, key, entry, base, delta) is shared with every copy of the event;
    the queue-specific fields (`recipients`, `possible_duplicate`, `converted`,
    `enqueued_at`) belong to this copy.

    `entry` is the origin's new entry and `base` the entry a delta was applied to (R10).
    Both are the origin's own, immutable objects: a receiver stores `entry` as is. A tag
    names one write (R9, R21), so a receiver whose entry has `base`'s tag holds `base`
    itself, and the delta's result is `entry.value`, already built (R16.4, R16.5).
    """

    __slots__ = (
        "base",
        "bucket",
        "converted",
        "delta",
        "delta_size",
        "enqueued_at",
        "entry",
        "id",
        "key",
        "on_disk",
        "op",
        "origin",
        "possible_duplicate",
        "queued",
        "recipients",
        "recovered",
        "seq",
        "size",
        "slot",
        "thread",
        "value",
    )

    def __init__(
        self,
        id: str,
        origin: int,
        seq: int,
        key: str,
        op: str,
        entry: Entry,
        base: Entry | None,
        delta: Value | None,
        converted: bool,
        recipients: frozenset[int],
        enqueued_at: int,
        thread: int,
        size: int,
        bucket: int,
    ) -> None:
        self.id = id  # f"{origin}:{seq}"
        self.origin = origin
        self.seq = seq
        self.key = key
        self.op = op  # R10 label: create | update | destroy
        self.entry = entry
        self.value = entry.value  # the full value (None for a destroy, R11)
        self.base = base  # the origin's entry before a delta (R10), else None
        self.delta = delta  # the changes of a `delta` operation, else None
        self.delta_size = -1  # R4 of `delta` when its write counted it, else -1
        self.converted = converted  # R19: converted to ship its full value
        self.recipients = recipients
        self.possible_duplicate = False
        self.enqueued_at = enqueued_at
        self.thread = thread  # v2.0: the client thread (R29's "thread" policy)
        self.size = size  # R4 of the full value: what it ships full and holds (R35)
        self.bucket = bucket  # R28 at the site whose queue holds it; -1 when replicated
        self.on_disk = False  # R35: held on disk, not in memory
        self.queued = True  # a lazy queue's (`AppendOrder`): still in its dispatcher's queue
        self.recovered = False  # R32, R36, R37: kept across a restart, so not indexed
        self.slot = -1  # its slot in the dispatcher's durable queue (impl/queue_store.py)

    @property
    def tag(self) -> tuple[int, int, int]:
        """The version tag of the event's entry (R2)."""
        return self.entry.tag()

    def copy_for_queue(self, recipients: frozenset[int], enqueued_at: int, bucket: int) -> Event:
        """Another queue's copy (R22 for forwarding).

        Keeps id, origin, key, op, entry, base, delta, thread, the sizes and the R19
        `converted` flag; sets `recipients`, `enqueued_at` and the bucket at the new site
        (R28); `possible_duplicate` starts false.
        """
        copy = Event(
            self.id,
            self.origin,
            self.seq,
            self.key,
            self.op,
            self.entry,
            self.base,
            self.delta,
            self.converted,
            recipients,
            enqueued_at,
            self.thread,
            self.size,
            bucket,
        )
        copy.delta_size = self.delta_size
        return copy


@final
@mypyc_attr(acyclic=True)
class EventQueue:
    """A sender's queue (R12), oldest first; the batch in flight is its prefix (R13).

    A list and the index of its head: appending, reading the head and taking a prefix
    off are O(1) (amortized: the list drops its dead prefix once that is half of it).
    """

    __slots__ = ("_events", "_head")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._head = 0

    def size(self) -> int:
        return len(self._events) - self._head

    def head(self) -> Event:
        """The oldest event (the queue must not be empty)."""
        return self._events[self._head]

    def at(self, index: int) -> Event:
        """The event `index` places behind the head."""
        return self._events[self._head + index]

    def append(self, event: Event) -> None:
        self._events.append(event)

    def prefix(self, count: int) -> list[Event]:
        """The oldest `count` events (fewer if the queue is shorter), oldest first."""
        head = self._head
        return self._events[head : head + count]

    def remove_prefix(self, count: int) -> None:
        """Take the oldest `count` events off (at most the whole queue)."""
        events = self._events
        head = self._head + count
        if head >= len(events):
            events.clear()
            head = 0
        elif head >= 64 and 2 * head >= len(events):
            del events[:head]
            head = 0
        self._head = head

    def push_front(self, events: list[Event]) -> None:
        """Put `events` back at the head, in their order (R19)."""
        count = len(events)
        head = self._head
        if count <= head:
            head -= count
            self._events[head : head + count] = events
            self._head = head
        else:
            self._events[:head] = events
            self._head = 0

    def clear(self) -> None:
        self._events.clear()
        self._head = 0

    def events(self) -> list[Event]:
        """All the events, oldest first (a copy)."""
        return self._events[self._head :]


@final
@mypyc_attr(acyclic=True)
class AppendOrder:
    """A queue whose events may leave out of order, in append order: a parallel
    dispatcher's (a batch takes its buckets' oldest, R31), each of its bucket FIFOs, and a
    conflating serial dispatcher's (R32 takes an update out of the middle). An event that
    leaves is unflagged (`queued`, shared by every `AppendOrder` holding it) and skipped;
    the head moves past the unflagged ones. Amortized O(1) per event."""

    __slots__ = ("_events", "_head", "_live")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._head = 0
        self._live = 0

    def size(self) -> int:
        return self._live

    def head(self) -> Event:
        """The oldest queued event (the queue must not be empty)."""
        return self._events[self._head]

    def append(self, event: Event) -> None:
        event.queued = True
        self._events.append(event)
        self._live += 1

    def first(self, count: int) -> list[Event]:
        """The oldest `count` queued events (fewer if it holds fewer), oldest first."""
        out: list[Event] = []
        events = self._events
        index = self._head
        end = len(events)
        while index < end and len(out) < count:
            event = events[index]
            if event.queued:
                out.append(event)
            index += 1
        return out

    def left(self, count: int) -> None:
        """`count` of its events were unflagged: move the head past the gone ones, and
        drop the gone ones once they outnumber the queued ones (so the list holds at most
        twice the queued events, and a gone event is released soon after it left)."""
        live = self._live = self._live - count
        events = self._events
        head = self._head
        end = len(events)
        while head < end and not events[head].queued:
            head += 1
        if head >= end:
            events.clear()
            head = 0
        elif end - live > live:
            if head + live == end:  # every gone one is before the head
                del events[:head]
            else:
                self._events = [event for event in events[head:] if event.queued]
            head = 0
        self._head = head

    def clear(self) -> None:
        self._events.clear()
        self._head = 0
        self._live = 0

    def events(self) -> list[Event]:
        """The queued events, oldest first (a copy)."""
        return [event for event in self._events[self._head :] if event.queued]


@final
@mypyc_attr(acyclic=True)
class InFlight:
    """R13: a dispatcher's one unacknowledged batch (a serial one's queue prefix, a
    parallel one's buckets' oldest events, R31), and what its events hold of queue
    memory (R35): the bytes of those in memory and how many are on disk. R33: batch
    conflation keeps some members back; `shipped` are the others (all of them when
    `kept_back` is empty)."""

    __slots__ = (
        "batch_id",
        "events",
        "ids",
        "kept_back",
        "memory",
        "on_disk",
        "sent_at",
        "shipped",
        "shipped_ids",
    )

    def __init__(
        self,
        batch_id: int,
        events: list[Event],
        ids: list[str],
        sent_at: int,
        memory: int,
        on_disk: int,
        shipped: list[Event],
        shipped_ids: list[str],
        kept_back: list[bool],
    ) -> None:
        self.batch_id = batch_id
        self.events = events  # every member, in batch order
        self.ids = ids  # the members' event ids, for observations
        self.sent_at = sent_at
        self.memory = memory
        self.on_disk = on_disk
        self.shipped = shipped
        self.shipped_ids = shipped_ids
        self.kept_back = kept_back  # per member: kept back by R33 ([]: none was)


@final
@mypyc_attr(acyclic=True)
class BatchMessage:
    """A batch in the network (R15): the events and how each was shipped (R14)."""

    __slots__ = ("as_delta", "batch_id", "events")

    def __init__(self, batch_id: int, events: list[Event], as_delta: list[bool]) -> None:
        self.batch_id = batch_id
        self.events = events
        self.as_delta = as_delta


@final
@mypyc_attr(acyclic=True)
class AckMessage:
    """R17: the receiver's answer: one status per event, the exception of each `failed`."""

    __slots__ = ("batch_id", "exceptions", "removed_count", "statuses")

    def __init__(
        self, batch_id: int, statuses: list[str], exceptions: dict[int, str], invalid_deltas: int
    ) -> None:
        self.batch_id = batch_id
        self.statuses = statuses
        self.exceptions = exceptions  # batch index -> exception
        # R18: the events that simply leave the queue (ok, duplicate, conflict); when it
        # is all of them the sender has nothing else to do. `invalid_deltas` counts the
        # `invalid_delta` statuses.
        self.removed_count = len(statuses) - len(exceptions) - invalid_deltas


@final
@mypyc_attr(acyclic=True)
class FailEntry:
    """An injected receiver failure for one (site, key): `fail` (R16.2); survives wipes."""

    __slots__ = ("exception", "remaining")

    def __init__(self, exception: str, remaining: int) -> None:
        self.exception = exception
        self.remaining = remaining


SITE_STATS: Final = ("applied", "duplicates", "conflicts", "failures", "retries", "invalid_deltas")
SENDER_STATS: Final = (
    "batches_sent",
    "events_sent",
    "events_resent",
    "bytes_full",
    "bytes_delta",
    "batches_timed_out",
    "connection_failures",
    "events_dropped",
    "invalid_deltas",
    "dlq_records",
    "redelivered",  # R26 (v1.2)
    "redelivery_superseded",
    "redelivery_unrecoverable",
    "events_conflated_in_queue",  # v2.0 (§16.6)
    "events_conflated_from_batches",
    "conflation_full_values",
    "events_lost_on_restart",
    "events_not_queued_stopped",
    "events_discarded_clean_start",
    "events_exceeding_alert_threshold",
)


@final
class SiteState:
    """One site (R1): its region, its receiver's memory and settings, its senders."""

    __slots__ = (
        "applied",
        "bucket_routes",
        "buckets",
        "enqueued",
        "entries",
        "event_prefix",
        "fails",
        "id",
        "known_buckets",
        "last_issued",
        "origin_recipients",
        "remotes",
        "retry_attempts",
        "sender_ids",
        "senders",
        "seq",
        "stats",
        "stopped",
        "timestamp_floor",
        "up",
    )

    def __init__(self, site: int, receiver: ReceiverConfig, buckets: int) -> None:
        self.id = site
        self.buckets = buckets  # R28: total_num_buckets of a partitioned region, else 0
        # R28's bucket of each key written here (`bucket`).
        self.known_buckets: dict[str, int] = {}
        self.up = True
        self.seq = 0  # the last sequence number given out (R3); survives a wipe
        self.timestamp_floor = 0  # R9, R21: the least timestamp of a tag issued here
        self.last_issued = -1  # the largest timestamp of a tag issued here (-1: none)
        self.event_prefix = f"{site}:"  # event ids are "origin:seq"
        # The template of the `enqueued` observations of this site (§10), in field order.
        self.enqueued: dict[str, object] = {
            "kind": "enqueued",
            "site": site,
            "event": None,
            "key": None,
            "op": None,
            "version": None,
            "value": None,
            "senders": None,
            "routes": None,
        }
        # The `routes` of the `enqueued` observations by bucket, when every route of
        # the senders here follows the bucket (R29) and none is stopped (R37); else None.
        self.bucket_routes: dict[int, dict[str, object]] | None = None
        self.entries: dict[str, Entry] = {}
        self.stats: dict[str, int] = dict.fromkeys(SITE_STATS, 0)
        self.applied: dict[int, AppliedRanges] = {}  # origin -> applied seqs (R16.1)
        self.fails: dict[str, FailEntry] = {}  # injected failures by key (R16.2)
        self.retry_attempts = receiver.retry_attempts
        self.senders: tuple[SenderState, ...] = ()  # in sorted id order (R11, R22)
        # The ids of `senders`, shared by the `enqueued` observations (read-only, as
        # their values and routes are).
        self.sender_ids: list[str] = []
        self.remotes: frozenset[int] = frozenset()  # remotes of the senders here (R22)
        self.origin_recipients: frozenset[int] = frozenset({site})  # {site} | remotes (R11)
        self.stopped = 0  # how many of `senders` are stopped (R37: they queue nothing)

    def bucket(self, key: str) -> int:
        """R28: the bucket of `key` in this site's region, -1 in a replicated one. Each
        key's is remembered: `bucket_of` hashes every character (1,300 instructions a
        write of the parallel steady workload; a lookup takes a tenth)."""
        if not self.buckets:
            return -1
        known = self.known_buckets.get(key)
        if known is None:
            known = self.known_buckets[key] = bucket_of(key, self.buckets)
        return known


@final
class DispatcherState:
    """One dispatcher of a sender (R29): its queue, batch in flight, timers, network
    slots and batch ids; a parallel one's append order, bucket FIFOs, resend list and
    cursor (R31); its queue memory (R35); a conflating one's index (R32).

    The queue is `queue` (a prefix leaves at a time) for a serial dispatcher that does
    not conflate, else `order` (`lazy`: events leave from anywhere)."""

    __slots__ = (
        "ack_message",
        "batch_message",
        "buckets",
        "conflation",
        "cursor",
        "in_flight",
        "index",
        "last_batch_id",
        "lazy",
        "memory_bytes",
        "next_retry_at",
        "nonempty",
        "on_disk",
        "order",
        "queue",
        "resend",
    )

    def __init__(self, index: int, parallel: bool, lazy: bool) -> None:
        self.index = index
        self.lazy = lazy
        self.queue = EventQueue()  # serial, not conflating: the queue (R12)
        self.order = AppendOrder()  # otherwise: the queue, in append order (R31, R32)
        self.buckets: dict[int, AppendOrder] = {}  # parallel: bucket -> its FIFO (R31)
        self.conflation: dict[str, list[Event]] = {}  # R32: key -> its indexed updates
        self.nonempty: list[int] = []  # parallel: the buckets with queued events, ascending
        self.resend: list[Event] = []  # parallel: sent first by the next flush (R31)
        self.cursor = index if parallel else -1  # R31; -1: serial (observed as null)
        self.in_flight: InFlight | None = None
        self.next_retry_at = 0
        self.batch_message: BatchMessage | None = None
        self.ack_message: AckMessage | None = None
        self.last_batch_id = 0  # never reset, not even by a wipe (R15)
        self.memory_bytes = 0  # R35
        self.on_disk = 0  # R35: how many queued events are on disk

    def reset(self, parallel: bool) -> None:
        """R21's wipe: empty, idle; the batch-id counter is kept."""
        self.queue.clear()
        self.order.clear()
        self.buckets = {}
        self.conflation = {}
        self.nonempty = []
        self.resend = []
        self.cursor = self.index if parallel else -1
        self.in_flight = None
        self.batch_message = None
        self.ack_message = None
        self.next_retry_at = 0
        self.memory_bytes = 0
        self.on_disk = 0


@final
class SenderState:
    """One gateway sender (R12-R15, R18-R20, R24) and its dispatchers (R29-R31)."""

    __slots__ = (
        "ack_timeout_ms",
        "alert_threshold_ms",
        "batch_size",
        "batch_time_interval_ms",
        "conflation",
        "delta",
        "dispatcher_threads",
        "dispatchers",
        "dlq",
        "dlq_enabled",
        "dlq_secure",
        "home",
        "id",
        "manual_start",
        "memory_limit",
        "order_policy",
        "parallel",
        "paused",
        "persistent",
        "remote",
        "remote_site",
        "retry_interval_ms",
        "running",
        "site",
        "stats",
    )

    def __init__(self, config: SenderConfig, home: SiteState, remote_site: SiteState) -> None:
        self.id = config.id
        self.site = config.site
        self.remote = config.remote
        self.home = home
        self.remote_site = remote_site
        self.batch_size = config.batch_size
        self.batch_time_interval_ms = config.batch_time_interval_ms
        self.ack_timeout_ms = config.ack_timeout_ms
        self.retry_interval_ms = config.retry_interval_ms
        self.delta = config.delta
        self.dlq_enabled = config.failure_listener == "dlq"
        self.dlq_secure = config.dlq_secure
        self.parallel = config.parallel
        self.dispatcher_threads = config.dispatcher_threads
        self.order_policy = config.order_policy
        # R35: each dispatcher's share of the sender's queue memory
        self.memory_limit = config.maximum_queue_memory_bytes // config.dispatcher_threads
        self.conflation = config.enable_batch_conflation  # R32-R34
        self.persistent = config.enable_persistence  # R36, R37
        self.alert_threshold_ms = config.alert_threshold_ms  # R38
        self.manual_start = config.manual_start  # R37
        lazy = config.parallel or config.enable_batch_conflation
        self.dispatchers: list[DispatcherState] = [
            DispatcherState(index, config.parallel, lazy)
            for index in range(config.dispatcher_threads)
        ]
        self.running = not config.manual_start  # R37
        self.paused = False
        self.stats: dict[str, int] = dict.fromkeys(SENDER_STATS, 0)
        self.dlq: list[dict[str, object]] = []
