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
from collections.abc import Iterator
from itertools import islice

from model.queues import enqueue, flagged, remove, with_dispatcher
from model.receiver import wins
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
from traces.canonical import size
from traces.config import Config, SenderConfig
from traces.observations import Observation
from traces.ops import Redeliver, Value


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
    left = {b: len(fifo) - taken.get(b, 0) for b, fifo in fifos.items()}
    candidates = sorted(b for b, count in left.items() if count > 0)
    rest: dict[int, Iterator[int]] = {}
    cursor = dispatcher.cursor
    assert cursor is not None
    step = sender.dispatcher_threads
    while len(members) < sender.batch_size and candidates:
        at = bisect_left(candidates, cursor)
        if at == len(candidates):
            at = 0  # past the last owned bucket: round again from the first
        bucket = candidates[at]
        following = rest.get(bucket)
        if following is None:
            following = rest[bucket] = islice(iter(fifos[bucket]), taken.get(bucket, 0), None)
        position = next(following)
        members.append((position, items[position]))
        left[bucket] -= 1
        if not left[bucket]:
            del candidates[at]
        cursor = bucket + step if bucket + step < buckets_total else index
    return members, cursor


def flush(config: Config, state: State, sender: SenderConfig) -> tuple[State, list[Observation]]:
    """R15/R30 for each dispatcher of one sender, in index order: send the next batch, or
    fail to connect. Only a running, unpaused sender at an up site flushes (R37)."""
    current = state.senders[sender.id]
    if not state.sites[sender.site].up or not current.running or current.paused:
        return state, []
    now = state.time
    observations: list[Observation] = []
    batch_size, interval = sender.batch_size, sender.batch_time_interval_ms
    for index, dispatcher in enumerate(current.dispatchers):
        if dispatcher.in_flight is not None or now < dispatcher.next_retry_at:
            continue
        queue = dispatcher.queue  # R15's trigger (`wants_flush`, written out: it runs often)
        waiting = len(queue.items)
        if not waiting or (waiting < batch_size and now - queue.head().enqueued_at < interval):
            continue
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
        observations.append(sent)
    if not observations:
        return state, []
    return state._replace(senders=state.senders.set(sender.id, current)), observations


def _send(
    config: Config, sender: SenderConfig, current: Sender, index: int, now: int
) -> tuple[Sender, Observation]:
    """R13-R15: dispatcher `index` sends its next batch (R15's prefix, or R31's)."""
    dispatcher = current.dispatchers[index]
    cursor = dispatcher.cursor
    if cursor is None:
        members = dispatcher.queue.first(sender.batch_size)
    else:
        buckets_total = config.region(sender.site).total_num_buckets
        members, cursor = parallel_batch(sender, index, dispatcher, buckets_total)
    events = [event for _, event in members]
    shipped = tuple((event, ships_as_delta(sender, event)) for event in events)
    batch_id = dispatcher.last_batch_id + 1
    bytes_full = sum(shipped_bytes(e, False) for e, as_delta in shipped if not as_delta)
    bytes_delta = sum(shipped_bytes(e, True) for e, as_delta in shipped if as_delta)
    resent = sum(1 for e in events if e.possible_duplicate)
    ids = tuple(e.event_id for e in events)
    stats = current.stats
    updated = dispatcher._replace(
        in_flight=InFlight(batch_id, tuple(p for p, _ in members), ids, now),
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
    observation = {
        "kind": "sent",
        "sender": sender.id,
        "dispatcher": index,
        "batch_id": batch_id,
        "events": list(ids),
        "bytes_full": bytes_full,
        "bytes_delta": bytes_delta,
        "events_resent": resent,
    }
    return current, observation


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
            current, _ = enqueue(sender, current, event)
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
    event in batch order."""
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
    for position, (status, exception) in zip(in_flight.positions, ack.statuses, strict=True):
        event = queue.at(position)
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
    return state._replace(senders=state.senders.set(sender_id, current)), [acked, *follow_ups]


def timeouts(config: Config, state: State) -> tuple[State, list[Observation]]:
    """R20 per (sender, dispatcher): a batch whose ack is overdue loses the connection;
    its events will be resent (a parallel dispatcher's as its `resend` list, R31)."""
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
            updated = dispatcher._replace(
                queue=flagged(dispatcher, in_flight.positions),
                in_flight=None,
                batch_message=None,
                ack_message=None,
                next_retry_at=now + sender.retry_interval_ms,
                resend=in_flight.positions if dispatcher.cursor is not None else (),
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
                    "events": list(in_flight.event_ids),
                }
            )
        if current is not before:
            state = state._replace(senders=state.senders.set(sender.id, current))
    return state, observations
