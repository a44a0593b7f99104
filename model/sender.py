"""The gateway sender: R12-R15 (queue, one batch in flight, payload, flush), R18-R20
(acknowledgements, full-value fallback, timeouts), R24 (dead-letter listener) and R26
(redelivery from the dead-letter queue, v1.2).

Events leave a queue only on an ack (R12, "peek does not remove"): a batch is always the
queue's prefix, so a sent, timed-out or acknowledged batch is addressed by its length.
"""

from __future__ import annotations

from model.receiver import wins
from model.state import BatchMessage, DeadLetter, GatewayEvent, InFlight, Sender, Seq, State
from traces.canonical import size
from traces.config import Config, SenderConfig
from traces.observations import Observation
from traces.ops import Redeliver, Value


def ships_as_delta(sender: SenderConfig, event: GatewayEvent) -> bool:
    """R14: a delta goes out as a delta only from a delta sender, unless R19 converted it."""
    return sender.delta and event.delta is not None and not event.converted


def shipped_bytes(event: GatewayEvent, as_delta: bool) -> int:
    """R14/R4: size of the delta, or of the full value (0 for a destroy)."""
    return size(event.delta) if as_delta else size(event.value)


def wants_flush(sender: SenderConfig, state: Sender, now: int) -> bool:
    """R15's trigger: a full batch, or a head event that has waited the batch time interval."""
    if len(state.queue) >= sender.batch_size:
        return True
    return (
        len(state.queue) > 0 and now - state.queue[0].enqueued_at >= sender.batch_time_interval_ms
    )


def flush(config: Config, state: State, sender: SenderConfig) -> tuple[State, list[Observation]]:
    """R15 for one sender: send the queue's prefix as the next batch, or fail to connect."""
    current = state.senders[sender.id]
    now = state.time
    if (
        not state.sites[sender.site].up
        or current.in_flight is not None
        or now < current.next_retry_at
        or not wants_flush(sender, current, now)
    ):
        return state, []
    if not state.sites[sender.remote].up:
        updated = current._replace(
            next_retry_at=now + sender.retry_interval_ms,
            stats=current.stats._replace(connection_failures=current.stats.connection_failures + 1),
        )
        observation = {"kind": "connection_failed", "sender": sender.id, "remote": sender.remote}
        return state._replace(senders=state.senders.set(sender.id, updated)), [observation]
    events = current.queue.prefix(sender.batch_size)
    shipped = tuple((event, ships_as_delta(sender, event)) for event in events)
    batch_id = current.last_batch_id + 1
    bytes_full = sum(shipped_bytes(e, False) for e, as_delta in shipped if not as_delta)
    bytes_delta = sum(shipped_bytes(e, True) for e, as_delta in shipped if as_delta)
    resent = sum(1 for e in events if e.possible_duplicate)
    stats = current.stats
    updated = current._replace(
        in_flight=InFlight(batch_id, tuple(e.event_id for e in events), now),
        last_batch_id=batch_id,
        batch_message=BatchMessage(batch_id, shipped),
        stats=stats._replace(
            batches_sent=stats.batches_sent + 1,
            events_sent=stats.events_sent + len(events),
            events_resent=stats.events_resent + resent,
            bytes_full=stats.bytes_full + bytes_full,
            bytes_delta=stats.bytes_delta + bytes_delta,
        ),
    )
    observation = {
        "kind": "sent",
        "sender": sender.id,
        "batch_id": batch_id,
        "events": [e.event_id for e in events],
        "bytes_full": bytes_full,
        "bytes_delta": bytes_delta,
        "events_resent": resent,
    }
    return state._replace(senders=state.senders.set(sender.id, updated)), [observation]


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
    )


def redeliver(config: Config, state: State, op: Redeliver) -> tuple[State, list[Observation]]:
    """R26: the selected dead-letter records leave the queue, in queue order; each is
    superseded (a newer entry exists at the sender's site), requeued (with the entry's
    value when the entry is the record's own write, else the record's value or a
    tombstone for a destroy) or unrecoverable (a secure record of a create or update
    whose write is gone)."""
    sender = config.sender(op.sender)
    current = state.senders[op.sender]
    entries = state.sites[sender.site].entries
    selected = None if op.events is None else set(op.events)
    left: list[DeadLetter] = []
    queue, stats = current.queue, current.stats
    observations: list[Observation] = []
    for record in current.dead_letters:
        if selected is not None and record.event_id not in selected:
            left.append(record)
            continue
        entry = entries.get(record.key)
        value: Value | None
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
            queue = queue.append(
                GatewayEvent(
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
                )
            )
            stats = stats._replace(redelivered=stats.redelivered + 1)
        elif outcome == "superseded":
            stats = stats._replace(redelivery_superseded=stats.redelivery_superseded + 1)
        else:
            stats = stats._replace(redelivery_unrecoverable=stats.redelivery_unrecoverable + 1)
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
    updated = current._replace(queue=queue, stats=stats, dead_letters=dead_letters)
    return state._replace(senders=state.senders.set(op.sender, updated)), observations


def deliver_ack(config: Config, state: State, sender_id: str) -> tuple[State, list[Observation]]:
    """R18, R19, R24: process the ack of the batch in flight, event by event in order."""
    sender = config.sender(sender_id)
    current = state.senders[sender_id]
    ack = current.ack_message
    assert ack is not None and current.in_flight is not None  # enabled() guarantees both
    batch = current.queue.prefix(len(current.in_flight.event_ids))
    kept: list[GatewayEvent] = []
    removed: list[str] = []
    follow_ups: list[Observation] = []
    stats = current.stats
    dead_letters = current.dead_letters
    for event, (status, exception) in zip(batch, ack.statuses, strict=True):
        if status == "invalid_delta":  # R19: stays at the head, converted to full
            kept.append(event._replace(converted=True))
            stats = stats._replace(invalid_deltas=stats.invalid_deltas + 1)
            follow_ups.append(
                {"kind": "invalid_delta", "sender": sender_id, "event": event.event_id}
            )
            continue
        removed.append(event.event_id)
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
            {"kind": kind, "sender": sender_id, "event": event.event_id, "exception": exception}
        )
    updated = current._replace(
        queue=current.queue.replace_prefix(len(batch), tuple(kept)),
        in_flight=None,
        ack_message=None,
        stats=stats,
        dead_letters=dead_letters,
    )
    acked: Observation = {
        "kind": "acked",
        "sender": sender_id,
        "batch_id": ack.batch_id,
        "removed": removed,
    }
    return state._replace(senders=state.senders.set(sender_id, updated)), [acked, *follow_ups]


def timeouts(config: Config, state: State) -> tuple[State, list[Observation]]:
    """R20: every sender whose ack is overdue loses the connection and will resend."""
    observations: list[Observation] = []
    now = state.time
    for sender in config.senders:
        current = state.senders[sender.id]
        in_flight = current.in_flight
        if (
            not state.sites[sender.site].up
            or in_flight is None
            or now < in_flight.sent_at + sender.ack_timeout_ms
        ):
            continue
        count = len(in_flight.event_ids)
        flagged = tuple(
            event._replace(possible_duplicate=True) for event in current.queue.prefix(count)
        )
        updated = current._replace(
            queue=current.queue.replace_prefix(count, flagged),
            in_flight=None,
            batch_message=None,
            ack_message=None,
            next_retry_at=now + sender.retry_interval_ms,
            stats=current.stats._replace(batches_timed_out=current.stats.batches_timed_out + 1),
        )
        state = state._replace(senders=state.senders.set(sender.id, updated))
        observations.append(
            {
                "kind": "timeout",
                "sender": sender.id,
                "batch_id": in_flight.batch_id,
                "events": list(in_flight.event_ids),
            }
        )
    return state, observations
