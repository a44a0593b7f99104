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
from model.state import (
    BLOCK,
    AckMessage,
    AppliedIds,
    BatchMessage,
    DeadLetter,
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
from traces.checkpoint import event_doc, sender_doc, site_doc


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
    )


def _tag(listed: list[int]) -> tuple[int, int, int]:
    return (listed[0], listed[1], listed[2])


def _gateway_event(doc: dict[str, Any]) -> GatewayEvent:
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
            [_event(event) for event in sender.queue],
            sender.last_batch_id,
            None
            if sender.batch_message is None
            else (
                sender.batch_message.batch_id,
                ((_event(event), ships) for event, ships in sender.batch_message.events),
            ),
            None
            if sender.ack_message is None
            else (sender.ack_message.batch_id, sender.ack_message.statuses),
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
    )


def _seq(items: list[Any]) -> Seq[Any]:
    return Seq(0, Map(enumerate(items)))


def from_state_doc(doc: dict[str, Any]) -> State:
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
    senders: dict[str, Sender] = {}
    for sender_id, sender in doc["senders"].items():
        in_flight, batch, ack = sender["in_flight"], sender["batch"], sender["ack"]
        senders[sender_id] = Sender(
            queue=_seq([_gateway_event(event) for event in sender["queue"]]),
            in_flight=None
            if in_flight is None
            else InFlight(in_flight["batch_id"], tuple(in_flight["events"]), in_flight["sent_at"]),
            next_retry_at=sender["next_retry_at"],
            last_batch_id=sender["last_batch_id"],
            batch_message=None
            if batch is None
            else BatchMessage(
                batch["batch_id"],
                tuple((_gateway_event(event), event["as_delta"]) for event in batch["events"]),
            ),
            ack_message=None
            if ack is None
            else AckMessage(ack["batch_id"], tuple((s, e) for s, e in ack["statuses"])),
            stats=SenderStats(**sender["stats"]),
            dead_letters=_seq([_dead_letter(record) for record in sender["dlq"]]),
        )
    return State(time=doc["time"], sites=Map(sites), senders=Map(senders), failures=Map(failures))
