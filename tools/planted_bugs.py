"""Known bugs planted in copies of the impl, to prove that the harness has teeth.

Each class overrides one small decision of `impl.Engine` with a plausible mistake.
`tests/test_planted_bugs.py` asserts that the conformance machine finds every one
and shrinks it to a short trace that `replay --engine both` logic reproduces.
"""

from __future__ import annotations

from typing import Any

from impl import Engine
from impl.applied import AppliedRanges
from impl.state import DispatcherState, Event, SenderState, java_hash
from traces.observations import Observation


class HighWaterMark(Engine):
    """R16.1 as Geode does it: a plain high-water mark per origin (SPEC §13)."""

    def _is_duplicate(self, memory: AppliedRanges | None, event: Event) -> bool:
        return memory is not None and event.seq <= memory.highest()


class ResendWithoutPossibleDuplicate(Engine):
    """R20: a timed-out batch is re-sent without the possible_duplicate flag."""

    def _mark_resend(self, event: Event) -> None:
        pass


class RemoveInvalidDelta(Engine):
    """R19: an invalid_delta event is removed from the queue instead of re-queued."""

    def _requeue_invalid_delta(
        self, sender: SenderState, dispatcher: DispatcherState, event: Event, out: list[Observation]
    ) -> bool:
        return False


class ForwardToKnownRecipients(Engine):
    """R22: forwarding ignores the recipients the event already went to."""

    def _should_forward(self, sender: SenderState, event: Event) -> bool:
        return sender.remote != event.origin


class LateBatchTime(Engine):
    """R15: off by one in the batch-time-interval check (> instead of >=)."""

    def _batch_time_due(self, sender: SenderState, head: Event) -> bool:
        return self._now - head.enqueued_at > sender.batch_time_interval_ms


class DeadLetterWithoutValue(Engine):
    """R24: a non-secure dead letter loses its value."""

    def _dead_letter_record(
        self, sender: SenderState, event: Event, exception: str
    ) -> dict[str, Any]:
        record = dict(super()._dead_letter_record(sender, event, exception))
        record.pop("value", None)
        return record


class RouteByKeyAndTime(Engine):
    """R29: the dispatcher depends on the clock as well as the key (or bucket), so one key's
    events go to two dispatchers and a later one can overtake an earlier one (P8)."""

    def _route(self, sender: SenderState, key: str, thread: int, bucket: int) -> int:
        count = sender.dispatcher_threads
        base = bucket if bucket >= 0 else abs(java_hash(key))
        return (base + self._now // 1000) % count


class DispatcherForgetsItsTimer(Engine):
    """R39: settle forgets the ack timeout of every dispatcher but the first, so a lost
    batch of another dispatcher stays in flight after settle (P12)."""

    def _dispatcher_due(self, sender: SenderState, dispatcher: DispatcherState) -> int:
        if dispatcher.index > 0 and dispatcher.in_flight is not None:
            return -1
        return super()._dispatcher_due(sender, dispatcher)


class MergeCreatesAndDestroys(Engine):
    """R33 before GEODE-7066: batch conflation merges creates and destroys too, so a
    create or destroy is kept back from the batch by a later write of its key (P9)."""

    def _conflatable(self, event: Event) -> bool:
        return True


class ConflateInFlight(Engine):
    """R32 as Geode's serial code does it, against its docs: queue conflation takes an
    update that is in the batch in flight (the batch still ships it, and its ack removes
    it with the others) (P9)."""

    def _in_flight(self, dispatcher: DispatcherState, event: Event) -> bool:
        return False

    def _remove_queued(
        self, sender: SenderState, dispatcher: DispatcherState, event: Event
    ) -> None:
        in_flight = dispatcher.in_flight
        if in_flight is None or event not in in_flight.events:
            super()._remove_queued(sender, dispatcher, event)


class RestartForgetsPossibleDuplicate(Engine):
    """R36: a persistent queue read back after a restart loses the possible-duplicate
    flag of the events that were in flight (P11)."""

    def _recovered(
        self, sender: SenderState, dispatcher: DispatcherState, events: list[Event]
    ) -> list[Event]:
        for event in events:
            event.possible_duplicate = False
        return events


class StoppedSenderQueues(Engine):
    """R37 before GEODE-4624's statistic: a stopped sender queues events anyway (P2)."""

    def _queues(self, sender: SenderState) -> bool:
        return True


class OverflowDelaysFlush(Engine):
    """R35: R15's full-batch trigger counts only the events held in memory, as if an
    overflowed event were not in the queue, so overflow delays delivery (P10)."""

    def _batch_full(self, sender: SenderState, dispatcher: DispatcherState, waiting: int) -> bool:
        return waiting - dispatcher.on_disk >= sender.batch_size


PLANTED_BUGS: tuple[type[Engine], ...] = (
    HighWaterMark,
    ResendWithoutPossibleDuplicate,
    RemoveInvalidDelta,
    ForwardToKnownRecipients,
    LateBatchTime,
    DeadLetterWithoutValue,
)
"""Bugs that any configuration can show (v1.2's)."""

DISPATCHER_BUGS: tuple[type[Engine], ...] = (RouteByKeyAndTime, DispatcherForgetsItsTimer)
"""Bugs only a sender with several dispatchers shows (v2.0, R29, R39)."""

LIFECYCLE_BUGS: tuple[type[Engine], ...] = (
    MergeCreatesAndDestroys,
    ConflateInFlight,
    RestartForgetsPossibleDuplicate,
    StoppedSenderQueues,
    OverflowDelaysFlush,
)
"""Bugs of conflation, overflow, persistence and the sender's lifecycle (v2.0, R32-R37):
the `lifecycle` profile shows them."""
