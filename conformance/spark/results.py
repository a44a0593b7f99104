"""What checking traces found, as data: one typed row per trace, and a results directory.

`result_row(result)` turns a `RunResult` (`conformance.running.run`) into one row of
`RESULTS_SCHEMA`, whether the trace ran here (`replay --report`, `report TRACE...`) or on
a Spark executor (`check`): typed columns (verdicts as structs, the divergence as a
struct, coverage as a map); JSON text only for what has no fixed shape (an operation,
a configuration, a differing value). Reports are built from these rows, never from a new
run, so a report shows what the run found, with the run's impl.

A results directory (`wanconform check --out`, a campaign's `results/`):

    results.parquet   one row per trace
    manifest.json     the impl that was checked, the trace set, the format version
    examples.json     the largest failure groups' examples, shrunk and explained
                      (`conformance.search.examples`), so a report of the directory shows them
    failures/ID.jsonl the failing traces (at most `MAX_EXPORTED_FAILURES`), so every
                      printed reproduce command works from the directory alone
    timings.json      each trace's check time in seconds

Only timings.json holds what was measured: the rest is the same, byte for byte, for the
same traces checked again, whatever the partitions (the examples too, unless a
shrinking budget ran out). A row carries its `seconds` (`RESULTS_SCHEMA`); the file's
rows do not (`FILE_SCHEMA`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.properties.checker import PROPERTIES
from conformance.running.run import RunResult
from conformance.search.examples import SCHEMA_FILE as EXAMPLES_SCHEMA
from conformance.search.examples import Example
from traces.canonical import canonical_json
from traces.errors import TraceError, WanconformError
from traces.ops import op_to_json
from traces.outputs import RESULTS_FILE, building_directory
from traces.schema import schema_problem
from traces.text import cut

ALL_PROPERTIES = ("P1", *PROPERTIES)
MAX_DIFFERENCES = 10  # differing paths kept in a result row
MAX_VIOLATIONS = 3  # violation messages kept per property
MAX_EXPORTED_FAILURES = 200  # failing traces written to failures/ as JSON Lines
FORMAT = 2  # 1: the seconds were a column of results.parquet
MANIFEST = "manifest.json"
TIMINGS = "timings.json"
EXAMPLES = "examples.json"
FAILURES = "failures"

_VIOLATION = pa.struct([pa.field("where", pa.string()), pa.field("message", pa.string())])
VERDICT = pa.struct(
    [
        pa.field("status", pa.string()),  # held | failed | not applicable
        pa.field("reason", pa.string()),
        pa.field("violation_count", pa.int64()),
        pa.field("violations", pa.list_(_VIOLATION)),  # the first MAX_VIOLATIONS
    ]
)
_DIFFERENCE = pa.struct(
    [
        pa.field("path", pa.string()),
        pa.field("model", pa.string()),  # canonical JSON, cut to MAX_VALUE_CHARS (traces.text)
        pa.field("impl", pa.string()),
    ]
)
DIVERGENCE = pa.struct(
    [
        pa.field("index", pa.int64()),  # 0-based operation
        pa.field("where", pa.string()),  # "trace:line"
        pa.field("op", pa.string()),  # the operation, canonical JSON
        pa.field("differences", pa.list_(_DIFFERENCE)),  # the first MAX_DIFFERENCES
        pa.field("total", pa.int64()),  # how many paths differed
    ]
)

RESULTS_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("profile", pa.string()),
        pa.field("seed", pa.int64()),
        pa.field("operations", pa.int64()),
        pa.field("events", pa.int64()),  # client events (enqueued)
        pa.field("skipped", pa.int64()),  # operations not enabled (§3)
        pa.field("config", pa.string()),  # the trace's configuration (SPEC §2), canonical JSON
        pa.field("verdicts", pa.struct([pa.field(p.lower(), VERDICT) for p in ALL_PROPERTIES])),
        pa.field("failures", pa.list_(pa.string())),  # signatures (conformance.running.run): groups
        pa.field("divergence", DIVERGENCE),  # null when P1 held
        pa.field("coverage", pa.map_(pa.string(), pa.int64())),  # conformance.running.coverage
        pa.field("bytes_full", pa.int64()),
        pa.field("bytes_delta", pa.int64()),
        pa.field("dropped", pa.int64()),
        pa.field("dead_lettered", pa.int64()),
        pa.field("stopped", pa.string()),  # "" or where the run or the impl stopped early
        pa.field("seconds", pa.float64()),  # the check's time: written to timings.json
    ]
)
"""One row per trace, as the check makes it."""
FILE_SCHEMA = RESULTS_SCHEMA.remove(RESULTS_SCHEMA.get_field_index("seconds"))
"""A row as results.parquet holds it: without its seconds (timings.json)."""
NULLABLE = frozenset(["profile", "seed", "divergence"])
"""The columns a row may leave null (`profile` and `seed` when the traces were not
generated, `divergence` when P1 held)."""


def _cut(value: Any) -> str:
    return cut(canonical_json(value))  # each differing value: MAX_VALUE_CHARS of its JSON


def result_row(
    result: RunResult,
    trace_id: str | None = None,
    profile: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """One row of `RESULTS_SCHEMA` (as plain Python values) for a run."""
    divergence = None
    if result.divergence is not None:
        d = result.divergence
        divergence = {
            "index": d.index,
            "where": d.where,
            "op": canonical_json(op_to_json(d.op)),
            "differences": [
                {"path": x.path, "model": _cut(x.model), "impl": _cut(x.impl)}
                for x in d.differences[:MAX_DIFFERENCES]
            ],
            "total": d.total,
        }
    verdicts = {
        v.property.lower(): {
            "status": v.status,
            "reason": v.reason,
            "violation_count": len(v.violations),
            "violations": [
                {"where": x.where, "message": x.message} for x in v.violations[:MAX_VIOLATIONS]
            ],
        }
        for v in result.verdicts
    }
    senders = result.state["senders"].values()
    stopped = result.stopped or (result.impl_stopped and f"impl stopped at {result.impl_stopped}")
    return {
        "trace_id": trace_id or result.name,
        "profile": profile,
        "seed": seed,
        "operations": result.operations,
        "events": result.events,
        "skipped": result.skipped,
        "config": canonical_json(result.config.to_json()),
        "verdicts": {p.lower(): verdicts.get(p.lower()) for p in ALL_PROPERTIES},
        "failures": result.failures(),
        "divergence": divergence,
        "coverage": dict(sorted(result.coverage.items())),
        "bytes_full": sum(s["stats"]["bytes_full"] for s in senders),
        "bytes_delta": sum(s["stats"]["bytes_delta"] for s in senders),
        "dropped": sum(s["stats"]["events_dropped"] for s in senders),
        "dead_lettered": sum(s["stats"]["dlq_records"] for s in senders),
        "stopped": stopped or "",
        "seconds": result.seconds,
    }


def rows_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=RESULTS_SCHEMA).sort_by("trace_id")


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back from Arrow (`to_pylist`): the coverage map as a dict."""
    coverage = row["coverage"]
    return row | {"coverage": dict(coverage) if not isinstance(coverage, dict) else coverage}


# -- the results directory ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Results:
    """A results directory read back: rows, the impl that produced them, the examples."""

    path: Path
    rows: list[dict[str, Any]]
    impl: str
    traces: str  # the trace set that was checked ("" if unknown)
    examples: dict[str, Example]  # by signature
    notes: dict[str, str]  # why a group has no example


def write_results(
    out: str | os.PathLike[str],
    table: pa.Table,
    impl: str,
    traces: str,
    examples: Sequence[Example] = (),
    notes: dict[str, str] | None = None,
    failures: Iterable[tuple[str, str]] = (),
) -> None:
    """The whole results directory, atomically (it appears at once or not at all).
    `failures`: (trace id, JSON Lines text) of failing traces to export."""
    with building_directory(out) as staging:
        pq.write_table(table.drop_columns(["seconds"]), staging / RESULTS_FILE)
        seconds = dict(
            zip(table["trace_id"].to_pylist(), table["seconds"].to_pylist(), strict=True)
        )
        (staging / TIMINGS).write_text(
            canonical_json({"seconds": seconds}) + "\n", encoding="utf-8"
        )
        manifest = {"format": FORMAT, "impl": impl, "traces": traces}
        (staging / MANIFEST).write_text(canonical_json(manifest) + "\n", encoding="utf-8")
        data = {"examples": [e.to_json() for e in examples], "notes": notes or {}}
        (staging / EXAMPLES).write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
        exported = staging / FAILURES
        for trace_id, text in failures:
            exported.mkdir(exist_ok=True)
            (exported / f"{trace_id}.jsonl").write_text(text, encoding="utf-8")


def results_directory(directory: str | os.PathLike[str]) -> Path:
    """The results directory of a campaign directory (its `results/`) or a results
    directory itself; a one-line error for anything else."""
    root = Path(directory)
    for candidate in (root / "results", root):
        if (candidate / RESULTS_FILE).is_file():
            return candidate
    raise WanconformError(
        f"{directory}: not a campaign or results directory (no results.parquet); "
        "give trace files or the directory `wanconform campaign --out` wrote"
    )


def read_results(directory: str | os.PathLike[str]) -> Results:
    """Read a results directory (or a campaign directory) back."""
    path = results_directory(directory)
    try:
        with open(path / RESULTS_FILE, "rb") as stream:  # pyarrow takes only UTF-8 paths
            table = pq.read_table(stream)
    except (pa.ArrowException, OSError) as exc:  # any of Arrow's: invalid, not implemented
        raise TraceError(f"{path / RESULTS_FILE}: not readable Parquet: {exc}") from None
    if not table.schema.equals(FILE_SCHEMA, check_metadata=False):
        raise TraceError(
            f"{path / RESULTS_FILE}: not the results of this wanconform (its columns differ); "
            "check the traces again with `wanconform check`"
        )
    for name in FILE_SCHEMA.names:
        if name not in NULLABLE and table.column(name).null_count:
            raise TraceError(
                f"{path / RESULTS_FILE}: {name}: {table.column(name).null_count} null cell(s), "
                "where `wanconform check` writes a value in every row"
            )
    manifest = _read_json(path / MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format", FORMAT) != FORMAT:
        raise TraceError(f"{path / MANIFEST}: not a manifest of format {FORMAT}")
    rows = [plain_row(row) for row in table.to_pylist()]
    timings = _read_json(path / TIMINGS)
    seconds = timings.get("seconds") if isinstance(timings, dict) else None
    if not isinstance(seconds, dict) or not all(
        _a_time(seconds.get(row["trace_id"])) for row in rows
    ):
        raise TraceError(f"{path / TIMINGS}: damaged: not a number of seconds for every trace")
    raw = _read_json(path / EXAMPLES)
    problem = schema_problem(EXAMPLES_SCHEMA, raw)
    if problem is not None:
        raise TraceError(f"{path / EXAMPLES}: damaged: {problem}")
    examples = []
    for index, item in enumerate(raw.get("examples", [])):
        try:
            examples.append(Example.from_json(item))
        except (ValueError, WanconformError) as exc:
            raise TraceError(f"{path / EXAMPLES}: damaged: examples.{index}.{exc}") from None
    notes = raw.get("notes", {})
    return Results(
        path=path,
        rows=[row | {"seconds": float(seconds[row["trace_id"]])} for row in rows],
        impl=str(manifest.get("impl") or "impl:Engine"),
        traces=str(manifest.get("traces") or ""),
        examples={example.signature: example for example in examples},
        notes=notes,
    )


def _a_time(value: Any) -> bool:
    """A time `check` measured: a number of seconds, finite and not negative (JSON as
    Python reads it also takes NaN and Infinity)."""
    return type(value) in (int, float) and math.isfinite(value) and value >= 0


def _read_json(path: Path) -> Any:
    """A JSON file `wanconform check` writes beside results.parquet: without it the report
    would name the wrong impl (manifest.json) or leave out every example (examples.json),
    and say nothing."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(
            f"{path}: missing (`wanconform check` writes it beside {RESULTS_FILE}); "
            "check the traces again with `wanconform check`"
        ) from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TraceError(f"{path}: not JSON: {exc}") from None
