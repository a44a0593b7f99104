"""Builders of expected observations (traces/observations.py) and state pieces (SPEC §10)
for the hand-derived tests: one place, so every test spells an observation the same way."""

from __future__ import annotations

from typing import Any

Obs = dict[str, Any]


def skipped(op: str) -> Obs:
    return {"kind": "skipped", "op": op}


def enqueued(
    site: int,
    event: str,
    key: str,
    op: str,
    version: list[int],
    value: Any,
    senders: list[str],
    routes: dict[str, Any] | None = None,
) -> Obs:
    """`routes` defaults to dispatcher 0 and no bucket for every sender (a v1.2 trace, R29)."""
    if routes is None:
        routes = {sender: route(0) for sender in senders}
    return {
        "kind": "enqueued", "site": site, "event": event, "key": key, "op": op,
        "version": version, "value": value, "senders": senders, "routes": routes,
    }  # fmt: skip


def route(dispatcher: int, bucket: int | None = None) -> Obs:
    """One sender's entry of `enqueued.routes` (R29)."""
    return {"dispatcher": dispatcher, "bucket": bucket}


def sent(
    sender: str,
    batch_id: int,
    events: list[str],
    bytes_full: int = 0,
    bytes_delta: int = 0,
    events_resent: int = 0,
    dispatcher: int = 0,
) -> Obs:
    return {
        "kind": "sent", "sender": sender, "dispatcher": dispatcher, "batch_id": batch_id,
        "events": events, "bytes_full": bytes_full, "bytes_delta": bytes_delta,
        "events_resent": events_resent,
    }  # fmt: skip


def applied(site: int, sender: str, event: str, key: str, status: str, **extra: Any) -> Obs:
    return {
        "kind": "applied", "site": site, "sender": sender, "event": event, "key": key,
        "status": status, **extra,
    }  # fmt: skip


def forwarded(site: int, sender: str, event: str, dispatcher: int = 0) -> Obs:
    return {
        "kind": "forwarded", "site": site, "sender": sender, "dispatcher": dispatcher,
        "event": event,
    }  # fmt: skip


def acked(sender: str, batch_id: int, removed: list[str], dispatcher: int = 0) -> Obs:
    return {
        "kind": "acked", "sender": sender, "dispatcher": dispatcher, "batch_id": batch_id,
        "removed": removed,
    }  # fmt: skip


def dropped(sender: str, event: str, exception: str, dispatcher: int = 0) -> Obs:
    return {
        "kind": "dropped", "sender": sender, "dispatcher": dispatcher, "event": event,
        "exception": exception,
    }  # fmt: skip


def dlq(sender: str, event: str, exception: str, dispatcher: int = 0) -> Obs:
    return {
        "kind": "dlq", "sender": sender, "dispatcher": dispatcher, "event": event,
        "exception": exception,
    }  # fmt: skip


def invalid_delta(sender: str, event: str, dispatcher: int = 0) -> Obs:
    return {"kind": "invalid_delta", "sender": sender, "dispatcher": dispatcher, "event": event}


def timeout(sender: str, batch_id: int, events: list[str], dispatcher: int = 0) -> Obs:
    return {
        "kind": "timeout", "sender": sender, "dispatcher": dispatcher, "batch_id": batch_id,
        "events": events,
    }  # fmt: skip


def connection_failed(sender: str, remote: int, dispatcher: int = 0) -> Obs:
    return {
        "kind": "connection_failed", "sender": sender, "dispatcher": dispatcher, "remote": remote,
    }  # fmt: skip


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
            "events_conflated_in_queue", "events_conflated_from_batches",
            "conflation_full_values", "events_lost_on_restart", "events_not_queued_stopped",
            "events_discarded_clean_start", "events_exceeding_alert_threshold",
            "entries_overflowed", "bytes_overflowed",
        ),
        0,
    )  # fmt: skip
    assert set(counts) <= set(stats), counts
    return {**stats, **counts}


def in_flight(
    batch_id: int, events: list[str], sent_at: int, shipped: list[str] | None = None
) -> Obs:
    """§16.6: `shipped` is every event of the batch unless conflation kept some back."""
    return {
        "batch_id": batch_id, "events": events,
        "shipped": events if shipped is None else shipped, "sent_at": sent_at,
    }  # fmt: skip


def network(batch: bool, ack: bool) -> Obs:
    return {"batch": batch, "ack": ack}


def dispatcher(
    queue: list[str] | None = None,
    in_flight: Obs | None = None,
    next_retry_at: int = 0,
    batch: bool = False,
    ack: bool = False,
    resend: list[str] | None = None,
    cursor: int | None = None,
    memory_bytes: int = 0,
    on_disk: list[str] | None = None,
    recovered: list[str] | None = None,
) -> Obs:
    """One dispatcher's observable state (§16.6)."""
    return {
        "queue": queue or [], "resend": resend or [], "cursor": cursor, "in_flight": in_flight,
        "next_retry_at": next_retry_at, "network": network(batch, ack),
        "recovered": recovered or [], "on_disk": on_disk or [], "memory_bytes": memory_bytes,
    }  # fmt: skip


def sender_state(
    dispatchers: list[Obs], stats: Obs, dlq: list[Obs], running: bool = True, paused: bool = False
) -> Obs:
    """A sender's observable state (§16.6)."""
    return {
        "running": running, "paused": paused, "dispatchers": dispatchers, "stats": stats,
        "dlq": dlq,
    }  # fmt: skip
