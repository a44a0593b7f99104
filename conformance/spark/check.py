"""Checking traces at scale: each trace run in lockstep (P1) with P2-P12, one result row.

`check_batches` is the function Spark runs (`conformance.spark.glue`), tested without Spark:
Arrow record batches of `CHECK_INPUT_SCHEMA` in, sorted by (trace id, seq) with each
trace's configuration row first; `RESULTS_SCHEMA` rows out (`conformance.spark.results`), one
per trace. It asserts that order: Spark gives no order inside a group, so the glue sorts
within partitions and this function refuses anything else. Each trace streams through
one `conformance.running.run.TraceRun`: memory is bounded by the engines' state, never by the
trace's length. A malformed row becomes an `error` row (the driver then reports the
first one and writes no results).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from conformance.running.run import TraceRun, run_trace
from conformance.running.stores import StoreEngines, store_engine_class
from conformance.search.examples import SHRINK_BUDGET, Example, explain_groups
from conformance.spark.results import RESULTS_SCHEMA, result_row
from conformance.spark.segments import (
    Cut,
    EngineFailed,
    SegmentRunner,
    check_in_segments,
    set_ops,
)
from traces.config import Config
from traces.engine import DEFAULT_IMPL, EngineFactory, load_impl, tune_gc
from traces.errors import TraceError, WanconformError
from traces.ops import Op
from traces.parquet import (
    FIRST_OP_SEQ,
    TraceInfo,
    null_key_problem,
    op_parser,
    parse_config_cell,
    seq_problem,
)
from traces.tracefile import where

ROW_SCHEMA = RESULTS_SCHEMA.append(pa.field("error", pa.string()))
"""What `check_batches` yields: a result row, or an error row (only `trace_id`, `error`)."""

CHECK_INPUT_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string()),
        pa.field("seq", pa.int64()),  # 1 for the configuration row
        pa.field("kind", pa.string()),  # "config" or "op"
        pa.field("json", pa.string()),  # the configuration or the operation
        pa.field("profile", pa.string()),  # configuration rows only
        pa.field("seed", pa.int64()),  # configuration rows only
        pa.field("operations", pa.int64()),  # configuration rows only
    ]
)


def check_trace(
    trace_id: str,
    config: Config,
    ops: Iterable[tuple[int, Op]],
    impl_factory: EngineFactory | None = None,
    profile: str | None = None,
    seed: int | None = None,
    impl_spec: str = DEFAULT_IMPL,
    replay: Callable[[], Iterable[Op]] | None = None,
) -> dict[str, Any]:
    """Check one trace from a stream of (line, op); its result row. `replay`: its
    operations read again from the start (else the lockstep keeps them in memory)."""
    run = TraceRun(trace_id, config, impl=impl_factory, impl_spec=impl_spec, replay=replay)
    last = 1
    for last, op in ops:
        run.step(where(trace_id, last), op)
    return result_row(run.finish(where(trace_id, last)), trace_id, profile, seed)


@dataclass(frozen=True, slots=True)
class LocalTrace:
    """A trace at hand in this process: its name, configuration, (line, op)s, profile."""

    name: str
    config: Config
    ops: list[tuple[int, Op]]
    profile: str = "traces"


def check_local(
    traces: Sequence[LocalTrace],
    impl_spec: str = DEFAULT_IMPL,
    impl_factory: EngineFactory | None = None,
    progress: Callable[[str], None] | None = None,
    shrink_budget: float | None = SHRINK_BUDGET,
    counted: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Example], dict[str, str]]:
    """Check traces held in this process, as `wanconform check` checks a trace set: the
    result rows, the examples of the largest failure groups (by signature) and, for a
    group without one, why. Each trace is run once; the examples shrink the kept ops.
    `counted` is told, after each operation run, how many of all the traces' operations
    have been run (a progress line: a long trace takes a while)."""
    factory = impl_factory or load_impl(impl_spec)
    rows = []
    before = 0  # the operations of the traces run before this one
    for trace in traces:
        ops = trace.ops
        steps: Iterable[tuple[str, Op]] = ((where(trace.name, line), op) for line, op in ops)
        if counted is not None:
            steps = _counting(steps, before, counted)
        result = run_trace(
            trace.name,
            trace.config,
            steps,
            impl=factory,
            impl_spec=impl_spec,
            replay=lambda ops=ops: (op for _, op in ops),
        )
        rows.append(result_row(result, profile=trace.profile))
        before += len(ops)
    by_name = {trace.name: trace for trace in traces}

    def fetch(name: str) -> tuple[Config, list[Op], list[int], str] | None:
        trace = by_name.get(name)
        if trace is None:
            return None
        return trace.config, [op for _, op in trace.ops], [n for n, _ in trace.ops], name

    examples, notes = explain_groups(rows, fetch, impl_spec, progress, shrink_budget)
    return rows, {example.signature: example for example in examples}, notes


def _counting(
    steps: Iterable[tuple[str, Op]], before: int, counted: Callable[[int], None]
) -> Iterator[tuple[str, Op]]:
    """`steps`, telling `counted` the operations run so far (`before` and these) after each."""
    for number, step in enumerate(steps, before + 1):
        yield step
        counted(number)


# -- the Arrow stream Spark feeds ---------------------------------------------------------


def _first_trace_id(batch: pa.RecordBatch) -> str:
    """The trace id of a batch's first row, as far as it can be read."""
    try:
        return str(batch.column("trace_id")[0].as_py())
    except UnicodeDecodeError:
        return "(a trace id that is not UTF-8)"


def _error_batch(trace_id: str, message: str) -> pa.RecordBatch:
    row = {name: None for name in ROW_SCHEMA.names} | {"trace_id": trace_id, "error": message}
    return pa.RecordBatch.from_pylist([row], schema=ROW_SCHEMA)


def _row_batch(row: dict[str, Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([row | {"error": None}], schema=ROW_SCHEMA)


def segmented_batch(
    trace_set: str,
    info: TraceInfo,
    impl_spec: str,
    every: int,
    runner: SegmentRunner,
    say: Callable[[str], None] | None = None,
) -> pa.RecordBatch:
    """The result row of one long trace of a trace set checked in segments (README
    "Segments"), the same row `check_batches` makes of it sequentially, or its error."""
    trace_id = info.trace_id
    try:
        try:
            result = check_in_segments(
                trace_id,
                info.config,
                impl_spec,
                every,
                True,
                runner,
                say=(lambda line: say(f"{trace_id}: {line}")) if say else (lambda line: None),
                trace_set=trace_set,
            )
            row = result_row(result, trace_id, info.profile, info.seed)
        except EngineFailed as failed:  # the user's engine failed: the whole run says it (P1)
            if say:
                say(f"{trace_id}: fast pass: {failed}; checking it whole")
            row = _whole(trace_set, info, impl_spec)
    except WanconformError as exc:
        return _error_batch(trace_id, str(exc))
    if row["operations"] != info.operations:
        return _error_batch(
            trace_id,
            f"{where(trace_id, 1)}: operations: configs says {info.operations}, "
            f"ops has {row['operations']} rows",
        )
    return _row_batch(row)


def _whole(trace_set: str, info: TraceInfo, impl_spec: str) -> dict[str, Any]:
    """The result row of one trace of a trace set checked sequentially (`check_trace`),
    its operations read from the files (again by the lockstep, as `glue`'s replay does)."""
    trace_id, config = info.trace_id, info.config
    start = Cut(0, FIRST_OP_SEQ, 0)

    def ops() -> Iterator[tuple[int, int, Op]]:
        return set_ops(trace_set, trace_id, config, start)

    return check_trace(
        trace_id,
        config,
        ((seq, op) for seq, _, op in ops()),
        load_impl(impl_spec),
        info.profile,
        info.seed,
        impl_spec,
        replay=lambda: (op for _, _, op in ops()),
    )


class _Current:
    """The trace whose rows are streaming past, with what its configuration row said."""

    def __init__(
        self,
        trace_id: str,
        run: TraceRun,
        config: Config,
        expected: int | None,
        profile: str | None,
        seed: int | None,
    ) -> None:
        self.trace_id = trace_id
        self.run = run
        self.config = config
        self.expected = expected
        self.profile = profile
        self.seed = seed
        self.parse = op_parser(trace_id, config)


def check_batches(
    batches: Iterable[pa.RecordBatch],
    impl_spec: str | None = None,
    replay_from: Callable[[str, Config], Callable[[], Iterable[Op]]] | None = None,
    dlq_dir: str | None = None,
    queue_dir: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows of `CHECK_INPUT_SCHEMA`, sorted by (trace id, seq), the configuration row of
    each trace first -> one `ROW_SCHEMA` batch per trace. `replay_from(trace_id, config)`
    gives the lockstep its way to re-read a trace from the start (see `Lockstep`).
    `dlq_dir`: the impl keeps each trace's dead letters in a store DLQ_DIR/TRACE_ID/;
    `queue_dir`: its persistent senders' queues in a store QUEUE_DIR/TRACE_ID/ (R36)."""
    tune_gc()  # a Spark task's Python worker runs engines for long too
    spec = impl_spec or DEFAULT_IMPL
    impl_factory = load_impl(spec)
    stored = dlq_dir is not None or queue_dir is not None
    store_class = (
        store_engine_class(spec, argument="dlq_dir" if dlq_dir else "queue_dir") if stored else None
    )
    current: _Current | None = None
    failed: str | None = None  # a trace whose rest is skipped after an error
    previous: tuple[str, int] | None = None
    for batch in batches:
        try:
            columns = [batch.column(name).to_pylist() for name in CHECK_INPUT_SCHEMA.names]
        except UnicodeDecodeError as exc:  # a damaged file: its strings are not UTF-8
            trace_id = _first_trace_id(batch)
            yield _error_batch(
                trace_id, f"{trace_id}: not readable: a string is not UTF-8 ({exc.reason})"
            )
            failed, current = trace_id, None
            continue
        for trace_id, seq, kind, text, profile, seed, operations in zip(*columns, strict=True):
            if trace_id is None or seq is None:  # a null key: Spark sorts them first
                bad = trace_id or ""  # an error row's trace id; "" sorts first
                if bad != failed:
                    if current is not None and current.trace_id != bad:  # that one is whole
                        batch_out = _finish(current)
                        if batch_out is not None:
                            yield batch_out
                    current = None
                    yield _error_batch(bad, null_key_problem(trace_id, seq))
                    failed = bad
                continue
            key = (trace_id, seq)
            # The order the glue must deliver (sortWithinPartitions); equal keys are input.
            assert previous is None or key >= previous, f"rows out of order: {key} < {previous}"
            if previous == key and trace_id != failed:
                yield _error_batch(trace_id, f"{where(trace_id, seq)}: seq: appears twice")
                failed, current = trace_id, None
            previous = key
            if current is not None and trace_id != current.trace_id:
                batch_out = _finish(current)
                current = None
                if batch_out is not None:
                    yield batch_out
            if trace_id == failed:
                continue
            try:
                if kind == "config":
                    config = parse_config_cell(trace_id, text)
                    replay = replay_from(trace_id, config) if replay_from else None
                    impl = impl_factory
                    if stored:  # this trace's stores: DLQ_DIR/TRACE_ID/, QUEUE_DIR/TRACE_ID/
                        impl = StoreEngines(
                            store_class,
                            None if dlq_dir is None else Path(dlq_dir) / trace_id,
                            fresh=True,
                            queues=None if queue_dir is None else Path(queue_dir) / trace_id,
                        )
                    run = TraceRun(trace_id, config, impl=impl, impl_spec=spec, replay=replay)
                    current = _Current(trace_id, run, config, operations, profile, seed)
                    continue
                if current is None:
                    raise WanconformError(
                        f"{where(trace_id, seq)}: trace_id: no configuration in configs"
                    )
                expected = FIRST_OP_SEQ + current.run.operations
                if seq != expected:
                    raise WanconformError(f"{where(trace_id, seq)}: seq: {seq_problem(expected)}")
                current.run.step(where(trace_id, seq), current.parse(seq, text))
            except WanconformError as exc:
                yield _error_batch(trace_id, str(exc))
                failed, current = trace_id, None
    if current is not None:
        batch_out = _finish(current)
        if batch_out is not None:
            yield batch_out


def _finish(current: _Current) -> pa.RecordBatch:
    operations = current.run.operations
    if current.expected is not None and operations != current.expected:
        return _error_batch(
            current.trace_id,
            f"{where(current.trace_id, 1)}: operations: configs says {current.expected}, "
            f"ops has {operations} rows",
        )
    result = current.run.finish(where(current.trace_id, operations + 1))  # the last line
    return _row_batch(result_row(result, current.trace_id, current.profile, current.seed))


def results_table(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """The results of a check, sorted by trace id; the first error (by trace id) raises."""
    table = pa.Table.from_batches(list(batches), schema=ROW_SCHEMA).sort_by("trace_id")
    errors = [e for e in table.column("error").to_pylist() if e is not None]
    if errors:
        more = f" (and {len(errors) - 1} more bad traces)" if len(errors) > 1 else ""
        raise TraceError(errors[0] + more)
    return table.drop_columns(["error"]).cast(RESULTS_SCHEMA)
