"""The Spark glue on local Spark (one session for the test process, `spark` fixture):
generation is deterministic whatever the partitions, the check matches the plain
function, finds every planted bug through `--impl`, and bad input writes nothing."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from user_engines import write_reversed_tie_break

from conformance.generation.profiles import generate_trace, trace_ids
from conformance.search.examples import failure_groups
from conformance.spark import glue
from conformance.spark.check import check_trace
from conformance.spark.glue import balance
from conformance.spark.results import (
    FILE_SCHEMA,
    plain_row,
    read_results,
    rows_table,
    write_results,
)
from impl import Engine
from tools.planted_bugs import PLANTED_BUGS
from traces.geode import import_geode_config, parse_site_argument
from traces.parquet import TraceInfo, open_trace_set, parquet_to_jsonl, parse_op_cell
from traces.tracefile import trace_text
from wanconform.cli import main

PROFILES = ["steady", "faults", "multisite", "dlq", "chaos"]


@pytest.fixture(scope="module")
def trace_set(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spark") / "set"
    glue.generate(spark, out, traces=15, ops=300, profiles=PROFILES, seed=1, partitions=3)
    return out


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


def test_a_generated_sets_files_depend_on_its_size_alone() -> None:
    # ROWS_PER_FILE = 200,000 operations a file at most, and MIN_FILES = 64 files at least
    assert glue.traces_per_file(15, 300) == 1
    assert glue.traces_per_file(200, 1000) == 4  # make run's campaign: 50 files
    assert glue.traces_per_file(10_000, 1000) == 157  # 64 files
    assert glue.traces_per_file(100_000, 1000) == 200  # 200,000 operations a file
    assert glue.traces_per_file(3, 10_000_000) == 1


def test_generation_is_the_same_on_1_or_3_partitions(
    spark: Any, trace_set: Path, tmp_path: Path
) -> None:
    glue.generate(
        spark, tmp_path / "one", traces=15, ops=300, profiles=PROFILES, seed=1, partitions=1
    )
    # The set itself, file for file and byte for byte (15 traces: a file each).
    set_one = {
        p.relative_to(tmp_path / "one"): p.read_bytes() for p in files_under(tmp_path / "one")
    }
    set_three = {p.relative_to(trace_set): p.read_bytes() for p in files_under(trace_set)}
    assert len([name for name in set_one if name.parent.name == "ops"]) == 15
    assert set_one == set_three
    parquet_to_jsonl(tmp_path / "one", tmp_path / "one-jsonl")
    parquet_to_jsonl(trace_set, tmp_path / "three-jsonl")
    files = sorted(p.name for p in (tmp_path / "one-jsonl").glob("*.jsonl"))
    assert len(files) == 15
    for name in files:
        one = (tmp_path / "one-jsonl" / name).read_bytes()
        assert one == (tmp_path / "three-jsonl" / name).read_bytes(), name
    # ... and the same as the plain generator, without Spark
    for trace_id, profile in trace_ids(PROFILES, 15):
        config, stream = generate_trace(1, trace_id, profile, 300)
        expected = trace_text(config, list(stream)).encode()
        assert (tmp_path / "one-jsonl" / f"{trace_id}.jsonl").read_bytes() == expected


def without_seconds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_the_check_on_spark_equals_the_plain_check(
    spark: Any, trace_set: Path, tmp_path: Path
) -> None:
    rows = glue.check(spark, trace_set, tmp_path / "results")
    assert pq.read_table(tmp_path / "results" / "results.parquet").schema.equals(FILE_SCHEMA)
    expected = []
    for info in open_trace_set(trace_set).traces:
        ops = (
            (seq, parse_op_cell(info.trace_id, seq, text, info.config))
            for seq, text in open_trace_set(trace_set).ops_of(info.trace_id)
        )
        expected.append(check_trace(info.trace_id, info.config, ops, None, info.profile, 1))
    assert without_seconds(rows) == without_seconds(expected)
    assert {row["verdicts"]["p1"]["status"] for row in rows} == {"held"}
    # ... and its file is the plain check's, byte for byte (the seconds: timings.json)
    write_results(tmp_path / "plain", rows_table(expected), "impl:Engine", str(trace_set))
    for name in ("results.parquet", "manifest.json", "examples.json"):
        assert (tmp_path / "plain" / name).read_bytes() == (
            tmp_path / "results" / name
        ).read_bytes(), name
    timings = json.loads((tmp_path / "results" / "timings.json").read_text())
    assert sorted(timings["seconds"]) == sorted(row["trace_id"] for row in rows)


@pytest.mark.parametrize("bug", PLANTED_BUGS, ids=lambda bug: bug.__name__)
def test_check_finds_each_planted_bug_through_impl(
    bug: type[Engine], trace_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"tools.planted_bugs:{bug.__name__}"
    results = tmp_path / "results"
    assert main(["check", str(trace_set), "--out", str(results), "--impl", spec]) == 1
    table = pq.read_table(results / "results.parquet")
    rows = [plain_row(row) for row in table.to_pylist()]
    failed = [row for row in rows if row["verdicts"]["p1"]["status"] == "failed"]
    assert failed, f"{bug.__name__} not found"
    for row in failed:
        trace_id, seq = row["divergence"]["where"].rsplit(":", 1)
        assert trace_id == row["trace_id"] and int(seq) >= 2
        assert row["failures"][0].startswith("P1 ")
    out = capsys.readouterr().out
    assert "divergences (P1)" in out and failed[0]["failures"][0] in out
    # The results directory carries its impl and its examples: the report of it (no
    # --impl given) shows what this check found, with this impl, and runs nothing.
    html = tmp_path / "r.html"
    assert main(["report", str(results), "-o", str(html)]) == 1
    page = html.read_text()
    assert f"against <code>{spec}</code>" in page
    assert "no example: the trace no longer fails" not in page
    assert "the trace file is not at hand" not in page
    largest = failure_groups(rows)[0][0]
    assert f"--impl {spec}" in read_results(results).examples[largest].command


def test_a_bad_operation_stops_the_check_and_writes_nothing(
    trace_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("configs", "wanconform-traces.json"):
        source = trace_set / name
        if source.is_dir():
            (bad / name).mkdir()
            for part in source.glob("*.parquet"):
                (bad / name / part.name).write_bytes(part.read_bytes())
        else:
            (bad / name).write_bytes(source.read_bytes())
    ops = pq.read_table(trace_set / "ops").sort_by(
        [("trace_id", "ascending"), ("seq", "ascending")]
    )
    texts = ops.column("json").to_pylist()
    texts[7] = '{"op": "tick", "ms": 0}'
    (bad / "ops").mkdir()
    index = ops.schema.get_field_index("json")
    pq.write_table(ops.set_column(index, "json", pa.array(texts)), bad / "ops" / "part-0.parquet")
    first = ops.slice(7, 1).to_pylist()[0]
    assert main(["check", str(bad), "--out", str(tmp_path / "results")]) == 2
    captured = capsys.readouterr()
    where = f"{first['trace_id']}:{first['seq']}"
    assert captured.err == f"wanconform: error: {where}: ms: must be an integer > 0, got 0\n"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("column", ["trace_id", "seq", "json"])
def test_a_null_cell_in_ops_is_one_line_and_writes_nothing(
    column: str, trace_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Columns written nullable (as another tool may) pass the schema check: a null seq or
    # trace id broke the order check inside Spark's job, a null json the parser, each a
    # Python traceback through Spark's (exit 1).
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "wanconform-traces.json").write_bytes(
        (trace_set / "wanconform-traces.json").read_bytes()
    )
    (bad / "configs").mkdir()
    for part in (trace_set / "configs").glob("*.parquet"):
        (bad / "configs" / part.name).write_bytes(part.read_bytes())
    ops = pq.read_table(trace_set / "ops").sort_by(
        [("trace_id", "ascending"), ("seq", "ascending")]
    )
    row = ops.slice(7, 1).to_pylist()[0]
    index = ops.schema.get_field_index(column)
    cells = ops.column(index).to_pylist()
    cells[7] = None
    field = ops.schema.field(index).with_nullable(True)
    ops = ops.cast(ops.schema.set(index, field)).set_column(
        index, field, pa.array(cells, field.type)
    )
    (bad / "ops").mkdir()
    pq.write_table(ops, bad / "ops" / "part-0.parquet")
    assert main(["check", str(bad), "--out", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    expected = {
        "trace_id": f"ops: trace_id: missing (null) in a row of seq {row['seq']}",
        "seq": f"{row['trace_id']}: seq: missing (null) in a row of ops",
        "json": f"{row['trace_id']}:{row['seq']}: json: missing (null)",
    }[column]
    assert err.startswith(f"wanconform: error: {expected}")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_check_of_a_directory_that_is_not_a_trace_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(tmp_path), "--out", str(tmp_path / "results")]) == 2
    assert "not a wanconform trace set" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_campaign_writes_traces_results_and_summary(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "campaign"
    args = [
        "campaign",
        "--traces",
        "5",
        "--ops",
        "100",
        "--profile",
        "steady,dlq",
        "--out",
        str(out),
        "--dlq-dir",
        str(tmp_path / "stores"),
        "--compare-policies",
    ]
    (tmp_path / "stores").mkdir()
    assert main(args) == 0
    summary = (out / "summary.txt").read_text()
    assert "traces: 5   operations: 500" in summary
    # issue 20.7: the rate says what it includes (Spark's start, not the engines alone)
    assert re.search(r"generated 500 operations in [0-9.]+ s \([0-9,]+ ops/s wall, "
                     r"Spark's job start-up included\)", summary)  # fmt: skip
    assert "divergences (P1): none" in summary  # the records read back from the stores too
    stores = sorted(p.name for p in (tmp_path / "stores").iterdir())
    assert stores == ["dlq-000001", "dlq-000003", "steady-000000", "steady-000002",
                      "steady-000004"]  # fmt: skip
    for name in stores:  # each a store the inspector reads
        assert main(["dlq", str(tmp_path / "stores" / name), "--counts"]) == 0
    # the failure policies, the same 5 traces each (summary table, JSON, report chart)
    assert "failure policies compared" in summary
    compared = json.loads((out / "policies.json").read_text())
    policies = compared["policies"]
    assert [p["policy"] for p in policies] == ["drop", "block", "dlq-kept", "dlq-redelivered"]
    settings = compared["conflation"] + compared["persistence"]
    assert [(s["title"], s["traces"]) for s in settings] == [
        ("batch conflation on", 5), ("batch conflation off", 5),
        ("queue persistence on", 5), ("queue persistence off", 5),
    ]  # fmt: skip
    assert "queue persistence (model; 0 of 5 traces have restart_sender):" in summary
    assert all(p["traces"] == 5 for p in policies)
    assert policies[1]["events_lost"] == 0  # blocking never drops
    assert '<section id="policies">' in (out / "report.html").read_text()
    assert summary in capsys.readouterr().out + "\n"
    assert pq.read_table(out / "results" / "results.parquet").num_rows == 5
    assert len(open_trace_set(out / "traces").traces) == 5
    # campaign.json: all it takes to run it again (issue 31, item 10)
    record = json.loads((out / "campaign.json").read_text())
    versions = record.pop("versions")
    assert record == {
        "kind": "wanconform campaign", "seed": 0, "traces": 5, "ops": 100,
        "profiles": ["steady", "dlq"], "config": None, "config_from": None,
        "impl": "impl:Engine", "master": "local", "compare_policies": True,
        "dlq_dir": str(tmp_path / "stores"), "queue_dir": None, "shrink_budget": 30.0,
        "settle_cap": None,
    }  # fmt: skip
    assert sorted(versions) == ["pyspark", "python", "wanconform"]
    assert versions["python"] == ".".join(map(str, sys.version_info[:3]))
    # built beside OUT and moved into place whole: nothing else left; not replaced
    # silently by a second campaign (refused before any work), only with --force
    assert sorted(os.listdir(tmp_path)) == ["campaign", "stores"]
    assert main(args) == 2
    assert "holds a campaign written earlier; give --force" in capsys.readouterr().err


def test_balance_puts_the_longest_traces_on_different_partitions() -> None:
    config, _ = generate_trace(0, "steady-000000", "steady", 10)
    sizes = {"a": 900, "b": 800, "c": 500, "d": 300, "e": 100}
    traces = [TraceInfo(t, None, None, n, config) for t, n in sizes.items()]
    # longest first, each to the least loaded (operations + 1 per trace): a->0 (901),
    # b->1 (801), c->1 (801 < 901: 1302), d->0 (901 < 1302: 1202), e->0 (1202 < 1302)
    assert balance(traces, 2) == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 0}


def test_campaign_on_imported_geode_files_keeps_their_topology(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 16: a campaign of random faults on the sites and senders of real-shaped
    # Geode files; the summary and the report show that topology, every trace has it,
    # and the traces are the generator's on 1 partition too (determinism).
    geode = Path(__file__).resolve().parent / "data" / "geode"
    sites = [f"1={geode / 'ln-cache.xml'}", f"2={geode / 'ny-cache.xml'}"]
    out = tmp_path / "campaign"
    args = ["campaign", "--traces", "4", "--ops", "120", "--profile", "faults,dlq"]
    assert main([*args, "--site", sites[0], "--site", sites[1], "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("disk-store-name=wan: ") == 1  # SPEC §16.10, warned once
    summary = (out / "summary.txt").read_text()
    assert "on the configuration of --site 1=" in summary
    assert "Topology: sites 1, 2\n  sender ny: 1 -> 2\n  sender ln: 2 -> 1\n" in summary
    # each sender's settings, defaults included (issue 31, item 10)
    assert (
        "Sender settings:\n  ln (2 -> 1): batch_size 100, batch_time_interval_ms 1000," in summary
    )
    assert "  ny (1 -> 2): batch_size 50, batch_time_interval_ms 500, ack_timeout_ms" in summary
    assert "WAN topology: sites 1, 2; 2 senders" in (out / "report.html").read_text()
    imported = import_geode_config([parse_site_argument(text) for text in sites]).config
    trace_set = open_trace_set(out / "traces")
    assert [info.config for info in trace_set.traces] == [imported] * 4
    glue.generate(
        spark, tmp_path / "one", 4, 120, ["faults", "dlq"], 0, partitions=1, config=imported
    )
    parquet_to_jsonl(tmp_path / "one", tmp_path / "one-jsonl")
    parquet_to_jsonl(out / "traces", tmp_path / "campaign-jsonl")
    for trace_id, profile in trace_ids(["faults", "dlq"], 4):
        config, stream = generate_trace(0, trace_id, profile, 120, imported)
        expected = trace_text(config, list(stream)).encode()
        assert (tmp_path / "one-jsonl" / f"{trace_id}.jsonl").read_bytes() == expected
        assert (tmp_path / "campaign-jsonl" / f"{trace_id}.jsonl").read_bytes() == expected


def test_campaign_of_a_users_engine_in_the_current_directory_is_one_reproducible_group(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 16: a user's engine in the current directory (not on PYTHONPATH; Spark's
    # executors start elsewhere, so it must be shipped to them) with one bug, a
    # reversed R16.3 tie-break, is one failure group; its printed reproduce command,
    # run as printed from that directory, reproduces the failure.
    spec = write_reversed_tie_break(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["campaign", "--traces", "100", "--ops", "150", "--profile", "chaos"]
    assert main([*args, "--impl", spec, "--out", "c"]) == 1
    summary = (tmp_path / "c" / "summary.txt").read_text()
    assert "divergences (P1), 1 signature:\n" in summary
    assert " x P1 applied status: conflict decided differently (R16.3)\n" in summary
    assert 'deliver observations[].status: model "conflict", impl "ok"' in summary
    assert 'deliver observations[].status: model "ok", impl "conflict"' in summary
    [command] = [line.split("reproduce: ", 1)[1] for line in summary.splitlines()
                 if "reproduce: " in line]  # fmt: skip
    # (the output's path as checked before any work: absolute, so that an engine that
    # changes directory cannot move it)
    out = shlex.quote(str(tmp_path / "c" / "results"))
    assert command.startswith(f"wanconform replay --engine both --impl {spec} {out}/")
    argv = shlex.split(command)
    executable = Path(sys.executable).parent / argv[0]
    run = subprocess.run(
        [str(executable), *argv[1:]], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 1, run.stderr
    failed = f"P1: FAILED: model and impl ({spec}) diverge at {tmp_path}/c/results/failures/"
    assert failed in run.stdout
    assert '.status: model="' in run.stdout
    capsys.readouterr()


def test_a_users_package_is_shipped_once_per_application(tmp_path: Path) -> None:
    # `check --impl pkg:Engine --segment-ops N` ships the impl for the check and again
    # for the segments; Spark refuses a file name already registered from another path
    # (a cluster's "File pkg.zip was already registered with a different path").
    class Context:
        applicationId = f"app-{tmp_path.name}"

        def __init__(self) -> None:
            self.files: dict[str, str] = {}

        def addPyFile(self, path: str) -> None:
            name = Path(path).name
            if self.files.setdefault(name, path) != path:
                raise RuntimeError(f"File {name} was already registered with a different path")

    class Session:
        sparkContext = Context()

    session = Session()
    glue.ship_impl(session, "tools.planted_bugs:LateBatchTime")  # `tools` is a package
    glue.ship_impl(session, "tools.planted_bugs:LateBatchTime")
    assert list(session.sparkContext.files) == ["tools.zip"]
