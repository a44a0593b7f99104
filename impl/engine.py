"""The fast engine: one mutable state, changed in place by `apply(op)` (SPEC §3-§10, §16).

Rules: R3 (sequence numbers), R9-R11 (client writes and enqueue), R14-R15 (payload and
flush), R16-R17 (receiver and ack), R18-R19 (acknowledgements, full-value fallback), R20
(timeouts), R21 (sites down and up, wipe), R22 (forwarding), R24 (dead letters), R25
(settle), R28-R31 (buckets, dispatchers and their routes, per-dispatcher batching,
parallel batch formation), R32-R34 (conflation in the queue and in the batch, deltas),
R35 (queue memory), R36-R37 (the sender's lifecycle), R38 (alerts), R39 (settle over
dispatchers), §10 and §16.6 (observations, in the order of `traces/observations.py`;
observable state).

Step order (§3, §16.2): a skipped (not enabled) operation changes nothing and is observed
only as `skipped`; an enabled one has its effect, then for `tick` the timeouts of R20 per
(sender id, dispatcher index), then the flush of R15 for every (sender id, dispatcher
index) in that order. `settle`'s effect is its inner operations, each a full step; the
final flush follows it too.

Each decision a conformance test may want to break has its own small method, so a test
plants a bug by subclassing `Engine` and overriding one of them:
`_is_duplicate` (R16.1), `_mark_resend` (R20), `_requeue_invalid_delta` (R19),
`_should_forward` (R22), `_batch_time_due` (R15), `_dead_letter_record` (R24),
`_route` (R29), `_dispatcher_due` (R39), `_queues` (R37), `_in_flight` (R32),
`_conflatable` (R32, R33), `_recovered` (R36), `_peek` (R15, R31), `_batch_full` (R15,
R35).

Cost: every per-event path is O(1) in the common case: queues are `state.EventQueue`s,
entries and the applied memory are dicts, the duplicate check is `impl/applied.py`. Sizes
(R4) are counted field by field once per write (a delta's from its entry's,
`state.resized`), or else once per batch sent (`state.total_size`). A receiver
stores the origin's own entry object, and a delta that applies needs no merge: its base
tag names the write the receiver holds (see `state.Event`). Per operation the engine also
looks at every sender once (the flush rule), never at every key or event.

The code is written for mypyc (see `tools/build_compiled.py`): exact types, native classes
with plain int fields, no dynamic dispatch in the per-event paths. `Engine` allows
interpreted subclasses, so a Python subclass still overrides any method.

Observations share the (never mutated) value dicts of the state; treat them as read-only.
`observe()` returns fresh copies.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, insort
from collections.abc import Iterable, Mapping
from typing import Any, Final

from mypy_extensions import mypyc_attr

from impl.applied import AppliedRanges
from impl.checkpoint import event_record, export, restore, restored_event
from impl.dlq_store import SenderLog, open_store
from impl.queue_store import QueueLog, StoreError, open_queue_store
from impl.state import (
    AckMessage,
    AppendOrder,
    BatchMessage,
    DispatcherState,
    Entry,
    Event,
    FailEntry,
    InFlight,
    Scalar,
    SenderState,
    SiteState,
    Value,
    java_hash,
    resized,
    size,
    total_size,
)
from traces.checkpoint import check_fits, document
from traces.config import Config, SenderConfig
from traces.engine import settle_cap
from traces.observations import Observation
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
    Settle,
    SiteDown,
    SiteUp,
    StartSender,
    StopSender,
    Tick,
)

# The operation records, for the dispatch of `_effect` (Final: compiled, a static).
_PUT: Final = Put
_DELTA: Final = Delta
_DESTROY: Final = Destroy
_PUTALL: Final = PutAll
_TICK: Final = Tick
_DELIVER: Final = Deliver
_DELIVER_ACK: Final = DeliverAck
_DROP: Final = Drop
_DROP_ACK: Final = DropAck
_SITE_DOWN: Final = SiteDown
_SITE_UP: Final = SiteUp
_FAIL: Final = Fail
_SETTLE: Final = Settle
_REDELIVER: Final = Redeliver
_RESTART_SENDER: Final = RestartSender
_STOP_SENDER: Final = StopSender
_START_SENDER: Final = StartSender
_PAUSE_SENDER: Final = PauseSender
_RESUME_SENDER: Final = ResumeSender
INT64_MAX: Final = 2**63 - 1


@mypyc_attr(allow_interpreted_subclasses=True)
class Engine:
    """The production-shaped engine: `Engine(config)`, `apply(op)`, `observe()`."""

    def __init__(
        self,
        config: Config,
        dlq_dir: str | None = None,
        queue_dir: str | None = None,
        queue_fsync: str = "batch",
    ) -> None:
        self._config = config
        self._now = 0  # R5
        self.settle_capped = False  # the last settle stopped at its cap (R25; P12)
        self.settle_cap = settle_cap()  # R25's 1,000,000 inner operations, or --settle-cap's
        self._routes: dict[int, dict[str, int | None]] = {}  # enqueued's route objects
        self._sites: dict[int, SiteState] = {
            site: SiteState(
                site,
                config.receiver(site),
                config.region(site).total_num_buckets if config.region(site).partitioned else 0,
            )
            for site in sorted(config.sites)
        }
        ordered = sorted(config.senders, key=lambda sender: sender.id)
        self._sender_list: tuple[SenderState, ...] = tuple(
            SenderState(sender, self._sites[sender.site], self._sites[sender.remote])
            for sender in ordered
        )
        self._senders: dict[str, SenderState] = {s.id: s for s in self._sender_list}
        for site in self._sites.values():
            site.senders = tuple(s for s in self._sender_list if s.site == site.id)
            site.sender_ids = [s.id for s in site.senders]
            site.enqueued["senders"] = site.sender_ids  # shared, read-only (R11)
            site.remotes = frozenset(s.remote for s in site.senders)
            site.origin_recipients = frozenset({site.id}) | site.remotes
            site.stopped = sum(1 for s in site.senders if not s.running)  # R37: manual start
            if site.buckets == 0 and all(
                s.dispatcher_threads == 1 and not s.parallel for s in site.senders
            ):  # every route is the same (R29): one shared, read-only routes object
                site.enqueued["routes"] = {
                    s.id: {"dispatcher": 0, "bucket": None} for s in site.senders
                }
            elif site.buckets > 0 and all(
                s.parallel or s.dispatcher_threads == 1 or s.order_policy == "partition"
                for s in site.senders
            ):  # every route follows the key's bucket (R28, R29): one routes object each
                site.bucket_routes = {}
        # The durable dead-letter store (impl/dlq_store.py), when given a directory: the
        # records it recovers are the senders' dead letters (a restart).
        self._store: dict[str, SenderLog] | None = None
        if dlq_dir is not None:
            self._store = open_store(dlq_dir, [s.id for s in self._sender_list], _notice)
            for sender in self._sender_list:
                sender.dlq = list(self._store[sender.id].records)
        # The durable queues of the persistent senders (impl/queue_store.py, R36), when
        # given a directory: every change to such a queue is written there, and a
        # restart reads the queue back from it. A new engine starts from empty queues.
        self._queue_logs: dict[tuple[str, int], QueueLog] = {}
        self._queue_dir = queue_dir
        self._queue_fsync = queue_fsync
        if queue_dir is not None:
            lanes = [
                (s.id, d.index) for s in self._sender_list if s.persistent for d in s.dispatchers
            ]
            self._queue_logs = open_queue_store(
                queue_dir, lanes, _notice, queue_fsync, buffered=True
            )
            held = sum(len(log) for log in self._queue_logs.values())
            if held:
                raise StoreError(
                    f"{queue_dir}: holds {held} queued events of an earlier run; a run starts "
                    "from empty queues (choose an empty directory)"
                )

    # ------------------------------------------------------------------ surface

    def apply(self, op: Op) -> list[Observation]:
        """One operation (§3): its observations, or `[skipped]` if it was not enabled."""
        out: list[Observation] = []
        if not self._effect(op, out):
            return [{"kind": "skipped", "op": op.op}]
        self._flush_all(out)
        if self._queue_logs:  # the operation's queue changes reach the OS (R36)
            for log in self._queue_logs.values():
                log.flush()
        return out

    def observe(self) -> dict[str, Any]:
        """The observable state of §10 as fresh plain JSON data."""
        return self._observed(None)

    def observe_keys(self, keys: Iterable[str]) -> dict[str, Any]:
        """`observe()` with only the entries of `keys` (traces/engine.py: what the property
        checker asks at a quiescence; its cost follows the keys, not the region)."""
        return self._observed(list(keys))

    def _observed(self, keys: list[str] | None) -> dict[str, Any]:
        sites: dict[str, Any] = {}
        for site in self._sites.values():
            entries: dict[str, Any] = {}
            held = site.entries
            for key in held if keys is None else keys:
                entry = held.get(key)
                if entry is not None:
                    entries[key] = {
                        "value": None if entry.value is None else dict(entry.value),
                        "version": entry.version_list(),
                    }
            sites[str(site.id)] = {
                "up": site.up,
                "seq": site.seq,
                "timestamp_floor": site.timestamp_floor,
                "entries": entries,
                "stats": dict(site.stats),
            }
        senders: dict[str, Any] = {}
        for sender in self._sender_list:
            dispatchers = [self._observe_dispatcher(d) for d in sender.dispatchers]
            stats = dict(sender.stats)
            on_disk = [e for d in sender.dispatchers for e in self._queued(sender, d) if e.on_disk]
            stats["entries_overflowed"] = len(on_disk)  # R35's gauges
            stats["bytes_overflowed"] = sum(event.size for event in on_disk)
            senders[sender.id] = {
                "running": sender.running,
                "paused": sender.paused,
                "dispatchers": dispatchers,
                "stats": stats,
                "dlq": [_copy_record(record) for record in self._dead_letters(sender)],
            }
        return {"time": self._now, "sites": sites, "senders": senders}

    def _queued(self, sender: SenderState, dispatcher: DispatcherState) -> list[Event]:
        """A dispatcher's queued events, in append order."""
        if dispatcher.lazy:
            return dispatcher.order.events()
        return dispatcher.queue.events()

    def _observe_dispatcher(self, dispatcher: DispatcherState) -> dict[str, Any]:
        """One dispatcher's part of the observable state (§16.6)."""
        sender_parallel = dispatcher.cursor >= 0
        events = dispatcher.order.events() if dispatcher.lazy else dispatcher.queue.events()
        in_flight = dispatcher.in_flight
        return {
            "queue": [event.id for event in events],
            "resend": [event.id for event in dispatcher.resend],
            "cursor": dispatcher.cursor if sender_parallel else None,
            "in_flight": None
            if in_flight is None
            else {
                "batch_id": in_flight.batch_id,
                "events": in_flight.ids.copy(),
                "shipped": in_flight.shipped_ids.copy(),
                "sent_at": in_flight.sent_at,
            },
            "next_retry_at": dispatcher.next_retry_at,
            "network": {
                "batch": dispatcher.batch_message is not None,
                "ack": dispatcher.ack_message is not None,
            },
            "recovered": [event.id for event in events if event.recovered],
            "on_disk": [event.id for event in events if event.on_disk],
            "memory_bytes": dispatcher.memory_bytes,
        }

    def checkpoint(self) -> dict[str, Any]:
        """The full state as a checkpoint document (docs/CHECKPOINT.md)."""
        return document(self._config, export(self))

    @classmethod
    def from_checkpoint(
        cls, config: Config, doc: dict[str, Any], where: str = "checkpoint"
    ) -> Engine:
        """An engine in the state of checkpoint `doc` (a `CheckpointError` if it does not
        fit `config`: `where` names the document in the message)."""
        engine = cls(config)

        def route(sender: SenderConfig, event: dict[str, Any]) -> int:  # R28, R29
            key: str = event["key"]
            bucket = engine._sites[sender.site].bucket(key)
            return engine._route(engine._senders[sender.id], key, event["thread"], bucket)

        restore(engine, check_fits(config, doc, where, route))
        return engine

    def _dead_letters(self, sender: SenderState) -> list[dict[str, object]]:
        """The sender's records: read back from the store when there is one."""
        if self._store is None:
            return sender.dlq
        return self._store[sender.id].read_back()

    # ------------------------------------------------------------------ one step

    def _step(self, op: Op, out: list[Observation]) -> bool:
        """§3: the effect, then the flushes; False (nothing changed) if `op` is not enabled.

        `apply` without its list; `Tick`'s handler also runs the timeouts of R20.
        """
        if not self._effect(op, out):
            return False
        self._flush_all(out)
        return True

    def _effect(self, op: Op, out: list[Observation]) -> bool:
        """The effect of `op`, by its exact record type (the most frequent first).

        Each handler returns whether the operation was enabled, and changes nothing
        when it was not.
        """
        if type(op) is _DELTA:
            return self._delta(op, out)
        if type(op) is _PUT:
            return self._put(op, out)
        if type(op) is _DELIVER:
            return self._deliver(op, out)
        if type(op) is _DELIVER_ACK:
            return self._deliver_ack(op, out)
        if type(op) is _TICK:
            return self._tick(op, out)
        if type(op) is _DESTROY:
            return self._destroy(op, out)
        if type(op) is _PUTALL:
            return self._putall(op, out)
        if type(op) is _DROP:
            return self._drop(op, out)
        if type(op) is _DROP_ACK:
            return self._drop_ack(op, out)
        if type(op) is _SITE_DOWN:
            return self._site_down(op, out)
        if type(op) is _SITE_UP:
            return self._site_up(op, out)
        if type(op) is _FAIL:
            return self._fail(op, out)
        if type(op) is _SETTLE:
            return self._settle(op, out)
        if type(op) is _REDELIVER:
            return self._redeliver(op, out)
        if type(op) is _RESTART_SENDER:
            return self._restart_sender(op, out)
        if type(op) is _STOP_SENDER:
            return self._stop_sender(op, out)
        if type(op) is _START_SENDER:
            return self._start_sender(op, out)
        if type(op) is _PAUSE_SENDER:
            return self._pause_sender(op, out)
        if type(op) is _RESUME_SENDER:
            return self._resume_sender(op, out)
        raise KeyError(type(op))

    def _tick(self, op: Tick, out: list[Observation]) -> bool:
        self._now += op.ms  # R5
        self._timeouts(out)  # R20, on tick only
        return True

    def _fail(self, op: Fail, out: list[Observation]) -> bool:
        # A later `fail` for the same (site, key) replaces the earlier one (§3).
        self._sites[op.site].fails[op.key] = FailEntry(op.exception, op.times)
        return True

    # ------------------------------------------------------------------ client writes

    def _put(self, op: Put, out: list[Observation]) -> bool:
        site = self._sites[op.site]
        if not site.up:
            return False
        key = op.key
        self._write(site, key, _stored(op.value), None, site.entries.get(key), op.thread, out)
        return True

    def _delta(self, op: Delta, out: list[Observation]) -> bool:
        site = self._sites[op.site]
        key = op.key
        current = site.entries.get(key)
        if not site.up or current is None:
            return False
        old = current.value
        if old is None:
            return False
        changes = _stored(op.changes)
        value = old.copy()  # R10: a new dict; stored values are never mutated
        value.update(changes)
        weight, changes_size = resized(old, current.size, changes)  # R4
        self._write(site, key, value, changes, current, op.thread, out, weight, changes_size)
        return True

    def _destroy(self, op: Destroy, out: list[Observation]) -> bool:
        site = self._sites[op.site]
        key = op.key
        current = site.entries.get(key)
        if not site.up or current is None or current.value is None:
            return False
        self._write(site, key, None, None, current, op.thread, out)
        return True

    def _putall(self, op: PutAll, out: list[Observation]) -> bool:
        site = self._sites[op.site]
        if not site.up or not op.entries:
            return False
        entries = op.entries
        for key in sorted(entries):  # R3: one sequence number per entry, sorted key order
            self._write(
                site, key, _stored(entries[key]), None, site.entries.get(key), op.thread, out
            )
        return True

    def _write(
        self,
        site: SiteState,
        key: str,
        value: Value | None,
        changes: Value | None,
        current: Entry | None,
        thread: int,
        out: list[Observation],
        weight: int = -1,
        changes_size: int = -1,
    ) -> None:
        """R9-R11: one client write at `site` (value None = destroy; changes = a delta) by
        client thread `thread`; each sender queues it on the dispatcher of its route (R29).
        `weight`, `changes_size`: R4's sizes of `value` and `changes` when the caller
        counted them (else -1)."""
        now = self._now
        origin = site.id
        if current is None:
            version = 1
            stamp = now
            label = "create"
        else:
            # R9 (Geode's generateVersionTag): a later timestamp than the entry's, always.
            timestamp = current.timestamp
            stamp = timestamp + 1 if now <= timestamp else now
            version = current.version + 1
            label = "create" if current.value is None else "update"
        if stamp < site.timestamp_floor:  # R9, R21: never a timestamp issued before a wipe
            stamp = site.timestamp_floor
        if stamp > site.last_issued:
            site.last_issued = stamp
        if value is None:
            label = "destroy"
        senders = site.senders
        if senders and weight < 0:
            weight = size(value)  # R4, once for every copy
        entry = Entry(value, version, stamp, origin, weight)
        site.entries[key] = entry
        seq = site.seq = site.seq + 1  # R3
        event_id = site.event_prefix + str(seq)
        base = current if changes is not None else None  # only a delta has a base (R10)
        recipients = site.origin_recipients
        bucket = site.bucket(key)  # R28
        routes: dict[str, object] | None = None
        shared: dict[str, object] | None = None  # this bucket's routes, built before (R29)
        if senders:  # R11: one event in the queue of every sender at the origin
            if site.enqueued["routes"] is None or site.stopped:
                by_bucket = site.bucket_routes
                if by_bucket is not None and not site.stopped:
                    shared = by_bucket.get(bucket)
                if shared is None:
                    routes = {}
        elif site.enqueued["routes"] is None:
            routes = {}
        # The observation, filled in from the site's template (a dict copy is cheaper
        # than building a dict key by key); what queuing the event causes (R32, R37)
        # follows it. `routes` is filled in as the senders queue it.
        observation = site.enqueued.copy()
        if shared is not None:
            observation["routes"] = shared
        elif routes is not None:
            observation["routes"] = routes
        observation["event"] = event_id
        observation["key"] = key
        observation["op"] = label
        observation["version"] = [version, stamp, origin]
        observation["value"] = value
        out.append(observation)
        if senders:
            for sender in senders:
                if not self._queues(sender):  # R37: a stopped sender queues nothing
                    self._not_queued(sender, event_id, out)
                    continue
                dispatcher = sender.dispatchers[self._route(sender, key, thread, bucket)]
                event = Event(
                    event_id,
                    origin,
                    seq,
                    key,
                    label,
                    entry,
                    base,
                    changes,
                    False,
                    recipients,
                    now,
                    thread,
                    weight,
                    bucket,
                )
                event.delta_size = changes_size
                self._append(sender, dispatcher, event)
                if sender.conflation and label == "update":
                    self._conflate_in_queue(sender, dispatcher, event, out)
                if routes is not None:  # one shared, read-only object per route
                    lane_bucket = dispatcher.index * 0x80000000 + bucket + 1
                    route = self._routes.get(lane_bucket)
                    if route is None:
                        route = self._routes[lane_bucket] = {
                            "dispatcher": dispatcher.index,
                            "bucket": None if bucket < 0 else bucket,
                        }
                    routes[sender.id] = route
            if routes is not None and not site.stopped and site.bucket_routes is not None:
                site.bucket_routes[bucket] = routes  # shared, read-only, from now on
        if routes is not None and site.stopped:  # else the template's, every sender's
            observation["senders"] = list(routes)

    def _queues(self, sender: SenderState) -> bool:
        """R37: does the sender queue what R11 or R22 offers it (it runs)?"""
        return sender.running

    def _not_queued(self, sender: SenderState, event_id: str, out: list[Observation]) -> None:
        """R37: a stopped sender does not queue the event; it counts it."""
        sender.stats["events_not_queued_stopped"] += 1
        out.append(
            {"kind": "not_queued", "sender": sender.id, "event": event_id, "reason": "stopped"}
        )

    # ------------------------------------------------------------------ queues

    def _route(self, sender: SenderState, key: str, thread: int, bucket: int) -> int:
        """R29: the dispatcher of `sender` that queues an event of `key` written by client
        thread `thread` (`bucket`: the key's bucket at the sender's site, -1 if none)."""
        count = sender.dispatcher_threads
        if sender.parallel:
            return bucket % count
        if count == 1:
            return 0
        policy = sender.order_policy
        if policy == "thread":
            return thread % count
        if policy == "partition" and bucket >= 0:
            return bucket % count
        return abs(java_hash(key)) % count

    def _append(self, sender: SenderState, dispatcher: DispatcherState, event: Event) -> None:
        """Queue `event` on `dispatcher` (`_place`), and in its durable queue if it has
        one (R36)."""
        self._place(sender, dispatcher, event)
        if sender.persistent and self._queue_logs:
            log = self._queue_logs[(sender.id, dispatcher.index)]
            event.slot = log.append_one(event_record(event))

    def _stored(self, sender: SenderState, dispatcher: DispatcherState) -> QueueLog | None:
        """The dispatcher's durable queue (R36), if it has one."""
        if not sender.persistent or not self._queue_logs:
            return None
        return self._queue_logs[(sender.id, dispatcher.index)]

    def _place(self, sender: SenderState, dispatcher: DispatcherState, event: Event) -> None:
        """Queue `event` on `dispatcher`: in memory or on disk (R35); a parallel one's
        FIFO of the event's bucket (R31); a conflating one's index, if it is an update
        not recovered (R32)."""
        if dispatcher.memory_bytes + event.size <= sender.memory_limit:
            dispatcher.memory_bytes += event.size
        else:
            event.on_disk = True
            dispatcher.on_disk += 1
        if not dispatcher.lazy:
            dispatcher.queue.append(event)
            return
        dispatcher.order.append(event)
        if sender.parallel:
            bucket = event.bucket
            fifo = dispatcher.buckets.get(bucket)
            if fifo is None:
                fifo = dispatcher.buckets[bucket] = AppendOrder()
            if fifo.size() == 0:
                insort(dispatcher.nonempty, bucket)
            fifo.append(event)
        if sender.conflation and event.op == "update" and not event.recovered:
            indexed = dispatcher.conflation.get(event.key)
            if indexed is None:
                dispatcher.conflation[event.key] = [event]
            else:
                indexed.append(event)

    def _conflate_in_queue(
        self, sender: SenderState, dispatcher: DispatcherState, event: Event, out: list[Observation]
    ) -> None:
        """R32 after the update `event` was appended (and indexed): the most recently
        appended indexed update of its key still queued leaves the queue, unless it is in
        the batch in flight or `event`'s tag is not newer (R16.3); R34: `event` then ships
        its full value if it would have shipped as a delta on the tag of the one that left."""
        key = event.key
        indexed = dispatcher.conflation[key]
        if len(indexed) < 2:
            return
        kept = [earlier for earlier in indexed[:-1] if earlier.queued]
        kept.append(event)
        dispatcher.conflation[key] = kept  # the index forgets what left the queue
        if len(kept) < 2:
            return
        previous = kept[-2]
        if self._in_flight(dispatcher, previous):
            return  # the batch in flight is untouched
        if not _newer(event.tag, previous.tag):
            return  # the tag guard (R26's requeued events)
        stats = sender.stats
        if self._loses_its_base(sender, event, previous):
            event.converted = True
            stats["conflation_full_values"] += 1
            log = self._stored(sender, dispatcher)
            if log is not None:
                log.update(event.slot, {"converted": True})
        self._remove_queued(sender, dispatcher, previous)
        stats["events_conflated_in_queue"] += 1
        out.append(
            {
                "kind": "conflated",
                "sender": sender.id,
                "dispatcher": dispatcher.index,
                "event": previous.id,
                "by": event.id,
                "where": "queue",
            }
        )

    def _in_flight(self, dispatcher: DispatcherState, event: Event) -> bool:
        """R32: is `event` a member of the dispatcher's batch in flight (not conflated)?"""
        in_flight = dispatcher.in_flight
        return in_flight is not None and event in in_flight.events

    def _conflatable(self, event: Event) -> bool:
        """R32, R33: only updates conflate (creates and destroys never do)."""
        return event.op == "update"

    def _loses_its_base(self, sender: SenderState, survivor: Event, gone: Event) -> bool:
        """R34: would `survivor` ship as a delta (R14) on the tag of the conflated `gone`?"""
        base = survivor.base
        return (
            sender.delta
            and survivor.delta is not None
            and not survivor.converted
            and base is not None
            and base.tag() == gone.tag
        )

    def _remove_queued(
        self, sender: SenderState, dispatcher: DispatcherState, event: Event
    ) -> None:
        """One queued event, not in flight, leaves a lazy queue (R32): its memory (R35),
        its bucket's FIFO (R31) and the resend list."""
        event.queued = False
        dispatcher.order.left(1)
        if sender.parallel:
            fifo = dispatcher.buckets[event.bucket]
            fifo.left(1)
            if fifo.size() == 0:
                nonempty = dispatcher.nonempty
                del nonempty[bisect_left(nonempty, event.bucket)]
        if event in dispatcher.resend:
            dispatcher.resend.remove(event)
        self._left(dispatcher, event)
        log = self._stored(sender, dispatcher)
        if log is not None:
            log.remove([event.slot])

    def _left(self, dispatcher: DispatcherState, event: Event) -> None:
        """R35: a queued event left: it frees its memory, or its place on disk."""
        if event.on_disk:
            dispatcher.on_disk -= 1
        else:
            dispatcher.memory_bytes -= event.size

    # ------------------------------------------------------------------ sender: flush

    def _flush_all(self, out: list[Observation]) -> None:
        """R15/R30 for every (sender, dispatcher), in sorted id and index order."""
        now = self._now
        for sender in self._sender_list:
            if not sender.running or sender.paused or not sender.home.up:  # R37
                continue
            for dispatcher in sender.dispatchers:
                if dispatcher.in_flight is not None:
                    continue
                if dispatcher.lazy:
                    order = dispatcher.order
                    waiting = order.size()
                    if not waiting:
                        continue
                    head = order.head()
                else:
                    queue = dispatcher.queue
                    waiting = queue.size()
                    if not waiting:
                        continue
                    head = queue.head()
                if not self._batch_full(sender, dispatcher, waiting) and not self._batch_time_due(
                    sender, head
                ):
                    continue
                if now < dispatcher.next_retry_at:
                    continue
                if not sender.remote_site.up:  # R15: the connection fails, nothing is sent
                    dispatcher.next_retry_at = now + sender.retry_interval_ms
                    sender.stats["connection_failures"] += 1
                    out.append(
                        {
                            "kind": "connection_failed",
                            "sender": sender.id,
                            "dispatcher": dispatcher.index,
                            "remote": sender.remote,
                        }
                    )
                else:
                    self._send(sender, dispatcher, out)

    def _batch_full(self, sender: SenderState, dispatcher: DispatcherState, waiting: int) -> bool:
        """R15: the dispatcher holds a full batch (`waiting` queued events, in memory or
        on disk: R35's overflow changes nothing here)."""
        return waiting >= sender.batch_size

    def _batch_time_due(self, sender: SenderState, head: Event) -> bool:
        """R15: the head event has waited the batch time interval."""
        return self._now - head.enqueued_at >= sender.batch_time_interval_ms

    def _send(
        self, sender: SenderState, dispatcher: DispatcherState, out: list[Observation]
    ) -> None:
        """R13-R15: send the dispatcher's next batch (a serial one's queue prefix, a
        parallel one's R31 batch), less the members batch conflation keeps back (R33);
        R14 picks each payload."""
        log = self._stored(sender, dispatcher)
        if log is not None:
            log.sync()  # a batch leaves only once its events are on disk (docs/QUEUE_STORE.md)
        events = self._peek(sender, dispatcher)
        shipped = events
        kept_back: list[bool] = []
        if sender.conflation and len(events) > 1:
            kept_back = self._conflate_batch(sender, dispatcher, events, out)
            if kept_back:
                shipped = [event for event, back in zip(events, kept_back, strict=True) if not back]
        memory = 0  # R35: what the members hold, freed when they leave
        on_disk = 0
        for event in events:
            if event.on_disk:
                on_disk += 1
            else:
                memory += event.size
        ships_deltas = sender.delta
        as_delta: list[bool] = []
        bytes_delta = 0  # R4 of the payloads shipped as deltas, counted when written ...
        deltas: list[Value] = []  # ... or else here, once for the batch
        bytes_full = 0  # ... and the sizes of those shipped full (a destroy ships 0 bytes)
        resent = 0
        for event in shipped:
            if ships_deltas and event.delta is not None and not event.converted:
                as_delta.append(True)
                if event.delta_size >= 0:
                    bytes_delta += event.delta_size
                else:
                    deltas.append(event.delta)
            else:
                as_delta.append(False)
                bytes_full += event.size
            if event.possible_duplicate:
                resent += 1
        bytes_delta += total_size(deltas)
        batch_id = dispatcher.last_batch_id = dispatcher.last_batch_id + 1
        ids = [event.id for event in events]
        shipped_ids = ids if shipped is events else [event.id for event in shipped]
        dispatcher.in_flight = InFlight(
            batch_id, events, ids, self._now, memory, on_disk, shipped, shipped_ids, kept_back
        )
        dispatcher.batch_message = BatchMessage(batch_id, shipped, as_delta)
        stats = sender.stats
        stats["batches_sent"] += 1
        stats["events_sent"] += len(shipped)
        stats["events_resent"] += resent
        stats["bytes_full"] += bytes_full
        stats["bytes_delta"] += bytes_delta
        out.append(
            {
                "kind": "sent",
                "sender": sender.id,
                "dispatcher": dispatcher.index,
                "batch_id": batch_id,
                "events": shipped_ids.copy(),
                "bytes_full": bytes_full,
                "bytes_delta": bytes_delta,
                "events_resent": resent,
            }
        )

    def _peek(self, sender: SenderState, dispatcher: DispatcherState) -> list[Event]:
        """R15, R31: the members of the dispatcher's next batch (its queue's first
        events, or R31's), wherever R35 holds them (in memory or on disk)."""
        if sender.parallel:
            return self._parallel_batch(sender, dispatcher)
        if dispatcher.lazy:
            return dispatcher.order.first(sender.batch_size)
        return dispatcher.queue.prefix(sender.batch_size)

    def _conflate_batch(
        self,
        sender: SenderState,
        dispatcher: DispatcherState,
        events: list[Event],
        out: list[Observation],
    ) -> list[bool]:
        """R33: per member, whether a later update of its key in the batch with a newer
        tag makes it unnecessary (it is kept back, named `by` the latest such update);
        R34: a survivor that would ship as a delta on the tag of one it conflated ships
        its full value. [] when no member is kept back."""
        updates: dict[str, list[int]] = {}  # key -> indexes of its updates in the batch
        repeated = False
        for index in range(len(events)):
            event = events[index]
            if self._conflatable(event):
                found = updates.get(event.key)
                if found is None:
                    updates[event.key] = [index]
                else:
                    found.append(index)
                    repeated = True
        if not repeated:
            return []
        kept_back = [False] * len(events)
        conflated: list[tuple[int, int]] = []  # (member, by), in batch order
        for index in range(len(events)):
            event = events[index]
            if not self._conflatable(event):
                continue
            by = -1
            for later in updates[event.key]:
                if later > index and _newer(events[later].tag, event.tag):
                    by = later
            if by >= 0:
                kept_back[index] = True
                conflated.append((index, by))
        if not conflated:
            return []
        stats = sender.stats
        converted: set[int] = set()
        for index, by in conflated:
            survivor = events[by]
            if by not in converted and self._loses_its_base(sender, survivor, events[index]):
                survivor.converted = True
                converted.add(by)
                stats["conflation_full_values"] += 1
                log = self._stored(sender, dispatcher)
                if log is not None:
                    log.update(survivor.slot, {"converted": True})
        for index, by in conflated:
            out.append(
                {
                    "kind": "conflated",
                    "sender": sender.id,
                    "dispatcher": dispatcher.index,
                    "event": events[index].id,
                    "by": events[by].id,
                    "where": "batch",
                }
            )
        stats["events_conflated_from_batches"] += len(conflated)
        return kept_back

    def _parallel_batch(self, sender: SenderState, dispatcher: DispatcherState) -> list[Event]:
        """R31: the resend list first, then round robin over the owned buckets from the
        cursor, one bucket's oldest event not yet in the batch at a time.

        Going up cyclically from the cursor, each owned bucket with an event left is met
        once per round, in the same order every round, until the batch is full; so the
        order of the rounds is worked out on counts first, and each bucket's FIFO is read
        once. O(batch size + owned buckets), whatever the queue holds."""
        batch = dispatcher.resend
        dispatcher.resend = []
        room = sender.batch_size - len(batch)
        nonempty = dispatcher.nonempty
        if room <= 0 or not nonempty:
            return batch
        taken: dict[int, int] = {}
        for event in batch:  # a bucket's events in `resend` are its FIFO's first ones
            taken[event.bucket] = taken.get(event.bucket, 0) + 1
        buckets = dispatcher.buckets
        # The owned buckets with an event not yet taken, cyclically from the cursor.
        start = bisect_left(nonempty, dispatcher.cursor)
        ring: list[int] = []
        left: list[int] = []  # per bucket of `ring`: its events not yet taken
        for at in range(len(nonempty)):
            bucket = nonempty[(start + at) % len(nonempty)]
            count = buckets[bucket].size()
            if taken:
                count -= taken.get(bucket, 0)
            if count > 0:
                ring.append(bucket)
                left.append(count)
        if not ring:
            return batch
        # The rounds: `picks` holds the ring position of each event taken, in batch order.
        picks: list[int] = []
        active = list(range(len(ring)))
        rounds = 0
        while active and len(picks) < room:
            rounds += 1
            still: list[int] = []
            for position in active:
                if len(picks) == room:
                    break
                picks.append(position)
                if left[position] > rounds:
                    still.append(position)
            active = still
        last = ring[picks[-1]]
        step = sender.dispatcher_threads
        dispatcher.cursor = last + step if last + step < sender.home.buckets else dispatcher.index
        # Each bucket's events taken (its oldest not yet in the batch), then interleaved.
        count_of = [0] * len(ring)
        for position in picks:
            count_of[position] += 1
        oldest: list[list[Event]] = []
        for position in range(len(ring)):
            count = count_of[position]
            if count == 0:
                oldest.append([])
                continue
            bucket = ring[position]
            skip = taken.get(bucket, 0) if taken else 0
            events = buckets[bucket].first(skip + count)
            oldest.append(events[skip:] if skip else events)
        following = [0] * len(ring)
        for position in picks:
            index = following[position]
            batch.append(oldest[position][index])
            following[position] = index + 1
        return batch

    # ------------------------------------------------------------------ receiver

    def _deliver(self, op: Deliver, out: list[Observation]) -> bool:
        """R16-R17: the remote site applies the dispatcher's batch, in order, and answers
        with an ack."""
        sender = self._senders[op.sender]
        dispatcher = sender.dispatchers[op.dispatcher]
        message = dispatcher.batch_message
        site = sender.remote_site
        if message is None or not site.up:
            return False
        dispatcher.batch_message = None
        site_id = site.id
        sender_id = sender.id
        entries = site.entries
        stats = site.stats
        fails = site.fails
        forwards = bool(site.senders)
        statuses: list[str] = []
        exceptions: dict[int, str] = {}  # batch index -> exception, for `failed` events
        applied = 0  # the common counter is added once per batch
        invalid_deltas = 0
        # The applied memory of `memory_origin` (None: nothing applied from it yet): looked
        # up once per run of one origin's events (a batch is mostly one origin's).
        memory: AppliedRanges | None = None
        memory_origin = -1
        # The `applied` observations of ok events, filled in from these templates.
        full_ok: Observation = {
            "kind": "applied",
            "site": site_id,
            "sender": sender_id,
            "event": None,
            "key": None,
            "status": "ok",
        }
        delta_ok = full_ok.copy()
        delta_ok["value"] = None  # P6: the value the delta built
        events = message.events
        ships = message.as_delta
        for index in range(len(events)):
            event = events[index]
            key = event.key
            origin = event.origin
            if origin != memory_origin:
                memory = site.applied.get(origin)
                memory_origin = origin
            if self._is_duplicate(memory, event):  # R16.1
                stats["duplicates"] += 1
                statuses.append("duplicate")
                out.append(_applied(site_id, sender_id, event, "duplicate"))
                continue
            if fails and key in fails:  # R16.2
                exception = self._attempt(site, fails[key])
                if exception is not None:
                    stats["failures"] += 1
                    statuses.append("failed")
                    exceptions[len(statuses) - 1] = exception
                    observation = _applied(site_id, sender_id, event, "failed")
                    observation["exception"] = exception
                    out.append(observation)
                    continue
            current = entries.get(key)
            entry = event.entry
            if current is not None:  # R16.3: the incoming tag must win over the entry's
                timestamp = entry.timestamp
                current_timestamp = current.timestamp
                if timestamp != current_timestamp:
                    wins = timestamp > current_timestamp
                elif entry.dsid == current.dsid:
                    wins = entry.version > current.version
                else:
                    wins = entry.dsid > current.dsid
                if not wins:
                    stats["conflicts"] += 1
                    statuses.append("conflict")
                    out.append(_applied(site_id, sender_id, event, "conflict"))
                    continue
            if ships[index]:  # R16.4: a delta applies only onto an entry with its base tag
                base = event.base
                if (
                    current is None
                    or base is None
                    or current.timestamp != base.timestamp
                    or current.dsid != base.dsid
                    or current.version != base.version
                ):
                    stats["invalid_deltas"] += 1
                    invalid_deltas += 1
                    statuses.append("invalid_delta")
                    out.append(_applied(site_id, sender_id, event, "invalid_delta"))
                    continue
                # R16.5. A tag names one write (R9, R21: timestamps of a key at a dsid
                # only grow), so the current entry *is* the base, a live entry, and the
                # value the delta builds is the one the origin built: `entry.value`.
                built = entry.value
                entries[key] = entry
                observation = delta_ok.copy()
                observation["event"] = event.id
                observation["key"] = key
                observation["value"] = built
                out.append(observation)
            else:
                entries[key] = entry  # R16.5: the full value and the tag
                observation = full_ok.copy()
                observation["event"] = event.id
                observation["key"] = key
                out.append(observation)
            applied += 1
            statuses.append("ok")
            # R16.1: only events applied with status ok are remembered
            if memory is None:
                memory = site.applied[origin] = AppliedRanges()
            memory.add(event.seq)
            if forwards:
                self._forward(site, event, out)
        stats["applied"] += applied
        dispatcher.ack_message = AckMessage(message.batch_id, statuses, exceptions, invalid_deltas)
        return True

    def _attempt(self, site: SiteState, fail: FailEntry) -> str | None:
        """R16.2: make up to 1 + retry_attempts attempts; the exception if all failed.

        Each attempt consumes one injected failure while any are left, else succeeds.
        """
        remaining = fail.remaining
        if remaining <= 0:
            return None
        retry_attempts = site.retry_attempts
        if retry_attempts < 0 or remaining <= retry_attempts:  # -1: retry until success
            site.stats["retries"] += remaining
            fail.remaining = 0
            return None
        attempts = 1 + retry_attempts
        site.stats["retries"] += attempts - 1
        fail.remaining = remaining - attempts
        return fail.exception

    def _is_duplicate(self, memory: AppliedRanges | None, event: Event) -> bool:
        """R16.1: exactly "this event id was applied ok at this site" (impl/applied.py):
        `memory` is what the site applied of the event's origin (None: nothing yet)."""
        return memory is not None and event.seq in memory

    def _forward(self, site: SiteState, event: Event, out: list[Observation]) -> None:
        """R22: offer an event applied ok at `site` to its senders, in sorted id order;
        each queues it on the dispatcher of its route at this site (R28, R29)."""
        recipients = event.recipients | site.remotes
        now = self._now
        bucket = -2  # not yet computed
        for sender in site.senders:
            if not self._should_forward(sender, event):
                continue
            if not self._queues(sender):  # R37: a stopped sender queues nothing
                self._not_queued(sender, event.id, out)
                continue
            if bucket == -2:
                bucket = site.bucket(event.key)
            dispatcher = sender.dispatchers[self._route(sender, event.key, event.thread, bucket)]
            copy = event.copy_for_queue(recipients, now, bucket)
            self._append(sender, dispatcher, copy)
            out.append(
                {
                    "kind": "forwarded",
                    "site": site.id,
                    "sender": sender.id,
                    "dispatcher": dispatcher.index,
                    "event": event.id,
                }
            )
            if sender.conflation and copy.op == "update":
                self._conflate_in_queue(sender, dispatcher, copy, out)

    def _should_forward(self, sender: SenderState, event: Event) -> bool:
        """R22: never back to the origin, never to a site the event already went to."""
        return sender.remote != event.origin and sender.remote not in event.recipients

    # ------------------------------------------------------------------ sender: acks

    def _deliver_ack(self, op: DeliverAck, out: list[Observation]) -> bool:
        """R18: settle each event of the dispatcher's acknowledged batch, in batch order
        (R33: a member kept back from the batch leaves with it); R38: then an alert for
        each event that left having waited past the threshold."""
        sender = self._senders[op.sender]
        dispatcher = sender.dispatchers[op.dispatcher]
        ack = dispatcher.ack_message
        if ack is None or not sender.home.up:
            return False
        in_flight = dispatcher.in_flight
        assert in_flight is not None, "R13: an ack in the network implies a batch in flight"
        dispatcher.ack_message = None
        dispatcher.in_flight = None  # next_retry_at is unchanged
        events = in_flight.events
        index = dispatcher.index
        log = self._stored(sender, dispatcher)
        if len(ack.statuses) == ack.removed_count:  # every event leaves the queue
            dispatcher.memory_bytes -= in_flight.memory  # R35
            dispatcher.on_disk -= in_flight.on_disk
            if log is not None:
                log.remove([event.slot for event in events])
                log.sync()
            if dispatcher.lazy:
                self._leave_lazy(sender, dispatcher, events, [])
            else:
                dispatcher.queue.remove_prefix(len(events))  # the batch is its prefix (R12)
            removed = in_flight.ids.copy()
            out.append(
                {
                    "kind": "acked",
                    "sender": sender.id,
                    "dispatcher": index,
                    "batch_id": ack.batch_id,
                    "removed": removed,
                }
            )
            if sender.alert_threshold_ms > 0:
                self._alerts(sender, dispatcher, events, out)
            return True
        removed = []
        out.append(
            {
                "kind": "acked",
                "sender": sender.id,
                "dispatcher": index,
                "batch_id": ack.batch_id,
                "removed": removed,
            }
        )
        kept: list[Event] = []
        gone: list[Event] = []
        statuses = ack.statuses
        kept_back = in_flight.kept_back
        answered = 0  # the statuses answer the shipped members only (R33)
        for position in range(len(events)):
            event = events[position]
            if kept_back and kept_back[position]:
                self._left(dispatcher, event)
                removed.append(event.id)
                gone.append(event)
                continue
            status = statuses[answered]
            if status == "invalid_delta":
                if self._requeue_invalid_delta(sender, dispatcher, event, out):
                    kept.append(event)
                    answered += 1
                    continue
            elif status == "failed":
                self._failed(sender, dispatcher, event, ack.exceptions[answered], out)
            answered += 1
            self._left(dispatcher, event)
            removed.append(event.id)
            gone.append(event)
        if dispatcher.lazy:
            self._leave_lazy(sender, dispatcher, events, kept)
            if sender.parallel:
                dispatcher.resend = kept  # R31: the kept events go first in the next batch
        else:
            dispatcher.queue.remove_prefix(len(events))
            if kept:
                dispatcher.queue.push_front(kept)  # R19: back at the head, in batch order
        if log is not None:
            log.remove([event.slot for event in gone])
            for event in kept:
                log.update(event.slot, {"converted": event.converted})
            log.sync()
        if sender.alert_threshold_ms > 0:
            self._alerts(sender, dispatcher, gone, out)
        return True

    def _alerts(
        self,
        sender: SenderState,
        dispatcher: DispatcherState,
        gone: list[Event],
        out: list[Observation],
    ) -> None:
        """R38: an alert for each event an ack removed (in batch order) that was queued
        more than the threshold before now."""
        now = self._now
        threshold = sender.alert_threshold_ms
        for event in gone:
            if event.enqueued_at + threshold < now:
                sender.stats["events_exceeding_alert_threshold"] += 1
                out.append(
                    {
                        "kind": "alert",
                        "sender": sender.id,
                        "dispatcher": dispatcher.index,
                        "event": event.id,
                        "queued_ms": now - event.enqueued_at,
                    }
                )

    def _leave_lazy(
        self,
        sender: SenderState,
        dispatcher: DispatcherState,
        events: list[Event],
        kept: list[Event],
    ) -> None:
        """The batch `events` leaves a lazy queue, but for `kept`, which stay where they
        are: first in the queue and, for a parallel dispatcher, in their buckets' FIFOs
        (R31: a batch takes its buckets' oldest events; R19)."""
        for event in events:
            event.queued = False
        for event in kept:
            event.queued = True
        if sender.parallel:
            per_bucket: dict[int, int] = {}
            for event in events:
                per_bucket[event.bucket] = per_bucket.get(event.bucket, 0) + 1
            for event in kept:
                per_bucket[event.bucket] -= 1
            buckets = dispatcher.buckets
            for bucket, count in per_bucket.items():
                fifo = buckets[bucket]
                fifo.left(count)
                if fifo.size() == 0:
                    nonempty = dispatcher.nonempty
                    del nonempty[bisect_left(nonempty, bucket)]
        dispatcher.order.left(len(events) - len(kept))

    def _requeue_invalid_delta(
        self, sender: SenderState, dispatcher: DispatcherState, event: Event, out: list[Observation]
    ) -> bool:
        """R19: keep the event (True) at the queue head, converted to ship its full value."""
        event.converted = True
        sender.stats["invalid_deltas"] += 1
        out.append(
            {
                "kind": "invalid_delta",
                "sender": sender.id,
                "dispatcher": dispatcher.index,
                "event": event.id,
            }
        )
        return True

    def _failed(
        self,
        sender: SenderState,
        dispatcher: DispatcherState,
        event: Event,
        exception: str,
        out: list[Observation],
    ) -> None:
        """R18, R24: a failed event is dead-lettered by the listener, or dropped."""
        if sender.dlq_enabled:
            record = self._dead_letter_record(sender, event, exception)
            if self._store is not None:  # durable before the step ends (R24)
                self._store[sender.id].append(record)
            sender.dlq.append(record)
            sender.stats["dlq_records"] += 1
            kind = "dlq"
        else:
            sender.stats["events_dropped"] += 1
            kind = "dropped"
        out.append(
            {
                "kind": kind,
                "sender": sender.id,
                "dispatcher": dispatcher.index,
                "event": event.id,
                "exception": exception,
            }
        )

    def _dead_letter_record(
        self, sender: SenderState, event: Event, exception: str
    ) -> dict[str, object]:
        """R24: the dead-letter record; no value when the listener is secure (P7)."""
        record: dict[str, object] = {
            "event_id": event.id,
            "sender": sender.id,
            "key": event.key,
            "op": event.op,
            "exception": exception,
            "version": event.entry.version_list(),
        }
        if not sender.dlq_secure:
            record["value"] = None if event.value is None else dict(event.value)
        record["recipients"] = sorted(event.recipients)  # v1.2, for R26
        record["thread"] = event.thread  # v2.0: R26 requeues it by the same route
        return record

    # ------------------------------------------------------------------ redelivery

    def _redeliver(self, op: Redeliver, out: list[Observation]) -> bool:
        """R26: the selected dead-letter records back to the queue, or not (see SPEC)."""
        sender = self._senders[op.sender]
        selected = None if op.events is None else frozenset(op.events)
        records = sender.dlq
        if (
            not sender.home.up
            or not sender.running
            or not any(selected is None or record["event_id"] in selected for record in records)
        ):
            return False
        entries = sender.home.entries
        left: list[dict[str, object]] = []
        conflated: list[Observation] = []
        for record in records:
            event_id = str(record["event_id"])
            if selected is not None and event_id not in selected:
                left.append(record)
                continue
            key = str(record["key"])
            version = record["version"]
            assert isinstance(version, list)
            tag = (int(version[0]), int(version[1]), int(version[2]))
            current = entries.get(key)
            entry: Entry | None = None
            outcome = "unrecoverable"
            if current is not None and _newer(current.tag(), tag):
                outcome = "superseded"
            elif current is not None and current.tag() == tag:
                entry = current  # the record's own write: its value (or tombstone)
            elif "value" in record or record["op"] == "destroy":
                value = record.get("value") if record["op"] != "destroy" else None
                entry = Entry(_record_value(value), tag[0], tag[1], tag[2])
            if entry is not None:
                outcome = "requeued"
                origin, _, seq = event_id.partition(":")
                recipients = record["recipients"]
                assert isinstance(recipients, list)
                thread = record["thread"]
                assert isinstance(thread, int)
                home = sender.home
                bucket = home.bucket(key)
                event = Event(
                    event_id,
                    int(origin),
                    int(seq),
                    key,
                    str(record["op"]),
                    entry,
                    None,
                    None,  # always a full value
                    False,
                    frozenset(int(site) for site in recipients),
                    self._now,
                    thread,
                    size(entry.value),
                    bucket,
                )
                event.possible_duplicate = True
                dispatcher = sender.dispatchers[self._route(sender, key, thread, bucket)]
                self._append(sender, dispatcher, event)
                if sender.conflation and event.op == "update":
                    self._conflate_in_queue(sender, dispatcher, event, conflated)
                sender.stats["redelivered"] += 1
            elif outcome == "superseded":
                sender.stats["redelivery_superseded"] += 1
            else:
                sender.stats["redelivery_unrecoverable"] += 1
            out.append(
                {"kind": "redelivery", "sender": sender.id, "event": event_id, "outcome": outcome}
            )
            if conflated:  # R32: the requeued update may conflate an earlier one
                out.extend(conflated)
                conflated = []
        if self._store is not None:
            gone = {str(record["event_id"]) for record in left}
            self._store[sender.id].remove(
                [str(r["event_id"]) for r in records if str(r["event_id"]) not in gone]
            )
        sender.dlq = left
        return True

    # ------------------------------------------------------------------ network faults

    def _timeouts(self, out: list[Observation]) -> None:
        """R20 (on tick only): a batch unacknowledged for ack_timeout_ms is given up, per
        (sender, dispatcher); a parallel dispatcher will send it first again (R31)."""
        now = self._now
        for sender in self._sender_list:
            if not sender.home.up:
                continue
            for dispatcher in sender.dispatchers:
                in_flight = dispatcher.in_flight
                if in_flight is None or now < in_flight.sent_at + sender.ack_timeout_ms:
                    continue
                self._abandon(sender, dispatcher)
                dispatcher.next_retry_at = now + sender.retry_interval_ms
                sender.stats["batches_timed_out"] += 1
                out.append(
                    {
                        "kind": "timeout",
                        "sender": sender.id,
                        "dispatcher": dispatcher.index,
                        "batch_id": in_flight.batch_id,
                        "events": in_flight.shipped_ids.copy(),
                    }
                )

    def _abandon(self, sender: SenderState, dispatcher: DispatcherState) -> None:
        """R20's abandonment of the batch in flight (a timeout, R37's stop, R36's
        restart): its messages leave the network, every member (R33: shipped or kept
        back) will be re-sent as a possible duplicate, a parallel dispatcher's first (R31)."""
        dispatcher.batch_message = None
        dispatcher.ack_message = None
        in_flight = dispatcher.in_flight
        if in_flight is None:
            return
        for event in in_flight.events:  # still queued
            self._mark_resend(event)
        if sender.parallel:
            dispatcher.resend = in_flight.events.copy()
        dispatcher.in_flight = None
        log = self._stored(sender, dispatcher)
        if log is not None:
            for event in in_flight.events:
                log.update(event.slot, {"possible_duplicate": event.possible_duplicate})

    def _mark_resend(self, event: Event) -> None:
        """R20: a timed-out event will be re-sent flagged as a possible duplicate."""
        event.possible_duplicate = True

    def _drop(self, op: Drop, out: list[Observation]) -> bool:
        dispatcher = self._senders[op.sender].dispatchers[op.dispatcher]
        if dispatcher.batch_message is None:
            return False
        dispatcher.batch_message = None
        return True

    def _drop_ack(self, op: DropAck, out: list[Observation]) -> bool:
        dispatcher = self._senders[op.sender].dispatchers[op.dispatcher]
        if dispatcher.ack_message is None:
            return False
        dispatcher.ack_message = None
        return True

    def _site_down(self, op: SiteDown, out: list[Observation]) -> bool:
        """R21: the site stops; every message to or from it is lost (in_flight stays)."""
        site = self._sites[op.site]
        if not site.up:
            return False
        site.up = False
        for sender in self._sender_list:
            if sender.site == site.id or sender.remote == site.id:
                for dispatcher in sender.dispatchers:
                    dispatcher.batch_message = None
                    dispatcher.ack_message = None
        return True

    def _site_up(self, op: SiteUp, out: list[Observation]) -> bool:
        """R21: the site restarts; with wipe, as a brand-new distributed system."""
        site = self._sites[op.site]
        if site.up:
            return False
        site.up = True
        if op.wipe:
            # Kept: stats, dead letters, seq, batch id counters, injected failures.
            # R21: the clock restarts past every timestamp this site ever issued.
            site.timestamp_floor = max(site.timestamp_floor, site.last_issued + 1)
            site.entries = {}
            site.applied = {}
            for sender in site.senders:
                for dispatcher in sender.dispatchers:
                    dispatcher.reset(sender.parallel)
                    log = self._stored(sender, dispatcher)
                    if log is not None:
                        log.clear()
                self._set_running(sender, not sender.manual_start)  # as a new system starts
                sender.paused = False
        return True

    def _set_running(self, sender: SenderState, running: bool) -> None:
        """R37: the sender runs or is stopped (its site counts the stopped ones)."""
        if sender.running != running:
            sender.running = running
            sender.home.stopped += -1 if running else 1

    # ------------------------------------------------------------------ lifecycle (R36, R37)

    def _restart_sender(self, op: RestartSender, out: list[Observation]) -> bool:
        """R36: the members hosting the sender's queues crash and restart. Every batch in
        flight is given up (its members possible duplicates); with persistence every
        queued event stays, in order, `recovered` (not indexed, R32) and placed anew by
        R35; without, every queued event is lost. Then the sender runs, unpaused."""
        sender = self._senders[op.sender]
        if not sender.home.up:
            return False
        kept: list[list[Event]] = []
        for dispatcher in sender.dispatchers:
            self._abandon(sender, dispatcher)
            kept.append(self._queued(sender, dispatcher) if sender.persistent else [])
        observation: Observation = {
            "kind": "lifecycle",
            "sender": sender.id,
            "action": "restart",
            "kept": sum(len(events) for events in kept),
        }
        out.append(observation)
        if sender.persistent:
            for dispatcher, events in zip(sender.dispatchers, kept, strict=True):
                dispatcher.reset(sender.parallel)  # a new processor (R31: cursor d)
                if self._queue_logs:  # the queue as the disk holds it
                    events = self._read_back(sender, dispatcher)
                for event in self._recovered(sender, dispatcher, events):
                    event.recovered = True
                    event.on_disk = False
                    self._place(sender, dispatcher, event)
        else:
            self._discard(sender, "restart", "events_lost_on_restart", out)
            for dispatcher in sender.dispatchers:
                dispatcher.reset(sender.parallel)
        self._set_running(sender, True)
        sender.paused = False
        return True

    def _read_back(self, sender: SenderState, dispatcher: DispatcherState) -> list[Event]:
        """R36: the dispatcher's durable queue closed and opened again, its events read
        back from the disk in order."""
        key = (sender.id, dispatcher.index)
        old = self._queue_logs[key]
        old.close()
        log = self._queue_logs[key] = QueueLog(old.path, _notice, self._queue_fsync, buffered=True)
        events = []
        for slot, record in log.read_back():
            event = restored_event(record, sender.home.buckets)
            event.slot = slot
            events.append(event)
        return events

    def _recovered(
        self, sender: SenderState, dispatcher: DispatcherState, events: list[Event]
    ) -> list[Event]:
        """R36: the queued events a persistent dispatcher reads back after a restart."""
        return events

    def _discard(
        self, sender: SenderState, reason: str, counter: str, out: list[Observation]
    ) -> None:
        """Every queued event of every dispatcher lost (`queue_lost`, dispatcher order,
        then queue order); each dispatcher emptied but for its cursor, retry time and
        batch-id counter."""
        lost = 0
        for dispatcher in sender.dispatchers:
            for event in self._queued(sender, dispatcher):
                out.append(
                    {
                        "kind": "queue_lost",
                        "sender": sender.id,
                        "dispatcher": dispatcher.index,
                        "event": event.id,
                        "reason": reason,
                    }
                )
                lost += 1
            cursor, retry_at = dispatcher.cursor, dispatcher.next_retry_at
            dispatcher.reset(sender.parallel)
            dispatcher.cursor, dispatcher.next_retry_at = cursor, retry_at
            log = self._stored(sender, dispatcher)
            if log is not None:
                log.clear()
        sender.stats[counter] += lost

    def _stop_sender(self, op: StopSender, out: list[Observation]) -> bool:
        """R37: every batch in flight abandoned as R20 abandons one (no timeout counted,
        the retry time kept); the sender stopped and not paused. A serial non-persistent
        sender loses its queue; a persistent serial one keeps it, no longer indexed
        (`recovered`, R32); a parallel one keeps it as it is."""
        sender = self._senders[op.sender]
        if not sender.home.up or not sender.running:
            return False
        for dispatcher in sender.dispatchers:
            self._abandon(sender, dispatcher)
        self._set_running(sender, False)
        sender.paused = False
        out.append({"kind": "lifecycle", "sender": sender.id, "action": "stop"})
        if sender.parallel:
            return True
        if sender.persistent:
            for dispatcher in sender.dispatchers:
                for event in self._queued(sender, dispatcher):
                    event.recovered = True
                dispatcher.conflation = {}
        else:
            self._discard(sender, "stop", "events_lost_on_restart", out)
        return True

    def _start_sender(self, op: StartSender, out: list[Observation]) -> bool:
        """R37: the stopped sender runs again, unpaused, every dispatcher ready to flush
        at once; with `clean_queues` every queued event is discarded first."""
        sender = self._senders[op.sender]
        if not sender.home.up or sender.running:
            return False
        out.append({"kind": "lifecycle", "sender": sender.id, "action": "start"})
        if op.clean_queues:
            self._discard(sender, "clean_queues", "events_discarded_clean_start", out)
        for dispatcher in sender.dispatchers:
            dispatcher.next_retry_at = 0
        self._set_running(sender, True)
        sender.paused = False
        return True

    def _pause_sender(self, op: PauseSender, out: list[Observation]) -> bool:
        """R37: no flush while paused; events keep being queued."""
        sender = self._senders[op.sender]
        if not sender.home.up or not sender.running or sender.paused:
            return False
        sender.paused = True
        out.append({"kind": "lifecycle", "sender": sender.id, "action": "pause"})
        return True

    def _resume_sender(self, op: ResumeSender, out: list[Observation]) -> bool:
        """R37: the paused sender flushes again."""
        sender = self._senders[op.sender]
        if not sender.home.up or not sender.paused:
            return False
        sender.paused = False
        out.append({"kind": "lifecycle", "sender": sender.id, "action": "resume"})
        return True

    # ------------------------------------------------------------------ settle

    def _settle(self, op: Settle, out: list[Observation]) -> bool:
        """R25: ordinary operations, chosen deterministically, until quiescent.

        The loop is settle's effect; like every enabled operation (§3) it is followed by
        a flush, which matters only for a sender whose remote is down and whose
        retry_interval_ms is 0: it fails to connect once more.
        """
        self.settle_capped = False
        for _ in range(self.settle_cap):
            inner = self._settle_next()
            if inner is None:
                return True
            enabled = self._step(inner, out)
            assert enabled, f"settle chose {inner!r}, which is not enabled"
        self.settle_capped = self._settle_next() is not None
        return True

    def _settle_next(self) -> Op | None:
        """R39: over (sender, dispatcher) pairs, the first deliver, else the first
        deliver_ack, else a tick."""
        for sender in self._sender_list:
            if sender.remote_site.up:
                for dispatcher in sender.dispatchers:
                    if dispatcher.batch_message is not None:
                        return Deliver(sender.id, dispatcher.index)
        for sender in self._sender_list:
            if sender.home.up:
                for dispatcher in sender.dispatchers:
                    if dispatcher.ack_message is not None:
                        return DeliverAck(sender.id, dispatcher.index)
        ms = self._settle_wait()
        return None if ms is None else Tick(ms)

    def _settle_wait(self) -> int | None:
        """R39: how long to tick until the next due dispatcher, or None if none is due."""
        now = self._now
        due = -1
        for sender in self._sender_list:
            if not (sender.home.up and sender.remote_site.up):
                continue
            for dispatcher in sender.dispatchers:
                at = self._dispatcher_due(sender, dispatcher)
                if at >= 0 and (due < 0 or at < due):
                    due = at
        if due < 0 or due > INT64_MAX:  # v1.2: settle never ticks past 2^63-1
            return None
        return max(1, due - now)

    def _dispatcher_due(self, sender: SenderState, dispatcher: DispatcherState) -> int:
        """R39: when a dispatcher's timer fires next (-1: none): its batch's ack timeout
        whatever the sender's state; a flush only while the sender runs unpaused."""
        in_flight = dispatcher.in_flight
        if in_flight is not None:
            return in_flight.sent_at + sender.ack_timeout_ms
        if not sender.running or sender.paused:
            return -1
        if dispatcher.lazy:
            waiting = dispatcher.order.size()
            if not waiting:
                return -1
            head = dispatcher.order.head()
        else:
            waiting = dispatcher.queue.size()
            if not waiting:
                return -1
            head = dispatcher.queue.head()
        ready = (
            self._now
            if waiting >= sender.batch_size
            else head.enqueued_at + sender.batch_time_interval_ms
        )
        return max(dispatcher.next_retry_at, ready)


def _stored(value: Mapping[str, Scalar]) -> Value:
    """An operation's value or changes as the state keeps them.

    Operations are immutable records and the engine never mutates a value, so a plain
    dict is shared, not copied; any other mapping becomes a dict (JSON-able, R4).
    """
    return value if type(value) is dict else dict(value)


def _applied(site: int, sender: str, event: Event, status: str) -> Observation:
    """The `applied` observation of an event that was not applied ok (R16)."""
    return {
        "kind": "applied",
        "site": site,
        "sender": sender,
        "event": event.id,
        "key": event.key,
        "status": status,
    }


def _notice(line: str) -> None:
    """What the store says once on opening (a torn tail cut)."""
    print(f"wanconform: notice: {line}", file=sys.stderr)


def _copy_record(record: dict[str, object]) -> dict[str, object]:
    """A dead-letter record for `observe()`: a copy that shares nothing with the state."""
    copy = dict(record)
    value = copy.get("value")
    if isinstance(value, dict):
        copy["value"] = dict(value)
    for name in ("version", "recipients"):
        listed = copy[name]
        if isinstance(listed, list):
            copy[name] = list(listed)
    return copy


def _newer(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """R16.3's order of tags: is `a` newer than `b`?"""
    if a[1] != b[1]:
        return a[1] > b[1]
    if a[2] == b[2]:
        return a[0] > b[0]
    return a[2] > b[2]


def _record_value(value: object) -> Value | None:
    """A dead-letter record's value as an entry's (a fresh dict: records stay apart)."""
    if value is None:
        return None
    assert isinstance(value, dict)
    return dict(value)
