"""Client operations at the origin site: R3, R9, R10, R11 (and R29: each sender queues
the event on the dispatcher of its route).

A client write takes the origin's next sequence number (R3), gets a local version tag
(R9), changes the entry (R10) and enqueues one gateway event on every sender of the
origin site (R11).
"""

from __future__ import annotations

from model.queues import enqueue, not_queued, not_queued_observation
from model.routing import bucket_of
from model.state import Entry, GatewayEvent, OpLabel, State, Tag
from traces.canonical import size
from traces.config import Config
from traces.observations import Observation
from traces.ops import Delta, Destroy, Put, PutAll, Value


def local_version(current: Entry | None, origin: int, now: int, floor: int) -> Tag:
    """R9: the tag of a client write at `origin` over the current entry (live or tombstone).

    `ts` is `now`, or `c.timestamp + 1` when the clock has not passed the entry's
    timestamp (whatever its dsid: Geode's `generateVersionTag`), and never below the
    site's `timestamp_floor` (R21): a site's tags are unique, also across a wipe.
    """
    if current is None:
        entry_version, ts = 1, now
    else:
        entry_version, timestamp = current.version[0] + 1, current.version[1]
        ts = timestamp + 1 if now <= timestamp else now
    return (entry_version, max(ts, floor), origin)


def write(
    config: Config,
    state: State,
    origin: int,
    key: str,
    value: Value | None,
    delta: Value | None,
    thread: int,
) -> tuple[State, list[Observation]]:
    """R3, R9-R11: one client write of `value` (None: destroy) at `origin` by client
    thread `thread`."""
    site = state.sites[origin]
    current = site.entries.get(key)
    live = current is not None and current.value is not None
    op: OpLabel = "destroy" if value is None else ("update" if live else "create")
    version = local_version(current, origin, state.time, site.timestamp_floor)
    seq = site.seq + 1  # R3
    event_id = f"{origin}:{seq}"
    site = site._replace(
        seq=seq,
        entries=site.entries.set(key, Entry(value, version)),
        last_issued=max(site.last_issued, version[1]),
    )
    senders_here = config.senders_at(origin)
    base_version = current.version if delta is not None and current is not None else None
    recipients = config.site_and_remotes(origin)  # R11
    bucket = bucket_of(config, origin, key) if config.regions else None  # R28
    event = GatewayEvent(  # positional (twice as fast as by keyword): the fields in order
        event_id,
        origin,
        seq,
        key,
        op,
        value,
        version,
        base_version,
        delta,
        False,  # converted
        recipients,
        False,  # possible_duplicate
        state.time,  # enqueued_at
        thread,
        size(value),
        bucket,
    )
    senders = state.senders
    routes: dict[str, dict[str, int | None]] = {}
    after: list[Observation] = []  # what queuing the event caused (R32, R37)
    for sender_config in senders_here:
        sender = senders[sender_config.id]
        if not sender.running:  # R37: a stopped sender queues nothing
            senders = senders.set(sender_config.id, not_queued(sender))
            after.append(not_queued_observation(sender_config.id, event_id))
            continue
        sender, index, conflated = enqueue(sender_config, sender, event)
        senders = senders.set(sender_config.id, sender)
        routes[sender_config.id] = {"dispatcher": index, "bucket": bucket}
        after += conflated
    observation: Observation = {
        "kind": "enqueued",
        "site": origin,
        "event": event_id,
        "key": key,
        "op": op,
        "version": list(version),
        "value": value,
        "senders": list(routes),
        "routes": routes,
    }
    state = state._replace(sites=state.sites.set(origin, site), senders=senders)
    return state, [observation, *after]


def put(config: Config, state: State, op: Put) -> tuple[State, list[Observation]]:
    """R10 put: store the full value."""
    return write(config, state, op.site, op.key, op.value, None, op.thread)


def apply_delta(config: Config, state: State, op: Delta) -> tuple[State, list[Observation]]:
    """R10 delta: merge `changes` into the live value; the event carries both (R11)."""
    current = state.sites[op.site].entries[op.key]
    assert current.value is not None  # enabled() guarantees a live entry
    value = {**current.value, **op.changes}
    return write(config, state, op.site, op.key, value, op.changes, op.thread)


def destroy(config: Config, state: State, op: Destroy) -> tuple[State, list[Observation]]:
    """R10 destroy: store a tombstone (kept forever, R2)."""
    return write(config, state, op.site, op.key, None, None, op.thread)


def putall(config: Config, state: State, op: PutAll) -> tuple[State, list[Observation]]:
    """R10 putall: puts in sorted key order, one sequence number each (R3), never deltas."""
    observations: list[Observation] = []
    for key in sorted(op.entries):
        state, written = write(config, state, op.site, key, op.entries[key], None, op.thread)
        observations += written
    return state, observations
