"""One long trace (or log) checked in parallel segments, with the result of a sequential run.

1. **Fast pass.** One engine runs the whole trace once, as `replay --engine impl` would
   (the impl; for a log, `validate`, the model), with the property checker P2-P12 on its
   observations. Every S operations it writes a *cut*: the engine's checkpoint
   (docs/CHECKPOINT.md), the checker's state, the counts so far and where the next
   operation's line starts in the file.
2. **Segments, in parallel** (Spark: local by default, `--master spark://...`), each
   started as soon as the fast pass has written its end checkpoint, so the segments run
   while the fast pass goes on (`SegmentRunner`). Segment i
   builds the model and the impl from checkpoint i (a log: the log read from the cut's
   byte offset) and steps them in lockstep (P1, `conformance.running.lockstep`) over its S
   operations, exactly as the sequential check does: observations after every operation,
   the observable state on the lockstep's schedule and at the end. Then both engines'
   *full* state must be checkpoint i+1, byte for byte.
3. **Merge.** If every segment agrees, the chain of checkpoints is the sequential run's:
   by induction the model's state at cut i is checkpoint i (the model restored from a
   checkpoint behaves as the model that wrote it, tests/test_checkpoint.py), so every
   segment saw the observations of the sequential lockstep, and the result is the fast
   pass's (P2-P12 were checked on observations equal to the model's at every step) with
   P1 held. If segment j is the first with a divergence or an end state that is not the
   next checkpoint, the run goes on *sequentially* from cut j, where both sides are still
   the sequential run's, with the checker as it was there: the same lockstep, the same
   divergence (operation, file line, both sides), then the model alone to the end for
   P2-P12, as `replay --engine both` does. That costs one sequential run from cut j, and
   only for a trace that fails.

A trace file's segments read their lines from byte offsets, a Parquet trace set's from
their `seq` range (so on a cluster of several machines the trace must be where every
worker reads it, as a trace set for `check`); a segment's two checkpoints travel with its
task. A user's `--impl` needs `from_checkpoint` and `checkpoint` (else the check is
sequential).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from conformance.properties.checker import PropertyChecker
from conformance.running.lockstep import Divergence, ObservationDigest
from conformance.running.run import RunResult, TraceRun, p1_verdict
from traces.checkpoint import CheckpointError, checkpoint_text
from traces.config import Config
from traces.engine import (
    DEFAULT_IMPL,
    ENGINE_FAILURES,
    Engine,
    EngineFactory,
    load_impl,
    raised,
    tune_gc,
)
from traces.errors import WanconformError
from traces.ops import Op
from traces.text import plural
from traces.tracefile import Reader, fast_path, numbered_lines, where

SEGMENT_OPS = 1_000_000
"""Operations per segment by default; a trace is split when it has at least two."""


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a segment starts: operation `index` (0-based) is on file line `line`, at
    byte `offset`; the checkpoint, checker and counts are in files of the run's folder.
    `observed`: the digest of the fast pass's observations of the operations since the
    previous cut (`ObservationDigest`), which the segment ending here must repeat."""

    index: int
    line: int
    offset: int
    observed: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """What every segment needs (sent to the executors)."""

    name: str  # the trace file, as given (messages: "t.jsonl:9")
    path: str  # its absolute path, read by the executors
    config: Config
    folder: str  # the cuts' files
    impl_spec: str | None  # None: the project's impl; "log": the file is a log
    cuts: tuple[Cut, ...]  # cut i starts segment i; the last one is the end
    operations: int
    trace_set: bool = False  # `path` is a Parquet trace set and `name` its trace's id


@dataclass(frozen=True, slots=True)
class SegmentResult:
    index: int
    divergence: Divergence | None
    end_matches: bool  # both engines' full state is the next checkpoint
    problem: str  # "" or why the end does not match


def trace_ops(
    name: str, path: str, config: Config, offset: int, first: int
) -> Iterator[tuple[int, int, Op]]:
    """(line, offset, operation) of a validated trace from a cut, parsed as `open_trace`
    parses them (the fast validator, else the precise one); blank lines are skipped."""
    reader = Reader(name)
    reader.config = config
    fast = fast_path(config)
    for number, position, line in numbered_lines(path, offset, first):
        if number == 1:
            continue  # the configuration
        op = fast(line)
        if op is None:
            op = reader.precise(number, line)
            if op is None:
                continue
        yield number, position, op


def _checkpoint_file(folder: str, index: int) -> Path:
    return Path(folder) / f"cut-{index}.json"


def impl_class(spec: str | None) -> Any:
    """The impl's class (it must offer `from_checkpoint`)."""
    if spec is None or spec == DEFAULT_IMPL:
        import impl

        return impl.Engine
    return load_impl(spec)


def can_split(impl_spec: str | None) -> bool:
    """Whether this impl can start from a checkpoint (a user's engine may not)."""
    engine = impl_class(impl_spec)
    return callable(getattr(engine, "from_checkpoint", None)) and callable(
        getattr(engine, "checkpoint", None)
    )


def _from(engine_class: Any, config: Config, doc: dict[str, Any], name: str) -> EngineFactory:
    return lambda cfg: engine_class.from_checkpoint(config, doc, name)


def _engines(plan: Plan, cut: Cut, text: str | None = None) -> tuple[EngineFactory, EngineFactory]:
    """The model's and the impl's factories at a cut (`text`: its checkpoint, if sent);
    at the trace's start, new engines, exactly as a sequential run builds them."""
    import model

    path = _checkpoint_file(plan.folder, cut.index)
    doc = _read_json(path) if text is None else json.loads(text)
    model_factory: EngineFactory = _from(model.Engine, plan.config, doc, str(path))
    impl_factory: EngineFactory | None = None
    if cut.index == 0:
        model_factory = model.Engine
        impl_factory = None if plan.impl_spec == "log" else impl_class(plan.impl_spec)
    if plan.impl_spec == "log":
        from traces.logfile import LoggedEngine, LogSource

        source = LogSource(plan.path, plan.config, plan.operations, 0)

        def logged(cfg: Config) -> Engine:
            return LoggedEngine(cfg, (e for _, e in source.entries_from(cut.offset, cut.line)))

        return model_factory, logged
    return model_factory, impl_factory or _from(
        impl_class(plan.impl_spec), plan.config, doc, str(path)
    )


def _read_json(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _ops_from(plan: Plan, cut: Cut, stop: int) -> Iterator[tuple[str, Op]]:
    """The operations of segment `cut` up to operation `stop` (exclusive), named."""
    count = stop - cut.index
    if count <= 0:
        return
    end = next((c.line for c in plan.cuts if c.index == stop), None)
    for number, _, op in _lines(plan, cut, end):
        yield where(plan.name, number), op
        count -= 1
        if count == 0:
            return


def _lines(plan: Plan, cut: Cut, end: int | None = None) -> Iterator[tuple[int, int, Op]]:
    """(line, offset, operation) of the trace or log from a cut (to line `end`, if known)."""
    if plan.trace_set:
        return set_ops(plan.path, plan.name, plan.config, cut, end)
    return file_ops(plan.name, plan.path, plan.config, plan.impl_spec == "log", cut)


def set_ops(
    path: str, trace_id: str, config: Config, cut: Cut, end: int | None = None
) -> Iterator[tuple[int, int, Op]]:
    """(seq, seq, operation) of one trace of a Parquet trace set from a cut (its seq is
    the line number of the same operation in the converted JSON Lines, SPEC §12), up to
    seq `end` if given: only those rows are read."""
    from traces.parquet import op_parser, open_trace_set

    parse = op_parser(trace_id, config)
    for seq, text in open_trace_set(path).ops_of(trace_id, cut.line, end):
        yield seq, seq, parse(seq, text)


def file_ops(
    name: str, path: str, config: Config, log: bool, cut: Cut
) -> Iterator[tuple[int, int, Op]]:
    """(line, offset, operation) of a validated trace or log (`log`) from a cut."""
    if not log:
        return trace_ops(name, path, config, cut.offset, cut.line)
    from traces.logfile import LogSource

    source = LogSource(path, config, 0, 0)
    return ((e.line, offset, e.op) for offset, e in source.entries_from(cut.offset, cut.line))


def against(impl_spec: str | None) -> str:
    """What the model ran against, in verdicts and results: the impl's spec or the log."""
    return "the log" if impl_spec == "log" else impl_spec or DEFAULT_IMPL


def checkpoint_texts(plan: Plan, index: int) -> tuple[str, str]:
    """The checkpoints segment `index` starts and ends at, as written (sent with the
    segment's task, so that executors on other machines need not see the run's folder)."""
    start, end = plan.cuts[index], plan.cuts[index + 1]
    return tuple(  # type: ignore[return-value]
        _checkpoint_file(plan.folder, cut.index).read_text(encoding="utf-8") for cut in (start, end)
    )


def run_segment(plan: Plan, index: int, texts: tuple[str, str] | None = None) -> SegmentResult:
    """Segment `index` in lockstep from its checkpoint; does its end match the next?
    `texts`: its start and end checkpoints (`checkpoint_texts`), else read here."""
    tune_gc()  # in a Spark task's Python worker
    start, end = plan.cuts[index], plan.cuts[index + 1]
    model_factory, impl_factory = _engines(plan, start, None if texts is None else texts[0])
    try:  # builds the engines from the start checkpoint
        run = TraceRun(
            plan.name,
            plan.config,
            engine="both",
            impl=impl_factory,
            impl_spec=against(plan.impl_spec),
            properties=False,
            replay=lambda: (op for _, op in _ops_from(plan, start, end.index)),
            model=model_factory,
            offset=start.index,
            stop_at_failure=True,
            coverage=False,  # the fast pass counted it
        )
    except CheckpointError as exc:  # the impl's state there is not one the model can hold
        return SegmentResult(
            index,
            None,
            False,
            f"the checkpoint it starts from, the impl's state after {start.index:,} "
            f"operations, cannot be restored ({str(exc).split(': ', 1)[-1]})",
        )
    observed = ObservationDigest()
    for name, op in _ops_from(plan, start, end.index):
        observed.add(run.step(name, op))
        if run.stopped:
            break
    result = run.finish()
    if result.divergence is not None:
        return SegmentResult(index, result.divergence, False, "")
    assert run.lockstep is not None
    if observed.hexdigest() != end.observed:
        return SegmentResult(
            index,
            None,
            False,
            "the impl restored from a checkpoint did not repeat its run (its observations "
            "differ from the fast pass's)",
        )
    saved = (
        _read_json(_checkpoint_file(plan.folder, end.index))
        if texts is None
        else json.loads(texts[1])
    )
    del saved["position"]  # where in the trace: not state
    expected = checkpoint_text(saved)
    model_text = checkpoint_text(run.lockstep.model.checkpoint())  # type: ignore[attr-defined]
    if model_text != expected:
        return SegmentResult(index, None, False, "the model's full state differs")
    if plan.impl_spec != "log":
        impl_text = checkpoint_text(run.lockstep.impl.checkpoint())  # type: ignore[attr-defined]
        if impl_text != expected:
            return SegmentResult(
                index, None, False, "the impl restored from a checkpoint did not repeat its run"
            )
    return SegmentResult(index, None, True, "")


class SegmentRunner(Protocol):
    """Runs segments while the fast pass goes on (`check_in_segments`)."""

    def submit(self, plan: Plan, index: int) -> None:
        """Start segment `index`: its start and end cuts are in `plan.cuts`."""

    def finished(self) -> int:
        """How many submitted segments have finished."""

    def results(self, tick: Callable[[], None]) -> list[SegmentResult]:
        """Every submitted segment's result, in any order, once all have finished;
        `tick` is called about twice a second while they run (progress)."""


class LocalRunner:
    """Every segment in this process, each as it is submitted (tests, small runs)."""

    def __init__(self) -> None:
        self._results: list[SegmentResult] = []

    def submit(self, plan: Plan, index: int) -> None:
        self._results.append(run_segment(plan, index))

    def finished(self) -> int:
        return len(self._results)

    def results(self, tick: Callable[[], None]) -> list[SegmentResult]:
        tick()
        return list(self._results)


class EngineFailed(WanconformError):
    """The fast pass's engine, a user's `--impl`, raised or returned what is not an
    engine's answer (`conformance.running.run.Alone`), in a step or its checkpoint: a
    divergence, which `replay` finds by running the trace whole (P1)."""


def fast_pass(
    name: str,
    config: Config,
    impl_spec: str | None,
    every: int,
    folder: str,
    properties: bool,
    progress: Callable[[int], None] | None = None,
    trace_set: str | None = None,
    on_cut: Callable[[tuple[Cut, ...]], None] | None = None,
) -> tuple[RunResult, tuple[Cut, ...]]:
    """Run the whole trace once on the fast engine (the model for a log), writing a cut
    every `every` operations; its result and the cuts (the last is the trace's end).
    `trace_set`: the Parquet trace set holding trace `name` (else `name` is a file).
    `on_cut` hears the cuts so far each time one is written (its files complete)."""
    import model

    path = os.path.abspath(trace_set or name)
    is_log = impl_spec == "log"
    engine = "model" if is_log else "impl"
    factory = None if is_log else load_impl(impl_spec) if impl_spec else None
    spec = DEFAULT_IMPL if is_log or not impl_spec else impl_spec
    # P10's twin is a second model, as in the sequential `--engine both` run (and `validate`)
    # whose verdicts this run's are; a second impl would judge P10 by the impl's run
    # without limits. It travels with each cut (pickled), which a model can do.
    checker = PropertyChecker(config, overflow=model.Engine) if properties else None
    run = TraceRun(
        name,
        config,
        engine=engine,
        impl=factory,
        impl_spec=spec,
        properties=properties,
        checker=checker,
    )
    cuts: list[Cut] = []
    observed = ObservationDigest()

    def cut(index: int, line: int, offset: int) -> None:
        nonlocal observed
        try:
            doc = run.engine.checkpoint()  # type: ignore[attr-defined]
            doc["position"] = {"operations": index, "line": line, "offset": offset}
            text = checkpoint_text(doc)
        except ENGINE_FAILURES as exc:  # a user's engine's checkpoint, or its state, failed
            if spec == DEFAULT_IMPL:
                raise
            raise EngineFailed(
                f"--impl {spec}: at {where(name, line)}, the engine's checkpoint {raised(exc)}"
            ) from None
        _checkpoint_file(folder, index).write_text(text, encoding="utf-8")
        state = (run.checker, run.skipped, run.events, dict(run.coverage.counts))
        (Path(folder) / f"cut-{index}.run").write_bytes(pickle.dumps(state))
        cuts.append(Cut(index, line, offset, observed.hexdigest()))
        observed = ObservationDigest()
        if on_cut is not None:
            on_cut(tuple(cuts))

    start = Cut(0, 1, 0)
    ops = (
        set_ops(path, name, config, start)
        if trace_set
        else file_ops(name, path, config, is_log, start)
    )
    index = 0
    last = 1
    try:
        for number, offset, op in ops:
            if index % every == 0:
                cut(index, number, offset)
            observed.add(run.step(where(name, number), op))
            index += 1
            last = number
            if progress is not None and index % 65_536 == 0:
                progress(index)
        end = last + 1 if trace_set else os.path.getsize(path)
        cut(index, last + 1, end)  # the end: no operation follows
        if progress is not None:
            progress(index)
        return run.finish(where(name, last)), tuple(cuts)
    except WanconformError as exc:
        if spec == DEFAULT_IMPL:  # not a user's engine: its error is the error
            raise
        raise EngineFailed(str(exc)) from None


def check_in_segments(
    name: str,
    config: Config,
    impl_spec: str | None,
    every: int,
    properties: bool,
    runner: SegmentRunner,
    progress: Callable[[int, int], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
    trace_set: str | None = None,
) -> RunResult:
    """The check of one trace in segments (see module): `runner` runs each segment as
    soon as the fast pass has written its end cut. `progress(operations, segments)`
    hears the fast pass's operations and the segments finished. `trace_set`: the Parquet
    trace set whose trace `name` is checked (else `name` is a file)."""
    folder = tempfile.mkdtemp(prefix="wanconform-segments-")
    try:
        path = os.path.abspath(trace_set or name)
        base = Plan(name, path, config, folder, impl_spec, (), 0, trace_set is not None)

        def ready(cuts: tuple[Cut, ...]) -> None:
            if len(cuts) >= 2:  # segment len(cuts) - 2 ends at the cut just written
                runner.submit(replace(base, cuts=cuts, operations=cuts[-1].index), len(cuts) - 2)

        def ticked(operations: int) -> None:
            if progress is not None:
                progress(operations, runner.finished())

        fast, cuts = fast_pass(
            name, config, impl_spec, every, folder, properties, ticked, trace_set, ready
        )
        plan = replace(base, cuts=cuts, operations=fast.operations)
        say(
            f"fast pass done: {plural(len(cuts) - 1, 'segment')} of up to "
            f"{plural(every, 'operation')}"
        )
        results = sorted(runner.results(lambda: ticked(fast.operations)), key=lambda r: r.index)
        first = next((r for r in results if r.divergence is not None or not r.end_matches), None)
        other = against(impl_spec)
        if first is None:
            verdicts = (p1_verdict("both", None, other), *fast.verdicts[1:])
            return replace(fast, engine="both", impl=other, verdicts=verdicts)
        if first.problem:
            # The restored engines agreed with each other but not with the fast pass's
            # run: only a run from the trace's start repeats the sequential check.
            say(f"segment {first.index + 1}: {first.problem}; checking from the trace's start")
            return _sequential_from(plan, 0, properties, fast.seconds)
        return _sequential_from(plan, first.index, properties, fast.seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sequential_from(plan: Plan, index: int, properties: bool, seconds: float) -> RunResult:
    """The sequential check from cut `index` to the end (see module, 3.)."""
    start = plan.cuts[index]
    model_factory, impl_factory = _engines(plan, start)
    with open(Path(plan.folder) / f"cut-{start.index}.run", "rb") as file:
        checker, skipped, events, coverage = pickle.load(file)
    run = TraceRun(
        plan.name,
        plan.config,
        engine="both",
        impl=impl_factory,
        impl_spec=against(plan.impl_spec),
        properties=properties,
        replay=lambda: (op for _, op in _ops_from(plan, start, plan.operations)),
        model=model_factory,
        offset=start.index,
        checker=checker if properties else None,
    )
    run.skipped, run.events = skipped, events
    run.coverage.merge(coverage)
    last = start.line
    for name, op in _ops_from(plan, start, plan.operations):
        run.step(name, op)
        last = int(name.rsplit(":", 1)[1])
    # the run of the whole trace (the cut's counts are in it), not one started from a
    # checkpoint (`--from`, whose summary counts only the operations replayed)
    return replace(run.finish(where(plan.name, last)), offset=0)
