"""A long trace checked in segments gives the sequential check's result
(conformance/spark/segments.py).

The segments run here one after the other (`LocalRunner`): what is compared is the
result, whatever runs the segments; one test runs them on Spark through the command line.
A planted bug is found at the same operation as the sequential check, whether the
divergence falls in the middle of a segment or exactly at a cut; a log is validated in
segments too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.generation.profiles import generate_trace
from conformance.running.run import RunResult, TraceRun
from conformance.spark.segments import LocalRunner, check_in_segments
from traces.canonical import canonical_json
from traces.engine import load_impl
from traces.tracefile import open_trace, where, write_trace
from wanconform.cmd_replay import as_json, summary

BUG = "tools.planted_bugs:LateBatchTime"


def sequential(path: Path, impl: str | None) -> RunResult:
    source = open_trace(path)
    run = TraceRun(
        source.name,
        source.config,
        engine="both",
        impl=load_impl(impl) if impl else None,
        impl_spec=impl or "impl:Engine",
        replay=lambda: (op for _, op in source.ops()),
    )
    last = 1
    for last, op in source.ops():
        run.step(where(source.name, last), op)
    return run.finish(where(source.name, last))


def segmented(path: Path, impl: str | None, every: int) -> RunResult:
    source = open_trace(path)
    return check_in_segments(source.name, source.config, impl, every, True, LocalRunner())


def same(a: RunResult, b: RunResult) -> None:
    assert canonical_json(as_json(a, None, "impl")) == canonical_json(as_json(b, None, "impl"))
    assert summary(a) == summary(b)  # the text replay prints


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("segments") / "chaos.jsonl"
    config, ops = generate_trace(5, "seg", "chaos", 1500)
    write_trace(path, config, list(ops))
    return path


@pytest.mark.parametrize("every", [200, 700])
def test_a_clean_trace_in_segments_is_the_sequential_result(trace: Path, every: int) -> None:
    expected = sequential(trace, None)
    assert expected.failure is None or expected.failure.divergence is None
    same(segmented(trace, None, every), expected)


class Recording(LocalRunner):
    """Runs segments as `LocalRunner` and notes, at each submission, how far the fast pass
    had got (the last cut written) and what the fast pass's progress said last."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[tuple[int, int]] = []  # (segment index, last cut's operation)

    def submit(self, plan: Any, index: int) -> None:
        self.submitted.append((index, plan.cuts[-1].index))
        super().submit(plan, index)


def test_each_segment_starts_as_soon_as_its_end_cut_is_written(trace: Path) -> None:
    source = open_trace(path := trace)
    runner = Recording()
    heard: list[tuple[int, int]] = []
    result = check_in_segments(
        source.name, source.config, None, 400, True, runner, lambda o, s: heard.append((o, s))
    )
    same(result, sequential(path, None))
    # 1,500 operations, a cut every 400: segments 0..3 end at 400, 800, 1200 and 1500,
    # each submitted when the fast pass had written its end cut and no later one.
    assert runner.submitted == [(0, 400), (1, 800), (2, 1200), (3, 1500)]
    assert heard[-1] == (1500, 4)  # the last progress: every operation, every segment


def test_a_planted_bug_is_found_at_the_same_operation_mid_segment_and_at_a_cut(
    trace: Path,
) -> None:
    expected = sequential(trace, BUG)
    assert expected.divergence is not None
    index = expected.divergence.index  # 0-based: the operation after which they differ
    # mid-segment; the first operation of a segment (a cut just before it); the last one
    for every in (max(2, index // 2 + 3), index, index + 1):
        if every < 2 or (index % every == every // 2 and every > 3):
            continue
        result = segmented(trace, BUG, every)
        assert result.divergence is not None
        assert result.divergence.where == expected.divergence.where
        same(result, expected)


FORGETFUL = '''
from impl import Engine


class Forgetful(Engine):
    """The impl, plus a count of the operations it applied since it was built, which its
    checkpoint does not hold: its 300th makes one observation too many."""

    def __init__(self, config):
        super().__init__(config)
        self.applied_here = 0

    def apply(self, op):
        self.applied_here += 1
        observations = super().apply(op)
        if self.applied_here == 300:
            observations = observations + [{"kind": "skipped", "op": op.op}]
        return observations
'''


def test_an_impl_that_does_not_restore_what_it_ran_is_found_as_the_sequential_check_finds_it(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Restored at every cut, the engine never reaches its 300th operation in a segment of
    200, so the segments' lockstep agrees; the fast pass's run (the same engine, run
    through) made other observations in its second segment: that segment fails its
    digest, and the check runs from the trace's start, as the sequential check does."""
    (tmp_path / "forgetful.py").write_text(FORGETFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "forgetful:Forgetful"
    expected = sequential(trace, spec)
    assert expected.divergence is not None and expected.divergence.index == 299
    source = open_trace(trace)
    said: list[str] = []
    result = check_in_segments(
        source.name, source.config, spec, 200, True, LocalRunner(), say=said.append
    )
    assert "segment 2: the impl restored from a checkpoint did not repeat its run" in said[-1]
    assert result.divergence is not None
    assert result.divergence.where == expected.divergence.where
    same(result, expected)


def test_a_long_log_is_validated_in_segments(tmp_path: Path) -> None:
    import impl

    config, ops = generate_trace(2, "log", "chaos", 1200)
    engine = impl.Engine(config)
    lines: list[dict[str, Any]] = [{"config": config.to_json()}]
    for op in ops:
        from traces.ops import op_to_json

        lines.append(op_to_json(op) | {"observed": engine.apply(op)})
    lines[700]["observed"] = lines[700]["observed"] + [{"kind": "skipped", "op": "tick"}]
    log = tmp_path / "system.log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    from traces.logfile import open_log

    source = open_log(log)
    result = check_in_segments(source.name, config, "log", 250, True, LocalRunner())
    assert result.divergence is not None
    assert result.divergence.where == f"{log}:701"  # line 701: the 700th operation
    run = TraceRun(
        source.name,
        config,
        engine="both",
        impl=source.engine,
        impl_spec="the log",
        replay=lambda: (op for _, op in source.ops()),
    )
    last = 1
    for last, op in source.ops():
        run.step(where(source.name, last), op)
    expected = run.finish(where(source.name, last))
    assert result.verdicts[0] == expected.verdicts[0]  # P1 names "the log"
    assert canonical_json(as_json(result, None, "the log")) == canonical_json(
        as_json(expected, None, "the log")
    )


def test_replay_in_segments_on_spark_prints_what_a_sequential_replay_prints(trace: Path) -> None:
    # As a user runs it, in its own process: the Spark session it starts ends with it.
    root = Path(__file__).resolve().parent.parent  # --impl tools.planted_bugs from here
    argv = [sys.executable, "-m", "wanconform", "replay", str(trace), "--engine", "both"]
    argv += ["--check-properties", "--impl", BUG]
    split = subprocess.run(
        [*argv, "--segment-ops", "400"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert split.returncode == 1, split.stderr
    assert "fast pass done: 4 segments of up to 400 operations" in split.stderr
    whole = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=600)
    assert whole.returncode == 1, whole.stderr
    assert split.stdout == whole.stdout


def test_check_splits_a_long_trace_of_a_set_and_gives_the_sequential_rows(
    trace: Path, tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # A trace set of the long trace (1,500 operations, the planted bug diverging mid-way)
    # and a short one: with --segment-ops 400 the long one is split into 4 segments, the
    # short one (200 operations) is not; every row equals the sequential check's (run in
    # this process, on the session of the `spark` fixture).
    import pyarrow.parquet as pq

    from wanconform.cli import main

    short = tmp_path / "short.jsonl"
    config, ops = generate_trace(6, "short", "faults", 200)
    write_trace(short, config, list(ops))
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "wanconform"]
    done = subprocess.run(
        [*command, "convert", str(trace), str(short), "--out", str(tmp_path / "set")],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {}
    check = ["check", str(tmp_path / "set"), "--impl", BUG]
    done = subprocess.run(
        [*command, *check, "--out", str(tmp_path / "split"), "--segment-ops", "400"],
        cwd=root, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    split_lines = [line for line in done.stderr.splitlines() if "fast pass done" in line]
    assert split_lines == ["check: chaos: fast pass done: 4 segments of up to 400 operations"]
    whole = [*check, "--out", str(tmp_path / "whole"), "--segment-ops", "1000000"]
    assert main(whole) == 1
    assert "fast pass done" not in capsys.readouterr().err
    for name in ("split", "whole"):
        table = pq.read_table(tmp_path / name / "results.parquet")
        rows[name] = table.to_pylist()
    assert rows["split"] == rows["whole"]
    assert [row["trace_id"] for row in rows["whole"]] == ["chaos", "short"]
    assert rows["whole"][0]["failures"]  # the planted bug is found in the long trace


class _Gated:
    """A fake Spark context whose one-task jobs wait at a gate, counting those running."""

    def __init__(self, master: str, cores: int) -> None:
        import threading

        self.master, self.defaultParallelism = master, cores
        self.sparkContext = self
        self.gate, self.lock = threading.Event(), threading.Lock()
        self.running = 0

    def setJobGroup(self, group: str, description: str) -> None:
        pass

    def parallelize(self, items: list[int], slices: int) -> Any:
        return self

    def map(self, function: Any) -> Any:
        return self

    def collect(self) -> list[str]:
        with self.lock:
            self.running += 1
        self.gate.wait(10)
        with self.lock:
            self.running -= 1
        return ["done"]

    def settles_at(self, count: int) -> int:
        import time

        for _ in range(100):  # jobs start on the pool's threads: let them get there
            time.sleep(0.02)
            if self.running >= count:
                break
        time.sleep(0.1)  # and no more than that start
        return self.running


@pytest.mark.parametrize(("master", "during"), [("local[2]", 1), ("spark://host:7077", 2)])
def test_a_local_master_leaves_one_core_to_the_fast_pass_until_it_ends(
    monkeypatch: pytest.MonkeyPatch, master: str, during: int
) -> None:
    # While the fast pass runs (before results()), a local master runs cores - 1 segments
    # at once: the fast pass shares its cores. A cluster's executors are not its cores.
    # Once the fast pass is over, every core runs segments.
    import threading

    import conformance.spark.segments
    from conformance.spark.glue import SegmentJobs

    monkeypatch.setattr(
        conformance.spark.segments, "checkpoint_texts", lambda plan, index: ("", "")
    )
    spark = _Gated(master, cores=2)
    jobs = SegmentJobs(spark, "group")
    try:
        for index in range(3):
            jobs.submit(None, index)  # type: ignore[arg-type]
        assert spark.settles_at(during) == during
        results: list[Any] = []
        after = threading.Thread(
            target=lambda: results.extend(jobs.results(lambda: None)), daemon=True
        )
        after.start()
        assert spark.settles_at(2) == 2
        spark.gate.set()
        after.join(10)
        assert results == ["done", "done", "done"]
    finally:
        spark.gate.set()
        for _ in range(3):  # whatever the outcome, no job thread left waiting for a slot
            jobs.slots.release()
        jobs.close()


def test_replay_with_a_checkpoint_or_a_store_runs_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # in segments, --checkpoint was never written and --dlq-dir's store never made
    # (exit 0), while stderr said "dead letters in DIR/TRACE"
    from impl.dlq_store import read_store
    from wanconform.cli import main

    trace = str(Path(__file__).parent.parent / "traces/examples/failed_event_dead_lettered.jsonl")
    argv = ["replay", trace, "--engine", "both", "--segment-ops", "2"]
    assert main([*argv, "--checkpoint", str(tmp_path / "c.json")]) == 0
    assert main(["replay", trace, "--checkpoint", str(tmp_path / "whole.json")]) == 0
    assert (tmp_path / "c.json").read_text() == (tmp_path / "whole.json").read_text()
    assert main([*argv, "--dlq-dir", str(tmp_path / "dlq")]) == 0
    stored = read_store(tmp_path / "dlq" / "failed_event_dead_lettered")
    assert [(r["event_id"], r["key"]) for r in stored["ny.dlq"]] == [("1:2", "b")]
    assert "fast pass" not in capsys.readouterr().err


EXITS = """
from impl import Engine


class Exits(Engine):  # sys.exit in a user's engine: its failure, not wanconform's exit
    def apply(self, op):
        if op.op == "deliver":
            raise SystemExit(3)
        return super().apply(op)
"""


def test_a_user_engine_that_raises_in_the_fast_pass_is_checked_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # was: the engine's raise, a traceback and its exit status (3) out of the fast pass
    from wanconform.cli import main

    (tmp_path / "exits.py").write_text(EXITS)
    monkeypatch.syspath_prepend(str(tmp_path))
    trace = str(Path(__file__).parent.parent / "traces/examples/lost_ack_resend.jsonl")
    argv = ["replay", trace, "--engine", "both", "--impl", "exits:Exits", "--json"]
    assert main(argv) == 1
    whole = capsys.readouterr().out
    assert main([*argv, "--segment-ops", "2"]) == 1
    out, err = capsys.readouterr()
    assert out == whole
    assert err.splitlines()[-1] == (
        f"{trace}: fast pass: --impl exits:Exits: at {trace}:5, the engine raised SystemExit: 3 "
        "(exits.py:8, in apply); running it whole"
    )


UNLIMITED = '''
from impl import Engine
from traces.config import DEFAULT_QUEUE_MEMORY


class OnlyWithoutLimits(Engine):
    """The impl, except on a configuration whose queues have Geode's default memory (the
    run of P10's twin): there every tick makes one observation too many."""

    def apply(self, op):
        observations = super().apply(op)
        if op.op == "tick" and all(
            s.maximum_queue_memory_bytes >= DEFAULT_QUEUE_MEMORY for s in self._config.senders
        ):
            observations = observations + [{"kind": "skipped", "op": "tick"}]
        return observations
'''


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace whose senders limit their queue memory (400 and 40 bytes): P10 applies."""
    path = tmp_path_factory.mktemp("limited") / "lifecycle.jsonl"
    config, ops = generate_trace(1, "lim", "lifecycle", 600)
    write_trace(path, config, list(ops))
    return path


def test_p10_in_segments_is_the_sequential_runs_twin_of_the_model(
    limited: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # was: the fast pass's P10 twin was a second impl (the engine it runs), where the
    # sequential `--engine both` run's twin is a second model: an impl that errs only
    # without memory limits made P10 "violated" in segments, "held" whole
    (tmp_path / "only_without_limits.py").write_text(UNLIMITED)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "only_without_limits:OnlyWithoutLimits"
    expected = sequential(limited, spec)
    assert expected.divergence is None
    assert [v.status for v in expected.verdicts if v.property == "P10"] == ["held"]
    same(segmented(limited, spec, 200), expected)


def test_a_planted_bug_on_a_trace_with_queue_memory_limits_is_found_in_segments(
    limited: Path,
) -> None:
    # was: PicklingError out of the fast pass's first cut ("Can't pickle <class
    # 'tools.planted_bugs.LateBatchTime'>: it's not the same object as ..."): the
    # checker it saves held P10's twin, an engine of the user's class
    expected = sequential(limited, BUG)
    assert expected.divergence is not None
    for every in (100, 300):
        result = segmented(limited, BUG, every)
        assert result.divergence is not None
        assert result.divergence.where == expected.divergence.where
        same(result, expected)


def test_check_of_a_long_trace_whose_user_engine_raises_in_the_fast_pass_gives_its_row(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # was: `check SET --impl exits:Exits --segment-ops 400` failed whole, exit 2
    # ("wanconform: error: --impl exits:Exits: at chaos:4, the engine raised SystemExit: 3
    # ..."): the fast pass's failure became an error row; sequentially (--segment-ops
    # 1000000) it is the trace's P1 divergence, exit 1
    from conformance.spark.check import check_trace, segmented_batch
    from traces.parquet import jsonl_to_parquet, open_trace_set

    (tmp_path / "exits.py").write_text(EXITS)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "exits:Exits"
    jsonl_to_parquet([trace], tmp_path / "set")
    [info] = open_trace_set(tmp_path / "set").traces
    said: list[str] = []
    batch = segmented_batch(str(tmp_path / "set"), info, spec, 400, LocalRunner(), said.append)
    source = open_trace(trace)
    expected = check_trace(
        "chaos", source.config, source.ops(), load_impl(spec), info.profile, info.seed, spec
    )
    [row] = batch.to_pylist()
    [expected] = type(batch).from_pylist([expected | {"error": None}], batch.schema).to_pylist()
    assert row.pop("seconds") >= 0 and expected.pop("seconds") >= 0
    assert row == expected
    assert row["error"] is None
    assert row["failures"]  # P1: the engine raised
    assert said == [
        "chaos: fast pass: --impl exits:Exits: at chaos:4, the engine raised SystemExit: 3 "
        "(exits.py:8, in apply); checking it whole"
    ]


def test_an_impl_whose_checkpoint_the_model_cannot_restore_is_found_as_sequentially(
    tmp_path: Path,
) -> None:
    # was: `replay --engine both --impl tools.planted_bugs:RouteByKeyAndTime --segment-ops 4`
    # on a parallel trace: a traceback out of the Spark job (CheckpointError: cut-12.json:
    # ... event 2:1 of key 'k58' belongs on dispatcher 1 (R29), not this one), no output;
    # whole, the P1 divergence at operation 7. A segment whose start checkpoint cannot be
    # restored is now a failed segment: the check goes on sequentially.
    path = tmp_path / "parallel.jsonl"
    config, ops = generate_trace(5, "f5", "parallel", 1500)
    write_trace(path, config, list(ops))
    spec = "tools.planted_bugs:RouteByKeyAndTime"
    expected = sequential(path, spec)
    assert expected.divergence is not None and expected.divergence.index == 6
    for every in (4, 6, 7):
        result = segmented(path, spec, every)
        assert result.divergence is not None
        assert result.divergence.where == expected.divergence.where
        same(result, expected)


def test_a_divergence_after_the_first_segment_prints_the_summary_of_the_whole_run(
    trace: Path,
) -> None:
    # was: the sequential run from the failing segment's cut printed itself as a --from
    # run: "1,500 operations (the first N from the checkpoint; ... replayed ...)" and
    # "in Geode's statistics (...), over the ... operations replayed (not the checkpoint's)"
    expected = sequential(trace, BUG)
    assert expected.divergence is not None
    every = expected.divergence.index // 2 + 1  # the divergence is in the second segment
    result = segmented(trace, BUG, every)
    assert summary(result) == summary(expected)
    assert "from the checkpoint" not in summary(result)
