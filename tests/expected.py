"""Builders of expected observations (traces/observations.py) and state pieces (SPEC §10)
for the hand-derived tests: one place, so every test spells an observation the same way."""

from __future__ import annotations

from typing import Any

Obs = dict[str, Any]


def skipped(op: str) -> Obs:
    return {"kind": "skipped", "op": op}


def enqueued(
    site: int, event: str, key: str, op: str, version: list[int], value: Any, senders: list[str]
) -> Obs:
    return {
        "kind": "enqueued", "site": site, "event": event, "key": key, "op": op,
        "version": version, "value": value, "senders": senders,
    }  # fmt: skip


def sent(
    sender: str,
    batch_id: int,
    events: list[str],
    bytes_full: int = 0,
    bytes_delta: int = 0,
    events_resent: int = 0,
) -> Obs:
    return {
        "kind": "sent", "sender": sender, "batch_id": batch_id, "events": events,
        "bytes_full": bytes_full, "bytes_delta": bytes_delta, "events_resent": events_resent,
    }  # fmt: skip


def applied(site: int, sender: str, event: str, key: str, status: str, **extra: Any) -> Obs:
    return {
        "kind": "applied", "site": site, "sender": sender, "event": event, "key": key,
        "status": status, **extra,
    }  # fmt: skip


def forwarded(site: int, sender: str, event: str) -> Obs:
    return {"kind": "forwarded", "site": site, "sender": sender, "event": event}


def acked(sender: str, batch_id: int, removed: list[str]) -> Obs:
    return {"kind": "acked", "sender": sender, "batch_id": batch_id, "removed": removed}


def dropped(sender: str, event: str, exception: str) -> Obs:
    return {"kind": "dropped", "sender": sender, "event": event, "exception": exception}


def dlq(sender: str, event: str, exception: str) -> Obs:
    return {"kind": "dlq", "sender": sender, "event": event, "exception": exception}


def invalid_delta(sender: str, event: str) -> Obs:
    return {"kind": "invalid_delta", "sender": sender, "event": event}


def timeout(sender: str, batch_id: int, events: list[str]) -> Obs:
    return {"kind": "timeout", "sender": sender, "batch_id": batch_id, "events": events}


def connection_failed(sender: str, remote: int) -> Obs:
    return {"kind": "connection_failed", "sender": sender, "remote": remote}


# --- observable state (SPEC §10) ---------------------------------------------------------


def entry(value: Any, version: list[int]) -> Obs:
    return {"value": value, "version": version}


def site_stats(**counts: int) -> Obs:
    stats = dict.fromkeys(
        ("applied", "duplicates", "conflicts", "failures", "retries", "invalid_deltas"), 0
    )
    assert set(counts) <= set(stats), counts
    return {**stats, **counts}


def sender_stats(**counts: int) -> Obs:
    stats = dict.fromkeys(
        (
            "batches_sent", "events_sent", "events_resent", "bytes_full", "bytes_delta",
            "batches_timed_out", "connection_failures", "events_dropped", "invalid_deltas",
            "dlq_records", "redelivered", "redelivery_superseded", "redelivery_unrecoverable",
        ),
        0,
    )  # fmt: skip
    assert set(counts) <= set(stats), counts
    return {**stats, **counts}


def in_flight(batch_id: int, events: list[str], sent_at: int) -> Obs:
    return {"batch_id": batch_id, "events": events, "sent_at": sent_at}


def network(batch: bool, ack: bool) -> Obs:
    return {"batch": batch, "ack": ack}
