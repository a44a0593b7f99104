"""R25: `settle` drives the system to quiescence as a loop of ordinary operations.

Each round: deliver the lowest-id sender whose batch can be delivered; else deliver the
lowest-id pending ack; else tick to the earliest due time of a sender whose site and
remote are both up, unless it lies past 2^63-1 (v1.2: settle never ticks past it); else
stop. Down sites stay down. At most 1,000,000 inner operations.
"""

from __future__ import annotations

from collections.abc import Callable

from model.state import State
from traces.config import INT64_MAX, Config, SenderConfig
from traces.observations import Observation
from traces.ops import Deliver, DeliverAck, Op, Tick

MAX_INNER_OPERATIONS = 1_000_000

Step = Callable[[Config, State, Op], tuple[State, list[Observation]]]
Enabled = Callable[[Config, State, Op], bool]


def due_time(sender: SenderConfig, state: State) -> int | None:
    """When R20 or R15 will next act on this sender, or None if it has nothing to do."""
    current = state.senders[sender.id]
    if current.in_flight is not None:
        return current.in_flight.sent_at + sender.ack_timeout_ms
    if len(current.queue) == 0:
        return None
    if len(current.queue) >= sender.batch_size:
        ready = state.time
    else:
        ready = current.queue[0].enqueued_at + sender.batch_time_interval_ms
    return max(current.next_retry_at, ready)


def next_operation(config: Config, state: State, enabled: Enabled) -> Op | None:
    """The operation R25 performs next in this state, or None when settled."""
    for sender in config.senders:  # config.senders is in sorted id order
        if enabled(config, state, Deliver(sender.id)):
            return Deliver(sender.id)
    for sender in config.senders:
        if enabled(config, state, DeliverAck(sender.id)):
            return DeliverAck(sender.id)
    dues = [
        due
        for sender in config.senders
        if state.sites[sender.site].up and state.sites[sender.remote].up
        if (due := due_time(sender, state)) is not None
    ]
    if not dues or min(dues) > INT64_MAX:  # v1.2: settle never ticks past 2^63-1
        return None
    return Tick(max(1, min(dues) - state.time))


def settle(
    config: Config, state: State, step: Step, enabled: Enabled
) -> tuple[State, list[Observation]]:
    """R25: run inner operations until nothing is left to do (or the cap is reached)."""
    observations: list[Observation] = []
    for _ in range(MAX_INNER_OPERATIONS):
        op = next_operation(config, state, enabled)
        if op is None:
            break
        state, inner = step(config, state, op)
        observations.extend(inner)
    return state, observations
