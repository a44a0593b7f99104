"""The observation vocabulary (SPEC §10): what every step returns, field by field.

Model and impl must return the same lists, in the same order (P1), so this module is the
contract for both. Observations are plain JSON objects (dicts); all fields are always
present unless marked "only when". Tags are `[entry_version, timestamp, dsid]` lists.

    skipped           {"kind", "op"}                     the operation was not enabled (§3)
    enqueued          {"kind", "site", "event", "key", "op", "version", "value", "senders",
                       "routes"}
                      one per client write (a putall gives one per entry, in sorted key
                      order); "op" is create|update|destroy, "value" the full value (null
                      for a destroy), "senders" the sorted ids of the senders at the site
                      whose queues got the event (R11; may be empty); "routes" (v2.0, R29)
                      maps each of those senders to {"dispatcher": d, "bucket": b}, the
                      dispatcher that queued it and the key's bucket at the site (R28;
                      null at a replicated site)
    sent              {"kind", "sender", "dispatcher", "batch_id", "events", "bytes_full",
                       "bytes_delta", "events_resent"}   R15/R30, one per batch sent
    connection_failed {"kind", "sender", "dispatcher", "remote"}  R15 with the remote down
    applied           {"kind", "site", "sender", "event", "key", "status"}
                      R16, one per event of a delivered batch, in batch order; "site" is
                      the receiving site; status is ok|duplicate|conflict|failed|
                      invalid_delta; only when failed: "exception"; only when ok and the
                      event was shipped as a delta: "value", the value it built (P6)
    forwarded         {"kind", "site", "sender", "dispatcher", "event"} R22, right after
                      the `applied` of that event, one per sender that queued it, in sorted
                      id order; "dispatcher" the one that queued it (R29)
    acked             {"kind", "sender", "dispatcher", "batch_id", "removed"}
                      R18, first observation of a deliver_ack; "removed" lists, in batch
                      order, the events that left the queue (all but invalid_delta ones)
    dropped           {"kind", "sender", "dispatcher", "event", "exception"}   R18, failed,
                      no listener
    dlq               {"kind", "sender", "dispatcher", "event", "exception"}   R24, failed,
                      dead-lettered
    invalid_delta     {"kind", "sender", "dispatcher", "event"}  R19, kept and converted
                      to full (dropped / dlq / invalid_delta follow `acked`, in batch order)
    timeout           {"kind", "sender", "dispatcher", "batch_id", "events"}   R20
    redelivery        {"kind", "sender", "event", "outcome"}      R26 (v1.2), one per
                      selected record in queue order; outcome requeued|superseded|
                      unrecoverable
    conflated         {"kind", "sender", "dispatcher", "event", "by", "where"}  R32 (where
                      "queue": `event` left the queue when `by` was appended) and R33
                      ("batch": a member of the batch kept back, before its `sent`)
    queue_lost        {"kind", "sender", "dispatcher", "event", "reason"}  R36, R37: a
                      queued event lost; reason restart|stop|clean_queues
    not_queued        {"kind", "sender", "event", "reason"}     R37: the sender is stopped
                      (reason "stopped"); the event is not queued on it
    alert             {"kind", "sender", "dispatcher", "event", "queued_ms"}  R38, after
                      `acked` and its follow-ups, in batch order
    lifecycle         {"kind", "sender", "action"}   R36, R37: action restart|stop|start|
                      pause|resume; a restart adds "kept", the queued events it kept

Order within one step (§3, §16.2): the operation's own observations; then, for `tick`,
the timeouts of R20 per (sender id, dispatcher index) in that order; then the flushes of
R15/R30 (`sent` or `connection_failed`) per (sender id, dispatcher index). `settle`
returns the concatenated observations of its inner operations. v2.0 (§16.6): every
sender-scoped kind but `redelivery` names its `dispatcher` (0 for a sender with one);
`applied` does not (its `deliver` names the sender and dispatcher).
"""

from __future__ import annotations

from typing import Any

Observation = dict[str, Any]

FIELDS: dict[str, dict[str, str]] = {
    "skipped": {"op": "string"},
    "enqueued": {
        "site": "integer",
        "event": "string",
        "key": "string",
        "op": "string",
        "version": "array",
        "value": "object or null",
        "senders": "array",
        "routes": "object",
    },
    "sent": {
        "sender": "string",
        "dispatcher": "integer",
        "batch_id": "integer",
        "events": "array",
        "bytes_full": "integer",
        "bytes_delta": "integer",
        "events_resent": "integer",
    },
    "connection_failed": {"sender": "string", "dispatcher": "integer", "remote": "integer"},
    "applied": {
        "site": "integer",
        "sender": "string",
        "event": "string",
        "key": "string",
        "status": "string",
    },
    "forwarded": {
        "site": "integer",
        "sender": "string",
        "dispatcher": "integer",
        "event": "string",
    },
    "acked": {
        "sender": "string",
        "dispatcher": "integer",
        "batch_id": "integer",
        "removed": "array",
    },
    "dropped": {
        "sender": "string",
        "dispatcher": "integer",
        "event": "string",
        "exception": "string",
    },
    "dlq": {"sender": "string", "dispatcher": "integer", "event": "string", "exception": "string"},
    "invalid_delta": {"sender": "string", "dispatcher": "integer", "event": "string"},
    "timeout": {
        "sender": "string",
        "dispatcher": "integer",
        "batch_id": "integer",
        "events": "array",
    },
    "redelivery": {"sender": "string", "event": "string", "outcome": "string"},
    "conflated": {
        "sender": "string",
        "dispatcher": "integer",
        "event": "string",
        "by": "string",
        "where": "string",
    },
    "queue_lost": {
        "sender": "string",
        "dispatcher": "integer",
        "event": "string",
        "reason": "string",
    },
    "not_queued": {"sender": "string", "event": "string", "reason": "string"},
    "alert": {
        "sender": "string",
        "dispatcher": "integer",
        "event": "string",
        "queued_ms": "integer",
    },
    "lifecycle": {"sender": "string", "action": "string"},
}
"""Every kind's fields besides `kind`, each with its JSON type: the one list the docs
above describe, the log reader checks (traces/logfile.py) and the log's JSON Schema is
made from (traces/logschema.py)."""

OPTIONAL_FIELDS: dict[str, dict[str, str]] = {
    "applied": {"exception": "string", "value": "object"},
    "lifecycle": {"kept": "integer"},
}
"""Fields present only sometimes (`applied`: `exception` when failed, `value` when a delta
built it; `lifecycle`: `kept`, the queued events a restart kept, R36)."""

KINDS = tuple(FIELDS)

RECEIVER_STATUSES = ("ok", "duplicate", "conflict", "failed", "invalid_delta")
