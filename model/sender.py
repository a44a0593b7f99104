"""The gateway sender: R12-R15 (queue, one batch in flight, payload, flush), R18-R20
(acknowledgements, full-value fallback, timeouts), R24 (dead-letter listener), R26
(redelivery from the dead-letter queue, v1.2), and v2.0's dispatchers: R29 (routing to
a dispatcher), R30 (every rule per dispatcher), R31 (parallel batch formation) and R35
(queue memory, accounting only).

Events leave a queue only on an ack (R12, "peek does not remove"). A serial dispatcher's
batch is its queue's first events; a parallel one's is its `resend` list, then the
oldest events of its buckets taken round robin from its `cursor` (R31). Either way a
batch names its members by queue position, and an ack removes those positions.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice

from immutables import Map

from model.queues import abandon, enqueue, loses_its_base, reappended, remove, with_dispatcher
from model.routing import bucket_of
from model.state import (
    BatchMessage,
    DeadLetter,
    Dispatcher,
    GatewayEvent,
    InFlight,
    Sender,
    Seq,
    State,
)
from model.tags import wins
from traces.canonical import size
from traces.config import Config, SenderConfig
from traces.observations import Observation
from traces.ops import (
    PauseSender,
    Redeliver,
    RestartSender,
    ResumeSender,
    StartSender,
    StopSender,
    Value,
)


def ships_as_delta(sender: SenderConfig, event: GatewayEvent) -> bool:
    """R14: a delta goes out as a delta only from a delta sender, unless R19 converted it."""
    return sender.delta and event.delta is not None and not event.converted


def shipped_bytes(event: GatewayEvent, as_delta: bool) -> int:
    """R14/R4: size of the delta, or of the full value (0 for a destroy)."""
    return size(event.delta) if as_delta else event.size


# -- flush (R15, R30, R31) ------------------------------------------------------------------


def wants_flush(sender: SenderConfig, dispatcher: Dispatcher, now: int) -> bool:
    """R15's trigger: a full batch, or a head event that has waited the batch time interval
    (the queue is in append order, so its head is its oldest event, R30)."""
    queue = dispatcher.queue
    waiting = len(queue.items)
    if waiting >= sender.batch_size:
        return True
    return waiting > 0 and now - queue.head().enqueued_at >= sender.batch_time_interval_ms


def parallel_batch(
    sender: SenderConfig, index: int, dispatcher: Dispatcher, buckets_total: int
) -> tuple[list[tuple[int, GatewayEvent]], int]:
    """R31: the batch of a parallel dispatcher and its cursor afterwards: first the
    `resend` list, then, while the batch is short, the oldest event not yet in it of the
    first owned bucket at or after the cursor (cyclically), the cursor then moving to the
    next owned bucket."""
    items = dispatcher.queue.items
    members = [(position, items[position]) for position in dispatcher.resend]
    taken: dict[int, int] = {}
    for _, event in members:  # a bucket's events in `resend` are its FIFO's first ones
        assert event.bucket is not None
        taken[event.bucket] = taken.get(event.bucket, 0) + 1
    fifos = dispatcher.buckets
    left = {b: len(fifo.items) - taken.get(b, 0) for b, fifo in fifos.items()}
    candidates = sorted(b for b, count in left.items() if count > 0)
    cursor = dispatcher.cursor
    assert cursor is not None
    room = sender.batch_size - len(members)
    if not room or not candidates:
        return members, cursor
    # Going up cyclically from the cursor through the buckets with an event not yet taken,
    # one event each, in rounds; a bucket leaves the rounds when it has none left.
    at = bisect_left(candidates, cursor)
    rounds = candidates[at:] + candidates[:at]
    streams = {b: islice(iter(fifos[b]), taken.get(b, 0), None) for b in rounds}
    bucket = rounds[0]
    while room and rounds:
        still: list[int] = []
        for bucket in rounds:
            position = next(streams[bucket])
            members.append((position, items[position]))
            room -= 1
            left[bucket] -= 1
            if left[bucket]:
                still.append(bucket)
            if not room:
                break
        rounds = still
    step = sender.dispatcher_threads
    return members, (bucket + step if bucket + step < buckets_total else index)


def flush_due(state: State, sender: SenderConfig, index: int) -> int | None:
    """When R15 (R30, R37) lets dispatcher `index` flush, unless another step comes
    first: the earliest `now` at which `flush` would act on it in this state, or None
    when only another step can make it flush (an event log's lateness, docs/LOG.md)."""
    current = state.senders[sender.id]
    if not state.sites[sender.site].up or not current.running or current.paused:
        return None
    dispatcher = current.dispatchers[index]
    waiting = len(dispatcher.queue.items)
    if dispatcher.in_flight is not None or not waiting:
        return None
    if waiting >= sender.batch_size:
        return dispatcher.next_retry_at
    head_due = dispatcher.queue.head().enqueued_at + sender.batch_time_interval_ms
    return max(dispatcher.next_retry_at, head_due)


def flush(
    config: Config, state: State, sender: SenderConfig, only: int | None = None
) -> tuple[State, list[Observation]]:
    """R15/R30 for each dispatcher of one sender, in index order: send the next batch, or
    fail to connect (`only`: for that dispatcher alone, an event log's flush). Only a
    running, unpaused sender at an up site flushes (R37)."""
    current = state.senders[sender.id]
    if not state.sites[sender.site].up or not current.running or current.paused:
        return state, []
    now = state.time
    observations: list[Observation] = []
    batch_size, interval = sender.batch_size, sender.batch_time_interval_ms
    for index, dispatcher in enumerate(current.dispatchers):
        if dispatcher.in_flight is not None or now < dispatcher.next_retry_at:
            continue
        if only is not None and index != only:
            continue
        queue = dispatcher.queue  # R15's trigger (`wants_flush`, written out: it runs often)
        waiting = len(queue.items)
        if not waiting:
            continue
        if waiting < batch_size and now - queue.items[queue.start].enqueued_at < interval:
            continue  # (the head: `Seq.head`, written out too)
        if not state.sites[sender.remote].up:
            stats = current.stats
            current = with_dispatcher(
                current, index, dispatcher._replace(next_retry_at=now + sender.retry_interval_ms)
            )._replace(stats=stats._replace(connection_failures=stats.connection_failures + 1))
            observations.append(
                {
                    "kind": "connection_failed",
                    "sender": sender.id,
                    "dispatcher": index,
                    "remote": sender.remote,
                }
            )
            continue
        current, sent = _send(config, sender, current, index, now)
        observations.extend(sent)
    if not observations:
        return state, []
    return state._replace(senders=state.senders.set(sender.id, current)), observations


def _send(
    config: Config, sender: SenderConfig, current: Sender, index: int, now: int
) -> tuple[Sender, list[Observation]]:
    """R13-R15: dispatcher `index` sends its next batch (R15's prefix, or R31's), less the
    members that batch conflation keeps back (R33); the `conflated` and `sent`
    observations."""
    dispatcher = current.dispatchers[index]
    cursor = dispatcher.cursor
    if cursor is None:
        members = dispatcher.queue.first(sender.batch_size)
    else:
        buckets_total = config.region(sender.site).total_num_buckets
        members, cursor = parallel_batch(sender, index, dispatcher, buckets_total)
    observations: list[Observation] = []
    stats = current.stats
    kept_back: set[int] = set()
    if sender.enable_batch_conflation and len(members) > 1:
        members, kept_back, conflated, converted = conflate_batch(sender, members)
        if converted:  # R34: survivors that now ship their full value
            dispatcher = dispatcher._replace(
                queue=dispatcher.queue.replace({p: e for p, e in members if p in converted})
            )
            stats = stats._replace(
                conflation_full_values=stats.conflation_full_values + len(converted)
            )
        for member, by in conflated:
            observations.append(
                {
                    "kind": "conflated",
                    "sender": sender.id,
                    "dispatcher": index,
                    "event": member,
                    "by": by,
                    "where": "batch",
                }
            )
        stats = stats._replace(
            events_conflated_from_batches=stats.events_conflated_from_batches + len(conflated)
        )
    events = [event for p, event in members if p not in kept_back]
    shipped = tuple((event, ships_as_delta(sender, event)) for event in events)
    batch_id = dispatcher.last_batch_id + 1
    bytes_full = sum(shipped_bytes(e, False) for e, as_delta in shipped if not as_delta)
    bytes_delta = sum(shipped_bytes(e, True) for e, as_delta in shipped if as_delta)
    resent = sum(1 for e in events if e.possible_duplicate)
    ids = tuple(e.event_id for e in events)
    positions = tuple(p for p, _ in members)
    updated = dispatcher._replace(
        in_flight=InFlight(
            batch_id,
            positions,
            tuple(e.event_id for _, e in members),
            now,
            ids,
            frozenset(positions),
        ),
        last_batch_id=batch_id,
        batch_message=BatchMessage(batch_id, shipped),
        resend=(),
        cursor=cursor,
    )
    current = with_dispatcher(current, index, updated)._replace(
        stats=stats._replace(
            batches_sent=stats.batches_sent + 1,
            events_sent=stats.events_sent + len(events),
            events_resent=stats.events_resent + resent,
            bytes_full=stats.bytes_full + bytes_full,
            bytes_delta=stats.bytes_delta + bytes_delta,
        )
    )
    observations.append(
        {
            "kind": "sent",
            "sender": sender.id,
            "dispatcher": index,
            "batch_id": batch_id,
            "events": list(ids),
            "bytes_full": bytes_full,
            "bytes_delta": bytes_delta,
            "events_resent": resent,
        }
    )
    return current, observations


def conflate_batch(
    sender: SenderConfig, members: list[tuple[int, GatewayEvent]]
) -> tuple[list[tuple[int, GatewayEvent]], set[int], list[tuple[str, str]], set[int]]:
    """R33: the members of a batch that a later update of their key, with a newer tag,
    makes unnecessary: each is kept back (not shipped) and named with `by`, the latest
    such update (which is shipped). R34: a survivor that would ship as a delta on the tag
    of one it conflated is converted to ship its full value. Returns the members (with
    conversions), the positions kept back, (member, by) in batch order and the positions
    converted."""
    updates: dict[str, list[int]] = {}  # key -> indexes (in `members`) of its updates
    for i, (_, event) in enumerate(members):
        if event.op == "update":
            updates.setdefault(event.key, []).append(i)
    kept_back: set[int] = set()
    conflated: list[tuple[str, str]] = []
    survivors: dict[int, list[int]] = {}  # index of `by` -> indexes it conflated
    if all(len(indexes) == 1 for indexes in updates.values()):
        return members, set(), [], set()  # no key has two updates in the batch
    for i, (position, event) in enumerate(members):
        if event.op != "update":
            continue
        later = [
            j for j in updates[event.key] if j > i and wins(members[j][1].version, event.version)
        ]
        if later:
            by = later[-1]
            kept_back.add(position)
            conflated.append((event.event_id, members[by][1].event_id))
            survivors.setdefault(by, []).append(i)
    members = list(members)
    converted: set[int] = set()
    for by, gone in survivors.items():
        position, survivor = members[by]
        if any(loses_its_base(sender, survivor, members[i][1]) for i in gone):
            members[by] = (position, survivor._replace(converted=True))
            converted.add(position)
    return members, kept_back, conflated, converted


# -- dead letters (R24, R26) ----------------------------------------------------------------


def dead_letter(sender: SenderConfig, event: GatewayEvent, exception: str) -> DeadLetter:
    """R24: the record of a failed event; no value with `dlq_secure` (P7)."""
    return DeadLetter(
        event_id=event.event_id,
        sender=sender.id,
        key=event.key,
        op=event.op,
        exception=exception,
        version=event.version,
        value=None if sender.dlq_secure else event.value,
        has_value=not sender.dlq_secure,
        recipients=tuple(sorted(event.recipients)),
        thread=event.thread,
    )


def redeliver(config: Config, state: State, op: Redeliver) -> tuple[State, list[Observation]]:
    """R26: the selected dead-letter records leave the queue, in queue order; each is
    superseded (a newer entry exists at the sender's site), requeued (with the entry's
    value when the entry is the record's own write, else the record's value or a
    tombstone for a destroy) or unrecoverable (a secure record of a create or update
    whose write is gone). A requeued event takes the route of its key and thread (R29)."""
    sender = config.sender(op.sender)
    current = state.senders[op.sender]
    entries = state.sites[sender.site].entries
    selected = None if op.events is None else set(op.events)
    left: list[DeadLetter] = []
    observations: list[Observation] = []
    for record in current.dead_letters:
        if selected is not None and record.event_id not in selected:
            left.append(record)
            continue
        entry = entries.get(record.key)
        value: Value | None
        stats = current.stats
        conflated: list[Observation] = []
        if entry is not None and wins(entry.version, record.version):
            outcome = "superseded"
        elif entry is not None and entry.version == record.version:
            outcome, value = "requeued", entry.value
        elif record.has_value or record.op == "destroy":
            outcome, value = "requeued", record.value if record.op != "destroy" else None
        else:
            outcome = "unrecoverable"
        if outcome == "requeued":
            origin, seq = record.event_id.split(":")
            event = GatewayEvent(
                event_id=record.event_id,
                origin=int(origin),
                seq=int(seq),
                key=record.key,
                op=record.op,
                value=value,
                version=record.version,
                base_version=None,
                delta=None,  # always a full value
                converted=False,
                recipients=frozenset(record.recipients),
                possible_duplicate=True,
                enqueued_at=state.time,
                thread=record.thread,
                size=size(value),
                bucket=bucket_of(config, sender.site, record.key),
            )
            current, _, conflated = enqueue(sender, current, event)
            stats = current.stats
            current = current._replace(stats=stats._replace(redelivered=stats.redelivered + 1))
        elif outcome == "superseded":
            current = current._replace(
                stats=stats._replace(redelivery_superseded=stats.redelivery_superseded + 1)
            )
        else:
            current = current._replace(
                stats=stats._replace(redelivery_unrecoverable=stats.redelivery_unrecoverable + 1)
            )
        observations.append(
            {
                "kind": "redelivery",
                "sender": op.sender,
                "event": record.event_id,
                "outcome": outcome,
            }
        )
        observations += conflated  # R32: the requeued update may conflate an earlier one
    dead_letters: Seq[DeadLetter] = Seq()
    for record in left:
        dead_letters = dead_letters.append(record)
    updated = current._replace(dead_letters=dead_letters)
    return state._replace(senders=state.senders.set(op.sender, updated)), observations


# -- acknowledgements (R18, R19, R24) and timeouts (R20) ------------------------------------


def deliver_ack(
    config: Config, state: State, sender_id: str, index: int
) -> tuple[State, list[Observation]]:
    """R18, R19, R24: dispatcher `index` processes the ack of its batch in flight, event by
    event in batch order: each shipped event by its status, every member R33 kept back
    leaves too; R38: then an alert per event removed that waited past the threshold."""
    sender = config.sender(sender_id)
    current = state.senders[sender_id]
    dispatcher = current.dispatchers[index]
    ack, in_flight = dispatcher.ack_message, dispatcher.in_flight
    assert ack is not None and in_flight is not None  # enabled() guarantees both
    queue = dispatcher.queue
    kept: dict[int, GatewayEvent] = {}
    removed: list[str] = []
    gone: list[int] = []
    follow_ups: list[Observation] = []
    stats = current.stats
    dead_letters = current.dead_letters
    statuses = iter(ack.statuses)
    shipped = in_flight.shipped
    for position, event_id in zip(in_flight.positions, in_flight.event_ids, strict=True):
        event = queue.at(position)
        if len(shipped) != len(in_flight.event_ids) and event_id not in shipped:
            removed.append(event_id)  # R33: kept back from the batch, it leaves with it
            gone.append(position)
            continue
        status, exception = next(statuses)
        if status == "invalid_delta":  # R19: stays (at the head), converted to full
            kept[position] = event._replace(converted=True)
            stats = stats._replace(invalid_deltas=stats.invalid_deltas + 1)
            follow_ups.append(
                {
                    "kind": "invalid_delta",
                    "sender": sender_id,
                    "dispatcher": index,
                    "event": event.event_id,
                }
            )
            continue
        removed.append(event.event_id)
        gone.append(position)
        if status != "failed":
            continue
        assert exception is not None
        if sender.failure_listener == "dlq":  # R24
            dead_letters = dead_letters.append(dead_letter(sender, event, exception))
            stats = stats._replace(dlq_records=stats.dlq_records + 1)
            kind = "dlq"
        else:  # R18: Geode's default listener logs and drops: data loss
            stats = stats._replace(events_dropped=stats.events_dropped + 1)
            kind = "dropped"
        follow_ups.append(
            {
                "kind": kind,
                "sender": sender_id,
                "dispatcher": index,
                "event": event.event_id,
                "exception": exception,
            }
        )
    alerts: list[Observation] = []
    threshold, now = sender.alert_threshold_ms, state.time
    if threshold > 0:  # R38, over every member that left, in batch order
        for position in gone:
            event = queue.at(position)
            if event.enqueued_at + threshold < now:
                alerts.append(
                    {
                        "kind": "alert",
                        "sender": sender_id,
                        "dispatcher": index,
                        "event": event.event_id,
                        "queued_ms": now - event.enqueued_at,
                    }
                )
        stats = stats._replace(
            events_exceeding_alert_threshold=stats.events_exceeding_alert_threshold + len(alerts)
        )
    dispatcher = remove(dispatcher._replace(queue=queue.replace(kept)), gone)
    updated = dispatcher._replace(
        in_flight=None,
        ack_message=None,
        resend=tuple(kept) if dispatcher.cursor is not None else (),  # R31: kept go first
    )
    current = with_dispatcher(current, index, updated)._replace(
        stats=stats, dead_letters=dead_letters
    )
    acked: Observation = {
        "kind": "acked",
        "sender": sender_id,
        "dispatcher": index,
        "batch_id": ack.batch_id,
        "removed": removed,
    }
    observations = [acked, *follow_ups, *alerts]
    return state._replace(senders=state.senders.set(sender_id, current)), observations


def timeout_due(state: State, sender: SenderConfig, index: int) -> int | None:
    """When R20 times out dispatcher `index`'s batch in this state (None: it has none in
    flight, or its site is down): an event log's lateness (docs/LOG.md)."""
    in_flight = state.senders[sender.id].dispatchers[index].in_flight
    if in_flight is None or not state.sites[sender.site].up:
        return None
    return in_flight.sent_at + sender.ack_timeout_ms


def timeouts(
    config: Config, state: State, only: tuple[str, int] | None = None
) -> tuple[State, list[Observation]]:
    """R20 per (sender, dispatcher): a batch whose ack is overdue loses the connection;
    its events will be resent (a parallel dispatcher's as its `resend` list, R31).
    `only`: that (sender, dispatcher) alone, an event log's timeout."""
    observations: list[Observation] = []
    now = state.time
    for sender in config.senders:
        if not state.sites[sender.site].up:
            continue
        current = before = state.senders[sender.id]
        for index, dispatcher in enumerate(before.dispatchers):
            in_flight = dispatcher.in_flight
            if in_flight is None or now < in_flight.sent_at + sender.ack_timeout_ms:
                continue
            if only is not None and only != (sender.id, index):
                continue
            updated = abandon(sender, dispatcher)._replace(
                next_retry_at=now + sender.retry_interval_ms
            )
            stats = current.stats
            current = with_dispatcher(current, index, updated)._replace(
                stats=stats._replace(batches_timed_out=stats.batches_timed_out + 1)
            )
            observations.append(
                {
                    "kind": "timeout",
                    "sender": sender.id,
                    "dispatcher": index,
                    "batch_id": in_flight.batch_id,
                    "events": list(in_flight.shipped),
                }
            )
        if current is not before:
            state = state._replace(senders=state.senders.set(sender.id, current))
    return state, observations


# -- the sender's lifecycle (R36, R37) -------------------------------------------------------


def _lost(
    sender: SenderConfig, current: Sender, reason: str, counter: str
) -> tuple[Sender, list[Observation]]:
    """Every queued event of every dispatcher lost (`queue_lost`, dispatcher order, then
    queue order); the dispatchers emptied but for their batch-id counters."""
    observations: list[Observation] = [
        {
            "kind": "queue_lost",
            "sender": sender.id,
            "dispatcher": index,
            "event": event.event_id,
            "reason": reason,
        }
        for index, dispatcher in enumerate(current.dispatchers)
        for event in dispatcher.queue
    ]
    stats = current.stats
    stats = stats._replace(**{counter: getattr(stats, counter) + len(observations)})
    dispatchers = tuple(
        Dispatcher(
            cursor=dispatcher.cursor,
            next_retry_at=dispatcher.next_retry_at,
            last_batch_id=dispatcher.last_batch_id,
        )
        for dispatcher in current.dispatchers
    )
    return current._replace(dispatchers=dispatchers, stats=stats), observations


def restart_sender(
    config: Config, state: State, op: RestartSender
) -> tuple[State, list[Observation]]:
    """R36: the members hosting the sender's queues crash and restart. Every dispatcher's
    messages leave the network and its batch in flight is given up; with persistence
    every queued event stays, in order (those in flight as possible duplicates), now
    `recovered` (R32) and placed anew by R35; without, every queued event is lost. The
    sender runs, not paused; counters, dead letters and batch ids are kept."""
    sender = config.sender(op.sender)
    current = state.senders[op.sender]
    dispatchers = []
    for index, dispatcher in enumerate(current.dispatchers):
        dispatcher = abandon(sender, dispatcher)._replace(next_retry_at=0, resend=())
        dispatchers.append(
            reappended(sender, index, dispatcher)
            if sender.enable_persistence
            else dispatcher._replace(cursor=index if sender.parallel else None)
        )
    current = current._replace(dispatchers=tuple(dispatchers), running=True, paused=False)
    kept = sum(len(d.queue) for d in current.dispatchers) if sender.enable_persistence else 0
    observations: list[Observation] = [
        {"kind": "lifecycle", "sender": op.sender, "action": "restart", "kept": kept}
    ]
    if not sender.enable_persistence:
        current, lost = _lost(sender, current, "restart", "events_lost_on_restart")
        current = current._replace(
            dispatchers=tuple(d._replace(next_retry_at=0) for d in current.dispatchers)
        )
        observations += lost
    return state._replace(senders=state.senders.set(op.sender, current)), observations


def stop_sender(config: Config, state: State, op: StopSender) -> tuple[State, list[Observation]]:
    """R37: every batch in flight abandoned as R20 abandons one (no timeout counted, the
    retry time kept); the sender stopped, not paused. A serial non-persistent sender
    loses its queue; a persistent serial one keeps it, no longer indexed (`recovered`,
    R32); a parallel one keeps it as it is."""
    sender = config.sender(op.sender)
    current = state.senders[op.sender]
    dispatchers = tuple(abandon(sender, d) for d in current.dispatchers)
    if sender.enable_persistence and not sender.parallel:
        dispatchers = tuple(
            d._replace(recovered=Map({p: True for p, _ in d.queue.positioned()}), conflation=Map())
            for d in dispatchers
        )
    current = current._replace(dispatchers=dispatchers, running=False, paused=False)
    observations: list[Observation] = [{"kind": "lifecycle", "sender": op.sender, "action": "stop"}]
    if not sender.parallel and not sender.enable_persistence:
        current, lost = _lost(sender, current, "stop", "events_lost_on_restart")
        observations += lost
    return state._replace(senders=state.senders.set(op.sender, current)), observations


def start_sender(config: Config, state: State, op: StartSender) -> tuple[State, list[Observation]]:
    """R37: the sender runs again, unpaused, each dispatcher ready to flush at once; with
    `clean_queues` every queued event is discarded first."""
    sender = config.sender(op.sender)
    current = state.senders[op.sender]
    observations: list[Observation] = [
        {"kind": "lifecycle", "sender": op.sender, "action": "start"}
    ]
    if op.clean_queues:
        current, lost = _lost(sender, current, "clean_queues", "events_discarded_clean_start")
        observations += lost
    dispatchers = tuple(d._replace(next_retry_at=0) for d in current.dispatchers)
    current = current._replace(dispatchers=dispatchers, running=True, paused=False)
    return state._replace(senders=state.senders.set(op.sender, current)), observations


def pause_sender(config: Config, state: State, op: PauseSender) -> tuple[State, list[Observation]]:
    """R37: no flush while paused; events keep being queued, a batch in flight may still
    be delivered, acknowledged or time out."""
    current = state.senders[op.sender]._replace(paused=True)
    observation: Observation = {"kind": "lifecycle", "sender": op.sender, "action": "pause"}
    return state._replace(senders=state.senders.set(op.sender, current)), [observation]


def resume_sender(
    config: Config, state: State, op: ResumeSender
) -> tuple[State, list[Observation]]:
    """R37: the paused sender flushes again."""
    current = state.senders[op.sender]._replace(paused=False)
    observation: Observation = {"kind": "lifecycle", "sender": op.sender, "action": "resume"}
    return state._replace(senders=state.senders.set(op.sender, current)), [observation]
