"""The mutable state of the fast engine: gateway events, sites, senders, network messages.

Rules: R2 (entries, kept as `(value, tag)` pairs; tombstones have value None), R4 (sizes,
counted from one serialization per batch), R11 (the fields of a queued gateway event), R13 (one
in-flight batch per sender), R17 (the ack message), R22 (the forwarded copy of an event).

Values (dicts of field -> scalar) are never mutated once stored: a write or a delta
builds a new dict, so events, entries and observations can share them.
"""

from __future__ import annotations

import json
from collections import deque
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Final

from impl.applied import AppliedRanges
from traces.config import ReceiverConfig, SenderConfig

Scalar = int | str | bool | None
Value = dict[str, Scalar]
Tag = tuple[int, int, int]
"""A version tag `(entry_version, timestamp, dsid)` (R2)."""
Entry = tuple[Value | None, Tag]
"""A region entry: `(value, tag)`; value None is a tombstone (R2)."""


def _unencodable(value: object) -> object:
    raise TypeError(f"not a JSON scalar: {value!r}")


# R4's encoder without `sort_keys` (key order does not change the length), built once:
# `json.dumps` builds a new encoder on every call, which costs more than the encoding.
_C_ENCODER: Final = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _unencodable, encode_basestring_ascii, None, ":", ",", False, False, True
    )
)
_ENCODE: Final = json.JSONEncoder(separators=(",", ":")).encode


def size(value: Value | None) -> int:
    """R4: byte length of the canonical JSON of a value or delta; a destroy (None) is 0.

    `ensure_ascii` keeps its default, as in `traces.canonical`, so characters are bytes.
    """
    if value is None:
        return 0
    if _C_ENCODER is not None:
        return len("".join(_C_ENCODER(value, 0)))
    return len(_ENCODE(value))


def total_size(values: list[Value]) -> int:
    """R4 summed over `values` with one encoder call, as a sender serializes a batch once.

    The JSON list `[v1,...,vn]` is the items, n - 1 commas and two brackets long.
    """
    if not values:
        return 0
    if _C_ENCODER is not None:
        return len("".join(_C_ENCODER(values, 0))) - len(values) - 1
    return len(_ENCODE(values)) - len(values) - 1


class Event:
    """One gateway event in one sender's queue (R11, R22).

    The payload (id, key, entry, base, delta) is shared with every copy of the event;
    the queue-specific fields (`recipients`, `possible_duplicate`, `converted`,
    `enqueued_at`) belong to this copy.

    `entry` is the origin's new entry `(value, tag)` and `base` the entry a delta was
    applied to (R10). Both are the origin's own, immutable objects: a receiver stores
    `entry` as is, so when its current entry *is* `base` (the common case: it holds
    what the origin held) the delta's result is `value` itself, already built (R16.4).
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
        "tag",
        "value",
    )

    def __init__(
        self,
        origin: int,
        seq: int,
        key: str,
        op: str,
        entry: Entry,
        base: Entry | None,
        delta: Value | None,
        recipients: frozenset[int],
        enqueued_at: int,
    ) -> None:
        self.id = f"{origin}:{seq}"
        self.origin = origin
        self.seq = seq
        self.key = key
        self.op = op  # R10 label: create | update | destroy
        self.entry = entry
        self.value, self.tag = entry  # the full value (None for a destroy, R11); the tag
        self.base = base  # the origin's entry before a delta (R10), else None
        self.delta = delta  # the changes of a `delta` operation, else None
        self.converted = False  # R19: converted to ship its full value
        self.recipients = recipients
        self.possible_duplicate = False
        self.enqueued_at = enqueued_at

    def copy_for_queue(self, recipients: frozenset[int], enqueued_at: int) -> Event:
        """Another queue's copy (R11 for a second sender, R22 for forwarding).

        Keeps id, origin, key, op, entry, base, delta and the R19 `converted` flag; sets
        `recipients` and `enqueued_at`; `possible_duplicate` starts false.
        """
        copy = Event.__new__(Event)
        copy.id = self.id
        copy.origin = self.origin
        copy.seq = self.seq
        copy.key = self.key
        copy.op = self.op
        copy.entry = self.entry
        copy.value = self.value
        copy.tag = self.tag
        copy.base = self.base
        copy.delta = self.delta
        copy.converted = self.converted
        copy.recipients = recipients
        copy.possible_duplicate = False
        copy.enqueued_at = enqueued_at
        return copy


class InFlight:
    """R13: the one unacknowledged batch of a sender; its events are the queue's prefix."""

    __slots__ = ("batch_id", "events", "ids", "sent_at")

    def __init__(self, batch_id: int, events: list[Event], ids: list[str], sent_at: int) -> None:
        self.batch_id = batch_id
        self.events = events
        self.ids = ids  # the event ids, for observations
        self.sent_at = sent_at


class BatchMessage:
    """A batch in the network (R15): the events and how each was shipped (R14)."""

    __slots__ = ("as_delta", "batch_id", "events")

    def __init__(self, batch_id: int, events: list[Event], as_delta: list[bool]) -> None:
        self.batch_id = batch_id
        self.events = events
        self.as_delta = as_delta


class AckMessage:
    """R17: the receiver's answer: one status per event, the exception of each `failed`."""

    __slots__ = ("batch_id", "exceptions", "removed_count", "statuses")

    def __init__(self, batch_id: int, statuses: list[str], exceptions: dict[int, str]) -> None:
        self.batch_id = batch_id
        self.statuses = statuses
        self.exceptions = exceptions  # batch index -> exception
        # R18: the events that simply leave the queue (ok, duplicate, conflict); when it
        # is all of them the sender has nothing else to do.
        self.removed_count = len(statuses) - len(exceptions) - statuses.count("invalid_delta")


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
)


class SiteState:
    """One site (R1): its region, its receiver's memory and settings, its senders."""

    __slots__ = (
        "applied",
        "entries",
        "fails",
        "id",
        "origin_recipients",
        "remotes",
        "retry_attempts",
        "sender_ids",
        "senders",
        "seq",
        "stats",
        "up",
    )

    def __init__(self, site: int, receiver: ReceiverConfig) -> None:
        self.id = site
        self.up = True
        self.seq = 0  # the last sequence number given out (R3); survives a wipe
        self.entries: dict[str, Entry] = {}
        self.stats: dict[str, int] = dict.fromkeys(SITE_STATS, 0)
        self.applied: dict[int, AppliedRanges] = {}  # origin -> applied seqs (R16.1)
        self.fails: dict[str, FailEntry] = {}  # injected failures by key (R16.2)
        self.retry_attempts = receiver.retry_attempts
        self.senders: tuple[SenderState, ...] = ()  # in sorted id order (R11, R22)
        self.sender_ids: tuple[str, ...] = ()
        self.remotes: frozenset[int] = frozenset()  # remotes of the senders here (R22)
        self.origin_recipients: frozenset[int] = frozenset({site})  # {site} | remotes (R11)


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
        self.queue: deque[Event] = deque()
        self.in_flight: InFlight | None = None
        self.next_retry_at = 0
        self.batch_message: BatchMessage | None = None
        self.ack_message: AckMessage | None = None
        self.last_batch_id = 0  # never reset, not even by a wipe (R15)
        self.stats: dict[str, int] = dict.fromkeys(SENDER_STATS, 0)
        self.dlq: list[dict[str, object]] = []
