"""One live site: an OS process running asyncio (docs/LIVE.md).

    python -m conformance.live.site RUN.json SITE [--recover | --recover-wiped]

RUN.json (written by `conformance.live.run`) holds the configuration, the seed, the load
and the planted bug if any. The process opens its event log (`site-SITE.jsonl` beside
RUN.json), binds its receiver to 127.0.0.1 on a free port and prints `PORT n`; it then
reads one JSON line on stdin, the proxy ports of its senders, the end of the load and the
grace time (epoch ms), runs the client load until the end, keeps dispatching until the
end of the grace time and exits; EOF on stdin instead (`wanconform live` is gone, killed)
stops it at once, between two steps. Every step it takes is appended to its event log at
once, in one write, with `t` and `at` read from the machine's realtime clock
(`time.time_ns()`), which every site process shares.

The log is also the site's memory: a site killed with SIGKILL and started again with
`--recover` reads its own log and takes its steps again, without their I/O, to its state
before the kill (R21: a site that comes back keeps everything); with `--recover-wiped`
it keeps only what a wiped site keeps (R21: its sequence numbers, batch ids and the
timestamp floor above every tag it issued). A delivery's line carries the batch's events
in `_events` for this (a field starting with `_` is the process's own: validate ignores
it). A line is written with one `write` to a file opened for appending, so a kill leaves
it whole or absent.

The rules it implements (SPEC v2.0 but R26's redelivery; docs/LIVE.md): R9-R11 client
writes (put, delta, destroy, each from a client thread), R12-R15 per dispatcher (R14's
deltas), R16 the receiver's checks (duplicate, injected failure, conflict, delta base),
R17-R19 acks and the full-value fallback, R20 timeouts (the connection closed, the
events marked possible duplicates), R21 through kills and restarts, R22 forwarding, R24
dead letters in the impl's durable store, R28-R31 serial and parallel senders with their
dispatchers, R32-R34 conflation, R35 (nothing to log), R36-R37 the sender's lifecycle
(a persistent queue also in the impl's durable queue store), R38 alerts. A connection
that the proxy does not complete (no `hello`) is R15's connection failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.live.wire import read_frame, write_frame
from impl import dlq_store, queue_store
from traces.canonical import size
from traces.config import Config, SenderConfig, parse_config

FAILED = "FAILED "
"""How a site's line on stdout begins when it cannot write its log or a store; the
reason (the OS's) follows."""
BUGS = (
    "wrong_flush",
    "forward_to_origin",
    "resend_without_possible_duplicate",
    "ack_before_apply",
    "cursor_reset",
    "dead_letter_after_ack",
    "conflate_in_flight",
    "apply_duplicate_batch",
)
"""The bugs a live site can be told to have (`wanconform live --bug`)."""
EXCEPTION = "InjectedFailure"
"""The exception of a failure the load injects (R16.2)."""

COMPACT = (",", ":")
"""Log lines as JSON without spaces (`validate` reads compact lines fastest)."""

Version = tuple[int, int, int]  # [entry_version, timestamp, dsid]
THREADS = 4
"""The client threads of a site's load (R29's thread policy routes by them)."""


@dataclass(frozen=True, slots=True)
class Event:
    """A gateway event as a sender queues it (R11, R22)."""

    id: str
    origin: int
    key: str
    op: str  # create | update | destroy
    value: dict[str, Any] | None
    version: Version
    recipients: frozenset[int]
    enqueued_at: int
    thread: int = 0  # the client thread (R29's thread policy); a forwarded event keeps it
    bucket: int | None = None  # R28, at the site that queued it (None: replicated there)
    possible_duplicate: bool = False
    delta: dict[str, Any] | None = None  # R10: a delta write's changes
    base: Version | None = None  # R10: the tag it applies onto
    converted: bool = False  # R19, R34: ships its full value from now on

    def ships_as_delta(self, config: SenderConfig) -> bool:
        """R14."""
        return config.delta and self.delta is not None and not self.converted

    def record(self) -> dict[str, Any]:
        """What a persistent queue's store keeps of it."""
        return {**self.wire(), "enqueued_at": self.enqueued_at, "bucket": self.bucket}

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id, "origin": self.origin, "key": self.key, "op": self.op,
            "value": self.value, "version": list(self.version),
            "recipients": sorted(self.recipients), "thread": self.thread,
            "possible_duplicate": self.possible_duplicate, "delta": self.delta,
            "base": None if self.base is None else list(self.base),
            "converted": self.converted,
        }  # fmt: skip

    @staticmethod
    def from_wire(wire: dict[str, Any], recipients: frozenset[int], t: int,
                  bucket: int | None) -> Event:  # fmt: skip
        """A received event as R22 forwards it (new recipients, enqueue time and bucket;
        not a possible duplicate; its delta, base and conversion kept)."""
        base = wire["base"]
        return Event(
            wire["id"], wire["origin"], wire["key"], wire["op"], wire["value"],
            tuple(wire["version"]), recipients, t, wire["thread"], bucket, False,
            wire["delta"], None if base is None else tuple(base), wire["converted"],
        )  # fmt: skip


def string_hash(key: str) -> int:
    """Java's `String.hashCode` (R28): over UTF-16 code units, in signed 32 bits."""
    units = key.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_rem(x: int, n: int) -> int:
    """|x rem n| with Java's `%` (it truncates toward zero)."""
    return abs(x) % n


@dataclass
class Batch:
    """A batch in flight: its id, its members (batch order), when it was sent, and the
    members shipped (R33: all but those conflated in the batch)."""

    batch_id: int
    events: list[Event]
    sent_at: int
    shipped: list[Event]
    conflated: list[tuple[str, str]]  # R33: (member, by), batch order


def dead_letter(config: SenderConfig, event: Event, exception: str | None) -> dict[str, Any]:
    """R24's record of a failed event (no value when the listener is secure); with its
    recipients and thread, for R26."""
    record: dict[str, Any] = {"event_id": event.id, "sender": config.id, "key": event.key,
                              "op": event.op, "exception": exception,
                              "version": list(event.version)}  # fmt: skip
    if not config.dlq_secure:
        record["value"] = event.value
    record["recipients"] = sorted(event.recipients)
    record["thread"] = event.thread
    return record


def newer(version: tuple[int, ...], than: tuple[int, ...]) -> bool:
    """R16.3's order of tags: whether `version` wins over `than`."""
    (ev, ts, dsid), (cev, cts, cdsid) = version, than
    if dsid == cdsid:
        return (ts, ev) > (cts, cev)
    return ts > cts or (ts == cts and dsid > cdsid)


def cut_torn_line(log: Path) -> None:
    """A kill mid-write can leave the log's last line cut short (a `write` that crosses a
    page boundary stops at the page where SIGKILL finds it): cut it before appending, as
    the stores cut a torn tail, so that the next line does not start inside it. The step
    it was is then as if the kill had come just before it: a step's line is written
    before its I/O (a batch sent, an ack), so none of that left the site."""
    if not log.exists():
        return
    with log.open("r+b") as file:
        end = file.seek(0, os.SEEK_END)
        if end == 0:
            return
        file.seek(end - 1)
        if file.read(1) == b"\n":
            return  # whole: the last line ends with its line break
        while end > 0:
            start = max(0, end - (1 << 16))
            file.seek(start)
            newline = file.read(end - start).rfind(b"\n")
            if newline >= 0:
                file.truncate(start + newline + 1)
                return
            end = start
        file.truncate(0)  # not even the header whole: it is written again


def conflate_batch(
    config: SenderConfig, members: list[Event]
) -> tuple[list[Event], list[tuple[str, str]], set[str]]:
    """R33: every update member with a later update of its key in the batch whose tag is
    newer stays a member but is not shipped, `by` the latest such update: the members
    shipped, (member, by) in batch order, and (R34) the survivors to convert to full,
    those that would ship as a delta on the tag of one they conflated."""
    conflated: list[tuple[str, str]] = []
    shipped, convert = [], set()
    for i, event in enumerate(members):
        later = [
            other for other in members[i + 1 :]
            if event.op == "update" and other.op == "update" and other.key == event.key
            and newer(other.version, event.version)
        ]  # fmt: skip
        if later:
            conflated.append((event.id, later[-1].id))
            if later[-1].ships_as_delta(config) and later[-1].base == event.version:
                convert.add(later[-1].id)
        else:
            shipped.append(event)
    return shipped, conflated, convert


@dataclass
class Dispatcher:
    """One dispatcher of a sender: its queue (append order), batch in flight, retry time,
    batch ids, connection and, parallel, its resend list and cursor (R29-R31)."""

    config: SenderConfig
    index: int
    buckets: int = 0  # the sender's site's bucket count (R28; 0: replicated)
    queue: list[Event] = field(default_factory=list)
    in_flight: Batch | None = None
    next_retry_at: int = 0
    last_batch_id: int = 0
    resend: list[Event] = field(default_factory=list)
    cursor: int = 0
    indexed: dict[str, list[str]] = field(default_factory=dict)  # R32: key -> update ids
    # enable_persistence: the impl's durable queue store mirrors `queue` (docs/LIVE.md)
    store: queue_store.QueueLog | None = None
    slots: dict[str, int] = field(default_factory=dict)  # event id -> its store slot
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.cursor = self.index

    def batch(self, bug: str | None) -> tuple[list[Event], int]:
        """R15 (serial: the queue's first `batch_size` events) or R31 (parallel: the
        resend list, then the oldest event not yet taken of the next owned bucket from the
        cursor, round robin), and the cursor afterwards."""
        size = min(self.config.batch_size, len(self.queue))
        if bug == "wrong_flush" and size > 1:
            size -= 1  # takes one event fewer than R15
        if not self.config.parallel:
            return self.queue[:size], self.cursor
        step = self.config.dispatcher_threads
        events = list(self.resend)
        taken: dict[int | None, int] = {}
        for event in events:
            taken[event.bucket] = taken.get(event.bucket, 0) + 1
        fifos: dict[int, list[Event]] = {}
        for event in self.queue:
            assert event.bucket is not None
            fifos.setdefault(event.bucket, []).append(event)
        cursor, owned = self.cursor, range(self.index, self.buckets, step)
        while len(events) < size:
            start = (cursor - self.index) // step
            order = [*owned[start:], *owned[:start]]
            found = next((b for b in order if len(fifos.get(b, ())) > taken.get(b, 0)), None)
            if found is None:
                break
            events.append(fifos[found][taken.get(found, 0)])
            taken[found] = taken.get(found, 0) + 1
            cursor = found + step if found + step < self.buckets else self.index
        if bug == "cursor_reset":  # every batch starts at the first bucket (R31 rotates)
            cursor = self.index
        return events, cursor

    # -- the queue's changes, mirrored in the store when there is one --------------------

    def push(self, event: Event) -> None:
        self.queue.append(event)
        if self.store is not None:
            self.slots[event.id] = self.store.append_one(event.record())

    def pull(self, ids: set[str]) -> None:
        """Events that left the queue (and the resend list, if there: R32)."""
        self.queue = [e for e in self.queue if e.id not in ids]
        self.resend = [e for e in self.resend if e.id not in ids]
        if self.store is not None:
            self.store.remove([self.slots.pop(i) for i in ids if i in self.slots])

    def mark(self, event: Event) -> None:
        """A queued event, now marked a possible duplicate (R20) or converted to ship its
        full value (R19, R34) (with the `conflate_in_flight` bug it may have left the
        queue)."""
        for position, queued in enumerate(self.queue):
            if queued.id == event.id:
                self.queue[position] = event
                if self.store is not None:
                    update = {"possible_duplicate": event.possible_duplicate,
                              "converted": event.converted}  # fmt: skip
                    self.store.update(self.slots[event.id], update)
                return

    def empty(self) -> None:
        self.queue.clear()
        self.resend.clear()
        self.indexed.clear()
        if self.store is not None:
            self.store.clear()
            self.slots.clear()


class Clock:
    """`t` (ms) and `at` (ns) of the realtime clock, never running back in this process."""

    def __init__(self) -> None:
        self.last = 0

    def read(self) -> tuple[int, int]:
        self.last = max(self.last, time.time_ns())
        return self.last // 1_000_000, self.last


class Site:
    def __init__(self, config: Config, site: int, run: dict[str, Any], log: Path) -> None:
        self.config = config
        self.site = site
        self.bug = run.get("bug")
        self.clock = Clock()
        self.entries: dict[str, tuple[dict[str, Any] | None, Version]] = {}
        self.applied: set[str] = set()
        self.failures: dict[str, tuple[str, int]] = {}  # R16.2: key -> exception, attempts
        self.retry_attempts = config.receiver(site).retry_attempts
        self.seq = 0
        self.floor = 0  # R21: above every tag issued before a wipe
        self.issued = 0  # the largest timestamp of a tag this site issued (R9)
        self.buckets = config.buckets(site)
        self.senders = {
            s.id: [Dispatcher(s, d, self.buckets) for d in range(s.dispatcher_threads)]
            for s in sorted(config.senders, key=lambda s: s.id)
            if s.site == site
        }
        self.remotes = frozenset(ds[0].config.remote for ds in self.senders.values())
        # R37: a sender runs unless it starts manually; a paused one does not flush
        self.running = {sid: not ds[0].config.manual_start for sid, ds in self.senders.items()}
        self.paused = dict.fromkeys(self.senders, False)
        # R24: the impl's durable dead-letter store, one per site (kept across kills and
        # wipes: R21 keeps dead letters, they are on disk)
        listening = [sid for sid, ds in self.senders.items() if ds[0].config.failure_listener]
        self.dead_letters: dict[str, dlq_store.SenderLog] = {}
        # R24: each sender's dead letters as the log says (the store is made to agree at
        # every recovery: a record is written before its ack's line)
        self.dead: dict[str, list[dict[str, Any]]] = {sid: [] for sid in self.senders}
        self.recovering = False
        if listening:
            store = log.parent / f"dlq-site-{site}"
            store.mkdir(exist_ok=True)
            self.dead_letters = dlq_store.open_store(store, listening, lambda _: None)
        # R36: a persistent sender's queues in the impl's durable queue store, written
        # after each step's line (buffered: one write a step), fsynced as the impl does
        self.stores: dict[tuple[str, int], queue_store.QueueLog] = {}
        lasting = [(d.config.id, d.index) for ds in self.senders.values() for d in ds
                   if d.config.enable_persistence]  # fmt: skip
        if lasting:
            self.stores = queue_store.open_queue_store(
                log.parent / f"queues-site-{site}", lasting, lambda _: None, "batch",
                buffered=True,
            )  # fmt: skip
        self.stopping = False
        self.log_path = log
        cut_torn_line(log)
        self.fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size == 0:
            header = {"log": "events", "version": 1, "process": f"site-{site}",
                      "config": run["config"]}  # fmt: skip
            os.write(self.fd, (json.dumps(header, separators=COMPACT) + "\n").encode())

    # -- the log ------------------------------------------------------------------------

    def log(self, t: int, at: int, step: dict[str, Any], observed: list[dict[str, Any]]) -> None:
        """A step's line, then its changes to the queue stores (the log comes first: a
        kill between the two leaves a store one step behind, which recovery sees)."""
        line = {"t": t, "at": at, **step, "observed": observed}
        os.write(self.fd, (json.dumps(line, separators=COMPACT) + "\n").encode())
        for store in self.stores.values():
            store.flush()

    def sync(self, dispatcher: Dispatcher) -> None:
        """A persistent queue made durable against a power loss too (as the impl does:
        before a batch is sent and after an ack's removals)."""
        if dispatcher.store is not None:
            dispatcher.store.sync()

    # -- the state's changes, shared by the live steps and recovery ----------------------

    def route(self, config: SenderConfig, event: Event) -> int:
        """R29: the dispatcher of `config` that queues `event`."""
        n = config.dispatcher_threads
        if config.parallel:
            assert event.bucket is not None
            return event.bucket % n
        if n == 1:
            return 0
        if config.order_policy == "thread":
            return java_rem(event.thread, n)
        if config.order_policy == "partition" and event.bucket is not None:
            return java_rem(event.bucket, n)
        return java_rem(string_hash(event.key), n)

    def enqueue(self, event: Event, sender: str) -> tuple[int | None, list[dict[str, Any]]]:
        """R11/R22 through R29: the dispatcher that queued `event` (None when the sender
        is stopped: R37, not queued), and R32's `conflated` observation if any."""
        if not self.running[sender]:
            return None, []
        config = self.senders[sender][0].config
        dispatcher = self.senders[sender][self.route(config, event)]
        dispatcher.push(event)
        dispatcher.wake.set()
        if not config.enable_batch_conflation or event.op != "update":
            return dispatcher.index, []
        # R32: the most recently appended indexed update of the key still queued leaves,
        # unless it is in the batch in flight or this one's tag is not newer
        queued = {e.id: e for e in dispatcher.queue}
        earlier = [i for i in dispatcher.indexed.get(event.key, []) if i in queued]
        dispatcher.indexed[event.key] = [*earlier, event.id]
        if not earlier:
            return dispatcher.index, []
        previous = queued[earlier[-1]]
        flying = dispatcher.in_flight is not None and any(
            e.id == previous.id for e in dispatcher.in_flight.events
        )
        if self.bug == "conflate_in_flight":  # as Geode's serial queue does (R32's note)
            flying = False
        if flying or not newer(event.version, previous.version):
            return dispatcher.index, []
        dispatcher.pull({previous.id})
        dispatcher.indexed[event.key].remove(previous.id)
        if event.ships_as_delta(config) and event.base == previous.version:  # R34
            dispatcher.mark(replace(event, converted=True))
        conflated = {"kind": "conflated", "sender": sender, "dispatcher": dispatcher.index,
                     "event": previous.id, "by": event.id, "where": "queue"}  # fmt: skip
        return dispatcher.index, [conflated]

    def bucket_of(self, key: str) -> int | None:
        return java_rem(string_hash(key), self.buckets) if self.buckets else None

    def apply_write(
        self, t: int, key: str, op: str, event_id: str, version: Version,
        value: dict[str, Any] | None, thread: int, delta: dict[str, Any] | None = None,
    ) -> tuple[dict[str, int | None], list[dict[str, Any]]]:  # fmt: skip
        """The write's effect (`delta`: a delta write's changes, R10): the dispatcher each
        sender queued it on (None: the sender is stopped), and the `not_queued` and
        `conflated` observations, sender by sender."""
        self.seq = max(self.seq, int(event_id.split(":")[1]))
        self.issued = max(self.issued, version[1])
        base = self.entries[key][1] if delta is not None else None
        self.entries[key] = (value, version)
        recipients = frozenset({self.site, *self.remotes})
        event = Event(event_id, self.site, key, op, value, version, recipients, t, thread,
                      self.bucket_of(key), False, delta, base)  # fmt: skip
        routes: dict[str, int | None] = {}
        after: list[dict[str, Any]] = []
        for sid in self.senders:
            routes[sid], conflated = self.enqueue(event, sid)
            after += [self.not_queued(sid, event_id)] if routes[sid] is None else conflated
        return routes, after

    def apply_flush(self, dispatcher: Dispatcher, t: int) -> Batch:
        events, dispatcher.cursor = dispatcher.batch(self.bug)
        shipped, conflated = events, list[tuple[str, str]]()
        if dispatcher.config.enable_batch_conflation and len(events) > 1:
            shipped, conflated, convert = conflate_batch(dispatcher.config, events)  # R33
            if convert:  # R34: these ship their full value, from now on
                events = [replace(e, converted=True) if e.id in convert else e for e in events]
                shipped = [replace(e, converted=True) if e.id in convert else e for e in shipped]
                for event in events:
                    if event.id in convert:
                        dispatcher.mark(event)
        dispatcher.last_batch_id += 1
        dispatcher.resend = []
        dispatcher.in_flight = Batch(dispatcher.last_batch_id, events, t, shipped, conflated)
        return dispatcher.in_flight

    @staticmethod
    def apply_failure(dispatcher: Dispatcher, t: int) -> None:
        dispatcher.next_retry_at = t + dispatcher.config.retry_interval_ms

    @staticmethod
    def apply_ack(dispatcher: Dispatcher, kept: set[str]) -> list[Event]:
        """R18, R19: every member of the batch leaves but those answered `invalid_delta`
        (`kept`), which stay converted to ship their full value (a parallel dispatcher
        sends them first again, R31); the members that left, in batch order."""
        assert dispatcher.in_flight is not None
        members, dispatcher.in_flight = dispatcher.in_flight.events, None
        dispatcher.pull({e.id for e in members if e.id not in kept})
        converted = [replace(e, converted=True) for e in members if e.id in kept]
        for event in converted:
            dispatcher.mark(event)
        if dispatcher.config.parallel:
            dispatcher.resend = converted
        return [e for e in members if e.id not in kept]

    def apply_timeout(self, dispatcher: Dispatcher, t: int) -> list[Event]:
        """R20: the batch's events marked possible duplicates (R31: a parallel
        dispatcher sends them first again)."""
        events = self.abandon(dispatcher)
        dispatcher.next_retry_at = t + dispatcher.config.retry_interval_ms
        return events

    def abandon(self, dispatcher: Dispatcher) -> list[Event]:
        """R20's abandonment of the batch in flight (a timeout, R37's stop, R36's
        restart): its connection closed, every member marked a possible duplicate, and a
        parallel dispatcher will send the members first again (R31)."""
        self.drop_connection(dispatcher)
        if dispatcher.in_flight is None:
            return []
        resent = self.bug != "resend_without_possible_duplicate"
        events = dispatcher.in_flight.events
        marked = [replace(e, possible_duplicate=resent) for e in events]
        for event in marked:
            dispatcher.mark(event)
        if dispatcher.config.parallel:
            dispatcher.resend = marked
        dispatcher.in_flight = None
        dispatcher.wake.set()
        return events

    # -- R36, R37: the sender's lifecycle -----------------------------------------------

    def lost(self, sender: str, reason: str) -> list[dict[str, Any]]:
        """Every queued event of every dispatcher lost (`queue_lost`, dispatcher order,
        then queue order)."""
        observed = []
        for dispatcher in self.senders[sender]:
            observed += [{"kind": "queue_lost", "sender": sender, "dispatcher": dispatcher.index,
                          "event": e.id, "reason": reason} for e in dispatcher.queue]  # fmt: skip
            dispatcher.empty()
        return observed

    def lifecycle(self, op: str, sender: str, clean: bool = False) -> list[dict[str, Any]]:
        """R36 (`restart_sender`) and R37 (`stop_sender`, `start_sender`, `pause_sender`,
        `resume_sender`) on this site's sender: its observations."""
        config, dispatchers = self.senders[sender][0].config, self.senders[sender]
        action = op.removesuffix("_sender")
        observed: list[dict[str, Any]] = [{"kind": "lifecycle", "sender": sender, "action": action}]
        keeps = config.enable_persistence
        if op == "restart_sender":
            for dispatcher in dispatchers:
                self.abandon(dispatcher)
                dispatcher.resend.clear()
                dispatcher.next_retry_at = 0
                dispatcher.cursor = dispatcher.index
                dispatcher.indexed.clear()  # R32: what a restart keeps is `recovered`
            kept = sum(len(d.queue) for d in dispatchers) if keeps else 0
            observed[0]["kept"] = kept
            if not keeps:
                observed += self.lost(sender, "restart")
            self.running[sender], self.paused[sender] = True, False
        elif op == "stop_sender":
            for dispatcher in dispatchers:
                self.abandon(dispatcher)
                if not config.parallel:  # R32: a serial queue is read again on start
                    dispatcher.indexed.clear()
            if not config.parallel and not keeps:
                observed += self.lost(sender, "stop")
            self.running[sender], self.paused[sender] = False, False
        elif op == "start_sender":
            if clean:
                observed += self.lost(sender, "clean_queues")
            for dispatcher in dispatchers:
                dispatcher.next_retry_at = 0
            self.running[sender], self.paused[sender] = True, False
        else:
            self.paused[sender] = op == "pause_sender"
        for dispatcher in dispatchers:
            dispatcher.wake.set()
        return observed

    def redeliver(self, sender: str, t: int) -> list[dict[str, Any]]:
        """R26 for every dead letter of `sender`, in order: superseded (a newer entry
        here), requeued (with the entry's value when the entry is the record's own write,
        else the record's value or a tombstone for a destroy; a full value, a possible
        duplicate, routed by R29 and conflated by R32 as any append) or unrecoverable (a
        secure record of a create or update whose write is gone). Its observations."""
        observed: list[dict[str, Any]] = []
        records, self.dead[sender] = self.dead[sender], []
        if sender in self.dead_letters and records and not self.recovering:
            self.dead_letters[sender].remove([r["event_id"] for r in records])
        for record in records:
            version = tuple(record["version"])
            entry = self.entries.get(record["key"])
            conflated: list[dict[str, Any]] = []
            if entry is not None and newer(entry[1], version):
                outcome = "superseded"
            elif entry is not None and entry[1] == version:
                outcome, value = "requeued", entry[0]
            elif "value" in record or record["op"] == "destroy":
                outcome = "requeued"
                value = None if record["op"] == "destroy" else record["value"]
            else:
                outcome = "unrecoverable"
            if outcome == "requeued":
                event = Event(
                    record["event_id"], int(record["event_id"].split(":")[0]), record["key"],
                    record["op"], value, version, frozenset(record["recipients"]), t,
                    record["thread"], self.bucket_of(record["key"]), True,
                )  # fmt: skip
                _, conflated = self.enqueue(event, sender)
            observed.append({"kind": "redelivery", "sender": sender,
                             "event": record["event_id"], "outcome": outcome})  # fmt: skip
            observed += conflated
        return observed

    def lifecycle_step(self, rng: random.Random) -> None:
        """An operator's step on one of this site's senders, among those enabled (§16.2):
        a running one is stopped, paused or restarted; a paused one resumed, stopped or
        restarted; a stopped one started (a third of the time with clean queues) or
        restarted. Stopped or restarted only with no batch in flight: R36 and R37 take
        such a batch out of the network at once, which a real network cannot do (the
        batch may be in the receiver's socket already: R20's gap, docs/LIVE.md)."""
        sender = rng.choice(sorted(self.senders))
        idle = all(d.in_flight is None for d in self.senders[sender])
        if not self.running[sender]:
            op = rng.choice(["start_sender", "start_sender", "restart_sender"])
        elif self.paused[sender]:
            op = rng.choice(["resume_sender", "resume_sender", "stop_sender", "restart_sender"])
        else:
            op = rng.choice(["stop_sender", "pause_sender", "restart_sender"])
        if op in ("stop_sender", "restart_sender") and not idle:
            return
        if self.running[sender] and self.dead[sender] and rng.random() < 0.5:
            t, at = self.clock.read()  # R26: an operator redelivers the dead letters
            observed = self.redeliver(sender, t)
            self.log(t, at, {"op": "redeliver", "sender": sender}, observed)
            return
        clean = op == "start_sender" and rng.random() < 1 / 3
        t, at = self.clock.read()
        observed = self.lifecycle(op, sender, clean)
        step: dict[str, Any] = {"op": op, "sender": sender}
        if clean:
            step["clean_queues"] = True
        self.log(t, at, step, observed)

    def apply_deliver(
        self, t: int, sender: str, events: list[dict[str, Any]], logged: list[str] | None
    ) -> tuple[list[tuple[str, str | None]], list[dict[str, Any]]]:
        """R16 and R22 for a batch, event by event (each decided on the state the earlier
        left): the statuses (with the exception of a failed one) and the `applied` and
        `forwarded` observations. `logged`: the statuses a replayed line says (recovery),
        which the ones decided again must be."""
        statuses: list[tuple[str, str | None]] = []
        observed: list[dict[str, Any]] = []
        for index, wire in enumerate(events):
            status, exception = self.status(wire)
            assert logged is None or logged[index] == status, (wire, logged)
            statuses.append((status, exception))
            applied = {"kind": "applied", "site": self.site, "sender": sender,
                       "event": wire["id"], "key": wire["key"], "status": status}  # fmt: skip
            if exception is not None:
                applied["exception"] = exception
            if status == "ok":
                value = wire["value"]
                if wire["as_delta"]:  # R16.5: the delta onto the live value (P6)
                    live = self.entries[wire["key"]][0]
                    assert live is not None  # R16.4 checked it
                    value = applied["value"] = {**live, **wire["delta"]}
                self.entries[wire["key"]] = (value, tuple(wire["version"]))
                self.applied.add(wire["id"])
            observed.append(applied)
            if status == "ok":
                observed.extend(self.forward(wire, t))
        return statuses, observed

    # -- R9-R11: client writes ----------------------------------------------------------

    def write(
        self, key: str, value: dict[str, Any] | None, thread: int,
        changes: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """R9-R11: a put of `value`, a destroy (None), or a delta of `changes` onto the
        live value."""
        t, at = self.clock.read()
        current = self.entries.get(key)
        if changes is not None:
            assert current is not None and current[0] is not None
            value = {**current[0], **changes}
        entry_version = current[1][0] + 1 if current else 1
        timestamp = t
        if current is not None and t <= current[1][1]:
            timestamp = current[1][1] + 1
        timestamp = max(timestamp, self.floor)
        version = (entry_version, timestamp, self.site)
        if value is None:
            op = "destroy"
        else:
            op = "create" if current is None or current[0] is None else "update"
        event_id = f"{self.site}:{self.seq + 1}"
        routes, after = self.apply_write(t, key, op, event_id, version, value, thread, changes)
        bucket = self.bucket_of(key)
        queued = {sid: d for sid, d in routes.items() if d is not None}
        enqueued = {
            "kind": "enqueued", "site": self.site, "event": event_id, "key": key, "op": op,
            "version": list(version), "value": value, "senders": list(queued),
            "routes": {sid: {"dispatcher": d, "bucket": bucket} for sid, d in queued.items()},
        }  # fmt: skip
        step: dict[str, Any] = {"op": "put", "site": self.site, "key": key, "value": value}
        if value is None:
            step = {"op": "destroy", "site": self.site, "key": key}
        if changes is not None:
            step = {"op": "delta", "site": self.site, "key": key, "changes": changes}
        if thread:
            step["thread"] = thread
        self.log(t, at, step, [enqueued, *after])

    @staticmethod
    def not_queued(sender: str, event: str) -> dict[str, Any]:
        return {"kind": "not_queued", "sender": sender, "event": event, "reason": "stopped"}

    # -- R15: the dispatcher ------------------------------------------------------------

    def due(self, dispatcher: Dispatcher) -> int | None:
        """When R15 lets it flush (None: not until another step; R37: never while its
        sender is stopped or paused)."""
        queue, config = dispatcher.queue, dispatcher.config
        if dispatcher.in_flight is not None or not queue:
            return None
        if not self.running[config.id] or self.paused[config.id]:
            return None
        if len(queue) >= config.batch_size:
            return dispatcher.next_retry_at
        # the queue is in append order: its head is its oldest event (R30)
        return max(dispatcher.next_retry_at, queue[0].enqueued_at + config.batch_time_interval_ms)

    async def dispatch(self, dispatcher: Dispatcher, proxy: int) -> None:
        while not self.stopping:
            if dispatcher.in_flight is not None:
                await self.await_ack(dispatcher)
                continue
            due = self.due(dispatcher)
            t, _ = self.clock.read()
            if due is not None and t >= due:
                await self.flush(dispatcher, proxy)
                continue
            dispatcher.wake.clear()
            wait = 0.05 if due is None else min(0.05, (due - t) / 1000)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(dispatcher.wake.wait(), timeout=max(wait, 0.0005))

    async def connect(self, proxy: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        """A connection to the remote through the proxy, and whether it is open: the
        proxy says `hello` (it reached the remote's receiver) or `refused` (the remote is
        down: the sender then logs its connection failure and says `noted`)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy)
        try:
            answer = await read_frame(reader)
        except (OSError, asyncio.IncompleteReadError):
            answer = None
        return reader, writer, answer is not None and answer.get("type") == "hello"

    async def flush(self, dispatcher: Dispatcher, proxy: int) -> None:
        """R15: a connection per batch (so none is ever stale: the proxy's answer, at the
        moment of the flush, is whether the remote can be reached)."""
        config, index = dispatcher.config, dispatcher.index
        step = {"op": "flush", "sender": config.id, "dispatcher": index}
        self.drop_connection(dispatcher)
        reader, writer, open_ = await self.connect(proxy)
        t, at = self.clock.read()
        due = self.due(dispatcher)  # a lifecycle step may have come meanwhile (R37)
        if not open_:
            if due is not None and t >= due:
                self.apply_failure(dispatcher, t)
                failed = {"kind": "connection_failed", "sender": config.id,
                          "dispatcher": index, "remote": config.remote}  # fmt: skip
                self.log(t, at, step, [failed])
            with contextlib.suppress(OSError):  # logged: the proxy may go on
                await write_frame(writer, {"type": "noted"})
            writer.close()
            return
        if due is None or t < due:
            writer.close()
            return
        dispatcher.connection = (reader, writer)
        batch = self.apply_flush(dispatcher, t)
        events = batch.shipped
        conflated = [
            {"kind": "conflated", "sender": config.id, "dispatcher": index, "event": member,
             "by": by, "where": "batch"}
            for member, by in batch.conflated
        ]  # fmt: skip
        deltas = {e.id for e in events if e.ships_as_delta(config)}  # R14
        sent = {
            "kind": "sent", "sender": config.id, "dispatcher": index,
            "batch_id": batch.batch_id, "events": [e.id for e in events],
            "bytes_full": sum(size(e.value) for e in events if e.id not in deltas),
            "bytes_delta": sum(size(e.delta) for e in events if e.id in deltas),
            "events_resent": sum(e.possible_duplicate for e in events),
        }  # fmt: skip
        self.log(t, at, step, [*conflated, sent])
        self.sync(dispatcher)
        _, writer = dispatcher.connection
        shipped = [{**e.wire(), "as_delta": e.id in deltas} for e in events]
        message = {"type": "batch", "sender": config.id, "dispatcher": index,
                   "batch_id": batch.batch_id, "events": shipped}  # fmt: skip
        with contextlib.suppress(OSError):  # else the ack will not come: R20 times it out
            await write_frame(writer, message)

    async def await_ack(self, dispatcher: Dispatcher) -> None:
        """R18 on the ack, or R20 when it is overdue."""
        batch = dispatcher.in_flight
        assert batch is not None
        batch_id, sent_at = batch.batch_id, batch.sent_at
        config, index = dispatcher.config, dispatcher.index
        deadline = sent_at + config.ack_timeout_ms
        ack: dict[str, Any] | None = None
        reading: asyncio.Future[dict[str, Any] | None] | None = None  # never cut mid-frame
        try:
            while ack is None and not self.stopping:
                t, _ = self.clock.read()
                if t >= deadline:
                    break
                # waits of at most 50 ms: a stop or restart (R36, R37) may abandon the batch
                wait = min(0.05, (deadline - t) / 1000)
                if dispatcher.connection is None:  # lost with a kill, or closed: wait
                    await asyncio.sleep(wait)
                else:
                    if reading is None:
                        reading = asyncio.ensure_future(read_frame(dispatcher.connection[0]))
                    done, _ = await asyncio.wait({reading}, timeout=wait)
                    if done:
                        try:
                            ack = reading.result()
                        except (OSError, asyncio.IncompleteReadError):
                            ack = None
                        reading = None
                        if ack is None:
                            self.drop_connection(dispatcher)
                        elif ack.get("batch_id") != batch_id:
                            ack = None
                if dispatcher.in_flight is not batch:
                    return  # abandoned meanwhile
        finally:
            if reading is not None:
                reading.cancel()
        if self.stopping and ack is None:
            return
        t, at = self.clock.read()
        if ack is None:  # R20
            self.drop_connection(dispatcher)
            events = [e.id for e in batch.shipped]
            self.apply_timeout(dispatcher, t)
            timeout = {"kind": "timeout", "sender": config.id, "dispatcher": index,
                       "batch_id": batch_id, "events": events}  # fmt: skip
            self.log(t, at, {"op": "timeout", "sender": config.id, "dispatcher": index}, [timeout])
            return
        self.drop_connection(dispatcher)
        follow_ups = self.failed(dispatcher, ack["statuses"])
        kept = {o["event"] for o in follow_ups if o["kind"] == "invalid_delta"}
        gone = self.apply_ack(dispatcher, kept)
        removed = [e.id for e in gone]
        threshold = config.alert_threshold_ms
        if threshold > 0:  # R38: after the acks' follow-ups, in batch order
            follow_ups += [
                {"kind": "alert", "sender": config.id, "dispatcher": index, "event": e.id,
                 "queued_ms": t - e.enqueued_at}
                for e in gone if e.enqueued_at + threshold < t
            ]  # fmt: skip
        acked = {"kind": "acked", "sender": config.id, "dispatcher": index,
                 "batch_id": batch_id, "removed": removed}  # fmt: skip
        step = {"op": "deliver_ack", "sender": config.id, "dispatcher": index,
                "batch_id": batch_id}  # fmt: skip
        self.log(t, at, step, [acked, *follow_ups])
        self.sync(dispatcher)

    def failed(self, dispatcher: Dispatcher, statuses: list[Any]) -> list[dict[str, Any]]:
        """R18, R19, R24 for the events of the batch acknowledged: a failed one
        dead-lettered in the durable store (written and fsynced before the events leave
        the queue) with `failure_listener: "dlq"`, else dropped; an `invalid_delta` one
        kept to ship its full value; their observations, in batch order."""
        assert dispatcher.in_flight is not None
        config, observed = dispatcher.config, []
        late: list[dict[str, Any]] = []
        for event, (status, exception) in zip(dispatcher.in_flight.shipped, statuses, strict=False):
            if status == "invalid_delta":
                observed.append({"kind": "invalid_delta", "sender": config.id,
                                 "dispatcher": dispatcher.index, "event": event.id})  # fmt: skip
            if status != "failed":
                continue
            kind = "dlq" if config.failure_listener == "dlq" else "dropped"
            if kind == "dlq":
                record = dead_letter(config, event, exception)
                if self.bug == "dead_letter_after_ack":
                    late.append(record)  # written after the ack is taken, and not logged
                    continue
                self.dead_letters[config.id].append(record)
                self.dead[config.id].append(record)
            observed.append({"kind": kind, "sender": config.id, "dispatcher": dispatcher.index,
                             "event": event.id, "exception": exception})  # fmt: skip
        if late:

            def write_late() -> None:
                for record in late:
                    self.dead_letters[config.id].append(record)

            asyncio.get_running_loop().call_later(0.02, write_late)
        return observed

    @staticmethod
    def drop_connection(dispatcher: Dispatcher) -> None:
        if dispatcher.connection is not None:
            dispatcher.connection[1].close()
            dispatcher.connection = None

    # -- R16, R17, R22: the receiver ----------------------------------------------------

    async def receive(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        replied: dict[tuple[str, int, int], list[tuple[str, str | None]]] = {}
        try:
            while True:
                batch = await read_frame(reader)
                if batch is None:
                    return
                which = (batch["sender"], batch["dispatcher"], batch["batch_id"])
                if which in replied and self.bug != "apply_duplicate_batch":
                    # a batch this connection has answered: answered again, not applied
                    # (Geode's receiver, a batch id at or below the latest it replied to:
                    # duplicateBatchesReceived); not a step of the model, not logged
                    await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                               "statuses": replied[which]})  # fmt: skip
                    continue
                if self.bug == "ack_before_apply":  # acks, then applies (20 ms later)
                    await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                               "statuses": []})  # fmt: skip
                    await asyncio.sleep(0.02)
                    self.deliver(batch)
                    continue
                statuses = replied[which] = self.deliver(batch)
                await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                           "statuses": statuses})  # fmt: skip
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the peer went, or the site stops
        finally:
            writer.close()

    def deliver(self, batch: dict[str, Any]) -> list[tuple[str, str | None]]:
        t, at = self.clock.read()
        statuses, observed = self.apply_deliver(t, batch["sender"], batch["events"], None)
        step = {"op": "deliver", "sender": batch["sender"], "dispatcher": batch["dispatcher"],
                "batch_id": batch["batch_id"], "_events": batch["events"]}  # fmt: skip
        self.log(t, at, step, observed)
        return statuses

    def status(self, wire: dict[str, Any]) -> tuple[str, str | None]:
        """R16 for one event as shipped, and the exception if it failed."""
        key, version = wire["key"], tuple(wire["version"])
        if wire["id"] in self.applied:  # R16.1
            return "duplicate", None
        exception, left = self.failures.get(key, ("", 0))
        if left:  # R16.2: 1 + retry_attempts attempts (all of them until one succeeds: -1)
            allowed = left + 1 if self.retry_attempts == -1 else 1 + self.retry_attempts
            failing = min(allowed, left)
            self.failures[key] = (exception, left - failing)
            if failing == allowed:
                return "failed", exception
        current = self.entries.get(key)
        if current is not None and not newer(version, current[1]):  # R16.3
            return "conflict", None
        if wire["as_delta"] and (  # R16.4
            current is None or current[0] is None or current[1] != tuple(wire["base"])
        ):
            return "invalid_delta", None
        return "ok", None

    def forward(self, wire: dict[str, Any], t: int) -> list[dict[str, Any]]:
        """R22: offered to every sender here, in id order."""
        received = frozenset(wire["recipients"])
        observed = []
        for sid, dispatchers in self.senders.items():
            remote = dispatchers[0].config.remote
            skip = remote == wire["origin"] or remote in received
            if skip and self.bug != "forward_to_origin":
                continue
            # R28: the bucket with this site's buckets
            event = Event.from_wire(wire, received | self.remotes, t, self.bucket_of(wire["key"]))
            index, conflated = self.enqueue(event, sid)
            if index is None:
                observed.append(self.not_queued(sid, wire["id"]))
                continue
            observed.append({"kind": "forwarded", "site": self.site, "sender": sid,
                             "dispatcher": index, "event": wire["id"]})  # fmt: skip
            observed += conflated
        return observed

    # -- R21: coming back after a kill --------------------------------------------------

    def recover(self, wiped: bool) -> None:
        """Take the steps of this site's own log again, without their I/O, each earlier
        wipe where it happened (`site-N.wipes`, the number of steps logged before each):
        its state before the kill; `wiped`: then only what a wiped site keeps (R21), and
        this wipe noted."""
        wipes_path = self.log_path.with_suffix(".wipes")
        wipes = json.loads(wipes_path.read_text()) if wipes_path.exists() else []
        steps = 0
        before = self.persisted()
        self.recovering = True
        with open(self.log_path, encoding="utf-8") as lines:
            texts = list(lines)[1:]  # after the header
        for text in texts:
            while steps in wipes[:1]:
                self.wipe()
                wipes.pop(0)
            if steps == len(texts) - 1:
                before = self.persisted()
            self.replay(json.loads(text))
            steps += 1
        for _ in wipes:  # wiped, then killed again before its next step
            self.wipe()
        self.recovering = False
        self.check_stores(before)
        for sid, store in self.dead_letters.items():  # R24: the records the log says
            if store.records != self.dead[sid]:
                store.remove([r["event_id"] for r in store.records])
                for record in self.dead[sid]:
                    store.append(record)
        if wiped:
            self.wipe()
            done = json.loads(wipes_path.read_text()) if wipes_path.exists() else []
            partial = wipes_path.with_suffix(".wipes.tmp")
            partial.write_text(json.dumps([*done, steps]))
            os.replace(partial, wipes_path)

    def persisted(self) -> dict[tuple[str, int], list[tuple[str, bool]]]:
        """What the persistent queues hold: (event id, possible duplicate), in order."""
        return {
            key: [(e.id, e.possible_duplicate) for e in self.senders[key[0]][key[1]].queue]
            for key in self.stores
        }

    @staticmethod
    def held(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[str, bool]]:
        """What a queue store's records hold, as `persisted` says it of a queue."""
        return [(record["id"], record["possible_duplicate"]) for _, record in records]

    def check_stores(self, before: dict[tuple[str, int], list[tuple[str, bool]]]) -> None:
        """After a kill: each persistent queue as its durable store reads it back, held
        against the queue the log says it had (`before`: before the last step, which the
        store may lack: it is written after the line). Noted in `site-N.stores` (one line
        per recovery: how many stores matched the log, how many were a step behind, and
        each that did neither)."""
        if not self.stores:
            return
        exact, behind, lost = 0, 0, []
        now = self.persisted()
        for key, store in self.stores.items():
            got = self.held(store.read_back())
            if got == now[key]:
                exact += 1
            elif got == before[key]:
                behind += 1
            else:
                lost.append(f"{key[0]}/{key[1]}")
        found = {"exact": exact, "behind": behind, "lost": lost}
        with open(self.log_path.with_suffix(".stores"), "a", encoding="utf-8") as notes:
            notes.write(json.dumps(found) + "\n")

    def attach_stores(self) -> None:
        """Each persistent queue's store made to hold the queue (rewritten when it does
        not) and attached: from now on every change of the queue is written to it."""
        queues = self.persisted()
        for (sid, index), store in self.stores.items():
            dispatcher = self.senders[sid][index]
            records = store.read_back()
            if self.held(records) == queues[sid, index]:
                dispatcher.slots = {r["id"]: slot for slot, r in records}
            else:
                store.clear()
                dispatcher.slots = {e.id: store.append_one(e.record()) for e in dispatcher.queue}
                store.sync()
            dispatcher.store = store

    def wipe(self) -> None:
        """R21's wipe: a new distributed system but for its sequence numbers, batch ids,
        timestamp floor, dead letters and injected failures."""
        self.entries.clear()
        self.applied.clear()
        for sid, dispatchers in self.senders.items():
            self.running[sid] = not dispatchers[0].config.manual_start  # as configured
            self.paused[sid] = False
            for dispatcher in dispatchers:
                dispatcher.empty()
                dispatcher.in_flight = None
                dispatcher.next_retry_at = 0
                dispatcher.cursor = dispatcher.index
        self.floor = max(self.floor, self.issued + 1)

    def replay(self, line: dict[str, Any]) -> None:
        op, t, observed = line["op"], line["t"], line["observed"]
        if op.endswith("_sender"):
            self.lifecycle(op, line["sender"], line.get("clean_queues", False))
            return
        if op == "redeliver":
            self.redeliver(line["sender"], t)
            return
        if op == "fail":
            self.failures[line["key"]] = (line["exception"], line["times"])
            return
        if op in ("put", "destroy", "delta"):
            e = observed[0]
            version = tuple(e["version"])
            self.apply_write(t, e["key"], e["op"], e["event"], version, e["value"],
                             line.get("thread", 0), line.get("changes"))  # fmt: skip
            return
        if op == "deliver":
            statuses = [o["status"] for o in observed if o["kind"] == "applied"]
            self.apply_deliver(t, line["sender"], line["_events"], statuses)
            return
        dispatcher = self.senders[line["sender"]][line["dispatcher"]]
        if op == "flush" and observed[-1]["kind"] == "sent":
            batch = self.apply_flush(dispatcher, t)
            assert [e.id for e in batch.shipped] == observed[-1]["events"], line
        elif op == "flush":
            self.apply_failure(dispatcher, t)
        elif op == "deliver_ack":
            assert dispatcher.in_flight is not None
            members = {e.id: e for e in dispatcher.in_flight.shipped}
            for seen in observed:
                if seen["kind"] == "dlq":
                    record = dead_letter(
                        dispatcher.config, members[seen["event"]], seen["exception"]
                    )
                    self.dead[line["sender"]].append(record)
            kept = {o["event"] for o in observed if o["kind"] == "invalid_delta"}
            self.apply_ack(dispatcher, kept)
        elif op == "timeout":
            self.apply_timeout(dispatcher, t)

    # -- the client load ----------------------------------------------------------------

    async def load(self, rng: random.Random, end: int, run: dict[str, Any]) -> None:
        """Client writes at exponential intervals (`rate` a second on average, paced
        against the clock: a ceiling when the site's one thread cannot keep up) over `keys` keys
        (on a live key 20% destroys, 30% deltas, else puts); with probability `lifecycle`
        an operator's step instead, with probability `fail` a failure injected at this
        site (R16.2: 1-3 attempts at a key fail)."""
        # Paced against the clock: each write is due an exponential interval after the
        # previous one was due (not after it was made), so a late write (a busy loop, a
        # sleep's overshoot) is caught up on, not carried into every later one.
        due = time.time_ns() / 1e6  # ms
        while True:
            due += rng.expovariate(run["rate"]) * 1000
            now = time.time_ns() / 1e6
            if due >= end:  # the next write would come after the end: none does
                await asyncio.sleep(max(0.0, (end - now) / 1000))
                return
            await asyncio.sleep(max(0.0, (due - now) / 1000))  # (behind: 0, a turn for others)
            t, at = self.clock.read()
            if t >= end:
                return
            if self.senders and rng.random() < run.get("lifecycle", 0.0):
                self.lifecycle_step(rng)
                continue
            key = f"k{rng.randrange(run['keys'])}"
            if rng.random() < run.get("fail", 0.0):
                times = rng.randint(1, 3)
                self.failures[key] = (EXCEPTION, times)
                step = {"op": "fail", "site": self.site, "key": key, "exception": EXCEPTION,
                        "times": times}  # fmt: skip
                self.log(t, at, step, [])
                continue
            thread = rng.randrange(THREADS)
            live = self.entries.get(key, (None,))[0] is not None
            draw = rng.random()
            if live and draw < 0.2:
                self.write(key, None, thread)
            elif live and draw < 0.5:  # R10: a delta of one field
                self.write(key, None, thread, {"n": rng.randrange(1000)})
            else:
                self.write(key, {"n": rng.randrange(1000), "site": self.site}, thread)


async def serve(run: dict[str, Any], folder: Path, site: int, mode: str) -> None:
    config = parse_config(run["config"])
    node = Site(config, site, run, folder / f"site-{site}.jsonl")
    if mode != "fresh":
        node.recover(wiped=mode == "wiped")
    node.attach_stores()
    server = await asyncio.start_server(node.receive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    tasks: list[asyncio.Task[None]] = []

    async def work(plan: dict[str, Any]) -> None:
        end, grace = plan["end"], plan["grace"]
        await asyncio.sleep(max(0.0, (plan["start"] - time.time_ns() / 1e6) / 1000))
        rng = random.Random(f"{run['seed']}:{site}:{plan.get('life', 0)}")
        tasks.extend(
            asyncio.create_task(node.dispatch(dispatcher, plan["proxies"][sid]))
            for sid, dispatchers in node.senders.items()
            for dispatcher in dispatchers
        )
        await node.load(rng, end, run)
        await asyncio.sleep(max(0.0, (end + grace - time.time_ns() / 1e6) / 1000))

    if line:  # else (EOF before the plan) `wanconform live` is gone: stop at once
        working = asyncio.create_task(work(json.loads(line)))
        # The plan is the only line: EOF on stdin next means `wanconform live` is gone
        # (killed: the sites have sessions of their own, so nothing else stops them).
        orphaned = asyncio.Event()
        loop = asyncio.get_running_loop()

        def parent_gone() -> None:
            if not os.read(sys.stdin.fileno(), 4096):
                loop.remove_reader(sys.stdin.fileno())
                orphaned.set()

        loop.add_reader(sys.stdin.fileno(), parent_gone)
        watching = asyncio.create_task(orphaned.wait())
        await asyncio.wait({working, watching}, return_when=asyncio.FIRST_COMPLETED)
        watching.cancel()
        working.cancel()  # (done, or cut between two steps: the site has one thread)
        with contextlib.suppress(asyncio.CancelledError):
            await working  # (its error, if it failed, ends the site with it)
    node.stopping = True
    for task in tasks:
        task.cancel()
    ended = await asyncio.gather(*tasks, return_exceptions=True)
    server.close()
    os.close(node.fd)
    for outcome in ended:  # a dispatcher that could not write its line or its store
        if isinstance(outcome, OSError):
            raise outcome


def main() -> None:
    run_file = Path(sys.argv[1])
    run = json.loads(run_file.read_text(encoding="utf-8"))
    modes = {"--recover": "kept", "--recover-wiped": "wiped"}
    mode = modes.get(sys.argv[3], "fresh") if len(sys.argv) > 3 else "fresh"
    try:
        asyncio.run(serve(run, run_file.parent, int(sys.argv[2]), mode))
    except OSError as exc:  # its log or a store cannot be written (a full disk): one line
        with contextlib.suppress(OSError):  # for `wanconform live` to say (`Runner.failure`)
            print(f"{FAILED}{exc.strerror or exc}", flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
