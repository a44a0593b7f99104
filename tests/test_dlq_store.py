"""The impl's durable dead-letter store (impl/dlq_store.py, docs/DLQ_STORE.md), `replay
--dlq-dir` and `wanconform dlq`: records survive, a torn tail is cut, damage is named,
secure mode writes no value, and the lockstep compares what the store reads back."""

from __future__ import annotations

import csv
import json
import os
import re
import stat
import zlib
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from impl import Engine, dlq_store
from impl.dlq_store import (
    HEADER,
    MAGIC,
    StoreError,
    frame,
    open_store,
    read_store,
    sender_file,
)
from traces.config import parse_config
from traces.ops import Deliver, DeliverAck, Fail, Put, Redeliver
from wanconform.cli import main


def config(secure: bool = False) -> Any:
    sender = {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq",
              "dlq_secure": secure}  # fmt: skip
    return parse_config({"sites": [1, 2], "senders": [sender]})


def dead_letters(engine: Engine, *keys: str) -> None:
    """Each key written at site 1 fails at site 2 and is dead-lettered (R16.2, R24)."""
    for key in keys:
        for op in (Fail(2, key, "E", 1), Put(1, key, {"v": f"SECRET-{key}"}), Deliver("ny"),
                   DeliverAck("ny")):  # fmt: skip
            engine.apply(op)


def record(event: str, key: str) -> dict[str, Any]:
    value = {"v": f"SECRET-{key}"}
    return {"event_id": event, "sender": "ny", "key": key, "op": "create", "exception": "E",
            "version": [1, 0, 1], "value": value, "recipients": [1, 2], "thread": 0}  # fmt: skip


def test_r24_records_are_in_the_file_and_a_new_engine_recovers_them(tmp_path: Path) -> None:
    engine = Engine(config(), dlq_dir=str(tmp_path))
    dead_letters(engine, "a", "b")
    assert engine.observe()["senders"]["ny"]["dlq"] == [record("1:1", "a"), record("1:2", "b")]
    # a restart on the same directory: the records are there, once each, in order
    again = Engine(config(), dlq_dir=str(tmp_path))
    assert again.observe()["senders"]["ny"]["dlq"] == [record("1:1", "a"), record("1:2", "b")]
    assert read_store(tmp_path) == {"ny.dlq": [record("1:1", "a"), record("1:2", "b")]}


def test_r26_redelivery_removes_records_durably_and_compacts(tmp_path: Path) -> None:
    engine = Engine(config(), dlq_dir=str(tmp_path))
    dead_letters(engine, "a", "b", "c")
    engine.apply(Redeliver("ny", ("1:2",)))
    assert read_store(tmp_path)["ny.dlq"] == [record("1:1", "a"), record("1:3", "c")]
    engine.apply(Redeliver("ny"))
    assert read_store(tmp_path)["ny.dlq"] == []
    # 3 adds and 2 removes for no live record: compacted to an empty file
    assert (tmp_path / "ny.dlq").stat().st_size == 0


def test_p7_secure_mode_writes_no_value_byte(tmp_path: Path) -> None:
    plain, secure = tmp_path / "plain", tmp_path / "secure"
    plain.mkdir()
    secure.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(plain)), "a")
    dead_letters(Engine(config(secure=True), dlq_dir=str(secure)), "a")
    assert b"SECRET-a" in (plain / "ny.dlq").read_bytes()
    assert b"SECRET-a" not in (secure / "ny.dlq").read_bytes()
    assert b'"event_id":"1:1"' in (secure / "ny.dlq").read_bytes()


def test_a_torn_tail_is_cut_once_and_the_whole_records_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead_letters(Engine(config(), dlq_dir=str(tmp_path)), "a", "b")
    path = tmp_path / "ny.dlq"
    first = len(frame({"add": record("1:1", "a")}))
    for cut in (first + 3, first + HEADER + 5, path.stat().st_size - 1):  # mid header, mid payload
        data = path.read_bytes()
        path.write_bytes(data[:cut] if cut < len(data) else data)
        logs = open_store(tmp_path, ["ny"], print)
        assert logs["ny"].records == [record("1:1", "a")]
        assert path.stat().st_size == first
        assert f"cut a torn tail of {cut - first} bytes at byte {first}" in capsys.readouterr().out
        logs["ny"].append(record("1:2", "b"))  # and it writes on after the cut
        logs["ny"].close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:HEADER + 3] + bytes([d[HEADER + 3] ^ 1]) + d[HEADER + 4:],
         "byte 0: damaged frame (checksum mismatch)"),
        (lambda d: b"XXXX" + d[4:], "byte 0: not a dead-letter frame"),
    ],
)  # fmt: skip
def test_damage_before_the_tail_is_an_error_naming_file_and_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, message: str
) -> None:
    dead_letters(Engine(config(), dlq_dir=str(tmp_path)), "a", "b")
    path = tmp_path / "ny.dlq"
    path.write_bytes(damage(path.read_bytes()))
    before = path.read_bytes()
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(tmp_path, ["ny"], print)
    assert main(["dlq", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"wanconform: error: {path}: {message}" + err.split(message, 1)[1]
    assert err.count("\n") == 1
    assert path.read_bytes() == before  # nothing changed on disk


@pytest.mark.parametrize(
    ("length", "why"),
    [
        (lambda size: 1 << 20, "length runs past the end of the file"),
        (lambda size: size - HEADER, "checksum mismatch"),  # as if the whole rest were one
    ],
)
def test_a_damaged_length_followed_by_whole_frames_is_damage_not_a_torn_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], length: Any, why: str
) -> None:
    """A crash mid-append tears the last frame alone: a first frame whose length field
    was damaged, with whole frames after it, is damage (the writer's recovery would
    otherwise cut every dead letter after it as a torn tail)."""
    dead_letters(Engine(config(), dlq_dir=str(tmp_path)), "a", "b", "c")
    path = tmp_path / "ny.dlq"
    data = path.read_bytes()
    second = HEADER + int.from_bytes(data[4:8], "big")  # where the second frame begins
    damaged = data[:4] + length(len(data)).to_bytes(4, "big") + data[8:]
    path.write_bytes(damaged)
    message = f"byte 0: damaged frame ({why}, but a whole frame follows at byte {second})"
    with pytest.raises(StoreError, match=re.escape(f"{path}: {message}")):
        open_store(tmp_path, ["ny"], print)
    assert main(["dlq", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"wanconform: error: {path}: {message}\n"
    assert path.read_bytes() == damaged  # nothing cut


def test_replay_with_a_store_compares_what_it_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    cfg = {"config": config().to_json()}
    ops = [{"op": "fail", "site": 2, "key": "k", "exception": "E", "times": 1},
           {"op": "put", "site": 1, "key": "k", "value": {"v": 1}},
           {"op": "deliver", "sender": "ny"}, {"op": "deliver_ack", "sender": "ny"},
           {"op": "put", "site": 1, "key": "j", "value": {"v": 2}},
           {"op": "redeliver", "sender": "ny"}, {"op": "settle"}]  # fmt: skip
    trace.write_text("".join(json.dumps(x) + "\n" for x in [cfg, *ops]))
    store = tmp_path / "store"
    store.mkdir()
    assert main(["replay", "--engine", "both", "--dlq-dir", str(store), str(trace)]) == 0
    assert "P1: held" in capsys.readouterr().out
    assert read_store(store / "t") == {"ny.dlq": []}
    # the same store again: refused before any work
    assert main(["replay", "--engine", "both", "--dlq-dir", str(store), str(trace)]) == 2
    assert "exists and is not empty (a store of an earlier run); choose another DIR" in (
        capsys.readouterr().err
    )
    # a DIR that is not there is made, and stderr says where the store is (issue 31)
    missing = tmp_path / "no" / "such"
    assert main(["replay", "--engine", "both", "--dlq-dir", str(missing), str(trace)]) == 0
    assert f"t.jsonl: dead letters in {missing / 't'}\n" in capsys.readouterr().err
    assert read_store(missing / "t") == {"ny.dlq": []}
    # `wanconform dlq DIR` reads the one store under the DIR given (issue 31)
    assert main(["dlq", str(missing)]) == 0
    assert capsys.readouterr().out.endswith("0 records\n")
    (tmp_path / "u.jsonl").write_text(trace.read_text())
    second = str(tmp_path / "u.jsonl")
    assert main(["replay", "--engine", "both", "--dlq-dir", str(missing), second]) == 0
    capsys.readouterr()
    assert main(["dlq", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {missing}: holds the stores of 2 traces (t, u); give one, e.g. "
        f"`wanconform dlq {missing / 't'}`\n"
    )
    (tmp_path / "file").write_text("")
    assert (
        main(["replay", "--engine", "impl", "--dlq-dir", str(tmp_path / "file"), str(trace)]) == 2
    )
    assert capsys.readouterr().err == (
        f"wanconform: error: --dlq-dir: {tmp_path / 'file'}: exists and is not a directory\n"
    )


def test_the_inspector_lists_filters_counts_exports_and_writes_redeliveries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "a", "b")
    assert main(["dlq", str(store), "--key", "b"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["ny", "1:2", "b", "create", "E", "[1,0,1]", '{"v":"SECRET-b"}']
    assert out[-1] == "1 record"
    assert main(["dlq", str(store), "--counts"]) == 0
    assert capsys.readouterr().out.split() == ["2", "E", "2", "records", "in", "all"]
    assert main(["dlq", str(store), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [(r["event_id"], r["value"]) for r in rows] == [
        ("1:1", '{"v":"SECRET-a"}'), ("1:2", '{"v":"SECRET-b"}')
    ]  # fmt: skip
    assert main(["dlq", str(store), "--format", "parquet", "-o", str(tmp_path / "r.parquet")]) == 0
    assert pq.read_table(tmp_path / "r.parquet").column("event_id").to_pylist() == ["1:1", "1:2"]
    # pyarrow takes only UTF-8 paths: a folder named with byte 0xff was a traceback
    byte = tmp_path / os.fsdecode(b"b\xff")
    byte.mkdir()
    assert main(["dlq", str(store), "--format", "parquet", "-o", str(byte / "r.parquet")]) == 0
    with open(byte / "r.parquet", "rb") as stream:
        assert pq.read_table(stream).column("event_id").to_pylist() == ["1:1", "1:2"]
    ops = tmp_path / "ops.jsonl"
    assert main(["dlq", str(store), "--redeliver", "--event", "1:2", "-o", str(ops)]) == 0
    assert ops.read_text() == '{"events":["1:2"],"op":"redeliver","sender":"ny"}\n'


def test_the_inspector_exports_cells_a_spreadsheet_would_run_exactly_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the CSV is data, not a spreadsheet (docs/COMMANDS.md): no cell is changed or prefixed
    store = tmp_path / "store"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "=1+1", "@A1")
    assert main(["dlq", str(store), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    assert (tmp_path / "r.csv").read_text() == (
        "sender,event_id,key,op,exception,version,value,recipients\n"
        'ny,1:1,=1+1,create,E,"[1,0,1]","{""v"":""SECRET-=1+1""}","[1,2]"\n'
        'ny,1:2,@A1,create,E,"[1,0,1]","{""v"":""SECRET-@A1""}","[1,2]"\n'
    )


def test_the_inspector_says_which_filter_selects_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "a", "b")
    assert main(["dlq", str(store), "--key", "zz"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "0 records"
    assert err == f"wanconform: no dead letter with key 'zz' in {store}\n"
    # each value no record has, in turn; one found is not named
    assert main(["dlq", str(store), "--key", "a", "--key", "a\nc", "--event", "9:9"]) == 0
    assert capsys.readouterr().err == (
        f"wanconform: no dead letter with key 'a\\nc' in {store}\n"
        f"wanconform: no dead letter with event '9:9' in {store}\n"
    )
    # each value is held, by different records: together they select none
    ops = tmp_path / "ops.jsonl"
    assert main(["dlq", str(store), "--key", "a", "--event", "1:2", "--redeliver", "-o",
                 str(ops)]) == 0  # fmt: skip
    assert capsys.readouterr() == (
        f"{ops}: 0 redeliver operations for 0 records\n",
        f"wanconform: no dead letter in {store} matches all the filters\n",
    )
    assert main(["dlq", str(store), "--key", "a", "--exception", "E"]) == 0
    assert capsys.readouterr().err == ""


def test_the_inspector_notices_are_one_line_whatever_the_store_is_called(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "run\n1"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "a")
    with (store / "ny.dlq").open("ab") as log:
        log.write(b"torn")  # a crash mid-write
    size = (store / "ny.dlq").stat().st_size
    assert main(["dlq", str(store), "--key", "zz"]) == 0
    assert capsys.readouterr().err == (
        f"wanconform: {tmp_path}/run\\n1/ny.dlq: a torn tail of 4 bytes at byte {size - 4} (a "
        "crash mid-write) was not read; the store was not changed (the next run that opens it "
        "cuts it)\n"
        f"wanconform: no dead letter with key 'zz' in {tmp_path}/run\\n1\n"
    )


def test_the_inspector_names_an_output_that_is_not_utf_8_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a file name's byte 0xfc (surrogate-escaped) printed raw to a UTF-8 stdout was a
    # traceback after the file was written
    store = tmp_path / "store"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "a")
    export, ops = tmp_path / os.fsdecode(b"\xfc.csv"), tmp_path / os.fsdecode(b"\xfc.jsonl")
    assert main(["dlq", str(store), "--format", "csv", "-o", str(export)]) == 0
    assert main(["dlq", str(store), "--redeliver", "-o", str(ops)]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}/\\udcfc.csv: 1 record\n"
        f"{tmp_path}/\\udcfc.jsonl: 1 redeliver operation for 1 record\n"
    )
    assert ops.read_text() == '{"events":["1:1"],"op":"redeliver","sender":"ny"}\n'


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "x.txt"], "dlq: -o FILE goes with --format jsonl|csv|parquet or --redeliver "
                          "(the listing and --counts print)"),
        (["--counts", "-o", "x.txt"], "dlq: -o FILE goes with --format jsonl|csv|parquet or "
                                      "--redeliver (the listing and --counts print)"),
        (["--format", "csv", "--redeliver", "-o", "x"], "dlq: --redeliver writes redeliver "
                                                        "operations; not with --format csv"),
        (["--counts", "--redeliver", "-o", "x"], "dlq: --redeliver writes redeliver operations; "
                                                 "not with --counts"),
        (["--counts", "--format", "jsonl", "-o", "x"], "dlq: --counts prints the counts; not "
                                                       "with --format jsonl"),
        (["--sender", "nyy"], "{store}: holds no log of sender 'nyy' (it has records of ny)"),
        (["--format", "csv"], "dlq: --format csv needs -o FILE"),
        (["--redeliver"], "dlq: --redeliver needs -o FILE"),
    ],
)  # fmt: skip
def test_the_inspector_refuses_what_it_would_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    dead_letters(Engine(config(), dlq_dir=str(store)), "a")
    argv = [str(tmp_path / a) if a in ("x", "x.txt") else a for a in argv]
    assert main(["dlq", str(store), *argv]) == 2
    assert capsys.readouterr() == ("", f"wanconform: error: {message.format(store=store)}\n")
    assert list(tmp_path.iterdir()) == [store]  # nothing written


def test_the_inspector_escapes_text_says_a_tail_is_torn_and_types_an_empty_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    engine = Engine(config(), dlq_dir=str(store))
    for op in (Fail(2, "a\nb", "IO\nE", 1), Put(1, "a\nb", {"v": 1}), Deliver("ny"),
               DeliverAck("ny")):  # fmt: skip
        engine.apply(op)
    with (store / "ny.dlq").open("ab") as log:
        log.write(b"torn")  # a crash mid-write
    size = (store / "ny.dlq").stat().st_size
    assert main(["dlq", str(store)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1].split() == ["ny", "1:1", "a\\nb", "create", "IO\\nE", "[1,0,1]",
                                           '{"v":1}']  # fmt: skip
    assert err == (
        f"wanconform: {store / 'ny.dlq'}: a torn tail of 4 bytes at byte {size - 4} (a crash "
        "mid-write) was not read; the store was not changed (the next run that opens it cuts "
        "it)\n"
    )
    assert (store / "ny.dlq").stat().st_size == size  # read only
    assert main(["dlq", str(store), "--counts"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["1", "IO\\nE"]
    empty = tmp_path / "none.parquet"
    assert main(["dlq", str(store), "--key", "z", "--format", "parquet", "-o", str(empty)]) == 0
    schema = pq.read_schema(empty)
    assert [(f.name, str(f.type)) for f in schema] == [
        (name, "string") for name in ("sender", "event_id", "key", "op", "exception", "version",
                                      "value", "recipients")
    ]  # fmt: skip


def test_the_inspector_refuses_what_is_not_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    for path, message in ((tmp_path / "none", "no such directory"),
                          (tmp_path / "file", "not a directory"),
                          (other, "not a dead-letter store")):  # fmt: skip
        assert main(["dlq", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"wanconform: error: {path}: ") and message in err
        assert err.count("\n") == 1


def test_the_inspector_reads_a_store_it_may_not_write_and_names_a_folder_it_may_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "run" / "t"
    store.mkdir(parents=True)
    logs = open_store(store, ["ny"], lambda line: None)
    logs["ny"].append(record("1:1", "a"))
    logs["ny"].close()
    real_access = os.access  # a read-only disk, or another user's store: no W_OK
    monkeypatch.setattr(
        os, "access", lambda path, mode: not mode & os.W_OK and real_access(path, mode)
    )
    assert main(["dlq", str(store), "--counts"]) == 0
    assert capsys.readouterr().out == "       1  E\n       1  record in all\n"
    monkeypatch.undo()
    real_iterdir = Path.iterdir

    def iterdir(path: Path) -> Any:
        if path == store:
            raise PermissionError(13, "Permission denied", str(path))
        return real_iterdir(path)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    assert main(["dlq", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {store}: cannot read it: Permission denied\n"
    )


def test_frames_start_with_the_magic() -> None:
    assert frame({"remove": ["1:1"]})[:4] == MAGIC


def test_bench_dlq_crash_kills_a_real_writer_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A small N (make test); the README records N = 1,000.
    assert main(["bench", "--dlq-crash", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kills"] == 5 and result["power_loss_trials"] >= 1
    assert result["records_durable"] > 0
    for name in ("lost", "duplicated", "torn_accepted", "unopenable", "resurrected"):
        assert result[name] == 0, name


def test_check_refuses_a_store_an_earlier_run_left_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # check and campaign emptied each trace's store folder as they started it: the
    # records of an earlier run were lost without a word; replay refused them already.
    trace = (
        Path(__file__).parent.parent / "traces" / "examples" / "failed_event_dead_lettered.jsonl"
    )
    trace_set = tmp_path / "set"
    assert main(["convert", str(trace), "--out", str(trace_set)]) == 0
    stores = tmp_path / "stores"
    (stores / "failed_event_dead_lettered").mkdir(parents=True)
    (stores / "failed_event_dead_lettered" / "ny.dlq").write_bytes(b"earlier")
    capsys.readouterr()
    argv = ["check", str(trace_set), "--out", str(tmp_path / "res"), "--dlq-dir", str(stores)]
    assert main(argv) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: --dlq-dir: {stores / 'failed_event_dead_lettered'} exists and is "
        "not empty (a store of an earlier run); choose another DIR\n",
    )
    assert (stores / "failed_event_dead_lettered" / "ny.dlq").read_bytes() == b"earlier"
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(
    ("where", "name"), [("res/dlq", "the output --out"), ("set/s", "the input")]
)
def test_check_refuses_a_store_in_its_output_or_input_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, name: str
) -> None:
    # In --out, the stores made the output's folder exist: the whole check ran, then
    # ended "exists and is not a wanconform output" with nothing written (exit 2).
    trace = (
        Path(__file__).parent.parent / "traces" / "examples" / "failed_event_dead_lettered.jsonl"
    )
    trace_set = tmp_path / "set"
    assert main(["convert", str(trace), "--out", str(trace_set)]) == 0
    capsys.readouterr()
    for flag in ("--dlq-dir", "--queue-dir"):
        stores = tmp_path / where
        argv = ["check", str(trace_set), "--out", str(tmp_path / "res"), flag, str(stores)]
        assert main(argv) == 2
        path = tmp_path / where.split("/")[0]
        assert capsys.readouterr() == (
            "",
            f"wanconform: error: {flag}: {stores}: is in {name} {path}; give the store a path "
            "of its own\n",
        )
        assert not (tmp_path / "res").exists() and not stores.exists()


def test_check_refuses_a_store_in_another_wanconform_output_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stores went into another output (here a trace set; a campaign alike): files
    # wanconform did not write there, which then blocked replacing it with --force.
    trace = (
        Path(__file__).parent.parent / "traces" / "examples" / "failed_event_dead_lettered.jsonl"
    )
    for name in ("set", "other"):
        assert main(["convert", str(trace), "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    other = Path(os.path.realpath(tmp_path / "other"))
    for flag in ("--dlq-dir", "--queue-dir"):
        stores = tmp_path / "other" / "s"
        argv = ["check", str(tmp_path / "set"), "--out", str(tmp_path / "res"), flag, str(stores)]
        assert main(argv) == 2
        assert capsys.readouterr() == (
            "",
            f"wanconform: error: {flag}: {stores}: is in {other}, a trace set wanconform "
            "wrote; give the store a path of its own\n",
        )
        assert not (tmp_path / "res").exists() and not stores.exists()


def test_the_inspector_takes_a_sender_that_a_record_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a record of ln in ny's log (an edited store): the listing showed sender ln, and
    # --sender ln said "holds no log of sender 'ln' (it has records of ln, ny)"
    moved = record("1:1", "a") | {"sender": "ln"}
    (tmp_path / "ny.dlq").write_bytes(frame({"add": moved}) + frame({"add": record("1:2", "b")}))
    assert main(["dlq", str(tmp_path), "--sender", "ln", "--counts"]) == 0
    assert capsys.readouterr().out == "       1  E\n       1  record in all\n"
    assert main(["dlq", str(tmp_path), "--sender", "zz"]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {tmp_path}: holds no log of sender 'zz' (it has records of ln, ny)\n"
    )


def test_replay_from_a_checkpoint_refuses_a_store_it_would_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the engine restored from the checkpoint kept its dead letters in memory, while
    # stderr said "dead letters in DIR/t" and `wanconform dlq DIR` found no store there
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": config().to_json()}) + "\n")
    checkpoint = tmp_path / "c.json"
    assert main(["replay", str(trace), "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    for flag in ("--dlq-dir", "--queue-dir"):
        argv = ["replay", str(trace), "--engine", "both", "--from", str(checkpoint)]
        assert main([*argv, flag, str(tmp_path / "stores")]) == 2
        assert capsys.readouterr() == (
            "",
            f"wanconform: error: {flag}: an engine started from a checkpoint (--from) keeps "
            f"its dead letters and queues in memory, not in a store; drop {flag} or --from\n",
        )
    assert not (tmp_path / "stores").exists()


@pytest.mark.parametrize("flag", ["--dlq-dir", "--queue-dir"])
def test_replay_of_a_bad_trace_with_a_store_is_one_line_and_makes_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    # Bad input is one line, exit 2, nothing left behind: the store's folder was made and
    # "t.jsonl: dead letters in DIR/t" printed before the trace was read.
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": config().to_json()}) + '\n{"op":"bogus"}\n')
    argv = ["replay", str(trace), "--engine", "both", flag, str(tmp_path / "stores")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err.count("\n")) == ("", 1)
    assert err.startswith(f"wanconform: error: {trace}:2: op: unknown operation 'bogus'")
    assert not (tmp_path / "stores").exists()


# -- the file format, recovery and durability, byte by byte (docs/DLQ_STORE.md) -------------


def canonical(payload: Any) -> bytes:
    """SPEC R4: sorted keys, no spaces."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def framed(payload: Any) -> bytes:
    """A frame built from the doc's table: `WDLQ`, the payload's length and its CRC-32 (both
    4 bytes, big-endian), then the payload, canonical JSON."""
    return raw_frame(canonical(payload))


def raw_frame(data: bytes) -> bytes:
    """A frame around any payload bytes, its checksum right."""
    return b"WDLQ" + len(data).to_bytes(4, "big") + zlib.crc32(data).to_bytes(4, "big") + data


def open_ny(folder: Path, notices: list[str] | None = None, durable: bool = True) -> Any:
    sink = notices.append if notices is not None else (lambda line: None)
    return open_store(folder, ["ny"], sink, durable)["ny"]


def test_appends_and_removes_are_the_documented_frames_and_compaction_keeps_the_live_ones(
    tmp_path: Path,
) -> None:
    a, b, c, d, e = (record(f"1:{n}", k) for n, k in enumerate("abcde", 1))
    log = open_ny(tmp_path)
    for r in (a, b, c):
        log.append(r)
    log.remove(["1:2"])  # 4 frames, 2 live records: not more than twice as many
    path = tmp_path / "ny.dlq"
    assert path.read_bytes() == (
        framed({"add": a}) + framed({"add": b}) + framed({"add": c}) + framed({"remove": ["1:2"]})
    )
    log.remove(["1:1"])  # 5 frames, 1 live record: compacted to the live one
    assert path.read_bytes() == framed({"add": c})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ny.dlq"]  # no temporary file left
    assert log.records == [c]
    # after compaction the count starts again from the live records: 4 frames for 2 live
    log.append(d)
    log.append(e)
    log.remove(["1:4"])
    assert path.read_bytes() == (
        framed({"add": c}) + framed({"add": d}) + framed({"add": e}) + framed({"remove": ["1:4"]})
    )
    assert log.read_back() == [c, e]
    log.close()
    notices: list[str] = []
    assert read_store(tmp_path, notices.append) == {"ny.dlq": [c, e]} and notices == []
    # a restart counts the 4 frames already in the file: 6 frames for 3 live, then 7 for 2
    again = open_ny(tmp_path)
    assert again.records == [c, e]
    f = record("1:6", "f")
    again.append(f)
    again.remove(["9:9"])
    before = framed({"add": c}) + framed({"add": d}) + framed({"add": e})
    assert path.read_bytes() == (
        before + framed({"remove": ["1:4"]}) + framed({"add": f}) + framed({"remove": ["9:9"]})
    )
    again.remove(["1:3"])
    assert path.read_bytes() == framed({"add": e}) + framed({"add": f})
    again.close()


def test_one_live_record_and_three_frames_is_compacted(tmp_path: Path) -> None:
    log = open_ny(tmp_path)
    log.append(record("1:1", "a"))
    log.append(record("1:2", "b"))
    log.remove(["1:1"])  # 3 frames > 2 x 1 live record
    assert (tmp_path / "ny.dlq").read_bytes() == framed({"add": record("1:2", "b")})
    log.close()


def test_a_remove_of_the_only_record_leaves_its_2_frames_and_a_third_compacts(
    tmp_path: Path,
) -> None:
    """docs/DLQ_STORE.md: compacted when a file holds more than 2 frames and none is live."""
    log = open_ny(tmp_path)
    log.append(GOOD)
    log.remove(["1:1"])
    path = tmp_path / "ny.dlq"
    assert path.read_bytes() == framed({"add": GOOD}) + framed({"remove": ["1:1"]})
    log.remove(["9:9"])  # 3 frames, none live
    assert path.read_bytes() == b""
    assert log.records == [] and log.read_back() == []
    log.close()


def test_the_records_are_the_adds_not_removed_since_in_file_order(tmp_path: Path) -> None:
    old = record("1:1", "a")
    del old["thread"]  # written before SPEC v2.0: reads as thread 0
    threaded = record("1:3", "c") | {"thread": 3}
    (tmp_path / "ny.dlq").write_bytes(
        framed({"add": old})
        + framed({"add": record("1:2", "b")})
        + framed({"remove": ["1:1", "9:9"]})  # an id not in the store is no error
        + framed({"add": record("1:1", "a")})  # added again: now after 1:2
        + framed({"add": threaded})
        + framed({"remove": []})
    )
    expected = [record("1:2", "b"), record("1:1", "a"), threaded]
    assert open_ny(tmp_path).records == expected
    assert read_store(tmp_path) == {"ny.dlq": expected}


def test_a_record_written_before_spec_v2_reads_as_thread_0(tmp_path: Path) -> None:
    """docs/DLQ_STORE.md: `thread` (v2.0, R29); a record without it reads as thread 0."""
    old = record("1:1", "a")
    del old["thread"]
    (tmp_path / "ny.dlq").write_bytes(framed({"add": old}) + framed({"add": record("1:2", "b")}))
    expected = [record("1:1", "a"), record("1:2", "b")]
    assert expected[0]["thread"] == 0
    assert open_ny(tmp_path).records == expected
    assert read_store(tmp_path) == {"ny.dlq": expected}


def test_a_crash_at_every_byte_of_an_append_keeps_exactly_the_whole_frames(
    tmp_path: Path,
) -> None:
    first, second = framed({"add": record("1:1", "a")}), framed({"add": record("1:2", "b")})
    whole = first + second
    path = tmp_path / "ny.dlq"
    records = [record("1:1", "a"), record("1:2", "b")]
    for cut in range(len(whole) + 1):
        path.write_bytes(whole[:cut])
        whole_frames = (cut >= len(first)) + (cut == len(whole))
        kept = [0, len(first), len(whole)][whole_frames]
        notices: list[str] = []
        log = open_ny(tmp_path, notices)
        assert log.records == records[:whole_frames], cut
        assert path.read_bytes() == whole[:kept], cut
        torn = cut - kept
        notice = f"{path}: cut a torn tail of {torn} bytes at byte {kept} (a crash mid-write)"
        assert notices == ([notice] if torn else []), cut
        log.close()
        notices.clear()
        open_ny(tmp_path, notices).close()
        assert notices == []  # cut once


def test_a_last_frame_whose_checksum_fails_is_cut_as_a_torn_tail(tmp_path: Path) -> None:
    first, last = framed({"add": record("1:1", "a")}), framed({"add": record("1:2", "b")})
    flipped = last[:-1] + bytes([last[-1] ^ 0x01])  # a power loss: one bit did not land
    path = tmp_path / "ny.dlq"
    path.write_bytes(first + flipped)
    notices: list[str] = []
    assert read_store(tmp_path, notices.append) == {"ny.dlq": [record("1:1", "a")]}
    assert notices == [
        f"{path}: a torn tail of {len(last)} bytes at byte {len(first)} (a crash mid-write) was "
        "not read; the store was not changed (the next run that opens it cuts it)"
    ]
    assert path.read_bytes() == first + flipped  # read only: left in place
    notices.clear()
    log = open_ny(tmp_path, notices)
    assert log.records == [record("1:1", "a")]
    assert notices == [
        f"{path}: cut a torn tail of {len(last)} bytes at byte {len(first)} (a crash mid-write)"
    ]
    assert path.read_bytes() == first
    log.append(record("1:3", "c"))
    log.close()
    assert path.read_bytes() == first + framed({"add": record("1:3", "c")})


def test_an_empty_file_and_a_file_holding_only_a_torn_frame(tmp_path: Path) -> None:
    path = tmp_path / "ny.dlq"
    path.write_bytes(b"")
    notices: list[str] = []
    assert open_ny(tmp_path, notices).records == [] and notices == []
    path.write_bytes(b"WDLQ\x00\x00")  # 6 bytes of a header
    assert open_ny(tmp_path, notices).records == []
    assert notices == [f"{path}: cut a torn tail of 6 bytes at byte 0 (a crash mid-write)"]
    assert path.read_bytes() == b""


GOOD = record("1:1", "a")


def without(name: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != name}


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"not json", "not JSON"),
        (b'{"remove":["\\ud800"]}', "not JSON"),  # half a surrogate pair is not text
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nested past any recursion limit
        (b"[]", "not an add or a remove"),
        (b"{}", "not an add or a remove"),
        (b'{"put":1}', "not an add or a remove"),
        (b'{"add":{},"remove":[]}', "not an add or a remove"),
        (b'{"remove":"1:1"}', "a remove that is not a list of event ids"),
        (b'{"remove":["1:1",1]}', "a remove that is not a list of event ids"),
        (b'{"add":["1:1"]}', "an add whose record is not an object"),
        *[(canonical({"add": without(n)}), f"an add whose record has no string {n}")
          for n in ("event_id", "sender", "key", "op", "exception")],
        (canonical({"add": GOOD | {"key": 7}}), "an add whose record has no string key"),
        *[(canonical({"add": without(n)}), f"an add whose record has no list {n}")
          for n in ("version", "recipients")],
        (canonical({"add": GOOD | {"version": "1,0,1"}}),
         "an add whose record has no list version"),
    ],
)  # fmt: skip
def test_a_whole_frame_whose_payload_is_not_a_record_is_damage_even_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: bytes, why: str
) -> None:
    first = framed({"add": record("1:2", "b")})
    path = tmp_path / "ny.dlq"
    path.write_bytes(first + raw_frame(payload))
    message = f"{path}: byte {len(first)}: damaged frame ({why})"
    with pytest.raises(StoreError) as raised:
        open_ny(tmp_path)
    assert str(raised.value) == message
    assert main(["dlq", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"wanconform: error: {message}\n"
    assert path.read_bytes() == first + raw_frame(payload)  # nothing changed on disk


def test_the_first_damage_in_the_file_is_the_one_named(tmp_path: Path) -> None:
    path = tmp_path / "ny.dlq"
    path.write_bytes(raw_frame(b"[]") + raw_frame(b"not json") + framed({"add": GOOD}))
    with pytest.raises(StoreError) as raised:
        open_ny(tmp_path)
    assert str(raised.value) == f"{path}: byte 0: damaged frame (not an add or a remove)"


def test_durable_writes_fsync_the_file_and_a_new_file_s_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log = open_store(tmp_path, ["ny"], print)["ny"]  # durable unless told otherwise
    assert synced == ["dir"]  # the new file's name
    log.append(record("1:1", "a"))
    assert synced == ["dir", "file"]
    log.append(record("1:2", "b"))
    log.remove(["1:1"])  # written, then compacted: temporary file, rename, directory
    assert synced == ["dir", "file", "file", "file", "file", "dir"]
    log.close()
    synced.clear()
    open_ny(tmp_path).close()
    assert synced == []  # an existing file: nothing to make durable
    fast = tmp_path / "fast"
    fast.mkdir()
    log = open_ny(fast, durable=False)
    for n in (1, 2):
        log.append(record(f"1:{n}", "a"))
    log.remove(["1:1"])  # compacted too
    assert synced == [] and log.read_back() == [record("1:2", "a")]
    log.close()
    # a torn tail is cut with an fsync only in a durable store
    whole = (fast / "ny.dlq").read_bytes()
    for durable, expected in ((False, []), (True, ["file"])):
        (fast / "ny.dlq").write_bytes(whole + b"WDLQ\0")
        notices: list[str] = []
        open_ny(fast, notices, durable).close()
        assert len(notices) == 1 and (fast / "ny.dlq").read_bytes() == whole
        assert synced == expected


def test_a_crash_before_a_compaction_s_rename_leaves_the_old_file_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ny.dlq"
    path.write_bytes(framed({"add": GOOD}) + framed({"add": record("1:2", "b")}))
    leftover = tmp_path / "ny.dlq.compacting"
    leftover.write_bytes(framed({"add": GOOD})[:7])
    assert read_store(tmp_path) == {"ny.dlq": [GOOD, record("1:2", "b")]}  # only reads
    assert leftover.exists()
    notices: list[str] = []
    assert open_ny(tmp_path, notices).records == [GOOD, record("1:2", "b")]
    assert notices == [f"{leftover}: removed an unfinished compaction"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ny.dlq"]


def test_the_store_reads_every_sender_s_file_by_its_escaped_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = open_store(tmp_path, ["ny", "ln/2 x", "a-b_C9"], lambda line: None)
    logs["ln/2 x"].append(record("1:1", "a") | {"sender": "ln/2 x"})
    for log in logs.values():
        log.close()
    (tmp_path / "notes.txt").write_text("x")  # other files beside the logs are no matter
    assert read_store(tmp_path) == {
        "a-b_C9.dlq": [], "ln%2F2%20x.dlq": [record("1:1", "a") | {"sender": "ln/2 x"}],
        "ny.dlq": [],
    }  # fmt: skip
    assert list(read_store(tmp_path)) == ["a-b_C9.dlq", "ln%2F2%20x.dlq", "ny.dlq"]
    only = tmp_path / "only"
    only.mkdir()
    (only / "ny.dlq.compacting").write_bytes(b"")
    (only / "b.txt").write_text("x")
    with pytest.raises(StoreError) as raised:
        read_store(only)
    assert str(raised.value) == f"{only}: not a dead-letter store (no *.dlq files; found b.txt)"
    with pytest.raises(StoreError) as raised:
        open_store(tmp_path / "none", ["ny"], print)
    assert str(raised.value) == (
        f"{tmp_path / 'none'}: no such directory (a dead-letter store is a directory)"
    )


def test_the_inspector_reads_a_store_of_only_a_leftover_compaction_as_empty(
    tmp_path: Path,
) -> None:
    """docs/DLQ_STORE.md: `wanconform dlq` leaves a leftover `SENDER.dlq.compacting` and
    does not read it; it is no file of another kind (which would say "not a store")."""
    leftover = tmp_path / "ny.dlq.compacting"
    leftover.write_bytes(framed({"add": GOOD})[:7])
    assert read_store(tmp_path) == {}
    assert leftover.read_bytes() == framed({"add": GOOD})[:7]


def test_every_character_but_ascii_letters_digits_and_dash_underscore_is_escaped(
    tmp_path: Path,
) -> None:
    # "\u20acA" (a euro sign, then A) was written as %20ACA, as " ACA" is: two senders in one
    # file; and "é", a letter but not A-Z, was not escaped at all
    assert sender_file("é") == "%C3%A9.dlq"  # its UTF-8 bytes
    assert sender_file("\u20acA") == "%E2%82%ACA.dlq"
    assert sender_file(" ACA") == "%20ACA.dlq"
    logs = open_store(tmp_path, ["\u20acA", " ACA"], lambda line: None)
    logs["\u20acA"].append(record("1:1", "a"))
    for log in logs.values():
        log.close()
    assert read_store(tmp_path) == {"%20ACA.dlq": [], "%E2%82%ACA.dlq": [record("1:1", "a")]}


def test_open_store_refuses_a_folder_it_may_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_access = os.access  # a read-only disk: no W_OK
    monkeypatch.setattr(
        os, "access", lambda path, mode: not mode & os.W_OK and real_access(path, mode)
    )
    with pytest.raises(StoreError) as raised:
        open_store(tmp_path, ["ny"], print)
    assert str(raised.value) == f"{tmp_path}: cannot read and write it"
    assert list(tmp_path.iterdir()) == []


class Killed(Exception):
    """The crash writer's SIGKILL, in process."""


def run_crash_writer(
    folder: Path, start: int, until: str, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """What `crash_writer` prints up to the line `until`, where it is stopped."""
    printed: list[str] = []

    def stop_at(line: str, flush: bool) -> None:
        assert flush is True  # the bench reads each line as it comes
        printed.append(line)
        if line == until:
            raise Killed

    monkeypatch.setattr(dlq_store, "print", stop_at, raising=False)
    with pytest.raises(Killed):
        dlq_store.crash_writer(str(folder), start)
    return printed


def test_the_crash_writer_prints_each_add_and_remove_once_it_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records start, start + 1, ...; after each record whose number is a multiple of 3,
    with more than one live, it removes live[(number * 7919) % (len(live) - 1)]."""
    printed = run_crash_writer(tmp_path, 2, "remove 1:2", monkeypatch)
    # at 3, live [1:2, 1:3]: (3 * 7919) % 1 = 0
    assert printed == ["ready", "add 1:2", "add 1:3", "remove 1:2"]
    assert read_store(tmp_path) == {"ny.dlq": [dlq_store.crash_record(3)]}
    with (tmp_path / "ny.dlq").open("ab") as log:
        log.write(b"WDLQ")  # killed mid-append
    # restarted on its store, it cuts the tail and goes on with the records there: at 6,
    # live [1:3 .. 1:6] and (6 * 7919) % 3 = 47514 % 3 = 0
    printed = run_crash_writer(tmp_path, 4, "remove 1:3", monkeypatch)
    assert printed == ["ready", "add 1:4", "add 1:5", "add 1:6", "remove 1:3"]
    assert read_store(tmp_path) == {"ny.dlq": [dlq_store.crash_record(n) for n in (4, 5, 6)]}


def test_the_crash_writer_removes_an_earlier_live_record_after_each_third_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever record it picks (the bench's checker does not care which), each remove
    follows the add of a multiple of 3, takes a record live before that add, and what it
    printed is what the store holds, in order (the checker's "lost" and "resurrected")."""
    printed = run_crash_writer(tmp_path, 1, "add 1:31", monkeypatch)
    live: list[str] = []
    removes = 0
    for before, line in pairwise(printed):
        what, _, event = line.partition(" ")
        if what == "add":
            live.append(event)
            continue
        assert before.startswith("add 1:") and int(before.split(":")[1]) % 3 == 0, line
        assert event in live[:-1], line  # an earlier one, live
        live.remove(event)
        removes += 1
    # after 3, 6, ..., 30 (at 3 two are live, so every one of them removes)
    assert removes == 10 and len(live) == 31 - 10
    assert read_store(tmp_path) == {
        "ny.dlq": [dlq_store.crash_record(int(e.split(":")[1])) for e in live]
    }


def test_the_crash_writer_fsyncs_each_add_and_remove_before_it_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its store is durable (docs/DLQ_STORE.md "Durability"): each line the bench counts
    as durable comes after the fsync of that write (the first, of the new file's folder)."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real(fd)

    def say(line: str, flush: bool) -> None:
        seen.append(line)
        if line == "remove 1:2":
            raise Killed

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(dlq_store, "print", say, raising=False)
    with pytest.raises(Killed):
        dlq_store.crash_writer(str(tmp_path), 2)
    # the remove leaves 3 frames for 1 live record: compacted (the new file, the folder)
    assert seen == ["fsync dir", "ready", "fsync file", "add 1:2", "fsync file", "add 1:3",
                    "fsync file", "fsync file", "fsync dir", "remove 1:2"]  # fmt: skip


def test_the_crash_writer_removes_nothing_while_no_earlier_record_is_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started at a multiple of 3 on an empty store (the bench's third run, START =
    3,000,000, after two killed before their first add): 1:3 is the only live record, and
    there is no earlier one to remove."""
    printed = run_crash_writer(tmp_path, 3, "add 1:5", monkeypatch)
    assert printed == ["ready", "add 1:3", "add 1:4", "add 1:5"]
    assert read_store(tmp_path) == {"ny.dlq": [dlq_store.crash_record(n) for n in (3, 4, 5)]}


def test_the_crash_writer_s_records_are_dead_letters_of_ny_told_apart_by_their_number(
    tmp_path: Path,
) -> None:
    """The crash campaign's records (docs/DLQ_STORE.md "Crash campaign"): sender ny's dead
    letters, each a SPEC R24 record (v1.2 recipients, v2.0 thread), the store takes them
    and gives them back whole; record N is event 1:N (the writer prints `add 1:N`, the
    checker reads N back from the id to tell an intact record from a torn one), so no two
    numbers give the same record."""
    numbers = [0, 1, 2, 3, 96, 97, 1_000_000, 2_000_049]
    records = [dlq_store.crash_record(n) for n in numbers]
    for n, r in zip(numbers, records, strict=True):
        assert r == dlq_store.crash_record(n)  # deterministic
        assert (r["event_id"], r["sender"], r["thread"]) == (f"1:{n}", "ny", 0)
        assert r["op"] in ("create", "update", "destroy")
        assert isinstance(r["key"], str) and isinstance(r["exception"], str)
        # R2/R9: the tag [entry_version >= 1, timestamp >= 0, dsid] of an event of site 1
        ev, ts, dsid = r["version"]
        assert all(type(x) is int for x in r["version"]) and ev >= 1 and ts >= 0 and dsid == 1
        assert r["recipients"] == sorted(r["recipients"]) and 1 in r["recipients"]
        # ny is not dlq_secure: the value is there, a JSON object of scalars (R2)
        assert all(type(v) in (int, str, bool) or v is None for v in r["value"].values())
    assert len({canonical(r) for r in records}) == len(numbers)
    log = open_ny(tmp_path)
    for r in records:
        log.append(r)
    log.close()
    assert open_ny(tmp_path).records == records
    assert read_store(tmp_path) == {sender_file("ny"): records}


def test_a_file_torn_while_open_is_named_by_read_back(tmp_path: Path) -> None:
    # as the queue store's read_back: an error naming the file and the offset (not an
    # assert, which `python -O` would skip)
    log = open_ny(tmp_path)
    log.append(GOOD)
    path = tmp_path / "ny.dlq"
    with path.open("ab") as handle:  # another writer tears the file under the log
        handle.write(b"WDLQ\0")
    with pytest.raises(StoreError) as raised:
        log.read_back()
    assert str(raised.value) == f"{path}: byte {len(framed({'add': GOOD}))}: torn while open"
    log.close()


def test_an_event_id_dead_lettered_twice_keeps_both_records_until_a_remove_takes_both(
    tmp_path: Path,
) -> None:
    """R24 appends each failure, and an event can fail again while its record is live (a
    wiped site receives it again and forwards it: R21, R22): both records are kept, on
    disk too, in order; a remove of the id takes both (R26's selection)."""
    log = open_ny(tmp_path)
    first, second, other = (
        record("1:2", "b"),
        record("1:2", "b") | {"exception": "E2"},
        record("1:3", "c"),
    )
    for r in (first, other, second):
        log.append(r)
    assert log.records == [first, other, second]
    log.close()
    again = open_ny(tmp_path)
    assert again.records == [first, other, second]
    again.remove(["1:2"])
    assert again.records == [other]
    again.close()
    assert open_ny(tmp_path).records == [other]


def test_a_wiped_site_that_forwards_a_dead_lettered_event_again_stores_it_twice(
    tmp_path: Path,
) -> None:
    """The scenario of R21+R22+R24 through the command line: chain 1->2->3, the ack of
    site 1's batch lost, the event dead-lettered at site 2's sender b, site 2 wiped, site 1
    resends (R20), site 2 applies and forwards it again, and it fails again: b holds two
    records of 1:1 in the model (SPEC: each failure appended), and the impl's store agrees."""
    trace = tmp_path / "dup.jsonl"
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 2, "batch_size": 1, "ack_timeout_ms": 1000},
            {"id": "b", "site": 2, "remote": 3, "batch_size": 1, "failure_listener": "dlq"},
        ],
    }
    ops = [
        {"op": "fail", "site": 3, "key": "k", "exception": "IOException", "times": 2},
        {"op": "put", "site": 1, "key": "k", "value": {"n": 1}},
        {"op": "deliver", "sender": "a"}, {"op": "drop_ack", "sender": "a"},
        {"op": "deliver", "sender": "b"}, {"op": "deliver_ack", "sender": "b"},
        {"op": "site_down", "site": 2}, {"op": "site_up", "site": 2, "wipe": True},
        {"op": "tick", "ms": 1000},  # a times out (R20) ...
        {"op": "tick", "ms": 5000},  # ... and resends once its retry interval is over
        {"op": "deliver", "sender": "a"},
        {"op": "deliver", "sender": "b"}, {"op": "deliver_ack", "sender": "b"},
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(line) + "\n" for line in [{"config": config}, *ops]))
    store = tmp_path / "dlq"
    assert main(["replay", str(trace), "--engine", "both", "--dlq-dir", str(store)]) == 0
    records = open_store(store / "dup", ["b"], lambda line: None)["b"].records
    assert [(r["event_id"], r["key"], r["exception"]) for r in records] == [
        ("1:1", "k", "IOException"),
        ("1:1", "k", "IOException"),
    ]


def test_a_users_engine_takes_dlq_dir_and_locating_its_divergence_leaves_no_scratch_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's engine class that takes `dlq_dir` is accepted by --dlq-dir (its own
    parameters are what is asked, not a wrapper's). Its divergence (no dead letters in its
    state, where R24 has one after the deliver_ack of line 7) is located by re-running it
    in scratch stores, which are gone once the run is over: DIR holds the trace's store
    alone (`wanconform dlq DIR` reads it as one trace's)."""
    trace = tmp_path / "dead.jsonl"
    example = Path(__file__).parent.parent / "traces" / "examples"
    trace.write_text((example / "failed_event_dead_lettered.jsonl").read_text())
    store = tmp_path / "dlq"
    spec = "tests.user_engines:ForgetsDeadLetters"
    assert (
        main(["replay", str(trace), "--engine", "both", "--impl", spec, "--dlq-dir", str(store)])
        == 1
    )
    out = capsys.readouterr().out
    assert f"P1: FAILED: model and impl ({spec}) diverge at {trace}:7:" in out
    assert sorted(p.name for p in store.iterdir()) == ["dead"]
    assert [r["event_id"] for r in open_store(store / "dead", ["ny"], print)["ny"].records] == [
        "1:2"
    ]
