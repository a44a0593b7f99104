"""Shared fixtures for the hand-derived tests: run a trace through the reference model
(`run`), or through each engine in turn (`run_each`: model, then impl).

A trace is given as a configuration dict and operation dicts; it goes through the real
trace reader (`parse_trace_lines`), so every test also exercises §12 parsing.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from traces.tracefile import Trace, parse_trace_lines, read_trace

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"


@dataclass(frozen=True, slots=True)
class Run:
    """What one replay produced: the observations of each step, and the final state."""

    steps: list[list[dict[str, Any]]]
    state: dict[str, Any]

    @property
    def observations(self) -> list[dict[str, Any]]:
        return [obs for step in self.steps for obs in step]


ENGINES = ("model", "impl")


def replay(trace: Trace, engine_name: str = "model") -> Run:
    engine = importlib.import_module(engine_name).Engine(trace.config)
    steps = [engine.apply(op) for op in trace.ops]
    return Run(steps=steps, state=engine.observe())


def run_trace(
    config: dict[str, Any], ops: Sequence[dict[str, Any]], engine_name: str = "model"
) -> Run:
    lines = [json.dumps({"config": config})] + [json.dumps(op) for op in ops]
    return replay(parse_trace_lines(lines, "test.jsonl"), engine_name)


@pytest.fixture
def run() -> Callable[[dict[str, Any], Sequence[dict[str, Any]]], Run]:
    """`run(config, ops)` -> Run, through model.Engine."""
    return run_trace


@pytest.fixture(params=ENGINES)
def run_each(
    request: pytest.FixtureRequest,
) -> Callable[[dict[str, Any], Sequence[dict[str, Any]]], Run]:
    """`run_each(config, ops)` -> Run, through model.Engine and (a second test) impl.Engine:
    the same hand-derived expectations pin both engines."""
    engine_name: str = request.param
    return lambda config, ops: run_trace(config, ops, engine_name)


@pytest.fixture
def run_example() -> Callable[[str], Run]:
    """`run_example("lost_ack_resend")` -> Run of traces/examples/<name>.jsonl."""

    def _run(name: str) -> Run:
        return replay(read_trace(EXAMPLES / f"{name}.jsonl"))

    return _run


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of this test process (STYLE 7): 2 cores, no UI."""
    from conformance.spark.glue import session

    spark_session = session("local[2]", app="wanconform-tests")
    yield spark_session
    spark_session.stop()
