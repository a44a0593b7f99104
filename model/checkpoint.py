"""The model's state as a checkpoint document and back (traces/checkpoint.py, docs/CHECKPOINT.md).

`to_state_doc(state)` writes the document's `state` part; `from_state_doc(state_doc)`
builds the immutable `State` it describes. Conversions only: what the fields mean is
model/state.py's, the document's shape traces/checkpoint.py's. R16.1's bitmaps become
ranges of sequence numbers and back.
"""

from __future__ import annotations

from typing import Any

from immutables import Map

from model.observe import observe
from model.queues import append, new_sender, with_dispatcher
from model.routing import bucket_of
from model.state import (
    BLOCK,
    AckMessage,
    AppliedIds,
    BatchMessage,
    DeadLetter,
    Dispatcher,
    Entry,
    Failure,
    GatewayEvent,
    InFlight,
    Sender,
    SenderStats,
    Seq,
    Site,
    SiteStats,
    State,
)
from traces.canonical import size
from traces.checkpoint import dispatcher_doc, event_doc, sender_doc, site_doc
from traces.config import Config, SenderConfig


def _event(event: GatewayEvent) -> dict[str, Any]:
    base = event.base_version
    return event_doc(
        event.event_id,
        event.origin,
        event.seq,
        event.key,
        event.op,
        event.value,
        list(event.version),
        None if base is None else list(base),
        event.delta,
        event.converted,
        event.recipients,
        event.possible_duplicate,
        event.enqueued_at,
        event.thread,
    )


def _tag(listed: list[int]) -> tuple[int, int, int]:
    return (listed[0], listed[1], listed[2])


def _gateway_event(config: Config, site: int, doc: dict[str, Any]) -> GatewayEvent:
    """A queued event of a checkpoint at `site` (its size, R4, and bucket, R28, follow)."""
    base = doc["base_version"]
    return GatewayEvent(
        event_id=doc["event"],
        origin=doc["origin"],
        seq=doc["seq"],
        key=doc["key"],
        op=doc["op"],
        value=doc["value"],
        version=_tag(doc["version"]),
        base_version=None if base is None else _tag(base),
        delta=doc["delta"],
        converted=doc["converted"],
        recipients=frozenset(doc["recipients"]),
        possible_duplicate=doc["possible_duplicate"],
        enqueued_at=doc["enqueued_at"],
        thread=doc["thread"],
        size=size(doc["value"]),
        bucket=bucket_of(config, site, doc["key"]),
    )


def _applied_ranges(applied: AppliedIds) -> dict[str, list[list[int]]]:
    """R16.1's bitmaps as ascending ranges per origin: runs of one bits, block by block."""
    out: dict[str, list[list[int]]] = {}
    for origin, block in sorted(applied.blocks.keys()):
        bits = applied.blocks[origin, block]
        ranges = out.setdefault(str(origin), [])
        base = block * BLOCK
        while bits:
            low = (bits & -bits).bit_length() - 1  # the lowest one bit starts a run
            run = (~(bits >> low) & ((bits >> low) + 1)).bit_length() - 1  # its length
            start, end = base + low, base + low + run - 1
            if ranges and ranges[-1][1] == start - 1:
                ranges[-1][1] = end
            else:
                ranges.append([start, end])
            bits &= ~(((1 << run) - 1) << low)
    return out


def _applied_ids(doc: dict[str, list[list[int]]]) -> AppliedIds:
    blocks: dict[tuple[int, int], int] = {}
    for origin_text, ranges in doc.items():
        origin = int(origin_text)
        for start, end in ranges:
            for block in range(start // BLOCK, end // BLOCK + 1):
                low = max(start, block * BLOCK) - block * BLOCK
                high = min(end, block * BLOCK + BLOCK - 1) - block * BLOCK
                key = (origin, block)
                blocks[key] = blocks.get(key, 0) | ((1 << (high - low + 1)) - 1) << low
    return AppliedIds(Map(blocks))


def _dispatcher_doc(observed: dict[str, Any], dispatcher: Dispatcher) -> dict[str, Any]:
    batch, ack = dispatcher.batch_message, dispatcher.ack_message
    return dispatcher_doc(
        observed,
        [_event(event) for event in dispatcher.queue],
        dispatcher.last_batch_id,
        None
        if batch is None
        else (batch.batch_id, ((_event(event), ships) for event, ships in batch.events)),
        None if ack is None else (ack.batch_id, ack.statuses),
    )


def to_state_doc(state: State) -> dict[str, Any]:
    """The `state` part of a checkpoint of `state`."""
    seen = observe(state)
    sites = {
        str(site_id): site_doc(
            seen["sites"][str(site_id)],
            site.last_issued,
            _applied_ranges(site.applied),
            (
                (key, failure.exception, failure.remaining)
                for (at, key), failure in state.failures.items()
                if at == site_id
            ),
        )
        for site_id, site in state.sites.items()
    }
    senders = {
        sender_id: sender_doc(
            seen["senders"][sender_id],
            [
                _dispatcher_doc(observed, dispatcher)
                for observed, dispatcher in zip(
                    seen["senders"][sender_id]["dispatchers"], sender.dispatchers, strict=True
                )
            ],
        )
        for sender_id, sender in state.senders.items()
    }
    return {"time": state.time, "sites": sites, "senders": senders}


def _dead_letter(doc: dict[str, Any]) -> DeadLetter:
    return DeadLetter(
        event_id=doc["event_id"],
        sender=doc["sender"],
        key=doc["key"],
        op=doc["op"],
        exception=doc["exception"],
        version=_tag(doc["version"]),
        value=doc.get("value"),
        has_value="value" in doc,
        recipients=tuple(doc["recipients"]),
        thread=doc["thread"],
    )


def _seq(items: list[Any]) -> Seq[Any]:
    return Seq(0, len(items), Map(enumerate(items)))


def _sender(config: Config, sender: SenderConfig, doc: dict[str, Any]) -> Sender:
    """A sender of a checkpoint: each dispatcher's queue appended again in order (to the
    dispatcher that held it), then its batch, timers, R35's accounting and counters set
    as the document says."""
    current = new_sender(sender)._replace(
        running=doc["running"],
        paused=doc["paused"],
        stats=SenderStats(
            **{name: doc["stats"][name] for name in SenderStats._fields}  # R35's gauges derive
        ),
        dead_letters=_seq([_dead_letter(record) for record in doc["dlq"]]),
    )
    for index, saved in enumerate(doc["dispatchers"]):
        dispatcher = current.dispatchers[index]._replace(last_batch_id=saved["last_batch_id"])
        current = with_dispatcher(current, index, dispatcher)
        for event in saved["queue"]:
            current = append(sender, current, index, _gateway_event(config, sender.site, event))
        dispatcher = current.dispatchers[index]
        positions = {event.event_id: p for p, event in dispatcher.queue.positioned()}
        in_flight, batch, ack = saved["in_flight"], saved["batch"], saved["ack"]
        on_disk = {positions[i]: dispatcher.queue.at(positions[i]).size for i in saved["on_disk"]}
        dispatcher = dispatcher._replace(
            resend=tuple(positions[i] for i in saved["resend"]),
            cursor=saved["cursor"],
            in_flight=None
            if in_flight is None
            else InFlight(
                in_flight["batch_id"],
                tuple(positions[i] for i in in_flight["events"]),
                tuple(in_flight["events"]),
                in_flight["sent_at"],
                tuple(in_flight["shipped"]),
                frozenset(positions[i] for i in in_flight["events"]),
            ),
            recovered=Map({positions[i]: True for i in saved["recovered"]}),
            conflation=_conflation_index(sender, dispatcher.queue, saved["recovered"]),
            next_retry_at=saved["next_retry_at"],
            batch_message=None
            if batch is None
            else BatchMessage(
                batch["batch_id"],
                tuple(
                    (_gateway_event(config, sender.site, event), event["as_delta"])
                    for event in batch["events"]
                ),
            ),
            ack_message=None
            if ack is None
            else AckMessage(ack["batch_id"], tuple((s, e) for s, e in ack["statuses"])),
            memory_bytes=saved["memory_bytes"],
            on_disk=Map(on_disk),
        )
        current = with_dispatcher(current, index, dispatcher)
    return current


def _conflation_index(
    sender: SenderConfig, queue: Seq[GatewayEvent], recovered: list[str]
) -> Map[str, tuple[int, ...]]:
    """R32's index, which follows from the queue: its updates that are not recovered."""
    if not sender.enable_batch_conflation:
        return Map()
    index: dict[str, tuple[int, ...]] = {}
    kept = set(recovered)
    for position, event in queue.positioned():
        if event.op == "update" and event.event_id not in kept:
            index[event.key] = (*index.get(event.key, ()), position)
    return Map(index)


def from_state_doc(config: Config, doc: dict[str, Any]) -> State:
    """The `State` a checkpoint's `state` part describes (checked by `check_fits`)."""
    sites: dict[int, Site] = {}
    failures: dict[tuple[int, str], Failure] = {}
    for site_text, site in doc["sites"].items():
        site_id = int(site_text)
        sites[site_id] = Site(
            up=site["up"],
            seq=site["seq"],
            timestamp_floor=site["timestamp_floor"],
            last_issued=site["last_issued"],
            entries=Map(
                {
                    key: Entry(entry["value"], _tag(entry["version"]))
                    for key, entry in site["entries"].items()
                }
            ),
            applied=_applied_ids(site["applied"]),
            stats=SiteStats(**site["stats"]),
        )
        for key, failure in site["failures"].items():
            failures[site_id, key] = Failure(failure["exception"], failure["remaining"])
    senders = {
        sender_id: _sender(config, config.sender(sender_id), sender)
        for sender_id, sender in doc["senders"].items()
    }
    return State(time=doc["time"], sites=Map(sites), senders=Map(senders), failures=Map(failures))
