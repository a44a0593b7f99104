"""Checkpoints: an engine's full state as one canonical JSON document (docs/CHECKPOINT.md).

    doc = engine.checkpoint()                      # model.Engine or impl.Engine
    engine = Engine.from_checkpoint(config, doc)   # behaves exactly as the engine did

The document holds everything that decides future behaviour, not only the observable
state of SPEC §10: each site's applied-event memory (R16.1) as ranges of sequence
numbers, the last timestamp issued (R21), every queued event's contents (R11), the batch
and ack in the network (R15, R17), the injected failures (R16.2), the batch counters and
the dead letters (R24). It is the same for the model and the impl: each engine converts
its own representation to and from it, and two engines in the same state give the same
text (`checkpoint_text`).

This module is the format's one place: the version, the JSON Schema (shipped as
`checkpoint.schema.json` beside it), reading a file (`read_checkpoint`) and the checks
that a document fits the configuration it is restored on (`check_fits`). Every problem is
a `CheckpointError` naming the file and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from traces.buckets import bucket_index
from traces.canonical import canonical_json, size
from traces.config import Config, SenderConfig
from traces.errors import TraceError
from traces.files import read_text
from traces.schema import schema_problem
from traces.tracefile import BOM, json_problem, no_duplicate_keys, surrogate_problem

FORMAT = "wanconform-checkpoint"
VERSION = 2
"""Version 2 (SPEC v2.0): each sender's queues, batches and timers under `dispatchers`."""
SCHEMA_FILE = Path(__file__).with_name("checkpoint.schema.json")


class CheckpointError(TraceError):
    """A checkpoint that cannot be used: unreadable, damaged, newer, or not this config's."""


def validate(doc: Any, where: str) -> None:
    """The document's shape, against the schema: the first problem as one line."""
    if not isinstance(doc, dict):
        raise CheckpointError(f"{where}: not a checkpoint: expected a JSON object")
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"{where}: format: not a checkpoint (expected {FORMAT!r})")
    version = doc.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise CheckpointError(
            f"{where}: version: {version} is newer than this wanconform reads ({VERSION}); "
            "upgrade wanconform"
        )
    if isinstance(version, int) and not isinstance(version, bool) and 1 <= version < VERSION:
        raise CheckpointError(
            f"{where}: version: {version} was written for SPEC v1.2 (one queue per sender); "
            f"this wanconform reads version {VERSION} (SPEC v2.0, queues per dispatcher): "
            "write the checkpoint again with this wanconform (replay --checkpoint)"
        )
    problem = schema_problem(SCHEMA_FILE, doc)
    if problem is not None:
        raise CheckpointError(f"{where}: {problem}")


Route = Callable[[SenderConfig, dict[str, Any]], int]
"""R29: the dispatcher of a sender that an engine routes a checkpoint's queued event to
(each engine passes its own routing to `check_fits`)."""


def check_fits(
    config: Config, doc: dict[str, Any], where: str, route: Route | None = None
) -> dict[str, Any]:
    """The document's `state`, once its configuration and its parts agree (a document
    that passes the schema may still be inconsistent): its sites and senders are the
    configuration's, every in-flight batch is its queue's prefix (R13), an ack answers the
    batch in flight (R17), an applied-memory range is ordered and holds only events its
    origin has issued (R3), and (with `route`) every queued event is on the dispatcher
    R29 routes it to."""
    if doc["config"] != config.to_json():
        raise CheckpointError(f"{where}: config: not the configuration it is restored on")
    state: dict[str, Any] = doc["state"]
    sites = sorted(state["sites"], key=int)
    if sites != [str(site) for site in sorted(config.sites)]:
        raise CheckpointError(f"{where}: state.sites: {sites} are not the configuration's sites")
    senders = sorted(state["senders"])
    if senders != sorted(s.id for s in config.senders):
        raise CheckpointError(
            f"{where}: state.senders: {senders} are not the configuration's senders"
        )
    for site_id, site in state["sites"].items():
        for origin, ranges in site["applied"].items():
            at = f"{where}: state.sites.{site_id}.applied.{origin}"
            if origin not in state["sites"]:
                raise CheckpointError(f"{at}: {origin} is not a site of the configuration")
            last = 0
            for index, (start, end) in enumerate(ranges):
                if not last < start <= end:
                    raise CheckpointError(
                        f"{at}[{index}]: ranges must be ascending, disjoint and not adjacent, "
                        "with start <= end"
                    )
                last = end + 1
            if ranges:
                _check_seq(at, int(origin), ranges[-1][1], state["sites"][origin]["seq"])
    issued = {int(site_id): site["seq"] for site_id, site in state["sites"].items()}
    for sender_id, sender in state["senders"].items():
        at = f"{where}: state.senders.{sender_id}"
        spec = config.sender(sender_id)
        for index, record in enumerate(sender["dlq"]):
            origin, _, seq = record["event_id"].partition(":")
            if not (origin.isdigit() and seq.isdigit()):
                raise CheckpointError(
                    f"{at}.dlq[{index}].event_id: {record['event_id']!r} is not an event id "
                    "origin:seq (R3)"
                )
            _check_issued(
                {"event": record["event_id"], "origin": int(origin), "seq": int(seq)},
                f"{at}.dlq[{index}]",
                issued,
            )
        _check_dispatchers(spec, sender, at, route, config.buckets(spec.site), issued)
    return state


def _check_dispatchers(
    sender: SenderConfig,
    doc: dict[str, Any],
    at: str,
    route: Route | None,
    buckets: int,
    issued: dict[int, int],
) -> None:
    """R29-R31: one dispatcher per dispatcher thread; a queued event's id is `"origin:seq"`
    of an event its origin has issued (R3; `issued`: each site's seq); each one's batch in
    flight is made of
    its queued events (a serial one's first events, R13; a parallel one's oldest events of
    each bucket, R31), the batch in the network is that batch (R15), an ack answers it
    (R17); `resend`, `recovered` and `on_disk` name queued events, each once (a parallel
    one's `resend` also the oldest of each bucket, R31); a parallel dispatcher's cursor is
    a bucket it owns, a serial one has none."""
    dispatchers = doc["dispatchers"]
    if len(dispatchers) != sender.dispatcher_threads:
        raise CheckpointError(
            f"{at}.dispatchers: {len(dispatchers)} dispatchers, but the sender has "
            f"dispatcher_threads {sender.dispatcher_threads} (R29)"
        )
    for index, dispatcher in enumerate(dispatchers):
        here = f"{at}.dispatchers[{index}]"
        queue_ids = [event["event"] for event in dispatcher["queue"]]
        if len(set(queue_ids)) != len(queue_ids):
            raise CheckpointError(f"{here}.queue: an event is queued twice")
        queued = set(queue_ids)
        for position, event in enumerate(dispatcher["queue"]):
            _check_issued(event, f"{here}.queue[{position}]", issued)
            routed = index if route is None else route(sender, event)
            if routed != index:
                raise CheckpointError(
                    f"{here}.queue[{position}]: event {event['event']} of key "
                    f"{event['key']!r} belongs on dispatcher {routed} (R29), not this one"
                )
        for name in ("resend", "recovered", "on_disk"):
            if not set(dispatcher[name]) <= queued:
                raise CheckpointError(f"{here}.{name}: names an event that is not queued")
            if len(set(dispatcher[name])) != len(dispatcher[name]):
                raise CheckpointError(f"{here}.{name}: names an event twice")
        held = sum(
            size(e["value"]) for e in dispatcher["queue"] if e["event"] not in dispatcher["on_disk"]
        )
        if dispatcher["memory_bytes"] != held:
            raise CheckpointError(
                f"{here}.memory_bytes: {dispatcher['memory_bytes']}, but the queued events "
                f"not on disk hold {held} bytes (R35)"
            )
        in_flight, batch, ack = dispatcher["in_flight"], dispatcher["batch"], dispatcher["ack"]
        if in_flight is not None:
            ids = in_flight["events"]
            if not set(ids) <= queued or len(set(ids)) != len(ids):
                raise CheckpointError(f"{here}.in_flight.events: not queued events (R13)")
            if not sender.parallel and queue_ids[: len(ids)] != ids:
                raise CheckpointError(
                    f"{here}.in_flight.events: not the queue's first events (R13)"
                )
            shipped = iter(ids)
            if not all(event in shipped for event in in_flight["shipped"]):
                raise CheckpointError(
                    f"{here}.in_flight.shipped: not events of the batch, in its order (R33)"
                )
            if in_flight["batch_id"] > dispatcher["last_batch_id"]:
                raise CheckpointError(f"{here}.in_flight.batch_id: after last_batch_id (R15)")
        if batch is not None and (
            in_flight is None
            or batch["batch_id"] != in_flight["batch_id"]
            or [event["event"] for event in batch["events"]] != in_flight["shipped"]
        ):
            raise CheckpointError(f"{here}.batch: not the batch in flight (R13, R15, R33)")
        if ack is not None and (
            in_flight is None
            or ack["batch_id"] != in_flight["batch_id"]
            or len(ack["statuses"]) != len(in_flight["shipped"])
        ):
            raise CheckpointError(f"{here}.ack: does not answer the batch in flight (R17)")
        cursor = dispatcher["cursor"]
        if not sender.parallel and cursor is not None:
            raise CheckpointError(f"{here}.cursor: a serial dispatcher has no cursor (R31)")
        if sender.parallel and (
            cursor is None
            or cursor % sender.dispatcher_threads != index
            or (cursor >= buckets and cursor != index)  # one owning no bucket keeps its index
        ):
            raise CheckpointError(f"{here}.cursor: not a bucket this dispatcher owns (R31)")
        if sender.parallel:  # R31: a batch takes the oldest events of each bucket
            fifo: dict[int, list[str]] = {}
            for event in dispatcher["queue"]:
                fifo.setdefault(bucket_index(event["key"], buckets), []).append(event["event"])
            bucket_of = {event: b for b, events in fifo.items() for event in events}
            for name, ids in (
                ("in_flight.events", in_flight["events"] if in_flight is not None else []),
                ("resend", dispatcher["resend"]),
            ):
                taken: dict[int, list[str]] = {}
                for event_id in ids:
                    taken.setdefault(bucket_of[event_id], []).append(event_id)
                if any(fifo[b][: len(events)] != events for b, events in taken.items()):
                    raise CheckpointError(
                        f"{here}.{name}: not the oldest queued events of each bucket, in "
                        "order (R31)"
                    )
        if sender.parallel and dispatcher["resend"] and in_flight is not None:
            raise CheckpointError(f"{here}.resend: a batch in flight left nothing to resend")


def _check_issued(event: dict[str, Any], at: str, issued: dict[int, int]) -> None:
    """R3: an event's id is `"origin:seq"`, its origin a site that has issued that seq."""
    origin, seq = event["origin"], event["seq"]
    if event["event"] != f"{origin}:{seq}":
        raise CheckpointError(
            f"{at}: event {event['event']} has origin {origin} and seq {seq}; its id is "
            f"{origin}:{seq} (R3)"
        )
    if origin not in issued:
        raise CheckpointError(f"{at}.origin: {origin} is not a site of the configuration")
    _check_seq(at, origin, seq, issued[origin])


def _check_seq(at: str, origin: int, seq: int, issued: int) -> None:
    """R3, R21: site `origin`, whose seq is `issued`, has issued event `origin:seq`."""
    if seq > issued:
        raise CheckpointError(
            f"{at}: event {origin}:{seq} was never issued (site {origin}'s seq is {issued}; "
            "sequence numbers only grow, R3, R21)"
        )


def event_doc(
    event_id: str,
    origin: int,
    seq: int,
    key: str,
    op: str,
    value: Any,
    version: list[int],
    base_version: list[int] | None,
    delta: Any,
    converted: bool,
    recipients: Iterable[int],
    possible_duplicate: bool,
    enqueued_at: int,
    thread: int,
) -> dict[str, Any]:
    """One queued gateway event (R11, R22; v2.0: its client thread), every field; its
    size (R4) and bucket (R28) follow from it."""
    return {
        "event": event_id,
        "origin": origin,
        "seq": seq,
        "key": key,
        "op": op,
        "value": value,
        "version": version,
        "base_version": base_version,
        "delta": delta,
        "converted": converted,
        "recipients": sorted(recipients),
        "possible_duplicate": possible_duplicate,
        "enqueued_at": enqueued_at,
        "thread": thread,
    }


def site_doc(
    observed: dict[str, Any],
    last_issued: int,
    applied: dict[str, list[list[int]]],
    failures: Iterable[tuple[str, str, int]],
) -> dict[str, Any]:
    """A site: its §10 observable part and what decides its future besides (R16.1's
    ranges, R16.2's failures as (key, exception, remaining): those with none left are
    left out, they change nothing, R21's last timestamp)."""
    return observed | {
        "last_issued": last_issued,
        "applied": {origin: ranges for origin, ranges in applied.items() if ranges},
        "failures": {
            key: {"exception": exception, "remaining": remaining}
            for key, exception, remaining in failures
            if remaining > 0
        },
    }


def dispatcher_doc(
    observed: dict[str, Any],
    queue: list[dict[str, Any]],
    last_batch_id: int,
    batch: tuple[int, Iterable[tuple[dict[str, Any], bool]]] | None,
    ack: tuple[int, Iterable[tuple[str, str | None]]] | None,
) -> dict[str, Any]:
    """A dispatcher (R29): its §16.6 observable part (without `network`, which `batch` and
    `ack` hold in full) and its queue's events, batch counter (R15), batch as shipped
    (R14, R15: (batch id, (event, as_delta) ...)) and ack (R17: (batch id, (status,
    exception) ...))."""
    doc = {name: item for name, item in observed.items() if name != "network"}
    return doc | {
        "queue": queue,
        "last_batch_id": last_batch_id,
        "batch": None
        if batch is None
        else {
            "batch_id": batch[0],
            "events": [event | {"as_delta": ships} for event, ships in batch[1]],
        },
        "ack": None
        if ack is None
        else {"batch_id": ack[0], "statuses": [[status, exc] for status, exc in ack[1]]},
    }


def sender_doc(observed: dict[str, Any], dispatchers: list[dict[str, Any]]) -> dict[str, Any]:
    """A sender: its §16.6 observable part (`running`, `paused`, `stats`, `dlq`) with its
    dispatchers in full (`dispatcher_doc`)."""
    return observed | {"dispatchers": dispatchers}


def document(config: Config, state: dict[str, Any]) -> dict[str, Any]:
    """The whole checkpoint document of an engine's `state` part."""
    return {"format": FORMAT, "version": VERSION, "config": config.to_json(), "state": state}


def checkpoint_text(doc: dict[str, Any]) -> str:
    """The one canonical text of a checkpoint (sorted keys, no spaces): two engines in
    the same state write the same bytes."""
    return canonical_json(doc)


class _NotAnInteger(ValueError):
    pass


def _integers_only(token: str) -> Any:
    """A checkpoint's numbers are integers (JSON Schema would take 1.0 for one)."""
    raise _NotAnInteger(f"{token}: every number of a checkpoint is an integer")


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A checkpoint file, parsed and checked against the schema (not yet the config)."""
    name = os.fspath(path)
    # a byte order mark at the start is accepted, as in a trace or configuration file
    text = read_text(name, "a checkpoint", CheckpointError).removeprefix(BOM)
    try:
        doc = json.loads(
            text,
            object_pairs_hook=no_duplicate_keys,
            parse_float=_integers_only,
            parse_constant=_integers_only,
        )
    except _NotAnInteger as exc:
        raise CheckpointError(f"{name}: not a checkpoint: {exc}") from None
    except json.JSONDecodeError as exc:
        first = text.split("\n", 1)[0]
        if exc.msg == "Extra data" and first.lstrip().startswith('{"config"'):
            raise CheckpointError(
                f"{name}: a trace, not a checkpoint (`replay TRACE --checkpoint FILE` writes "
                "one: the state after the trace)"
            ) from None
        raise CheckpointError(f"{name}:{exc.lineno}: {json_problem(exc)}") from None
    except ValueError as exc:  # a key twice
        raise CheckpointError(f"{name}: not valid JSON: {exc}") from None
    except RecursionError:
        raise CheckpointError(f"{name}: not a checkpoint: nested too deeply") from None
    problem = surrogate_problem(text, doc)
    if problem:
        raise CheckpointError(f"{name}: not a checkpoint: {problem}")
    validate(doc, name)
    return dict(doc)
