"""Engines for the report's tests (`--impl report_engines:...`): the model with one
mistake of SPEC v2.0 part 2 planted, so that a trace fails and its example is drawn."""

from __future__ import annotations

import copy
from typing import Any

from model import Engine
from traces.observations import Observation
from traces.ops import Op


class AckForgetsConflatedMembers(Engine):
    """R33: the ack of a batch removes its shipped members only (`acked.removed` leaves
    out the members conflated in the batch)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._kept_back: set[str] = set()

    def apply(self, op: Op) -> list[Observation]:
        out = super().apply(op)
        self._kept_back |= {o["event"] for o in out if o["kind"] == "conflated"}
        return [
            dict(o, removed=[e for e in o["removed"] if e not in self._kept_back])
            if o["kind"] == "acked"
            else o
            for o in out
        ]


class StopSaysRestart(Engine):
    """R37: the events a stop loses are reported as lost on restart."""

    def apply(self, op: Op) -> list[Observation]:
        return [
            dict(o, reason="restart") if o["kind"] == "queue_lost" else o for o in super().apply(op)
        ]


class ShipsConflatedMembers(Engine):
    """R33 in the observable state: the batch in flight says it shipped every member."""

    def observe(self) -> dict[str, Any]:
        state = copy.deepcopy(super().observe())
        for sender in state["senders"].values():
            for dispatcher in sender["dispatchers"]:
                flight = dispatcher["in_flight"]
                if flight is not None:
                    flight["shipped"] = list(flight["events"])
        return state
