"""Known bugs planted in copies of the impl, to prove that the harness has teeth.

Each class overrides one small decision of `impl.Engine` with a plausible mistake.
`tests/test_planted_bugs.py` asserts that the conformance machine finds every one
and shrinks it to a short trace that `replay --engine both` logic reproduces.
"""

from __future__ import annotations

from typing import Any

from impl import Engine
from impl.state import DispatcherState, Event, SenderState, SiteState, java_hash
from traces.observations import Observation


class HighWaterMark(Engine):
    """R16.1 as Geode does it: a plain high-water mark per origin (SPEC §13)."""

    def _is_duplicate(self, site: SiteState, event: Event) -> bool:
        memory = site.applied.get(event.origin)
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
