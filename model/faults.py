"""Faults as ordinary operations: `drop`, `drop_ack`, `fail`, and R21 (sites going down).

A site going down loses every message to or from it; its senders and their peers recover
by timeout (R20). A wiped site comes back as a brand-new distributed system: only what
lives on disk (counters, dead letters) and its sequence numbers survive.
"""

from __future__ import annotations

from immutables import Map

from model.queues import fresh_dispatchers, with_dispatcher
from model.state import AppliedIds, Failure, State
from traces.config import Config
from traces.observations import Observation
from traces.ops import Drop, DropAck, Fail, SiteDown, SiteUp


def drop(config: Config, state: State, op: Drop) -> tuple[State, list[Observation]]:
    """The network loses the dispatcher's batch message; it will time out (R20)."""
    current = state.senders[op.sender]
    dispatcher = current.dispatchers[op.dispatcher]._replace(batch_message=None)
    updated = with_dispatcher(current, op.dispatcher, dispatcher)
    return state._replace(senders=state.senders.set(op.sender, updated)), []


def drop_ack(config: Config, state: State, op: DropAck) -> tuple[State, list[Observation]]:
    """The network loses the ack message; the dispatcher will time out and resend (R20)."""
    current = state.senders[op.sender]
    dispatcher = current.dispatchers[op.dispatcher]._replace(ack_message=None)
    updated = with_dispatcher(current, op.dispatcher, dispatcher)
    return state._replace(senders=state.senders.set(op.sender, updated)), []


def fail(config: Config, state: State, op: Fail) -> tuple[State, list[Observation]]:
    """Inject `times` failing apply attempts at (site, key); replaces an earlier one (§3)."""
    failures = state.failures.set((op.site, op.key), Failure(op.exception, op.times))
    return state._replace(failures=failures), []


def site_down(config: Config, state: State, op: SiteDown) -> tuple[State, list[Observation]]:
    """R21: the site stops; every batch or ack message to or from it is lost (R30: of
    every dispatcher)."""
    senders = state.senders
    for sender in config.senders:
        if op.site in (sender.site, sender.remote):
            current = senders[sender.id]
            dispatchers = tuple(
                d._replace(batch_message=None, ack_message=None) for d in current.dispatchers
            )
            senders = senders.set(sender.id, current._replace(dispatchers=dispatchers))
    sites = state.sites.set(op.site, state.sites[op.site]._replace(up=False))
    return state._replace(sites=sites, senders=senders), []


def site_up(config: Config, state: State, op: SiteUp) -> tuple[State, list[Observation]]:
    """R21: the site restarts; with `wipe` its region, memory and queues start empty
    (v2.0: every dispatcher of its senders as new, batch-id counters kept; the sender
    running unless it starts manually, and not paused)."""
    site = state.sites[op.site]._replace(up=True)
    senders = state.senders
    if op.wipe:
        floor = max(site.timestamp_floor, site.last_issued + 1)  # R21
        site = site._replace(entries=Map(), applied=AppliedIds(), timestamp_floor=floor)
        for sender in config.senders_at(op.site):
            current = senders[sender.id]
            fresh = current._replace(
                dispatchers=fresh_dispatchers(sender, current.dispatchers),
                running=not sender.manual_start,  # a brand-new system starts as configured
                paused=False,
            )
            senders = senders.set(sender.id, fresh)
    return state._replace(sites=state.sites.set(op.site, site), senders=senders), []
