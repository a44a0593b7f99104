"""The gateway receiver: R16 (apply a batch), R17 (the ack) and R22 (forwarding, to the
dispatcher of each sender that R29 routes the event to).

R16's checks run in the spec's order for every event, and the receiver never stops
early: 1 duplicate, 2 injected failure (with retries), 3 conflict, 4 delta base, 5 ok.
"""

from __future__ import annotations

from collections import Counter

from immutables import Map

from model.queues import enqueue, not_queued, not_queued_observation, with_dispatcher
from model.routing import bucket_of
from model.state import AckMessage, Entry, Failure, GatewayEvent, Sender, State, Status
from model.tags import wins
from traces.config import Config
from traces.observations import Observation
from traces.ops import Value

_STAT_OF_STATUS: dict[Status, str] = {  # the site counter each R16 status adds to
    "ok": "applied",
    "duplicate": "duplicates",
    "conflict": "conflicts",
    "failed": "failures",
    "invalid_delta": "invalid_deltas",
}


def forward(
    config: Config, senders: Map[str, Sender], site_id: int, event: GatewayEvent, now: int
) -> tuple[Map[str, Sender], list[Observation]]:
    """R22: offer an event applied at `site_id` to that site's senders, in sorted id order."""
    senders_here = config.senders_at(site_id)
    offered = [
        s for s in senders_here if s.remote != event.origin and s.remote not in event.recipients
    ]
    if not offered:
        return senders, []
    recipients = event.recipients | {s.remote for s in senders_here}
    observations: list[Observation] = []
    copy = event._replace(
        recipients=recipients,
        possible_duplicate=False,
        enqueued_at=now,
        bucket=bucket_of(config, site_id, event.key),  # R28: at the forwarding site
    )
    for sender in offered:
        current = senders[sender.id]
        if not current.running:  # R37: a stopped sender queues nothing
            senders = senders.set(sender.id, not_queued(current))
            observations.append(not_queued_observation(sender.id, event.event_id))
            continue
        current, index, conflated = enqueue(sender, current, copy)
        senders = senders.set(sender.id, current)
        observations.append(
            {
                "kind": "forwarded",
                "site": site_id,
                "sender": sender.id,
                "dispatcher": index,
                "event": event.event_id,
            }
        )
        observations += conflated
    return senders, observations


def attempt(
    retry_attempts: int, failures: Map[tuple[int, str], Failure], site_id: int, key: str
) -> tuple[Map[tuple[int, str], Failure], str | None, int]:
    """R16.2: run the receiver's attempts against an injected failure.

    Returns the failures left, the exception if every attempt failed (else None) and the
    number of retries made. Attempts allowed: 1 + retry_attempts; unbounded with -1.
    """
    failure = failures.get((site_id, key))
    if failure is None or failure.remaining == 0:
        return failures, None, 0
    allowed = failure.remaining + 1 if retry_attempts == -1 else 1 + retry_attempts
    failed_attempts = min(allowed, failure.remaining)
    succeeded = failed_attempts < allowed
    attempts = failed_attempts + (1 if succeeded else 0)
    failures = failures.set(
        (site_id, key), failure._replace(remaining=failure.remaining - failed_attempts)
    )
    return failures, None if succeeded else failure.exception, attempts - 1


def deliver(
    config: Config, state: State, sender_id: str, index: int
) -> tuple[State, list[Observation]]:
    """R16, R17: the remote site applies the batch that dispatcher `index` of the sender
    has in the network and answers with an ack.

    The site's region, applied-event memory and counters are carried through the batch
    in local variables and stored once at the end; the region as a private mutable copy
    (`Map.mutate`, turned back into a Map by `finish`): the old state's map never changes.
    """
    sender = config.sender(sender_id)
    site_id = sender.remote
    retry_attempts = config.receiver(site_id).retry_attempts
    message = state.senders[sender_id].dispatchers[index].batch_message
    assert message is not None  # enabled() guarantees the batch is in the network
    site = state.sites[site_id]
    entries = site.entries.mutate()
    applied, failures, senders = site.applied, state.failures, state.senders
    forwards = bool(config.senders_at(site_id))  # R22 offers nothing from a site without senders
    counts = Counter[str]()
    observations: list[Observation] = []
    statuses: list[tuple[Status, str | None]] = []
    for event, as_delta in message.events:
        status: Status
        exception: str | None = None
        built: Value | None = None
        current = entries.get(event.key)
        if (event.origin, event.seq) in applied:  # R16.1
            status = "duplicate"
        else:
            if failures:  # R16.2: an injected failure may be waiting
                failures, exception, retries = attempt(retry_attempts, failures, site_id, event.key)
            else:
                exception, retries = None, 0
            if retries:
                counts["retries"] += retries  # R16.2
            if exception is not None:
                status = "failed"
            elif current is not None and not wins(event.version, current.version):  # R16.3
                status = "conflict"
            elif as_delta and (
                current is None or current.value is None or current.version != event.base_version
            ):  # R16.4
                status = "invalid_delta"
            else:  # R16.5
                status = "ok"
                value = event.value
                if as_delta:
                    assert current is not None and current.value is not None
                    assert event.delta is not None
                    value = built = {**current.value, **event.delta}
                entries.set(event.key, Entry(value, event.version))
                applied = applied.add((event.origin, event.seq))
        counts[_STAT_OF_STATUS[status]] += 1
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
        if status == "ok" and forwards:
            senders, forwarded = forward(config, senders, site_id, event, state.time)  # R22
            observations.extend(forwarded)
    stats = site.stats
    site = site._replace(
        entries=entries.finish(),
        applied=applied,
        stats=stats._replace(**{name: getattr(stats, name) + n for name, n in counts.items()}),
    )
    sending = senders[sender_id]
    updated = with_dispatcher(
        sending,
        index,
        sending.dispatchers[index]._replace(
            batch_message=None,
            ack_message=AckMessage(message.batch_id, tuple(statuses)),  # R17
        ),
    )
    return state._replace(
        sites=state.sites.set(site_id, site),
        senders=senders.set(sender_id, updated),
        failures=failures,
    ), observations
