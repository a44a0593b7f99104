"""`--impl module:Class`: check any engine with the impl's surface (`wanconform.engine`).

`load_impl("conformance.planted_bugs:HighWaterMark")` returns a factory `Config -> Engine`;
a bad spec is one line naming what is wrong (module not found, no such class, not an
engine). The one place a user's engine is loaded: `replay`, `check`, `campaign`, `shrink`
and `report` all take `--impl`.
"""

from __future__ import annotations

import importlib

from wanconform.engine import EngineFactory, make_engine
from wanconform.errors import WanconformError

DEFAULT_IMPL = "impl:Engine"


def load_impl(spec: str | None) -> EngineFactory:
    """The engine class named by `module:Class` (None: the project's impl)."""
    if spec is None or spec == DEFAULT_IMPL:
        return lambda config: make_engine("impl", config)
    module_name, colon, class_name = spec.partition(":")
    if not colon or not module_name or not class_name:
        raise WanconformError(f"--impl {spec}: expected module:Class, e.g. {DEFAULT_IMPL}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise WanconformError(f"--impl {spec}: cannot import module {module_name}: {exc}") from None
    engine = getattr(module, class_name, None)
    if engine is None:
        raise WanconformError(f"--impl {spec}: module {module_name} has no {class_name}")
    if not isinstance(engine, type) or not all(
        callable(getattr(engine, method, None)) for method in ("apply", "observe")
    ):
        raise WanconformError(
            f"--impl {spec}: {class_name} is not an engine (a class with apply(op) and observe())"
        )
    factory: EngineFactory = engine
    return factory
