"""The optimized, production-shaped engine of the same protocol; never imports model/.

`Engine(config)`, `engine.apply(op) -> observations`, `engine.observe() -> state`: the
surface of `wanconform.engine`, on one mutable state (see `impl/engine.py`).
"""

from __future__ import annotations

from impl.engine import Engine

__all__ = ["Engine"]
