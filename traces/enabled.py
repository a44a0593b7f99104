"""SPEC §3's "enabled when" column, as data: what must hold for an operation to run.

One table, two readers. The model decides with it, on its own state
(`model.step.enabled`); `conformance.running.narrative` says why an operation was skipped, from
the observable state of §10 (`ObservedState`), so the words always match the decision.
An operation is enabled when every condition of its row holds; the first one that does
not is the reason it was skipped. The impl decides on its own (it is the engine under
test) and must agree with the model (P1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from traces.config import Config
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


class StateView(Protocol):
    """The questions the table asks of a state (each engine's state can answer them)."""

    def site_up(self, site: int) -> bool: ...

    def live(self, site: int, key: str) -> bool: ...

    def batch_in_network(self, sender: str, dispatcher: int) -> bool: ...

    def ack_in_network(self, sender: str, dispatcher: int) -> bool: ...

    def dead_letters(self, sender: str) -> list[str]:
        """The event ids of the sender's dead-letter records, in queue order (R24)."""
        ...

    def running(self, sender: str) -> bool:
        """Whether the sender runs (R37: not stopped)."""
        ...

    def paused(self, sender: str) -> bool:
        """Whether the sender is paused (R37)."""
        ...


@dataclass(frozen=True, slots=True)
class Condition:
    """One cell of the column: whether it holds, and the words when it does not."""

    holds: Callable[[Config, StateView, Any], bool]
    unmet: Callable[[Config, Any], str]


SITE_UP = Condition(lambda c, v, op: v.site_up(op.site), lambda c, op: f"site {op.site} is down")
LIVE_ENTRY = Condition(
    lambda c, v, op: v.live(op.site, op.key),
    lambda c, op: f"{op.key} has no live entry at site {op.site}",
)
SOME_ENTRIES = Condition(lambda c, v, op: len(op.entries) > 0, lambda c, op: "putall of no entries")


def _of(config: Config, op: Any) -> str:
    """The sender of a network operation, and its dispatcher when it has several (R29)."""
    if config.sender(op.sender).dispatcher_threads == 1:
        return str(op.sender)
    return f"{op.sender} dispatcher {op.dispatcher}"


BATCH_IN_NETWORK = Condition(
    lambda c, v, op: v.batch_in_network(op.sender, op.dispatcher),
    lambda c, op: f"no batch of {_of(c, op)} in the network",
)
REMOTE_UP = Condition(
    lambda c, v, op: v.site_up(c.sender(op.sender).remote),
    lambda c, op: f"site {c.sender(op.sender).remote} is down",
)
ACK_IN_NETWORK = Condition(
    lambda c, v, op: v.ack_in_network(op.sender, op.dispatcher),
    lambda c, op: f"no ack of {_of(c, op)} in the network",
)
SENDER_SITE_UP = Condition(
    lambda c, v, op: v.site_up(c.sender(op.sender).site),
    lambda c, op: f"site {c.sender(op.sender).site} is down",
)
NOT_YET_DOWN = Condition(
    lambda c, v, op: v.site_up(op.site), lambda c, op: f"site {op.site} is already down"
)
NOT_YET_UP = Condition(
    lambda c, v, op: not v.site_up(op.site), lambda c, op: f"site {op.site} is already up"
)


def _selected(view: StateView, op: Redeliver) -> bool:
    held = view.dead_letters(op.sender)
    return bool(held) if op.events is None else any(e in held for e in op.events)


A_SELECTED_RECORD = Condition(
    lambda c, v, op: _selected(v, op),
    lambda c, op: (
        f"no dead-letter record of {op.sender}"
        + ("" if op.events is None else " among " + ", ".join(op.events))
    ),
)

RUNNING = Condition(
    lambda c, v, op: v.running(op.sender), lambda c, op: f"sender {op.sender} is stopped"
)
STOPPED = Condition(
    lambda c, v, op: not v.running(op.sender), lambda c, op: f"sender {op.sender} is running"
)
NOT_PAUSED = Condition(
    lambda c, v, op: not v.paused(op.sender), lambda c, op: f"sender {op.sender} is already paused"
)
PAUSED = Condition(
    lambda c, v, op: v.paused(op.sender), lambda c, op: f"sender {op.sender} is not paused"
)

ENABLED_WHEN: dict[type[Any], tuple[Condition, ...]] = {
    Put: (SITE_UP,),
    Delta: (SITE_UP, LIVE_ENTRY),
    Destroy: (SITE_UP, LIVE_ENTRY),
    PutAll: (SITE_UP, SOME_ENTRIES),
    Tick: (),
    Deliver: (BATCH_IN_NETWORK, REMOTE_UP),
    DeliverAck: (ACK_IN_NETWORK, SENDER_SITE_UP),
    Drop: (BATCH_IN_NETWORK,),
    DropAck: (ACK_IN_NETWORK,),
    SiteDown: (NOT_YET_DOWN,),
    SiteUp: (NOT_YET_UP,),
    Fail: (),
    Settle: (),
    Redeliver: (SENDER_SITE_UP, RUNNING, A_SELECTED_RECORD),
    RestartSender: (SENDER_SITE_UP,),
    StopSender: (SENDER_SITE_UP, RUNNING),
    StartSender: (SENDER_SITE_UP, STOPPED),
    PauseSender: (SENDER_SITE_UP, RUNNING, NOT_PAUSED),
    ResumeSender: (SENDER_SITE_UP, PAUSED),
}
"""SPEC §3's table: operation -> the conditions under which it is enabled."""


def why_skipped(config: Config, view: StateView, op: Op) -> str | None:
    """Why `op` is not enabled in the state `view` shows (None: it is enabled)."""
    try:
        conditions = ENABLED_WHEN[type(op)]
    except KeyError:
        raise TypeError(f"not an operation: {op!r}") from None
    for condition in conditions:
        if not condition.holds(config, view, op):
            return condition.unmet(config, op)
    return None


class ObservedState:
    """A `StateView` of the observable state of SPEC §10 (either engine's `observe()`)."""

    __slots__ = ("_state",)

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state

    def site_up(self, site: int) -> bool:
        return bool(self._state["sites"][str(site)]["up"])

    def live(self, site: int, key: str) -> bool:
        entry = self._state["sites"][str(site)]["entries"].get(key)
        return entry is not None and entry["value"] is not None

    def batch_in_network(self, sender: str, dispatcher: int) -> bool:
        return bool(self._state["senders"][sender]["dispatchers"][dispatcher]["network"]["batch"])

    def ack_in_network(self, sender: str, dispatcher: int) -> bool:
        return bool(self._state["senders"][sender]["dispatchers"][dispatcher]["network"]["ack"])

    def dead_letters(self, sender: str) -> list[str]:
        return [record["event_id"] for record in self._state["senders"][sender]["dlq"]]

    def running(self, sender: str) -> bool:
        return bool(self._state["senders"][sender]["running"])

    def paused(self, sender: str) -> bool:
        return bool(self._state["senders"][sender]["paused"])
