"""Trace sets in Parquet (SPEC §12): explicit schemas, conversion to and from JSON Lines.

A trace set is a directory:

    DIR/wanconform-traces.json   the marker: {"kind": "wanconform trace set", "version": 1}
    DIR/configs/*.parquet        one row per trace (CONFIGS_SCHEMA)
    DIR/ops/*.parquet            one row per operation (OPS_SCHEMA)

`seq` is the operation's line in the trace's JSON Lines file (the configuration is line
1, so the first operation is line 2) as `wanconform convert` writes it, one line each:
`where(trace_id, seq)` ("chaos-000007:12") names an operation the same way in every
message, and in `wanconform convert`'s JSONL output it is the file's line. (A source
file's blank lines are not counted: seq has no gaps, so a missing row is found.) The
typed columns (`op`, `site`, `sender`, `key`) are for Spark SQL users who filter on them;
`json`, the operation's canonical JSON, is what is read back, so nothing is lost either
way.

Every problem is one line naming the trace id, the sequence number and the field
(`TraceError`); a trace set is written whole or not at all (`traces.outputs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.errors import ConfigError, TraceError
from traces.generate import Row
from traces.ops import Op, OpError, parse_op
from traces.outputs import JSONL_MARKER, TRACE_SET_MARKER, building_directory, check_arrow_path
from traces.text import printable, shell_word
from traces.tracefile import decode_line, fast_path, op_line, open_trace, trace_lines, where

if TYPE_CHECKING:
    import pyarrow.dataset as ds

MARKER = TRACE_SET_MARKER
MARKER_CONTENT = {"kind": "wanconform trace set", "version": 1}
FIRST_OP_SEQ = 2  # the configuration is line 1 of a trace

CONFIGS_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("seed", pa.int64()),  # the campaign seed (null for converted JSONL)
        pa.field("profile", pa.string()),  # the generator profile (null for converted JSONL)
        pa.field("operations", pa.int64(), nullable=False),  # rows of this trace in `ops`
        pa.field("config", pa.string(), nullable=False),  # canonical JSON of SPEC §2
    ]
)

OPS_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("op", pa.string(), nullable=False),  # SPEC §3 operation name
        pa.field("site", pa.int64()),  # site, when the operation has one
        pa.field("sender", pa.string()),  # sender id, when it has one
        pa.field("key", pa.string()),  # key, when it has one
        pa.field("json", pa.string(), nullable=False),  # canonical JSON of the operation
    ]
)

BATCH_ROWS = 65_536  # rows per Arrow record batch written


# -- one operation, one row ---------------------------------------------------------------


def op_row(trace_id: str, seq: int, op: Op) -> dict[str, Any]:
    """The `ops` row of one operation."""
    return dict(zip(OPS_SCHEMA.names, (trace_id, seq, *op_columns(op)), strict=True))


def op_columns(op: Op) -> Row:
    """The (op, site, sender, key, json) columns of one operation's `ops` row."""
    return (
        op.op,
        getattr(op, "site", None),
        getattr(op, "sender", None),
        getattr(op, "key", None),
        op_line(op),
    )


class OpsBatcher:
    """Collects `ops` rows and hands out full record batches."""

    def __init__(self, rows: int = BATCH_ROWS) -> None:
        self._rows = rows
        self._pending: list[tuple[Any, ...]] = []

    def add(self, trace_id: str, seq: int, op: Op) -> pa.RecordBatch | None:
        return self.add_row(trace_id, seq, op_columns(op))

    def add_row(self, trace_id: str, seq: int, columns: Row) -> pa.RecordBatch | None:
        self._pending.append((trace_id, seq, *columns))
        return self.flush() if len(self._pending) >= self._rows else None

    def add_trace(self, trace_id: str, rows: Iterable[Row]) -> Iterator[pa.RecordBatch]:
        """Every row of one trace (seq from `FIRST_OP_SEQ` on); the batches that fill up."""
        pending, limit = self._pending, self._rows
        for seq, (op, site, sender, key, text) in enumerate(rows, FIRST_OP_SEQ):
            pending.append((trace_id, seq, op, site, sender, key, text))
            if len(pending) >= limit:
                full = self.flush()
                assert full is not None
                yield full
                pending = self._pending

    def flush(self) -> pa.RecordBatch | None:
        if not self._pending:
            return None
        columns = [
            pa.array(column, type=field.type)
            for column, field in zip(zip(*self._pending, strict=True), OPS_SCHEMA, strict=True)
        ]
        self._pending = []
        return pa.RecordBatch.from_arrays(columns, schema=OPS_SCHEMA)


def configs_batch(rows: Sequence[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(list(rows), schema=CONFIGS_SCHEMA)


def config_row(
    trace_id: str, config: Config, operations: int, seed: int | None, profile: str | None
) -> dict[str, Any]:
    return {
        "trace_id": trace_id,
        "seed": seed,
        "profile": profile,
        "operations": operations,
        "config": canonical_json(config.to_json()),
    }


# -- reading rows back --------------------------------------------------------------------


def parse_config_cell(trace_id: str, text: str) -> Config:
    """The configuration of one `configs` row; errors name the trace and the field."""
    try:
        raw = decode_line(text)
    except ValueError as exc:
        raise TraceError(f"{where(trace_id, 1)}: config: not valid JSON: {exc}") from None
    try:
        return parse_config(raw)
    except ConfigError as exc:
        path = str(exc) if str(exc).startswith("config") else f"config.{exc}"
        raise TraceError(f"{where(trace_id, 1)}: {path}") from None


def parse_op_cell(trace_id: str, seq: int, text: str | None, config: Config) -> Op:
    """The operation of one `ops` row; errors name trace id, sequence number and field."""
    if text is None:  # a null cell: a file written by another tool with a nullable column
        raise TraceError(f"{where(trace_id, seq)}: json: missing (null)")
    try:
        raw = decode_line(text)
    except ValueError as exc:
        raise TraceError(f"{where(trace_id, seq)}: json: not valid JSON: {exc}") from None
    try:
        return parse_op(raw, config)
    except OpError as exc:
        raise TraceError(f"{where(trace_id, seq)}: {exc}") from None


def op_parser(trace_id: str, config: Config) -> Callable[[int, str], Op]:
    """`parse_op_cell` for one trace, made faster: a cell in canonical form (as the
    generators and `convert` write it) takes the trace reader's fast validator
    (`fast_path`); any other goes to `parse_op_cell`, which accepts it or names the field."""
    fast = fast_path(config)

    def parse(seq: int, text: str | None) -> Op:
        op = None if text is None else fast(text.encode())
        return op if op is not None else parse_op_cell(trace_id, seq, text, config)

    return parse


# -- the directory ------------------------------------------------------------------------


def _check_schema(actual: pa.Schema, expected: pa.Schema, table: str) -> None:
    for field in expected:
        index = actual.get_field_index(field.name)
        if index < 0:
            raise TraceError(f"{table}: column {field.name!r} missing (SPEC §12 trace set)")
        got = actual.field(index).type
        same = got == field.type or (
            pa.types.is_string(field.type) and pa.types.is_large_string(got)
        )
        if not same:
            raise TraceError(f"{table}: column {field.name!r} must be {field.type}, got {got}")
    for name in actual.names:  # another tool's extra column: refused, not silently dropped
        if expected.get_field_index(name) < 0:
            raise TraceError(f"{table}: column {name!r} unknown (SPEC §12 trace set)")


def _dataset(path: Path, schema: pa.Schema, table: str) -> ds.Dataset:
    folder = path / table
    if not folder.is_dir():
        raise TraceError(f"{path}: not a wanconform trace set: no {table}/ directory")
    import pyarrow.dataset as ds  # here: it imports pandas, slow to load

    try:
        dataset = ds.dataset(folder, format="parquet")
    except (pa.ArrowException, OSError) as exc:  # any of Arrow's: invalid, not implemented
        raise _unreadable(folder, exc) from None
    if not dataset.files:  # its schema would be empty: "column 'trace_id' missing" misled
        raise TraceError(f"{folder}: no Parquet files (SPEC §12 trace set)")
    _check_schema(dataset.schema, schema, dataset.files[0])  # Arrow's schema: the first file's
    return dataset


def _check_files(dataset: ds.Dataset, schema: pa.Schema, folder: Path) -> None:
    """Every file's own schema (`_dataset` checks the first file's only; Spark, reading
    each file with that schema, would fail mid-job on another's missing or mistyped
    column or on a file that is not Parquet)."""
    for fragment in dataset.get_fragments():
        try:
            actual = fragment.physical_schema
        except (pa.ArrowException, OSError) as exc:
            raise _unreadable(folder, exc) from None
        _check_schema(actual, schema, fragment.path)


def _unreadable(place: Path | str, exc: Exception) -> TraceError:
    return TraceError(f"{place}: not readable Parquet: {' '.join(str(exc).split())}")


def _to_table(dataset: ds.Dataset, folder: Path, **options: Any) -> pa.Table:
    """`dataset.to_table(**options)`, validated; a file that cannot be read (the dataset's
    schema comes from its first file only) or holds invalid data is a TraceError naming
    that file (the folder if no one file fails alone)."""
    try:
        table = dataset.to_table(**options)
        table.validate(full=True)  # e.g. a string column holding bytes that are not UTF-8
    except (pa.ArrowException, OSError) as exc:  # any of Arrow's: invalid, not implemented
        raise _unreadable_file(dataset, options) or _unreadable(folder, exc) from None
    return table


def _unreadable_file(dataset: ds.Dataset, options: dict[str, Any]) -> TraceError | None:
    """What is wrong with the first file of `dataset` that `_to_table` cannot read alone
    (Arrow's message for damaged data names no file, and a generated set has 64 or more)."""
    for fragment in dataset.get_fragments():
        try:
            fragment.to_table(schema=dataset.schema, **options).validate(full=True)
        except (pa.ArrowException, OSError) as exc:
            return _unreadable(fragment.path, exc)
    return None


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """One row of `configs`, validated."""

    trace_id: str
    seed: int | None
    profile: str | None
    operations: int
    config: Config


@dataclass(frozen=True, slots=True)
class TraceSet:
    """A validated trace set directory: its schemas and every configuration."""

    path: Path
    traces: tuple[TraceInfo, ...]  # sorted by trace id

    @property
    def operations(self) -> int:
        return sum(t.operations for t in self.traces)

    def ops_dataset(self) -> ds.Dataset:
        return _dataset(self.path, OPS_SCHEMA, "ops")

    def ops_of(
        self, trace_id: str, first: int | None = None, stop: int | None = None
    ) -> Iterator[tuple[int, str]]:
        """(seq, json) of one trace in order, read again from the files (only the rows of
        seq `first` <= seq < `stop` when given). The rows are loaded as Arrow columns (not
        Python objects); used to locate a state-only divergence (`Lockstep`'s replay) and
        to read a segment of a long trace (`conformance.spark.segments`)."""
        import pyarrow.dataset as ds

        dataset = self.ops_dataset()
        rows = ds.field("trace_id") == trace_id
        if first is not None:
            rows = rows & (ds.field("seq") >= first)
        if stop is not None:
            rows = rows & (ds.field("seq") < stop)
        table = _to_table(dataset, self.path / "ops", columns=["seq", "json"], filter=rows)
        seqs = table.column("seq")
        if len(seqs) > 1 and not _increasing(seqs):
            table = table.sort_by("seq")
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            yield from zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)


def _increasing(column: pa.ChunkedArray) -> bool:
    import pyarrow.compute as pc

    values = column.combine_chunks()
    return bool(pc.all(pc.less(values[:-1], values[1:])).as_py())


def _holds_jsonl(root: Path) -> bool:
    """`root` is a directory of JSON Lines traces (`convert`'s, or any)."""
    return (root / JSONL_MARKER).is_file() or any(p.is_file() for p in root.glob("*.jsonl"))


def open_trace_set(path: str | os.PathLike[str]) -> TraceSet:
    """Validate a trace set's layout, schemas and configurations (not yet its operations:
    those are validated as they stream through a check or a conversion)."""
    check_arrow_path(path, "read")
    root = Path(path)
    if not root.is_dir():
        raise TraceError(f"{root}: not a directory (a wanconform trace set is one)")
    marker = root / MARKER
    try:
        content = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        content = None
    if content != MARKER_CONTENT and content is None and _holds_jsonl(root):
        raise TraceError(
            f"{root}: a directory of JSON Lines traces, not a trace set; make one with "
            f"`wanconform convert {shell_word(str(root))}/*.jsonl --out SET`"
        )
    if content != MARKER_CONTENT:
        raise TraceError(
            f"{root}: not a wanconform trace set (no valid {MARKER}; make one with "
            "`wanconform generate` or `wanconform convert`)"
        )
    configs = _dataset(root, CONFIGS_SCHEMA, "configs")
    _check_files(configs, CONFIGS_SCHEMA, root / "configs")
    table = _to_table(configs, root / "configs", columns=CONFIGS_SCHEMA.names)
    _check_files(_dataset(root, OPS_SCHEMA, "ops"), OPS_SCHEMA, root / "ops")
    infos: dict[str, TraceInfo] = {}
    for row in table.sort_by("trace_id").to_pylist():
        trace_id = row["trace_id"]
        if trace_id is None or not trace_id:
            raise TraceError(f"{root}/configs: trace_id: empty trace id")
        problem = file_name_problem(trace_id)
        if problem:  # a trace id names files: convert's, check's failures/, --dlq-dir's
            shown = printable(trace_id[:60]) + ("..." if len(trace_id) > 60 else "")
            raise TraceError(f'{root}/configs: trace_id "{shown}": {problem}')
        if trace_id in infos:
            raise TraceError(f"{where(trace_id, 1)}: trace_id: appears twice in configs")
        if row["operations"] is None or row["operations"] < 0:
            raise TraceError(f"{where(trace_id, 1)}: operations: must be a count >= 0")
        if row["config"] is None:
            raise TraceError(f"{where(trace_id, 1)}: config: missing")
        infos[trace_id] = TraceInfo(
            trace_id,
            row["seed"],
            row["profile"],
            row["operations"],
            parse_config_cell(trace_id, row["config"]),
        )
    if not infos:  # check printed a summary of nothing, convert wrote an empty folder
        raise TraceError(f"{root}: holds no traces (its configs/ has no rows)")
    return TraceSet(root, tuple(infos.values()))


MAX_ID_BYTES = 200
"""The longest trace id in UTF-8: a file system's name limit (255) less the longest
suffix wanconform adds (`.min.jsonl`, a temporary name's)."""


def null_key_problem(trace_id: str | None, seq: int | None, table: str = "ops") -> str:
    """What is wrong with a row of `table` whose trace id or seq is null (a file written
    by another tool with a nullable column: the schema check cannot see it)."""
    if trace_id is None:
        return f"{table}: trace_id: missing (null) in a row" + (
            "" if seq is None else f" of seq {seq}"
        )
    return f"{trace_id}: seq: missing (null) in a row of {table}"


def file_name_problem(trace_id: str) -> str:
    """Why `trace_id` cannot name a file in a folder (it names `ID.jsonl` and `ID/`), or
    "": not a path (no `/` or `\\`), not `.` or `..`, no control character, not too long."""
    if trace_id in (".", ".."):
        return "must not be . or .. (it names files)"
    if "/" in trace_id or "\\" in trace_id:
        return "must not hold / or \\ (it names files in one folder)"
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in trace_id):
        return "must not hold a control character (it names files)"
    if len(trace_id.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        return f"longer than {MAX_ID_BYTES} bytes in UTF-8 (it names files)"
    return ""


def seq_problem(expected: int) -> str:
    """What is wrong with a `seq` that is not `expected`: a trace's operations are its lines
    from 2 on, each once, none missing."""
    line = "the configuration's line is 1" if expected == FIRST_OP_SEQ else "none missing"
    return f"expected {expected} (seq is the operation's line in the trace: {line})"


def write_marker(folder: Path) -> None:
    (folder / MARKER).write_text(canonical_json(MARKER_CONTENT) + "\n", encoding="utf-8")


# -- conversion ---------------------------------------------------------------------------


def jsonl_to_parquet(paths: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Convert JSON Lines traces into one trace set (trace id = file name without
    `.jsonl`); every trace is validated while streaming. Returns the operation count."""
    sources = [Path(p) for p in paths]
    ids: dict[str, Path] = {}
    for source in sources:
        trace_id = source.name.removesuffix(".jsonl")
        problem = file_name_problem(trace_id)
        if problem:
            raise TraceError(f"{printable(str(source))}: as a trace id, its name {problem}")
        if trace_id in ids:
            raise TraceError(f"{source}: trace id {trace_id!r} also names {ids[trace_id]}")
        ids[trace_id] = source
    total = 0
    with building_directory(out) as staging:
        (staging / "configs").mkdir()
        (staging / "ops").mkdir()
        rows = []
        with pq.ParquetWriter(staging / "ops" / "part-00000.parquet", OPS_SCHEMA) as writer:
            batcher = OpsBatcher()
            for trace_id, source in ids.items():
                trace = open_trace(source)
                count = 0
                for _line, op in trace.ops():  # seq: its line once written canonically
                    batch = batcher.add(trace_id, FIRST_OP_SEQ + count, op)
                    count += 1
                    if batch is not None:
                        writer.write_batch(batch)
                rows.append(config_row(trace_id, trace.config, count, None, None))
                total += count
            last = batcher.flush()
            if last is not None:
                writer.write_batch(last)
        pq.write_table(
            pa.Table.from_batches([configs_batch(rows)]),
            staging / "configs" / "part-00000.parquet",
        )
        write_marker(staging)
    return total


def trace_set_jsonl(trace_set: TraceSet) -> Iterator[tuple[str, list[str]]]:
    """(trace id, canonical JSONL lines) of every trace, validated, in trace id order.
    The `ops` table is read into Arrow memory (columns, not Python objects) and sorted;
    one trace's lines at a time are held as text."""
    rows = _to_table(
        trace_set.ops_dataset(), trace_set.path / "ops", columns=["trace_id", "seq", "json"]
    )
    for name in ("trace_id", "seq"):  # null keys: named before the order is checked
        if rows.column(name).null_count:
            import pyarrow.compute as pc

            first = pc.index(pc.is_null(rows.column(name)), True).as_py()
            raise TraceError(
                null_key_problem(
                    rows.column("trace_id")[first].as_py(),
                    rows.column("seq")[first].as_py(),
                    f"{trace_set.path / 'ops'}",
                )
            )
    table = rows.sort_by([("trace_id", "ascending"), ("seq", "ascending")])
    pending = list(reversed(trace_set.traces))  # configurations not yet yielded
    known = {t.trace_id: t for t in trace_set.traces}
    current: TraceInfo | None = None
    ops: list[str] = []
    previous = 0

    def finish(info: TraceInfo, ops: list[str]) -> tuple[str, list[str]]:
        if len(ops) != info.operations:
            raise TraceError(
                f"{where(info.trace_id, 1)}: operations: configs says {info.operations}, "
                f"ops has {len(ops)} rows"
            )
        return info.trace_id, [*trace_lines(info.config, ()), *ops]

    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        columns = (batch.column(i).to_pylist() for i in range(3))
        for trace_id, seq, text in zip(*columns, strict=True):
            if current is None or trace_id != current.trace_id:
                if current is not None:
                    yield finish(current, ops)
                info = known.get(trace_id)
                if info is None:
                    raise TraceError(
                        f"{where(str(trace_id), seq)}: trace_id: no configuration in configs"
                    )
                while pending[-1].trace_id != trace_id:  # traces without operations
                    yield finish(pending.pop(), [])
                current, ops, previous = pending.pop(), [], FIRST_OP_SEQ - 1
            if seq == previous:
                raise TraceError(f"{where(trace_id, seq)}: seq: appears twice")
            if seq != previous + 1:
                raise TraceError(f"{where(trace_id, seq)}: seq: {seq_problem(previous + 1)}")
            previous = seq
            op = parse_op_cell(trace_id, seq, text, current.config)
            ops.append(op_line(op))
    if current is not None:
        yield finish(current, ops)
    while pending:
        yield finish(pending.pop(), [])


def parquet_to_jsonl(path: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """Convert a trace set into a directory of canonical `TRACE_ID.jsonl` files (written
    whole or not at all). Returns the number of traces."""
    trace_set = open_trace_set(path)
    count = 0
    with building_directory(out) as staging:
        for trace_id, lines in trace_set_jsonl(trace_set):
            (staging / f"{trace_id}.jsonl").write_text(
                "".join(line + "\n" for line in lines), encoding="utf-8"
            )
            count += 1
        write_marker_jsonl(staging)
    return count


def write_marker_jsonl(folder: Path) -> None:
    """Marks a directory of converted traces, so a later conversion may replace it."""
    (folder / JSONL_MARKER).write_text(
        canonical_json({"kind": "wanconform JSON Lines traces", "version": 1}) + "\n",
        encoding="utf-8",
    )
