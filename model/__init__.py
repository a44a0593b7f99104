"""The reference model of the WAN gateway protocol (SPEC.md R1-R31, R35, R39): pure and
obviously correct.

    state = initial_state(config)
    state, observations = step(config, state, op)   # never mutates `state`
    observe(state)                                  # SPEC §10 observable state

Modules: client (R3, R9-R11), routing (R28, R29's routes), queues (R29-R31's dispatcher
queues, R35), sender (R12-R15, R18-R20, R24, R26, R30, R31), receiver (R16, R17, R22),
faults (R21 and the fault operations), settle (R25, R39), step (§3), observe (§10, §16.6).
The configuration rules R6-R8 are checked once, before any step, in traces/config.py;
R23 (which topologies are supported) is analysed in conformance/properties/topology.py.
`Engine` wraps the pure functions in the surface shared with `impl` (traces.engine).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from model.checkpoint import from_state_doc, to_state_doc
from model.observe import observe, observe_keys
from model.routing import bucket_of, dispatcher_of
from model.state import State
from model.step import enabled, initial_state, settle_step, step
from traces.checkpoint import check_fits, document
from traces.config import Config, SenderConfig
from traces.engine import settle_cap
from traces.observations import Observation
from traces.ops import Op, Settle

__all__ = ["Engine", "enabled", "initial_state", "observe", "step"]


class Engine:
    """The model behind the engine surface: holds the current immutable state."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.state: State = initial_state(config)
        self.settle_capped = False  # the last settle stopped at its cap (R25; P12)
        self.settle_cap = settle_cap()  # R25's 1,000,000, or --settle-cap's

    def apply(self, op: Op) -> list[Observation]:
        if type(op) is Settle:
            self.state, observations, self.settle_capped = settle_step(
                self.config, self.state, self.settle_cap
            )
            return observations
        self.state, observations = step(self.config, self.state, op)
        return observations

    def observe(self) -> dict[str, Any]:
        return observe(self.state)

    def observe_keys(self, keys: Iterable[str]) -> dict[str, Any]:
        """The observable state with only the entries of `keys` (traces/engine.py)."""
        return observe_keys(self.state, keys)

    def checkpoint(self) -> dict[str, Any]:
        """The full state as a checkpoint document (docs/CHECKPOINT.md)."""
        return document(self.config, to_state_doc(self.state))

    @classmethod
    def from_checkpoint(
        cls, config: Config, doc: dict[str, Any], where: str = "checkpoint"
    ) -> Engine:
        """An engine in the state of checkpoint `doc` (a `CheckpointError` if it does not
        fit `config`: `where` names the document in the message)."""
        engine = cls(config)

        def route(sender: SenderConfig, event: dict[str, Any]) -> int:  # R28, R29
            key = event["key"]
            return dispatcher_of(sender, key, event["thread"], bucket_of(config, sender.site, key))

        engine.state = from_state_doc(config, check_fits(config, doc, where, route))
        return engine
