"""Engines of an impl whose dead letters (`--dlq-dir`, R24) or persistent queues
(`--queue-dir`, R36) live in durable stores."""

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


def store_engine_class(
    spec: str | None, search: Iterable[str] = (), argument: str = "dlq_dir"
) -> Any:
    """The impl class of `--impl` (default the project's), which must take `argument`
    (`dlq_dir` for `--dlq-dir`, `queue_dir` for `--queue-dir`)."""
    if spec is None or spec == DEFAULT_IMPL:
        from impl import Engine

        return Engine
    engine_class = load_impl(spec, search)
    if (
        not isinstance(engine_class, type)
        or argument not in inspect.signature(engine_class).parameters
    ):
        flag = "--" + argument.replace("_", "-")
        raise WanconformError(f"{flag}: the impl {spec} takes no {argument} argument")
    return engine_class


OPENED: list[Path] = []
"""The store directories this process has used (`store_root`): an interrupted command
says they keep what the run put in them (`wanconform.cli.interrupted`)."""


def store_root(flag: str, directory: str | Path) -> Path:
    """The directory of `--dlq-dir` or `--queue-dir` (each trace's store goes into
    DIR/TRACE/): made, with its parents, if it is missing; one line if it cannot be
    used."""
    path = Path(directory)
    if not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise WanconformError(
                f"{flag}: {directory}: cannot create it ({exc.strerror or exc})"
            ) from None
    if not path.is_dir():
        raise WanconformError(f"{flag}: {directory}: exists and is not a directory")
    if path not in OPENED:
        OPENED.append(path)
    return path


def refuse_earlier_store(flag: str, directory: str | Path, trace_id: str) -> Path:
    """The store folder of trace `trace_id` under `--dlq-dir`/`--queue-dir` DIR; one line
    if an earlier run left something there (the run would empty it: its records lost)."""
    folder = Path(directory) / trace_id
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise WanconformError(
            f"{flag}: {folder} exists and is not empty (a store of an earlier run); "
            "choose another DIR"
        )
    return folder


class StoreEngines:
    """Engines of an impl with their dead letters in a durable store (`folder`) and/or
    their persistent queues in another (`queues`): the first in the trace's own
    directories; any later one (the lockstep replays the trace from its start to locate a
    state-only difference, P10 runs it again) in fresh ones beside them. `fresh`: the
    directories are emptied first (a Spark task retried runs the trace again)."""

    def __init__(
        self,
        engine_class: Any,
        folder: Path | None,
        fresh: bool = False,
        queues: Path | None = None,
    ) -> None:
        self.engine_class = engine_class
        self.folder = folder
        self.queues = queues
        self.fresh = fresh
        self.made = 0
        self.scratch: list[Path] = []  # the later engines' directories (`close`)

    def _place(self, folder: Path) -> str:
        if self.made > 1:
            folder = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.replay-"))
            self.scratch.append(folder)
        elif self.fresh and folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(exist_ok=True)
        return str(folder)

    def __call__(self, config: Config) -> Any:
        self.made += 1
        arguments: dict[str, str] = {}
        if self.folder is not None:
            arguments["dlq_dir"] = self._place(self.folder)
        if self.queues is not None:
            arguments["queue_dir"] = self._place(self.queues)
        return self.engine_class(config, **arguments)

    def close(self) -> None:
        """Remove the later engines' directories (once the run is over: they held
        re-runs, not its result), so DIR holds each trace's own store alone."""
        for folder in self.scratch:
            shutil.rmtree(folder, ignore_errors=True)
        self.scratch.clear()
