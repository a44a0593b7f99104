"""The gateway receiver: R16 (apply a batch), R17 (the ack) and R22 (forwarding).

R16's checks run in the spec's order for every event, and the receiver never stops
early: 1 duplicate, 2 injected failure (with retries), 3 conflict, 4 delta base, 5 ok.
"""

from __future__ import annotations

from dataclasses import replace

from model.state import AckMessage, Entry, GatewayEvent, Site, State, Status, Tag
from traces.config import Config
from traces.observations import Observation
from traces.ops import Value


def wins(incoming: Tag, current: Tag) -> bool:
    """R16.3: does an incoming tag win over the current entry's tag?"""
    incoming_ev, incoming_ts, incoming_dsid = incoming
    current_ev, current_ts, current_dsid = current
    if incoming_dsid == current_dsid:
        return (incoming_ts, incoming_ev) > (current_ts, current_ev)
    return incoming_ts > current_ts or (incoming_ts == current_ts and incoming_dsid > current_dsid)


def forward(
    config: Config, state: State, site_id: int, event: GatewayEvent
) -> tuple[State, list[Observation]]:
    """R22: offer an event applied at `site_id` to that site's senders, in sorted id order."""
    senders_here = config.senders_at(site_id)
    recipients = event.recipients | {s.remote for s in senders_here}
    senders = state.senders
    observations: list[Observation] = []
    for sender in senders_here:
        if sender.remote == event.origin or sender.remote in event.recipients:
            continue
        copy = replace(
            event, recipients=recipients, possible_duplicate=False, enqueued_at=state.time
        )
        current = senders[sender.id]
        senders = senders.set(sender.id, replace(current, queue=current.queue.append(copy)))
        observations.append(
            {"kind": "forwarded", "site": site_id, "sender": sender.id, "event": event.event_id}
        )
    return replace(state, senders=senders), observations


def attempt(config: Config, state: State, site_id: int, key: str) -> tuple[State, str | None, int]:
    """R16.2: run the receiver's attempts against an injected failure.

    Returns the new state, the exception if every attempt failed (else None) and the
    number of retries made. Attempts allowed: 1 + retry_attempts; unbounded with -1.
    """
    failure = state.failures.get((site_id, key))
    if failure is None or failure.remaining == 0:
        return state, None, 0
    retry_attempts = config.receiver(site_id).retry_attempts
    allowed = failure.remaining + 1 if retry_attempts == -1 else 1 + retry_attempts
    failed_attempts = min(allowed, failure.remaining)
    succeeded = failed_attempts < allowed
    attempts = failed_attempts + (1 if succeeded else 0)
    failures = state.failures.set(
        (site_id, key), replace(failure, remaining=failure.remaining - failed_attempts)
    )
    state = replace(state, failures=failures)
    return state, None if succeeded else failure.exception, attempts - 1


def deliver(config: Config, state: State, sender_id: str) -> tuple[State, list[Observation]]:
    """R16, R17: the remote site applies the batch in the network and answers with an ack."""
    sender = config.sender(sender_id)
    site_id = sender.remote
    message = state.senders[sender_id].batch_message
    assert message is not None  # enabled() guarantees the batch is in the network
    observations: list[Observation] = []
    statuses: list[tuple[Status, str | None]] = []
    for event, as_delta in message.events:
        site: Site = state.sites[site_id]
        status: Status
        exception: str | None = None
        built: Value | None = None
        stats = site.stats
        if event.event_id in site.applied:  # R16.1
            status = "duplicate"
            stats = replace(stats, duplicates=stats.duplicates + 1)
        else:
            state, exception, retries = attempt(config, state, site_id, event.key)  # R16.2
            stats = replace(stats, retries=stats.retries + retries)
            current = site.entries.get(event.key)
            if exception is not None:
                status = "failed"
                stats = replace(stats, failures=stats.failures + 1)
            elif current is not None and not wins(event.version, current.version):  # R16.3
                status = "conflict"
                stats = replace(stats, conflicts=stats.conflicts + 1)
            elif as_delta and (
                current is None or current.value is None or current.version != event.base_version
            ):  # R16.4
                status = "invalid_delta"
                stats = replace(stats, invalid_deltas=stats.invalid_deltas + 1)
            else:  # R16.5
                status = "ok"
                stats = replace(stats, applied=stats.applied + 1)
                if as_delta:
                    assert current is not None and current.value is not None
                    assert event.delta is not None
                    built = {**current.value, **event.delta}
                    value: Value | None = built
                else:
                    value = event.value
                site = replace(
                    site,
                    entries=site.entries.set(event.key, Entry(value, event.version)),
                    applied=site.applied.set(event.event_id, True),
                )
        site = replace(site, stats=stats)
        state = replace(state, sites=state.sites.set(site_id, site))
        observation: Observation = {
            "kind": "applied",
            "site": site_id,
            "sender": sender_id,
            "event": event.event_id,
            "key": event.key,
            "status": status,
        }
        if exception is not None:
            observation["exception"] = exception
        if built is not None:
            observation["value"] = built
        observations.append(observation)
        statuses.append((status, exception))
        if status == "ok":
            state, forwarded = forward(config, state, site_id, event)  # R22
            observations.extend(forwarded)
    current_sender = state.senders[sender_id]
    updated = replace(
        current_sender,
        batch_message=None,
        ack_message=AckMessage(message.batch_id, tuple(statuses)),  # R17
    )
    return replace(state, senders=state.senders.set(sender_id, updated)), observations
