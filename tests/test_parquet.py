"""Parquet trace sets (SPEC §12): lossless both ways, and every bad input one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.generation.profiles import PROFILES, generate_trace
from conformance.spark.check import CHECK_INPUT_SCHEMA, check_batches, results_table
from traces.errors import TraceError, WanconformError
from traces.parquet import (
    CONFIGS_SCHEMA,
    MARKER,
    OPS_SCHEMA,
    jsonl_to_parquet,
    op_parser,
    open_trace_set,
    parquet_to_jsonl,
    parse_op_cell,
)
from traces.text import printable
from traces.tracefile import read_trace, trace_text, write_trace
from wanconform.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "traces" / "examples").glob("*.jsonl"))


def canonical(path: Path) -> str:
    trace = read_trace(path)
    return trace_text(trace.config, trace.ops)


def test_every_example_round_trips_jsonl_parquet_jsonl(tmp_path: Path) -> None:
    assert len(EXAMPLES) >= 13
    assert main(["convert", *map(str, EXAMPLES), "--out", str(tmp_path / "set")]) == 0
    trace_set = open_trace_set(tmp_path / "set")
    assert [t.trace_id for t in trace_set.traces] == sorted(p.stem for p in EXAMPLES)
    assert main(["convert", str(tmp_path / "set"), "--out", str(tmp_path / "back")]) == 0
    for path in EXAMPLES:
        assert (tmp_path / "back" / path.name).read_text() == canonical(path), path.name


def test_examples_keep_their_line_numbers_as_seq(tmp_path: Path) -> None:
    # lost_ack_resend.jsonl: line 1 is the configuration, so its operations are lines 2..
    path = next(p for p in EXAMPLES if p.stem == "lost_ack_resend")
    jsonl_to_parquet([path], tmp_path / "set")
    table = pq.read_table(tmp_path / "set" / "ops")
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip()]
    assert table.column("seq").to_pylist() == lines[1:]
    assert table.column("op").to_pylist()[0] == json.loads(path.read_text().splitlines()[1])["op"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_generated_traces_round_trip_both_ways(profile: str, tmp_path: Path) -> None:
    paths = []
    for index in range(3):
        config, ops = generate_trace(5, f"{profile}-{index}", profile, 300)
        path = tmp_path / "jsonl" / f"{profile}-{index}.jsonl"
        path.parent.mkdir(exist_ok=True)
        write_trace(path, config, list(ops))
        paths.append(path)
    jsonl_to_parquet(paths, tmp_path / "set")
    parquet_to_jsonl(tmp_path / "set", tmp_path / "back")
    for path in paths:
        assert (tmp_path / "back" / path.name).read_bytes() == path.read_bytes()
    # ... and Parquet -> JSONL -> Parquet gives the same tables
    jsonl_to_parquet(sorted((tmp_path / "back").glob("*.jsonl")), tmp_path / "again")
    for table, schema in (("configs", CONFIGS_SCHEMA), ("ops", OPS_SCHEMA)):
        first = pq.read_table(tmp_path / "set" / table, schema=schema)
        second = pq.read_table(tmp_path / "again" / table, schema=schema)
        assert first.equals(second), table


def test_typed_columns_follow_the_operation(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"config": {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}}\n'
        '{"op": "put", "site": 1, "key": "k", "value": {"a": 1}}\n'
        '{"op": "deliver", "sender": "ny"}\n'
        '{"op": "tick", "ms": 5}\n'
    )
    jsonl_to_parquet([path], tmp_path / "set")
    rows = pq.read_table(tmp_path / "set" / "ops").to_pylist()
    assert rows == [
        {"trace_id": "t", "seq": 2, "op": "put", "site": 1, "sender": None, "key": "k",
         "json": '{"key":"k","op":"put","site":1,"value":{"a":1}}'},
        {"trace_id": "t", "seq": 3, "op": "deliver", "site": None, "sender": "ny", "key": None,
         "json": '{"op":"deliver","sender":"ny"}'},
        {"trace_id": "t", "seq": 4, "op": "tick", "site": None, "sender": None, "key": None,
         "json": '{"ms":5,"op":"tick"}'},
    ]  # fmt: skip
    configs = pq.read_table(tmp_path / "set" / "configs").to_pylist()
    assert [(c["trace_id"], c["operations"], c["seed"], c["profile"]) for c in configs] == [
        ("t", 3, None, None)
    ]


# -- bad input ---------------------------------------------------------------------------


def good_set(tmp_path: Path) -> Path:
    config, ops = generate_trace(1, "chaos-1", "chaos", 20)
    write_trace(tmp_path / "chaos-1.jsonl", config, list(ops))
    jsonl_to_parquet([tmp_path / "chaos-1.jsonl"], tmp_path / "set")
    return tmp_path / "set"


def rewrite(folder: Path, table: pa.Table) -> None:
    for old in folder.glob("*.parquet"):
        old.unlink()
    pq.write_table(table, folder / "part-0.parquet")


def expect_error(
    tmp_path: Path, trace_set: Path, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(TraceError) as caught:
        parquet_to_jsonl(trace_set, tmp_path / "out")
    assert str(caught.value) == message
    assert main(["convert", str(trace_set), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"wanconform: error: {message}\n"
    assert captured.out == ""
    assert not (tmp_path / "out").exists()  # nothing half-written
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_directory_that_is_not_a_trace_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain").mkdir()
    expect_error(
        tmp_path,
        tmp_path / "plain",
        f"{tmp_path / 'plain'}: not a wanconform trace set (no valid {MARKER}; make one with "
        "`wanconform generate` or `wanconform convert`)",
        capsys,
    )


def test_a_directory_of_jsonl_traces_is_not_a_trace_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `check DIR` of convert's JSON Lines output (or any folder of .jsonl traces) said
    # only "no valid wanconform-traces.json", not that the traces need converting.
    parquet_to_jsonl(good_set(tmp_path), tmp_path / "jsonl")
    assert main(["check", str(tmp_path / "jsonl"), "--out", str(tmp_path / "results")]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"wanconform: error: {tmp_path / 'jsonl'}: a directory of JSON Lines traces, not a "
        f"trace set; make one with `wanconform convert {tmp_path / 'jsonl'}/*.jsonl --out SET`\n"
    )
    assert not (tmp_path / "results").exists()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "t.jsonl").write_bytes(
        (tmp_path / "jsonl" / "chaos-1.jsonl").read_bytes()
    )
    with pytest.raises(TraceError, match="a directory of JSON Lines traces, not a trace set"):
        open_trace_set(tmp_path / "plain")


def test_a_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_set = good_set(tmp_path)
    rewrite(trace_set / "ops", pq.read_table(trace_set / "ops").drop_columns(["seq"]))
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-0.parquet'}: column 'seq' missing (SPEC §12 trace set)",
        capsys,
    )  # fmt: skip


def test_a_missing_column_in_the_first_of_several_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A generated set has 64 files or more: the folder alone (what was named when the
    # first file was the bad one) left the user to search them all.
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    rewrite(trace_set / "ops", table.slice(0, 5).drop_columns(["key"]))
    pq.write_table(table.slice(5), trace_set / "ops" / "part-1.parquet")
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-0.parquet'}: column 'key' missing (SPEC §12 trace set)",
        capsys,
    )  # fmt: skip


def test_an_unknown_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Another tool's extra column was dropped silently; a missing one is refused, so is this.
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "configs")
    rewrite(trace_set / "configs", table.append_column("note", pa.array(["x"])))
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'configs' / 'part-0.parquet'}: column 'note' unknown (SPEC §12 trace set)",
        capsys,
    )  # fmt: skip


def test_an_unknown_column_in_a_later_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    rewrite(trace_set / "ops", table.slice(0, 5))
    later = table.slice(5)
    later = later.append_column("extra", pa.array([1] * len(later), type=pa.int64()))
    pq.write_table(later, trace_set / "ops" / "part-1.parquet")
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-1.parquet'}: column 'extra' unknown (SPEC §12 trace set)",
        capsys,
    )  # fmt: skip


def test_a_trace_set_without_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Its tables emptied: check printed a summary of 0 traces (exit 0), convert wrote an
    # empty folder of JSON Lines traces.
    trace_set = good_set(tmp_path)
    for table in ("configs", "ops"):
        rewrite(trace_set / table, pq.read_table(trace_set / table).slice(0, 0))
    message = f"{trace_set}: holds no traces (its configs/ has no rows)"
    expect_error(tmp_path, trace_set, message, capsys)
    assert main(["check", str(trace_set), "--out", str(tmp_path / "results")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"wanconform: error: {message}\n"
    assert captured.out == ""
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("table", ["configs", "ops"])
def test_a_folder_without_files(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its files deleted: the message was "column 'trace_id' missing" (an empty schema).
    trace_set = good_set(tmp_path)
    for part in (trace_set / table).iterdir():
        part.unlink()
    expect_error(
        tmp_path, trace_set, f"{trace_set / table}: no Parquet files (SPEC §12 trace set)", capsys
    )


def test_a_mistyped_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "configs")
    index = table.schema.get_field_index("operations")
    table = table.set_column(index, "operations", table.column(index).cast(pa.string()))
    rewrite(trace_set / "configs", table)
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'configs' / 'part-0.parquet'}: column 'operations' must be int64, "
        "got string",
        capsys,
    )  # fmt: skip


def test_an_invalid_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "configs")
    config = json.loads(table.column("config")[0].as_py())
    config["senders"][0]["batch_size"] = 0
    index = table.schema.get_field_index("config")
    table = table.set_column(index, "config", pa.array([json.dumps(config)]))
    rewrite(trace_set / "configs", table)
    expect_error(
        tmp_path, trace_set, "chaos-1:1: config.senders[0].batch_size: must be >= 1, got 0", capsys
    )


def test_an_operation_that_breaks_spec_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    texts = table.column("json").to_pylist()
    texts[4] = '{"op": "deliver", "sender": "nobody"}'
    index = table.schema.get_field_index("json")
    rewrite(trace_set / "ops", table.set_column(index, "json", pa.array(texts)))
    senders = [s.id for s in open_trace_set(trace_set).traces[0].config.senders]
    expect_error(
        tmp_path, trace_set,
        f"chaos-1:6: sender: unknown sender 'nobody' (the config has {senders})", capsys,
    )  # fmt: skip


def test_operations_missing_from_ops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_set = good_set(tmp_path)
    rewrite(trace_set / "ops", pq.read_table(trace_set / "ops").slice(0, 15))
    expect_error(
        tmp_path, trace_set, "chaos-1:1: operations: configs says 20, ops has 15 rows", capsys
    )


def test_two_rows_with_one_seq(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    seqs = table.column("seq").to_pylist()
    seqs[3] = seqs[2]
    index = table.schema.get_field_index("seq")
    rewrite(trace_set / "ops", table.set_column(index, "seq", pa.array(seqs, pa.int64())))
    expect_error(tmp_path, trace_set, f"chaos-1:{seqs[2]}: seq: appears twice", capsys)


def test_a_gap_in_seq(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # seq is the operation's line (docs/COMMANDS.md): a missing one is a missing operation
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    seqs = table.column("seq").to_pylist()
    seqs[3:] = [seq + 7 for seq in seqs[3:]]  # 2, 3, 4, 12, 13 ...
    index = table.schema.get_field_index("seq")
    rewrite(trace_set / "ops", table.set_column(index, "seq", pa.array(seqs, pa.int64())))
    expect_error(
        tmp_path, trace_set,
        "chaos-1:12: seq: expected 5 (seq is the operation's line in the trace: none missing)",
        capsys,
    )  # fmt: skip


def with_null(table: pa.Table, column: str, row: int) -> pa.Table:
    """`table` with one cell of `column` null, as another tool may write it (nullable)."""
    index = table.schema.get_field_index(column)
    cells = table.column(index).to_pylist()
    cells[row] = None
    field = table.schema.field(index).with_nullable(True)
    return table.cast(table.schema.set(index, field)).set_column(
        index, field, pa.array(cells, field.type)
    )


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("trace_id", "{ops}: trace_id: missing (null) in a row of seq 5"),
        ("seq", "chaos-1: seq: missing (null) in a row of {ops}"),
        ("json", "chaos-1:5: json: missing (null)"),
    ],
)
def test_a_null_cell_in_ops(
    column: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A file written with nullable columns passes the schema check; a null seq, trace id
    # or json made `check` fail inside Spark's job with a traceback (exit 1).
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops").sort_by("seq")
    rewrite(trace_set / "ops", with_null(table, column, 3))
    expect_error(tmp_path, trace_set, message.format(ops=trace_set / "ops"), capsys)
    # What Spark streams to a check: the rows sorted by (trace id, seq), nulls first.
    configs = pq.read_table(trace_set / "configs").to_pylist()[0]
    rows = [{"trace_id": "chaos-1", "seq": 1, "kind": "config", "json": configs["config"]}]
    rows += [row | {"kind": "op"} for row in with_null(table, column, 3).to_pylist()]
    rows.sort(key=lambda r: (r["trace_id"] is not None, r["trace_id"] or "", r["seq"] or 0))
    batch = pa.RecordBatch.from_pylist(rows, schema=CHECK_INPUT_SCHEMA)
    with pytest.raises(WanconformError) as caught:
        results_table(check_batches([batch]))
    assert str(caught.value).startswith(message.format(ops="ops"))


@pytest.mark.parametrize(
    ("trace_id", "problem"),
    [
        ("../../escaped", "must not hold / or \\ (it names files in one folder)"),
        ("/tmp/escaped", "must not hold / or \\ (it names files in one folder)"),
        ("..", "must not be . or .. (it names files)"),
        ("a\x00b", "must not hold a control character (it names files)"),
        ("é" * 101, "longer than 200 bytes in UTF-8 (it names files)"),
    ],
)
def test_a_trace_id_that_cannot_name_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace_id: str, problem: str
) -> None:
    # A trace id names ID.jsonl (convert), failures/ID.jsonl (check) and --dlq-dir's ID/:
    # one that is a path would write outside the output, over a file wanconform never wrote.
    trace_set = good_set(tmp_path)
    for folder in ("configs", "ops"):
        table = pq.read_table(trace_set / folder)
        ids = pa.array([trace_id] * table.num_rows)
        index = table.schema.get_field_index("trace_id")
        rewrite(trace_set / folder, table.set_column(index, "trace_id", ids))
    shown = printable(trace_id[:60]) + ("..." if len(trace_id) > 60 else "")
    expect_error(tmp_path, trace_set, f'{trace_set}/configs: trace_id "{shown}": {problem}', capsys)


def test_convert_of_one_trace_says_one_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good_set(tmp_path)  # also writes chaos-1.jsonl
    assert main(["convert", str(tmp_path / "chaos-1.jsonl"), "--out", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 's'}: trace set of 1 trace, 20 operations\n"


def test_convert_does_not_replace_a_foreign_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["convert", str(EXAMPLES[0]), "--out", str(tmp_path / "mine")]) == 2
    assert "exists and is not a wanconform output" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_op_parser_reads_what_parse_op_cell_reads(profile: str) -> None:
    config, stream = generate_trace(2, f"{profile}-000001", profile, 600)
    lines = trace_text(config, list(stream)).splitlines()[1:]
    parse = op_parser("t", config)
    for seq, text in enumerate(lines, 2):
        assert parse(seq, text) == parse_op_cell("t", seq, text, config)


def test_op_parser_takes_non_canonical_cells_and_names_bad_ones() -> None:
    config, _ = generate_trace(0, "steady-000000", "steady", 10)
    parse = op_parser("t", config)
    spaced = '{"op": "put", "site": 1, "key": "k", "value": {"a": "\\u00e9"}}'
    assert parse(7, spaced) == parse_op_cell("t", 7, spaced, config)
    assert parse(7, spaced).value == {"a": "é"}  # type: ignore[union-attr]
    with pytest.raises(TraceError, match=r"^t:9: site: "):
        parse(9, '{"key":"k","op":"put","site":5,"value":{}}')  # site 5 is not configured


def test_a_mistyped_column_in_a_later_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The dataset's schema is its first file's: a second file with `seq` as strings made
    # `check` fail inside Spark's job with a Java traceback (exit 1).
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    rewrite(trace_set / "ops", table.slice(0, 5))
    index = table.schema.get_field_index("seq")
    later = table.slice(5).set_column(index, "seq", table.column(index).slice(5).cast(pa.string()))
    pq.write_table(later, trace_set / "ops" / "part-1.parquet")
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-1.parquet'}: column 'seq' must be int64, got string",
        capsys,
    )  # fmt: skip


def test_a_later_file_that_is_not_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_set = good_set(tmp_path)
    (trace_set / "configs" / "part-9.parquet").write_text("hello\n")
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'configs'}: not readable Parquet: Could not open Parquet input source "
        f"'{trace_set / 'configs' / 'part-9.parquet'}': Parquet file size is 6 bytes, smaller "
        "than the minimum file footer (8 bytes)", capsys,
    )  # fmt: skip


def test_a_string_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A damaged file: a cell of a string column holding bytes that are not UTF-8.
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    index = table.schema.get_field_index("json")
    cells = [b"\xff" + cell.as_py().encode() for cell in table.column(index)]
    table = table.set_column(index, "json", pa.array(cells, pa.binary()).view(pa.string()))
    rewrite(trace_set / "ops", table)
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-0.parquet'}: not readable Parquet: Column 2: In chunk 0: "
        "Invalid: Invalid UTF8 sequence at string index 0", capsys,
    )  # fmt: skip
    # What Spark streams to a check: the trace's rows, one of them damaged so.
    rows = pa.RecordBatch.from_pylist(
        [
            {
                "trace_id": "t",
                "seq": 1,
                "kind": "config",
                "json": json.dumps({"sites": [1, 2], "senders": []}),
            }
        ],
        schema=CHECK_INPUT_SCHEMA,
    )
    bad = pa.RecordBatch.from_arrays(
        [
            pa.array(["t"]), pa.array([2]), pa.array(["op"]),
            pa.array([b"\xff{}"], pa.binary()).view(pa.string()),
            pa.nulls(1, pa.string()), pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()),
        ],
        schema=CHECK_INPUT_SCHEMA,
    )  # fmt: skip
    with pytest.raises(WanconformError, match=r"^t: not readable: a string is not UTF-8"):
        results_table(check_batches([rows, bad]))


def test_a_later_file_with_a_damaged_string_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Arrow's message for data it cannot decode names no file: "ops: not readable" left
    # the user to search the 64 or more files of a generated set.
    trace_set = good_set(tmp_path)
    table = pq.read_table(trace_set / "ops")
    rewrite(trace_set / "ops", table.slice(0, 5))
    later = table.slice(5)
    index = later.schema.get_field_index("json")
    cells = [cell.as_py().encode() for cell in later.column(index)]
    cells[2] = b"\xff" + cells[2]
    later = later.set_column(index, "json", pa.array(cells, pa.binary()).view(pa.string()))
    pq.write_table(later, trace_set / "ops" / "part-1.parquet")
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops' / 'part-1.parquet'}: not readable Parquet: Column 2: In chunk 0: "
        "Invalid: Invalid UTF8 sequence at string index 2", capsys,
    )  # fmt: skip


def test_a_file_arrow_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by `make fuzz` (input 476874 of seed 1): a byte changed in an ops file's
    # footer makes Arrow read a 128-bit integer type, which it does not implement
    # (ArrowNotImplementedError, not ArrowInvalid).
    import shutil

    trace_set = tmp_path / "set"
    shutil.copytree(Path(__file__).parent / "data" / "parquet" / "damaged-footer", trace_set)
    expect_error(
        tmp_path, trace_set,
        f"{trace_set / 'ops'}: not readable Parquet: Error creating dataset. Could not read "
        f"schema from '{trace_set / 'ops' / 'part-00000.parquet'}'. Is this a 'parquet' "
        "file?: Integers with more than 64 bits not implemented", capsys,
    )  # fmt: skip


def test_a_trace_with_blank_lines_converts_to_a_set_that_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SPEC §12: converting loses nothing. A trace may hold blank lines (docs/COMMANDS.md,
    # "Trace files"); the set's seq is the line in the trace written one operation a
    # line: put 2, deliver 3 (not their source lines 3 and 5, which the reader, seeing
    # a gap, took for a missing operation: "bl:3: seq: expected 2").
    sender = {"id": "ny", "site": 1, "remote": 2, "batch_size": 1}
    config = json.dumps({"config": {"sites": [1, 2], "senders": [sender]}})
    put = '{"op":"put","site":1,"key":"k","value":{"v":1}}'
    deliver = '{"op":"deliver","sender":"ny"}'
    (tmp_path / "bl.jsonl").write_text("\n".join([config, "", put, "", deliver]) + "\n")
    assert main(["convert", str(tmp_path / "bl.jsonl"), "--out", str(tmp_path / "set")]) == 0
    assert pq.read_table(tmp_path / "set" / "ops").column("seq").to_pylist() == [2, 3]
    assert main(["convert", str(tmp_path / "set"), "--out", str(tmp_path / "back")]) == 0
    back = (tmp_path / "back" / "bl.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in back[1:]] == [json.loads(put), json.loads(deliver)]
    capsys.readouterr()
