"""The model as a labelled transition system (SPEC §3): `initial_state`, `enabled`, `step`.

`step(config, state, op)` is pure. When `op` is not enabled, the state is returned
unchanged with the single observation `skipped`: nothing else happens, not even a flush.
When it is enabled: the operation's own effect; then, for `tick` only, the timeouts of
R20 per dispatcher; then R15's flush for every (sender id, dispatcher index) in that
order (§16.2). `settle` is an operation like any other (our reading of §3's "after every
operation"): its inner operations flush, and so does the settle itself once it stops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from immutables import Map

from model import client, faults, receiver, sender, settle
from model.queues import new_sender
from model.state import Site, State
from traces.config import Config
from traces.enabled import why_skipped
from traces.engine import SETTLE_CAP
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
    PauseSender,
    Put,
    PutAll,
    Redeliver,
    RestartSender,
    ResumeSender,
    Settle,
    SiteDown,
    SiteUp,
    StartSender,
    StopSender,
    Tick,
)


def initial_state(config: Config) -> State:
    """Time 0, every site up and empty (R1, R5), every sender idle with its dispatchers."""
    return State(
        time=0,
        sites=Map({site: Site() for site in config.sites}),
        senders=Map({s.id: new_sender(s) for s in config.senders}),
        failures=Map(),
    )


class _View:
    """The model's state as the questions of SPEC §3's table (`traces.enabled`)."""

    __slots__ = ("state",)

    def __init__(self, state: State) -> None:
        self.state = state

    def site_up(self, site: int) -> bool:
        return self.state.sites[site].up

    def live(self, site: int, key: str) -> bool:
        entry = self.state.sites[site].entries.get(key)
        return entry is not None and entry.value is not None

    def batch_in_network(self, sender: str, dispatcher: int) -> bool:
        return self.state.senders[sender].dispatchers[dispatcher].batch_message is not None

    def ack_in_network(self, sender: str, dispatcher: int) -> bool:
        return self.state.senders[sender].dispatchers[dispatcher].ack_message is not None

    def dead_letters(self, sender: str) -> list[str]:
        return [record.event_id for record in self.state.senders[sender].dead_letters]

    def running(self, sender: str) -> bool:
        return self.state.senders[sender].running

    def paused(self, sender: str) -> bool:
        return self.state.senders[sender].paused


def enabled(config: Config, state: State, op: Op) -> bool:
    """SPEC §3's 'enabled when' column, read from its one table (`traces.enabled`)."""
    return why_skipped(config, _View(state), op) is None


def _tick(config: Config, state: State, op: Tick) -> tuple[State, list[Observation]]:
    """R5: time advances only here; R20's timeouts follow."""
    return sender.timeouts(config, state._replace(time=state.time + op.ms))


def _settle(config: Config, state: State, op: Settle) -> tuple[State, list[Observation]]:
    state, observations, _ = settle.settle(config, state, step, enabled)
    return state, observations


def settle_step(
    config: Config, state: State, cap: int = SETTLE_CAP
) -> tuple[State, list[Observation], bool]:
    """`step(config, state, Settle())` with at most `cap` inner operations, and whether
    the settle stopped at that cap (R25)."""
    state, observations, capped = settle.settle(config, state, step, enabled, cap)
    return (*_flush(config, state, observations), capped)


EFFECTS: dict[type[Any], Callable[[Config, State, Any], tuple[State, list[Observation]]]] = {
    Put: client.put,
    Delta: client.apply_delta,
    Destroy: client.destroy,
    PutAll: client.putall,
    Tick: _tick,
    Deliver: lambda config, state, op: receiver.deliver(config, state, op.sender, op.dispatcher),
    DeliverAck: lambda config, state, op: sender.deliver_ack(
        config, state, op.sender, op.dispatcher
    ),
    Drop: faults.drop,
    DropAck: faults.drop_ack,
    SiteDown: faults.site_down,
    SiteUp: faults.site_up,
    Fail: faults.fail,
    Settle: _settle,
    Redeliver: sender.redeliver,
    RestartSender: sender.restart_sender,
    StopSender: sender.stop_sender,
    StartSender: sender.start_sender,
    PauseSender: sender.pause_sender,
    ResumeSender: sender.resume_sender,
}


def step(config: Config, state: State, op: Op) -> tuple[State, list[Observation]]:
    """One transition: (state', observations). Pure: `state` is never changed."""
    if not enabled(config, state, op):
        return state, [{"kind": "skipped", "op": op.op}]
    state, observations = EFFECTS[type(op)](config, state, op)
    for sender_config in config.senders:  # _flush, inline: it runs after every operation
        state, flushed = sender.flush(config, state, sender_config)
        observations.extend(flushed)
    return state, observations


def _flush(
    config: Config, state: State, observations: list[Observation]
) -> tuple[State, list[Observation]]:
    """§3: after an operation's effect, R15 for every (sender, dispatcher) in order."""
    for sender_config in config.senders:
        state, flushed = sender.flush(config, state, sender_config)
        observations.extend(flushed)
    return state, observations
