"""The surface every engine offers, so the CLI and the harness can swap them (STYLE 4).

    engine = Engine(config)              # initial state of SPEC §2's configuration
    observations = engine.apply(op)      # one step (SPEC §3); list of §10 observations
    state = engine.observe()             # SPEC §10 observable state, a JSON object

`model.Engine` wraps the pure `model.step`; `impl.Engine` is the fast mutable engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from traces.config import Config
from traces.observations import Observation
from traces.ops import Op

ENGINE_NAMES = ("model", "impl")


class Engine(Protocol):
    def apply(self, op: Op) -> list[Observation]: ...

    def observe(self) -> dict[str, Any]: ...


EngineFactory = Callable[[Config], Engine]
"""What builds an engine on a configuration: an engine class, or `--impl`'s choice."""


def make_engine(name: str, config: Config) -> Engine:
    """Build engine `name` ("model" or "impl") on `config`."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}")
    module = importlib.import_module(name)
    engine: Engine = module.Engine(config)
    return engine
