"""The model as a labelled transition system (SPEC §3): `initial_state`, `enabled`, `step`.

`step(config, state, op)` is pure. When `op` is not enabled, the state is returned
unchanged with the single observation `skipped`: nothing else happens, not even a flush.
When it is enabled: the operation's own effect; then, for `tick` only, the timeouts of
R20; then R15's flush for every sender in sorted id order. `settle` is an operation like
any other (our reading of §3's "after every operation"): its inner operations flush, and
so does the settle itself once it stops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from immutables import Map

from model import client, faults, receiver, sender, settle
from model.state import Sender, Site, State
from traces.config import Config
from traces.observations import Observation
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Op,
    Put,
    PutAll,
    Settle,
    SiteDown,
    SiteUp,
    Tick,
)


def initial_state(config: Config) -> State:
    """Time 0, every site up and empty (R1, R5), every sender idle."""
    return State(
        time=0,
        sites=Map({site: Site() for site in config.sites}),
        senders=Map({s.id: Sender() for s in config.senders}),
        failures=Map(),
    )


def _live(state: State, site: int, key: str) -> bool:
    entry = state.sites[site].entries.get(key)
    return entry is not None and entry.value is not None


def enabled(config: Config, state: State, op: Op) -> bool:
    """SPEC §3's 'enabled when' column."""
    match op:
        case Put(site=site) | SiteDown(site=site):
            return state.sites[site].up
        case Delta(site=site, key=key) | Destroy(site=site, key=key):
            return state.sites[site].up and _live(state, site, key)
        case PutAll(site=site, entries=entries):
            return state.sites[site].up and len(entries) > 0
        case Deliver(sender=sender_id):
            remote = config.sender(sender_id).remote
            return state.senders[sender_id].batch_message is not None and state.sites[remote].up
        case DeliverAck(sender=sender_id):
            site = config.sender(sender_id).site
            return state.senders[sender_id].ack_message is not None and state.sites[site].up
        case Drop(sender=sender_id):
            return state.senders[sender_id].batch_message is not None
        case DropAck(sender=sender_id):
            return state.senders[sender_id].ack_message is not None
        case SiteUp(site=site):
            return not state.sites[site].up
        case Tick() | Fail() | Settle():
            return True
    raise TypeError(f"not an operation: {op!r}")


def _tick(config: Config, state: State, op: Tick) -> tuple[State, list[Observation]]:
    """R5: time advances only here; R20's timeouts follow."""
    return sender.timeouts(config, state._replace(time=state.time + op.ms))


def _settle(config: Config, state: State, op: Settle) -> tuple[State, list[Observation]]:
    return settle.settle(config, state, step, enabled)


_EFFECTS: dict[type[Any], Callable[[Config, State, Any], tuple[State, list[Observation]]]] = {
    Put: client.put,
    Delta: client.apply_delta,
    Destroy: client.destroy,
    PutAll: client.putall,
    Tick: _tick,
    Deliver: lambda config, state, op: receiver.deliver(config, state, op.sender),
    DeliverAck: lambda config, state, op: sender.deliver_ack(config, state, op.sender),
    Drop: faults.drop,
    DropAck: faults.drop_ack,
    SiteDown: faults.site_down,
    SiteUp: faults.site_up,
    Fail: faults.fail,
    Settle: _settle,
}


def step(config: Config, state: State, op: Op) -> tuple[State, list[Observation]]:
    """One transition: (state', observations). Pure: `state` is never changed."""
    if not enabled(config, state, op):
        return state, [{"kind": "skipped", "op": op.op}]
    state, observations = _EFFECTS[type(op)](config, state, op)
    for sender_config in config.senders:
        state, flushed = sender.flush(config, state, sender_config)
        observations.extend(flushed)
    return state, observations
