"""R25 / R39: `settle` drives the system to quiescence as a loop of ordinary operations.

Each round, over (sender id, dispatcher index) pairs in that order (R39): deliver the
first batch that can be delivered; else the first ack; else tick to the earliest due
time of a dispatcher whose sender's site and remote are both up, unless it lies past
2^63-1 (v1.2: settle never ticks past it); else stop. A flush is due only for a running,
unpaused sender; a timeout whatever its state. Down sites stay down. At most 1,000,000
inner operations (`traces.engine.SETTLE_CAP`; `--settle-cap` may choose another cap).
"""

from __future__ import annotations

from collections.abc import Callable

from model.state import Dispatcher, State
from traces.config import INT64_MAX, Config, SenderConfig
from traces.engine import SETTLE_CAP
from traces.observations import Observation
from traces.ops import Deliver, DeliverAck, Op, Tick

Step = Callable[[Config, State, Op], tuple[State, list[Observation]]]
Enabled = Callable[[Config, State, Op], bool]


def due_time(sender: SenderConfig, dispatcher: Dispatcher, now: int, flushes: bool) -> int | None:
    """When R20 or R15 will next act on this dispatcher, or None if it has nothing to do
    (`flushes`: its sender runs and is not paused)."""
    if dispatcher.in_flight is not None:
        return dispatcher.in_flight.sent_at + sender.ack_timeout_ms
    queue = dispatcher.queue
    if not flushes or len(queue) == 0:
        return None
    if len(queue) >= sender.batch_size:
        ready = now
    else:
        ready = queue.head().enqueued_at + sender.batch_time_interval_ms
    return max(dispatcher.next_retry_at, ready)


def next_operation(config: Config, state: State, enabled: Enabled) -> Op | None:
    """The operation R39 performs next in this state, or None when settled."""
    pairs = [
        (sender, index)
        for sender in config.senders  # config.senders is in sorted id order
        for index in range(sender.dispatcher_threads)
    ]
    for sender, index in pairs:
        if enabled(config, state, Deliver(sender.id, index)):
            return Deliver(sender.id, index)
    for sender, index in pairs:
        if enabled(config, state, DeliverAck(sender.id, index)):
            return DeliverAck(sender.id, index)
    dues = []
    for sender in config.senders:
        if not (state.sites[sender.site].up and state.sites[sender.remote].up):
            continue
        current = state.senders[sender.id]
        flushes = current.running and not current.paused
        for dispatcher in current.dispatchers:
            due = due_time(sender, dispatcher, state.time, flushes)
            if due is not None:
                dues.append(due)
    if not dues or min(dues) > INT64_MAX:  # v1.2: settle never ticks past 2^63-1
        return None
    return Tick(max(1, min(dues) - state.time))


def settle(
    config: Config, state: State, step: Step, enabled: Enabled, cap: int = SETTLE_CAP
) -> tuple[State, list[Observation], bool]:
    """R25/R39: run inner operations until nothing is left to do, or `cap` of them ran
    (the third value: True when it stopped at the cap with something still to do)."""
    observations: list[Observation] = []
    for _ in range(cap):
        op = next_operation(config, state, enabled)
        if op is None:
            return state, observations, False
        state, inner = step(config, state, op)
        observations.extend(inner)
    return state, observations, next_operation(config, state, enabled) is not None
