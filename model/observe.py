"""SPEC §10 and §16.6: the observable state, a plain JSON object (canonical JSON sorts
its keys).

Field names, nesting and list order are exactly §16.6's; everything else in the state
(applied-event memory, flags, messages' contents, injected failures, queue positions,
bucket FIFOs) is not observable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from model.state import (
    DeadLetter,
    Dispatcher,
    Entry,
    Sender,
    SenderStats,
    Site,
    SiteStats,
    State,
)


def _counters(stats: SiteStats | SenderStats) -> dict[str, int]:
    return {name: getattr(stats, name) for name in _FIELDS[type(stats)]}


_FIELDS = {cls: cls._fields for cls in (SiteStats, SenderStats)}


def _site(site: Site, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """A site; with `keys`, only the entries of those keys it holds."""
    held: Iterable[tuple[str, Entry]]
    if keys is None:
        held = site.entries.items()
    else:
        entries = site.entries
        held = ((key, entries[key]) for key in keys if key in entries)
    return {
        "up": site.up,
        "seq": site.seq,
        "timestamp_floor": site.timestamp_floor,
        "entries": {
            key: {"value": entry.value, "version": list(entry.version)} for key, entry in held
        },
        "stats": _counters(site.stats),
    }


def _dead_letter(record: DeadLetter) -> dict[str, Any]:
    out: dict[str, Any] = {
        "event_id": record.event_id,
        "sender": record.sender,
        "key": record.key,
        "op": record.op,
        "exception": record.exception,
        "version": list(record.version),
        "recipients": list(record.recipients),
        "thread": record.thread,
    }
    if record.has_value:  # R24 / P7: omitted with dlq_secure
        out["value"] = record.value
    return out


def _dispatcher(dispatcher: Dispatcher) -> dict[str, Any]:
    in_flight = dispatcher.in_flight
    queue = dispatcher.queue
    return {
        "queue": [event.event_id for event in queue],
        "resend": [queue.at(position).event_id for position in dispatcher.resend],
        "cursor": dispatcher.cursor,
        "in_flight": None
        if in_flight is None
        else {
            "batch_id": in_flight.batch_id,
            "events": list(in_flight.event_ids),
            "shipped": list(in_flight.shipped),
            "sent_at": in_flight.sent_at,
        },
        "next_retry_at": dispatcher.next_retry_at,
        "network": {
            "batch": dispatcher.batch_message is not None,
            "ack": dispatcher.ack_message is not None,
        },
        "recovered": [queue.at(p).event_id for p in sorted(dispatcher.recovered)],
        "on_disk": [queue.at(position).event_id for position in sorted(dispatcher.on_disk)],
        "memory_bytes": dispatcher.memory_bytes,
    }


def _sender(sender: Sender) -> dict[str, Any]:
    stats = _counters(sender.stats)
    stats["entries_overflowed"] = sum(len(d.on_disk) for d in sender.dispatchers)  # R35
    stats["bytes_overflowed"] = sum(sum(d.on_disk.values()) for d in sender.dispatchers)
    return {
        "running": sender.running,
        "paused": sender.paused,
        "dispatchers": [_dispatcher(dispatcher) for dispatcher in sender.dispatchers],
        "stats": stats,
        "dlq": [_dead_letter(record) for record in sender.dead_letters],
    }


def observe(state: State) -> dict[str, Any]:
    """The §10 observable state of `state`."""
    return {
        "time": state.time,
        "sites": {str(site_id): _site(site) for site_id, site in state.sites.items()},
        "senders": {sender_id: _sender(s) for sender_id, s in state.senders.items()},
    }


def observe_keys(state: State, keys: Iterable[str]) -> dict[str, Any]:
    """`observe(state)` with only the entries of `keys` (what the property checker asks
    at a quiescence, traces/engine.py): its cost follows the keys, not the region."""
    keys = list(keys)
    return {
        "time": state.time,
        "sites": {str(site_id): _site(site, keys) for site_id, site in state.sites.items()},
        "senders": {sender_id: _sender(s) for sender_id, s in state.senders.items()},
    }
