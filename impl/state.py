"""The mutable state of the fast engine: gateway events, sites, senders, network messages.

Rules: R2 (entries: a value and its version tag; tombstones have value None), R4 (sizes,
counted field by field, per batch), R11 (the fields of a queued gateway event), R13 (one
in-flight batch per sender), R17 (the ack message), R22 (the forwarded copy of an event).

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
    object is shared with the events and the receivers (see `Event`).
    """

    __slots__ = ("dsid", "timestamp", "value", "version")

    def __init__(self, value: Value | None, version: int, timestamp: int, dsid: int) -> None:
        self.value = value
        self.version = version
        self.timestamp = timestamp
        self.dsid = dsid

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


def _int_size(number: int) -> int:
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


def _string_size(text: str) -> int:
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
    total = 1 + len(value)  # the braces and n - 1 commas
    for key, item in value.items():
        if type(key) is not str:
            return _encoded_size(value)
        total += _string_size(key) + 1  # the name and its colon
        if type(item) is int:
            total += _int_size(item)
        elif type(item) is str:
            total += _string_size(item)
        elif item is None:
            total += 4
        elif type(item) is bool:
            total += 4 if item else 5
        else:
            total += _encoded_size(item)
    return total


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
        "converted",
        "delta",
        "enqueued_at",
        "entry",
        "id",
        "key",
        "op",
        "origin",
        "possible_duplicate",
        "recipients",
        "seq",
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
        self.converted = converted  # R19: converted to ship its full value
        self.recipients = recipients
        self.possible_duplicate = False
        self.enqueued_at = enqueued_at

    @property
    def tag(self) -> tuple[int, int, int]:
        """The version tag of the event's entry (R2)."""
        return self.entry.tag()

    def copy_for_queue(self, recipients: frozenset[int], enqueued_at: int) -> Event:
        """Another queue's copy (R11 for a second sender, R22 for forwarding).

        Keeps id, origin, key, op, entry, base, delta and the R19 `converted` flag; sets
        `recipients` and `enqueued_at`; `possible_duplicate` starts false.
        """
        return Event(
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
        )


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
class InFlight:
    """R13: the one unacknowledged batch of a sender; its events are the queue's prefix."""

    __slots__ = ("batch_id", "events", "ids", "sent_at")

    def __init__(self, batch_id: int, events: list[Event], ids: list[str], sent_at: int) -> None:
        self.batch_id = batch_id
        self.events = events
        self.ids = ids  # the event ids, for observations
        self.sent_at = sent_at


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
)


@final
class SiteState:
    """One site (R1): its region, its receiver's memory and settings, its senders."""

    __slots__ = (
        "applied",
        "enqueued",
        "entries",
        "event_prefix",
        "fails",
        "id",
        "last_issued",
        "origin_recipients",
        "remotes",
        "retry_attempts",
        "sender_ids",
        "senders",
        "seq",
        "stats",
        "timestamp_floor",
        "up",
    )

    def __init__(self, site: int, receiver: ReceiverConfig) -> None:
        self.id = site
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
        }
        self.entries: dict[str, Entry] = {}
        self.stats: dict[str, int] = dict.fromkeys(SITE_STATS, 0)
        self.applied: dict[int, AppliedRanges] = {}  # origin -> applied seqs (R16.1)
        self.fails: dict[str, FailEntry] = {}  # injected failures by key (R16.2)
        self.retry_attempts = receiver.retry_attempts
        self.senders: tuple[SenderState, ...] = ()  # in sorted id order (R11, R22)
        self.sender_ids: list[str] = []  # the ids of `senders` (copied, never shared)
        self.remotes: frozenset[int] = frozenset()  # remotes of the senders here (R22)
        self.origin_recipients: frozenset[int] = frozenset({site})  # {site} | remotes (R11)


@final
class SenderState:
    """One serial gateway sender (R12-R15, R18-R20, R24)."""

    __slots__ = (
        "ack_message",
        "ack_timeout_ms",
        "batch_message",
        "batch_size",
        "batch_time_interval_ms",
        "delta",
        "dlq",
        "dlq_enabled",
        "dlq_secure",
        "home",
        "id",
        "in_flight",
        "last_batch_id",
        "next_retry_at",
        "queue",
        "remote",
        "remote_site",
        "retry_interval_ms",
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
        self.queue = EventQueue()
        self.in_flight: InFlight | None = None
        self.next_retry_at = 0
        self.batch_message: BatchMessage | None = None
        self.ack_message: AckMessage | None = None
        self.last_batch_id = 0  # never reset, not even by a wipe (R15)
        self.stats: dict[str, int] = dict.fromkeys(SENDER_STATS, 0)
        self.dlq: list[dict[str, object]] = []
