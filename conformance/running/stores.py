"""Engines of an impl whose dead letters live in a durable store (`--dlq-dir`, R24)."""

from __future__ import annotations

import inspect
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from traces.config import Config
from traces.engine import DEFAULT_IMPL, load_impl
from traces.errors import WanconformError


def store_engine_class(spec: str | None, search: Iterable[str] = ()) -> Any:
    """The impl class of `--impl` (default the project's), which must take `dlq_dir`."""
    if spec is None or spec == DEFAULT_IMPL:
        from impl import Engine

        return Engine
    engine_class = load_impl(spec, search)
    if (
        not isinstance(engine_class, type)
        or "dlq_dir" not in inspect.signature(engine_class).parameters
    ):
        raise WanconformError(f"--dlq-dir: the impl {spec} takes no dlq_dir argument")
    return engine_class


class StoreEngines:
    """Engines of an impl with their dead letters in a durable store: the first in the
    trace's own directory `folder`; any later one (the lockstep replays the trace from its
    start to locate a state-only difference) in a fresh one beside it. `fresh`: the
    directory is emptied first (a Spark task retried runs the trace again)."""

    def __init__(self, engine_class: Any, folder: Path, fresh: bool = False) -> None:
        self.engine_class = engine_class
        self.folder = folder
        self.fresh = fresh
        self.made = 0

    def __call__(self, config: Config) -> Any:
        self.made += 1
        folder = self.folder
        if self.made > 1:
            folder = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.replay-"))
        elif self.fresh and folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(exist_ok=True)
        return self.engine_class(config, dlq_dir=str(folder))
