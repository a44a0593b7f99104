"""Checking one trace at scale: model vs impl in lockstep (P1) with P2-P7, one result row.

`TraceCheck` follows one trace operation by operation through `conformance.lockstep`
and `conformance.properties`; memory is bounded by the engines' state (the lockstep's
segment since the last agreed state, the checker's queued events), never by the trace's
length. `finish()` returns one row of `RESULTS_SCHEMA`.

`check_batches` is the function Spark runs (`conformance.spark`), tested without Spark:
Arrow record batches of `CHECK_INPUT_SCHEMA` in, sorted by (trace id, seq) with each
trace's configuration row first; result batches out. It asserts that order: Spark gives
no order inside a group, so the glue sorts within partitions and this function refuses
anything else. A malformed row becomes an `error` row (the driver then reports the first
one and writes no results).

A user's engine comes in through `conformance.engines.load_impl` (`--impl module:Class`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from conformance.coverage import SENDER_OUTCOMES, Coverage
from conformance.lockstep import Divergence, Lockstep
from conformance.properties import PROPERTIES, PropertyChecker
from traces.canonical import canonical_json
from traces.config import Config
from traces.engine import EngineFactory, load_impl
from traces.errors import WanconformError
from traces.observations import RECEIVER_STATUSES
from traces.ops import Op, op_to_json
from traces.parquet import FIRST_OP_SEQ, op_parser, parse_config_cell
from traces.tracefile import where

MAX_DIFFERENCES = 10  # differing paths kept in a result row
MAX_VALUE_CHARS = 200  # each value in a result row is cut to this much canonical JSON
MAX_VIOLATIONS = 3  # violation messages kept per property


def _fields() -> list[pa.Field]:
    fields = [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("profile", pa.string()),
        pa.field("seed", pa.int64()),
        pa.field("operations", pa.int64()),
        pa.field("events", pa.int64()),  # client events (enqueued)
        pa.field("skipped", pa.int64()),  # operations not enabled (§3)
        pa.field("p1", pa.string()),  # held | failed
        pa.field("divergence_where", pa.string()),  # "trace:seq" of the first divergence
        pa.field("divergence_op", pa.string()),  # its operation, canonical JSON
        pa.field("divergence_signature", pa.string()),  # groups alike divergences
        pa.field("divergence", pa.string()),  # JSON: differing paths, both values (cut)
        pa.field("config", pa.string()),  # the trace's configuration (SPEC §2), canonical JSON
    ]
    for name in PROPERTIES:
        fields.append(pa.field(name.lower(), pa.string()))  # held | failed | not applicable
        fields.append(pa.field(f"{name.lower()}_violations", pa.int64()))
    fields.append(pa.field("verdicts", pa.string()))  # JSON: reasons and first violations
    fields += [pa.field(f"status_{s}", pa.int64()) for s in RECEIVER_STATUSES]
    fields += [pa.field(f"outcome_{o}", pa.int64()) for o in SENDER_OUTCOMES]
    fields += [
        pa.field("coverage", pa.string()),  # JSON: conformance.machine.Coverage counts
        pa.field("bytes_full", pa.int64()),
        pa.field("bytes_delta", pa.int64()),
        pa.field("dropped", pa.int64()),
        pa.field("dead_lettered", pa.int64()),
        pa.field("seconds", pa.float64()),
    ]
    return fields


RESULTS_SCHEMA = pa.schema(_fields())
"""One row per trace, as `wanconform check` writes it (results.parquet)."""

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


def _cut_value(value: Any) -> Any:
    text = canonical_json(value)
    return value if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "..."


_INDEX = re.compile(r"\[\d+\]")
_EVENT_ID = re.compile(r"\d+:\d+")


def signature(divergence: Divergence) -> str:
    """What alike divergences share: the operation, the first differing path with ids,
    keys and indices left out, and short differing values (e.g. a status)."""
    first = divergence.differences[0] if divergence.differences else None
    if first is None:
        return divergence.op.op
    parts = _INDEX.sub("[]", first.path).split(".")
    if parts[0] == "state" and len(parts) > 2:
        parts[2] = "*"  # the site or sender id
        if len(parts) > 4 and parts[3] == "entries":
            parts[4] = "*"  # the key
    text = f"{divergence.op.op} {'.'.join(parts)}"
    short = all(
        isinstance(v, str | bool | None) and len(str(v)) <= 20 and not _EVENT_ID.fullmatch(str(v))
        for v in (first.model, first.impl)
    )
    if short:
        text += f": model {canonical_json(first.model)}, impl {canonical_json(first.impl)}"
    return text


class TraceCheck:
    """One trace being checked; `step` each operation in order, then `finish`."""

    def __init__(
        self,
        trace_id: str,
        config: Config,
        impl_factory: EngineFactory | None = None,
        replay: Callable[[], Iterable[Op]] | None = None,
        profile: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.profile = profile
        self.seed = seed
        self.started = time.perf_counter()
        self.lockstep = Lockstep(config, impl_factory, replay=replay)
        self.checker = PropertyChecker(config)
        self.coverage = Coverage()
        self.operations = 0
        self.events = 0

    def step(self, seq: int, op: Op) -> None:
        self.operations += 1
        at = where(self.trace_id, seq)
        if self.lockstep.divergence is None:
            observations = self.lockstep.step(op, at)
        else:  # after a divergence the model alone goes on, for P2-P7
            observations = self.lockstep.model.apply(op)
        self.coverage.record(op, observations)
        self.events += sum(1 for obs in observations if obs["kind"] == "enqueued")
        self.checker.after_step(op, observations, self.lockstep.model.observe, at)

    def finish(self) -> dict[str, Any]:
        divergence = self.lockstep.finish() if self.lockstep.divergence is None else None
        divergence = divergence or self.lockstep.divergence
        state = self.lockstep.model.observe()
        self.checker.finish(state, where(self.trace_id, self.operations + 1))
        counts = self.coverage.counts
        senders = state["senders"].values()
        row: dict[str, Any] = {
            "trace_id": self.trace_id,
            "profile": self.profile,
            "seed": self.seed,
            "operations": self.operations,
            "events": self.events,
            "skipped": sum(v for k, v in counts.items() if k.endswith(".skipped")),
            "p1": "held" if divergence is None else "failed",
            "divergence_where": None,
            "divergence_op": None,
            "divergence_signature": None,
            "divergence": None,
            "config": canonical_json(self.lockstep.config.to_json()),
        }
        if divergence is not None:
            row["divergence_where"] = divergence.where
            row["divergence_op"] = canonical_json(op_to_json(divergence.op))
            row["divergence_signature"] = signature(divergence)
            row["divergence"] = canonical_json(
                {
                    "index": divergence.index,
                    "differences": [
                        {"path": d.path, "model": _cut_value(d.model), "impl": _cut_value(d.impl)}
                        for d in divergence.differences[:MAX_DIFFERENCES]
                    ],
                    "total": divergence.total,
                }
            )
        verdicts = {}
        for verdict in self.checker.verdicts():
            name = verdict.property.lower()
            row[name] = verdict.status
            row[f"{name}_violations"] = len(verdict.violations)
            verdicts[verdict.property] = {
                "status": verdict.status,
                "reason": verdict.reason,
                "violations": [
                    {"where": v.where, "message": v.message}
                    for v in verdict.violations[:MAX_VIOLATIONS]
                ],
            }
        row["verdicts"] = canonical_json(verdicts)
        for status in RECEIVER_STATUSES:
            row[f"status_{status}"] = counts[f"status.{status}"]
        for outcome in SENDER_OUTCOMES:
            row[f"outcome_{outcome}"] = counts[f"outcome.{outcome}"]
        row["coverage"] = canonical_json(dict(sorted(counts.items())))
        row["bytes_full"] = sum(s["stats"]["bytes_full"] for s in senders)
        row["bytes_delta"] = sum(s["stats"]["bytes_delta"] for s in senders)
        row["dropped"] = sum(s["stats"]["events_dropped"] for s in senders)
        row["dead_lettered"] = sum(s["stats"]["dlq_records"] for s in senders)
        row["seconds"] = round(time.perf_counter() - self.started, 6)
        return row


def check_trace(
    trace_id: str,
    config: Config,
    ops: Iterable[tuple[int, Op]],
    impl_factory: EngineFactory | None = None,
    profile: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Check one trace from a stream of (seq, op); its result row. A state-only
    divergence is located by replaying the operations kept since the last agreed state
    (this plain form records them; `check_batches` re-reads the trace set instead)."""
    check = TraceCheck(trace_id, config, impl_factory, profile=profile, seed=seed)
    for seq, op in ops:
        check.step(seq, op)
    return check.finish()


# -- the Arrow stream Spark feeds ---------------------------------------------------------


def _error_batch(trace_id: str, message: str) -> pa.RecordBatch:
    row = {name: None for name in ROW_SCHEMA.names} | {"trace_id": trace_id, "error": message}
    return pa.RecordBatch.from_pylist([row], schema=ROW_SCHEMA)


def _row_batch(row: dict[str, Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([row | {"error": None}], schema=ROW_SCHEMA)


class _Current:
    """The trace whose rows are streaming past, with what its configuration row said."""

    def __init__(
        self, trace_id: str, check: TraceCheck, config: Config, expected: int | None
    ) -> None:
        self.trace_id = trace_id
        self.check = check
        self.config = config
        self.expected = expected
        self.last_seq = 1
        self.parse = op_parser(trace_id, config)


def check_batches(
    batches: Iterable[pa.RecordBatch],
    impl_spec: str | None = None,
    replay_from: Callable[[str, Config], Callable[[], Iterable[Op]]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows of `CHECK_INPUT_SCHEMA`, sorted by (trace id, seq), the configuration row of
    each trace first -> one `ROW_SCHEMA` batch per trace. `replay_from(trace_id, config)`
    gives the lockstep its way to re-read a trace from the start (see `Lockstep`)."""
    impl_factory = load_impl(impl_spec) if impl_spec else None
    current: _Current | None = None
    failed: str | None = None  # a trace whose rest is skipped after an error
    previous: tuple[str, int] | None = None
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in CHECK_INPUT_SCHEMA.names]
        for trace_id, seq, kind, text, profile, seed, operations in zip(*columns, strict=True):
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
                    check = TraceCheck(trace_id, config, impl_factory, replay, profile, seed)
                    current = _Current(trace_id, check, config, operations)
                    continue
                if current is None:
                    raise WanconformError(
                        f"{where(trace_id, seq)}: trace_id: no configuration in configs"
                    )
                if seq < FIRST_OP_SEQ:
                    raise WanconformError(
                        f"{where(trace_id, seq)}: seq: must be >= {FIRST_OP_SEQ} "
                        "(line 1 is the configuration)"
                    )
                current.check.step(seq, current.parse(seq, text))
                current.last_seq = seq
            except WanconformError as exc:
                yield _error_batch(trace_id, str(exc))
                failed, current = trace_id, None
    if current is not None:
        batch_out = _finish(current)
        if batch_out is not None:
            yield batch_out


def _finish(current: _Current) -> pa.RecordBatch:
    operations = current.check.operations
    if current.expected is not None and operations != current.expected:
        return _error_batch(
            current.trace_id,
            f"{where(current.trace_id, 1)}: operations: configs says {current.expected}, "
            f"ops has {operations} rows",
        )
    return _row_batch(current.check.finish())


def results_table(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """The results of a check, sorted by trace id; the first error (by trace id) raises."""
    table = pa.Table.from_batches(list(batches), schema=ROW_SCHEMA).sort_by("trace_id")
    errors = [e for e in table.column("error").to_pylist() if e is not None]
    if errors:
        from traces.errors import TraceError

        more = f" (and {len(errors) - 1} more bad traces)" if len(errors) > 1 else ""
        raise TraceError(errors[0] + more)
    return table.drop_columns(["error"]).cast(RESULTS_SCHEMA)


def verdict_reasons(row: dict[str, Any]) -> dict[str, Any]:
    """The per-property reasons and first violations of a result row."""
    verdicts: dict[str, Any] = json.loads(row["verdicts"])
    return verdicts
