"""The model with its time-triggered steps chosen by a log (docs/LOG.md, "Event logs").

A running system does not flush or time out at the exact millisecond R15 and R20 make
due: its dispatcher wakes a little later, a write arrives in between and joins the batch.
So for an event log the model lets the log choose when those steps happen, among the
moments the rules allow:

- after an operation, nothing fires by itself: no R20 timeouts on `tick` and no R15
  flushes after every operation (§3);
- `flush s d` is enabled when R15 lets dispatcher `d` of `s` flush now (`flush_due`),
  and does what R15 does then, for that dispatcher alone (`sender.flush`);
- `timeout s d` is enabled when R20 lets `d`'s batch time out now (`timeout_due`), and
  does what R20 does (`sender.timeouts`, for that dispatcher alone).

Every other operation has its effect as in `model.step` (one table of effects, one copy
of every rule). What the rules *require*, that a due step happens, is measured instead:
`due` holds when each pending flush or timeout became due, and `late` the lateness of
the step just taken (conformance/running/lateness.py turns them into a verdict).
"""

from __future__ import annotations

from model import Engine
from model.sender import flush, flush_due, timeout_due, timeouts
from model.state import State
from model.step import EFFECTS, enabled
from traces.config import Config
from traces.observations import Observation
from traces.ops import (
    NETWORK_OPS,
    Deliver,
    DeliverAck,
    Drop,
    DropAck,
    Flush,
    Op,
    Settle,
    Tick,
    Timeout,
)

DueKey = tuple[str, str, int]
"""("flush" or "timeout", sender id, dispatcher index)."""


def driven_step(config: Config, state: State, op: Op) -> tuple[State, list[Observation]]:
    """One transition of the driven model: (state', observations). Pure."""
    kind = type(op)
    if kind is Flush or kind is Timeout:
        assert isinstance(op, (Flush, Timeout))
        sender = config.sender(op.sender)
        if kind is Flush:
            due = flush_due(state, sender, op.dispatcher)
        else:
            due = timeout_due(state, sender, op.dispatcher)
        if due is None or state.time < due:
            return state, [{"kind": "skipped", "op": op.op}]
        if kind is Flush:
            return flush(config, state, sender, only=op.dispatcher)
        return timeouts(config, state, only=(op.sender, op.dispatcher))
    if kind is Tick:
        assert isinstance(op, Tick)
        return state._replace(time=state.time + op.ms), []
    assert kind is not Settle, "an event log has no settle (traces/eventlog.py refuses it)"
    if not enabled(config, state, op):
        return state, [{"kind": "skipped", "op": op.op}]
    return EFFECTS[kind](config, state, op)


def message_batch(state: State, op: Deliver | DeliverAck | Drop | DropAck) -> int | None:
    """The batch id of the message a network operation takes in `state` (None: none)."""
    dispatcher = state.senders[op.sender].dispatchers[op.dispatcher]
    message = dispatcher.batch_message if type(op) in (Deliver, Drop) else dispatcher.ack_message
    return None if message is None else message.batch_id


class DrivenEngine(Engine):
    """The driven model behind the engine surface, keeping when each flush and timeout
    fell due: `due[key]` is the moment it has been allowed since (or, when it is not yet,
    will be, unless another step comes first); `late` is [(key, ms)] of the last step."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.due: dict[DueKey, int] = {}
        self.late: list[tuple[DueKey, int]] = []
        # (op, state before, state after, observations) of a step already taken from
        # this state (an event log's search for an order, `conformance.running.events`)
        self.prepared: tuple[Op, State, State, list[Observation]] | None = None
        # the batch id the next operation's line names, when it takes a message from the
        # network (`batch_id`, docs/LOG.md): it is enabled only when the model's message
        # is that batch's (R20 takes a timed-out batch out of the network, and a new
        # flush's batch replaces a delivered one: a stale batch is not there); None: any
        self.message: int | None = None
        self._lanes = [
            (sender, index)
            for sender in config.senders
            for index in range(sender.dispatcher_threads)
        ]

    def apply(self, op: Op) -> list[Observation]:
        before = self.state.time
        prepared = self.prepared
        if prepared is not None and prepared[0] is op and prepared[1] is self.state:
            self.state, observations = prepared[2], list(prepared[3])
        elif (
            (message := self.message) is not None
            and type(op) in NETWORK_OPS
            and message_batch(self.state, op) != message  # type: ignore[arg-type]
        ):
            observations = [{"kind": "skipped", "op": op.op}]
        else:
            self.state, observations = driven_step(self.config, self.state, op)
        if prepared is not None:
            self.prepared = None
        if self.message is not None:
            self.message = None
        now = self.state.time
        self.late = []
        kind = type(op)
        if (kind is Flush or kind is Timeout) and observations[0]["kind"] != "skipped":
            assert isinstance(op, (Flush, Timeout))
            key = (op.op, op.sender, op.dispatcher)
            self.late.append((key, now - self.due.pop(key, now)))
        # A step at `now` changes the state then; a tick changes only the time, so what
        # it finds allowed became allowed at its threshold, at the earliest right after
        # the previous step.
        changed_at = before if kind is Tick else now
        state, due = self.state, self.due
        for sender, index in self._lanes:
            for what, when in (
                ("flush", flush_due(state, sender, index)),
                ("timeout", timeout_due(state, sender, index)),
            ):
                key = (what, sender.id, index)
                if when is None:
                    due.pop(key, None)
                elif when > now:
                    due[key] = when  # not allowed yet: due then, unless the state changes
                elif (known := due.get(key)) is None or known > now:
                    due[key] = max(when, changed_at)  # allowed since this step, or its tick
        return observations
