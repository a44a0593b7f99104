"""The impl's state as a checkpoint document and back (traces/checkpoint.py, docs/CHECKPOINT.md).

`export(engine)` writes the document's `state` part from the engine's mutable state;
`restore(engine, state_doc)` sets a fresh engine's state to the one it describes.
Conversions only; what the fields mean is impl/state.py's, the document's shape
traces/checkpoint.py's. A restored event's `base` (R10) carries the base tag only: the
engine compares tags, never the base's value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from impl.applied import AppliedRanges
from impl.state import (
    AckMessage,
    BatchMessage,
    DispatcherState,
    Entry,
    Event,
    FailEntry,
    InFlight,
    SenderState,
    bucket_of,
    size,
)
from traces.checkpoint import dispatcher_doc, event_doc, sender_doc, site_doc

if TYPE_CHECKING:
    from impl.engine import Engine


def event_record(event: Event) -> dict[str, Any]:
    """An event as a checkpoint writes it (and the durable queue keeps it)."""
    base = event.base
    return event_doc(
        event.id,
        event.origin,
        event.seq,
        event.key,
        event.op,
        event.value,
        event.entry.version_list(),
        None if base is None else base.version_list(),
        event.delta,
        event.converted,
        event.recipients,
        event.possible_duplicate,
        event.enqueued_at,
        event.thread,
    )


def _dispatcher(
    engine: Engine, observed: dict[str, Any], dispatcher: DispatcherState
) -> dict[str, Any]:
    batch, ack = dispatcher.batch_message, dispatcher.ack_message
    queued = dispatcher.order.events() if dispatcher.lazy else dispatcher.queue.events()
    return dispatcher_doc(
        observed,
        [event_record(event) for event in queued],
        dispatcher.last_batch_id,
        None
        if batch is None
        else (
            batch.batch_id,
            zip([event_record(e) for e in batch.events], batch.as_delta, strict=True),
        ),
        None
        if ack is None
        else (
            ack.batch_id,
            ((status, ack.exceptions.get(i)) for i, status in enumerate(ack.statuses)),
        ),
    )


def export(engine: Engine) -> dict[str, Any]:
    """The `state` part of a checkpoint of `engine`."""
    seen = engine.observe()
    for site in engine._sites.values():
        seen["sites"][str(site.id)] = site_doc(
            seen["sites"][str(site.id)],
            site.last_issued,
            {
                str(origin): [list(pair) for pair in memory.ranges()]
                for origin, memory in sorted(site.applied.items())
            },
            ((key, fail.exception, fail.remaining) for key, fail in site.fails.items()),
        )
    for sender in engine._sender_list:
        observed = seen["senders"][sender.id]
        seen["senders"][sender.id] = sender_doc(
            observed,
            [
                _dispatcher(engine, part, dispatcher)
                for part, dispatcher in zip(
                    observed["dispatchers"], sender.dispatchers, strict=True
                )
            ],
        )
    return seen


def _entry(value: dict[str, Any] | None, tag: list[int]) -> Entry:
    return Entry(value, tag[0], tag[1], tag[2])


def restored_event(doc: dict[str, Any], buckets: int) -> Event:
    """A checkpoint's event at a site of `buckets` buckets (0: replicated); its size (R4)
    and bucket (R28) follow from it."""
    base = doc["base_version"]
    event = Event(
        doc["event"],
        doc["origin"],
        doc["seq"],
        doc["key"],
        doc["op"],
        _entry(doc["value"], doc["version"]),
        None if base is None else _entry(None, base),
        doc["delta"],
        doc["converted"],
        frozenset(doc["recipients"]),
        doc["enqueued_at"],
        doc["thread"],
        size(doc["value"]),
        -1 if buckets == 0 else bucket_of(doc["key"], buckets),
    )
    event.possible_duplicate = doc["possible_duplicate"]
    return event


def restore(engine: Engine, doc: dict[str, Any]) -> None:
    """Set a fresh `engine` (built on the checkpoint's configuration) to the state of a
    checkpoint's `state` part (checked by `traces.checkpoint.check_fits`)."""
    engine._now = doc["time"]
    for site in engine._sites.values():
        saved = doc["sites"][str(site.id)]
        site.up = saved["up"]
        site.seq = saved["seq"]
        site.timestamp_floor = saved["timestamp_floor"]
        site.last_issued = saved["last_issued"]
        site.entries = {
            key: _entry(entry["value"], entry["version"]) for key, entry in saved["entries"].items()
        }
        site.stats = dict(saved["stats"])
        site.applied = {
            int(origin): AppliedRanges.from_ranges(ranges)
            for origin, ranges in saved["applied"].items()
        }
        site.fails = {
            key: FailEntry(fail["exception"], fail["remaining"])
            for key, fail in saved["failures"].items()
        }
    for sender in engine._sender_list:
        saved = doc["senders"][sender.id]
        sender.running = saved["running"]
        sender.paused = saved["paused"]
        sender.stats = {name: saved["stats"][name] for name in sender.stats}
        sender.dlq = [dict(record) for record in saved["dlq"]]
        buckets = sender.home.buckets
        for dispatcher, part in zip(sender.dispatchers, saved["dispatchers"], strict=True):
            _restore_dispatcher(engine, sender, dispatcher, part, buckets)
    for site in engine._sites.values():
        site.stopped = sum(1 for sender in site.senders if not sender.running)


def _restore_dispatcher(
    engine: Engine,
    sender: SenderState,
    dispatcher: DispatcherState,
    saved: dict[str, Any],
    buckets: int,
) -> None:
    """One dispatcher of a checkpoint: its queue appended again in order, then its
    batch, timers and R35's accounting as the document says."""
    by_id: dict[str, Event] = {}
    on_disk = set(saved["on_disk"])
    recovered = set(saved["recovered"])  # not indexed (R32)
    for queued in saved["queue"]:
        event = restored_event(queued, buckets)
        event.recovered = event.id in recovered
        engine._append(sender, dispatcher, event)
        event.on_disk = event.id in on_disk
        by_id[event.id] = event
    dispatcher.memory_bytes = saved["memory_bytes"]
    dispatcher.on_disk = len(on_disk)
    dispatcher.resend = [by_id[event_id] for event_id in saved["resend"]]
    if saved["cursor"] is not None:
        dispatcher.cursor = saved["cursor"]
    dispatcher.next_retry_at = saved["next_retry_at"]
    dispatcher.last_batch_id = saved["last_batch_id"]
    in_flight = saved["in_flight"]
    if in_flight is not None:
        ids = list(in_flight["events"])
        events = [by_id[event_id] for event_id in ids]
        memory = sum(event.size for event in events if not event.on_disk)
        held = sum(1 for event in events if event.on_disk)
        shipped_ids = list(in_flight["shipped"])
        kept_back: list[bool] = []
        if shipped_ids != ids:  # R33: members kept back
            shipped = set(shipped_ids)
            kept_back = [event_id not in shipped for event_id in ids]
        dispatcher.in_flight = InFlight(
            in_flight["batch_id"],
            events,
            ids,
            in_flight["sent_at"],
            memory,
            held,
            [by_id[event_id] for event_id in shipped_ids],
            shipped_ids,
            kept_back,
        )
    batch = saved["batch"]
    if batch is not None:
        dispatcher.batch_message = BatchMessage(
            batch["batch_id"],
            [restored_event(event, buckets) for event in batch["events"]],
            [event["as_delta"] for event in batch["events"]],
        )
    ack = saved["ack"]
    if ack is not None:
        statuses = [status for status, _ in ack["statuses"]]
        exceptions = {
            index: exception
            for index, (_, exception) in enumerate(ack["statuses"])
            if exception is not None
        }
        dispatcher.ack_message = AckMessage(
            ack["batch_id"], statuses, exceptions, statuses.count("invalid_delta")
        )
