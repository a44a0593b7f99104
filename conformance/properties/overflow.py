"""P10, overflow transparency (SPEC §16.7, R35), checked as a metamorphic relation.

A trace whose configuration limits some sender's queue memory
(`maximum_queue_memory_bytes` below Geode's default of 100 MiB) is run a second time, by
a second engine of the same kind, with every such limit at the default, so that nothing
overflows (or far less). The two runs must observe the same things at every step, and
end in states that differ only in R35's accounting: each dispatcher's `on_disk` and
`memory_bytes`, the senders' `entries_overflowed` and `bytes_overflowed`.

Cost: a second engine follows the run, one `apply` per operation, and the two final
states are compared once; nothing else. So a run whose queues are limited costs the
engine's time twice (`wanconform bench` measures it); a run with default limits costs
nothing more (P10 is then "not applicable"). The first difference ends the comparison.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from traces.config import DEFAULT_QUEUE_MEMORY, Config
from traces.observations import Observation
from traces.ops import Op

OVERFLOW_GAUGES = ("entries_overflowed", "bytes_overflowed")
DISPATCHER_GAUGES = ("on_disk", "memory_bytes")


def unlimited(config: Config) -> Config | None:
    """The configuration with every queue memory limit below the default raised to it
    (None when no sender has one: the second run would be the first again)."""
    limited = [s for s in config.senders if s.maximum_queue_memory_bytes < DEFAULT_QUEUE_MEMORY]
    if not limited:
        return None
    senders = tuple(
        replace(s, maximum_queue_memory_bytes=DEFAULT_QUEUE_MEMORY) if s in limited else s
        for s in config.senders
    )
    return Config(config.sites, senders, config.receivers, config.regions)


def without_overflow(state: dict[str, Any]) -> dict[str, Any]:
    """The observable state less R35's accounting (a copy; P10 compares the rest)."""
    copy: dict[str, Any] = json.loads(json.dumps(state))
    for sender in copy["senders"].values():
        for gauge in OVERFLOW_GAUGES:
            sender["stats"].pop(gauge, None)
        for dispatcher in sender["dispatchers"]:
            for gauge in DISPATCHER_GAUGES:
                dispatcher.pop(gauge, None)
    return copy


class OverflowTwin:
    """The second run of P10: `step` after every operation of the first, `finish` at
    its end. Each returns a message when the runs differ (once: the first difference)."""

    def __init__(self, config: Config, factory: Callable[[Config], Any]) -> None:
        twin = unlimited(config)
        assert twin is not None, "P10 needs a sender whose queue memory is limited"
        self.limits = ", ".join(
            f"{s.id} {s.maximum_queue_memory_bytes:,}"
            for s in config.senders
            if s.maximum_queue_memory_bytes < DEFAULT_QUEUE_MEMORY
        )
        self.engine = factory(twin)
        self.differed = False
        self.steps = 0

    def _said(self, what: str) -> str:
        self.differed = True
        return (
            f"{what} with the queue memory limits of the trace ({self.limits} bytes) and "
            f"with the default ({DEFAULT_QUEUE_MEMORY:,})"
        )

    def step(self, op: Op, observations: list[Observation]) -> str | None:
        if self.differed:
            return None
        self.steps += 1
        theirs = self.engine.apply(op)
        if theirs == observations:
            return None
        return self._said(f"the observations differ ({observations} against {theirs})")

    def finish(self, state: dict[str, Any]) -> str | None:
        if self.differed or not self.steps:
            return None
        mine, theirs = without_overflow(state), without_overflow(self.engine.observe())
        if mine == theirs:
            return None
        return self._said("the final states differ beyond on_disk and memory_bytes")
