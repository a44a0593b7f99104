"""The Spark glue of campaigns: a session, the generation fan-out, the check. Thin.

Everything a trace goes through is a plain function tested without Spark:
`conformance.generation.profiles.generate_trace` makes a trace,
`conformance.spark.check.check_batches` checks a sorted Arrow stream of them. Here Spark
only spreads the work:

- generate: the set's files are a `range`, split over partitions; each partition makes
  the traces of its files with `mapInArrow` and writes them. A trace depends only on
  (seed, trace id, profile, ops), never on the partition, and which traces a file holds
  only on the set's size (`traces_per_file`), so the trace set is the same, byte for
  byte, however it is split.
- check: the configurations (as the row `seq = 1` of each trace) and the operations are
  one table, `repartition`ed by trace (each trace placed on a partition by `balance`,
  longest first on the least loaded) and sorted within partitions by (trace id,
  seq) -- Spark keeps no order within a group otherwise -- then streamed through
  `check_batches` with `mapInArrow`, which asserts that order. A Python worker sees one
  Arrow batch at a time (`spark.sql.execution.arrow.maxRecordsPerBatch` rows), so a
  trace of ten million operations is never held as Python objects; Spark's sort spills
  to disk when a partition does not fit in memory.

Outputs are built in a staging directory next to the target and moved into place only
when complete (`traces.outputs.building_directory`): a failed run leaves nothing. A local
master tries each task twice (`with_task_retries`: a Python worker that dies costs a
retry, not the run); a job that fails anyway is one line (`job`), and on a cluster a job
left without any executor (its workers died) is cancelled after `LOST_EXECUTORS_SECONDS`
instead of waiting for one forever. After
the check, the driver shrinks and explains the largest failure groups' examples
(`conformance.search.examples`) into the results directory, so that its report needs no run.
"""

from __future__ import annotations

import functools
import heapq
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.generation.profiles import generate_rows, trace_ids
from conformance.search.examples import MAX_EXAMPLES, SHRINK_BUDGET, explain_groups, failure_groups
from conformance.spark.check import (
    CHECK_INPUT_SCHEMA,
    ROW_SCHEMA,
    check_batches,
    results_table,
    segmented_batch,
)
from conformance.spark.policies import Comparison, compare_trace_set
from conformance.spark.results import FAILURES, MAX_EXPORTED_FAILURES, plain_row, write_results
from conformance.spark.segments import SEGMENT_OPS, SegmentResult, can_split
from conformance.spark.segments import Plan as SegmentPlan
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.engine import DEFAULT_IMPL, SETTLE_CAP_VARIABLE, tune_gc
from traces.errors import WanconformError
from traces.ops import Op
from traces.outputs import building_directory
from traces.parquet import (
    FIRST_OP_SEQ,
    OPS_SCHEMA,
    OpsBatcher,
    TraceInfo,
    TraceSet,
    config_row,
    configs_batch,
    open_trace_set,
    parse_op_cell,
    trace_set_jsonl,
    write_marker,
)
from traces.tracefile import parse_trace_lines

DEFAULT_MASTER = "local[*]"
LOCAL_TASK_ATTEMPTS = 2  # a local master runs each task this often before the job fails
LOST_EXECUTORS_SECONDS = 30.0  # a cluster job with no executor left fails after this long
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")  # Spark logs errors only
ROWS_PER_ARROW_BATCH = 10_000


PROBE_SECONDS = 3.0  # how long a spark:// master may take to accept a connection
JVM_NOISE = (  # what the JVM prints at every start, before wanconform's own first line
    b"WARNING: Using incubator modules",
    b"Setting default log level to",
    b"To adjust logging level use sc.setLogLevel",
    b"Using Spark's default log4j profile",
)
_interrupted = threading.Event()  # Ctrl-C arrived while this process's JVM ran
_jvm: list[Any] = []  # the JVM process this module started (Popen)


def _settings(master: str, app: str) -> dict[str, str]:
    cap = os.environ.get(SETTLE_CAP_VARIABLE)  # --settle-cap, for the executors' engines
    return ({f"spark.executorEnv.{SETTLE_CAP_VARIABLE}": cap} if cap else {}) | {
        "spark.master": master,
        "spark.app.name": app,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ROWS_PER_ARROW_BATCH),
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={LOG_CONFIG}",
        "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile={LOG_CONFIG}",
    }


def probe_master(master: str) -> None:
    """A `spark://host:port[,host:port]` master must accept a TCP connection within
    `PROBE_SECONDS`: nothing listening is one line at once, not a minute of retries and
    a Java stack."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise WanconformError(f"--master {master}: expected spark://HOST:PORT")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), PROBE_SECONDS):
                return
        except OSError as exc:
            reasons.append(f"{address}: {exc.strerror or 'no answer'}")
    raise WanconformError(
        f"--master {master}: no Spark master answers ({'; '.join(reasons)}); is the master running?"
    )


def _forward_jvm_stderr(stream: Any) -> None:
    """Pass the JVM's stderr on, without its start-up notices, and nothing at all once
    Ctrl-C has been pressed (the JVM is being stopped: its complaints are not news)."""
    for line in iter(stream.readline, b""):
        if _interrupted.is_set() or any(noise in line for noise in JVM_NOISE):
            continue
        with suppress(OSError):
            os.write(2, line)


def _launch_jvm(settings: dict[str, str]) -> None:
    """Start this process's JVM (py4j gateway) as PySpark would, but with its stderr
    through `_forward_jvm_stderr`."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    popen = {"stderr": subprocess.PIPE}
    # Ctrl-C while the JVM starts is held until it has started: PySpark's JVM ignores
    # SIGINT, and one interrupted mid-launch would be known to nobody and outlive the
    # command (issue 31 item 2); once it is in `_jvm`, `abandon` stops it.
    pressed: list[int] = []
    held = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda sig, _: pressed.append(sig)) if held else None
    try:
        gateway = launch_gateway(conf, popen_kwargs=popen)  # type: ignore[no-untyped-call]
        _jvm.append(gateway.proc)
    finally:
        if held:
            signal.signal(signal.SIGINT, previous or signal.default_int_handler)
    threading.Thread(target=_forward_jvm_stderr, args=(gateway.proc.stderr,), daemon=True).start()
    if pressed:
        raise KeyboardInterrupt
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _on_interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C with Spark: remember it (a job's error may arrive instead of the interrupt),
    stop the JVM (`abandon`) and interrupt. The JVM goes first: PySpark's collect waits
    for its job in a `finally` (`toArrow`: `getResult()`), so the interrupt alone would
    wait for the running task, minutes for a long trace. PySpark's own handler calls the
    JVM from inside the signal handler, which breaks the call in progress and prints
    tracebacks."""
    abandon()
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether Ctrl-C was pressed while Spark ran (any error after it is its echo)."""
    return _interrupted.is_set()


def abandon() -> None:
    """After Ctrl-C: stop this process's JVM at once (its Python workers exit with it),
    so that nothing outlives the command and nothing more is printed."""
    _interrupted.set()
    logging.disable(logging.CRITICAL)  # py4j's complaints about the broken connection
    from pyspark import SparkContext

    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is not None:  # it prints a traceback when the JVM's connection drops
        server.handle_error = lambda request, address: None
    for process in _jvm:
        if process.poll() is None:
            process.kill()
            process.wait()


_LOCAL_MASTER = re.compile(r"local(?:\[\s*([0-9]+|\*)\s*\])?")
# the local masters Spark parses (its SparkMasterRegex): local, local[N], local[N,F],
# local-cluster[N,C,M]; any other local... is a JVM stack trace before the error
_SPARK_LOCAL = re.compile(
    r"local(?:\[(?:[0-9]+|\*)(?:\s*,\s*[0-9]+)?\])?"
    r"|local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]"
)


def with_task_retries(master: str) -> str:
    """`local` or `local[N]` as `local[N,2]` (`LOCAL_TASK_ATTEMPTS`): Spark's local mode
    runs a task once, so one Python worker that dies (killed, out of memory) fails the
    whole job; a cluster tries a task 4 times (`spark.task.maxFailures`), and the check's
    tasks may run again (a trace's DLQ store starts afresh, generation rewrites whole
    files). Any other master, `local[N,F]` included, as given."""
    match = _LOCAL_MASTER.fullmatch(master.strip())
    if match is None:
        return master
    return f"local[{match.group(1) or 1},{LOCAL_TASK_ATTEMPTS}]"


def check_master(master: str) -> str:
    """`master` as the session uses it (`with_task_retries`), or one line for what Spark
    would refuse only once its JVM had started (dying unsaid, or with a stack trace):
    spark-submit's rule (yarn, or spark..., k8s..., local...) and Spark's own parse of a
    local master (local, local[N], local[N,F], local-cluster[N,C,M]; at least 1 core)."""
    if re.fullmatch(r"local\[\s*0+\s*[],].*", master.strip()):
        raise WanconformError(f"--master {master}: a local master needs at least 1 core")
    tried = with_task_retries(master)
    known = (
        master == "yarn"
        or master.startswith(("spark", "k8s"))
        or (master.startswith("local") and _SPARK_LOCAL.fullmatch(tried) is not None)
    )
    if not known:
        raise WanconformError(
            f"--master {master}: Spark takes local, local[N], spark://HOST:PORT, yarn or "
            "k8s://HOST:PORT"
        )
    return tried


def session(master: str | None = None, app: str = "wanconform") -> Any:
    """The Spark session (local on every core by default, or `spark://host:port`); a
    local master tries each task twice (`with_task_retries`)."""
    master = check_master(DEFAULT_MASTER if master is None else master)  # "" is refused
    probe_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = _settings(master, app)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    main = threading.current_thread() is threading.main_thread()
    try:
        _launch_jvm(settings)
        # PySpark's SparkContext installs its own Ctrl-C handler, which calls the JVM
        # from inside the signal handler (tracebacks when a call is in progress, as while
        # the session starts): ours before it and at once after it.
        if main:
            signal.signal(signal.SIGINT, _on_interrupt)
        from pyspark import SparkConf, SparkContext

        conf = SparkConf(loadDefaults=False)
        for key, value in settings.items():
            conf.set(key, value)
        SparkContext.getOrCreate(conf)
        if main:
            signal.signal(signal.SIGINT, _on_interrupt)
        spark = builder.getOrCreate()
    except Exception as exc:  # Java missing, a master that fails: one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WanconformError(f"cannot start Spark ({master}): {first}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


_SHIPPED: set[tuple[str, str]] = set()
"""(Spark application id, module file) of every user's module shipped by `ship_impl`."""


def ship_impl(spark: Any, impl_spec: str | None) -> None:
    """Send the module of a user's `--impl` (loaded on the driver by `load_impl`, from
    the current directory, next to the traces or from PYTHONPATH) to every executor, as
    a file or its package zipped, so that executors on other machines import the same
    code. Installed modules (site-packages) are there already."""
    if impl_spec is None or impl_spec == DEFAULT_IMPL:
        return
    top = impl_spec.partition(":")[0].split(".")[0]
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if file is None or "site-packages" in Path(file).parts:
        return
    source = Path(file)
    shipped = (spark.sparkContext.applicationId, str(source))
    if shipped in _SHIPPED:  # once per Spark application (Spark refuses a second path)
        return
    _SHIPPED.add(shipped)
    if source.name == "__init__.py":  # a package: one zip of it
        folder = Path(tempfile.mkdtemp(prefix="wanconform-impl-"))
        archive = shutil.make_archive(
            str(folder / top), "zip", root_dir=source.parent.parent, base_dir=top
        )
        spark.sparkContext.addPyFile(archive)
    else:
        spark.sparkContext.addPyFile(str(source))


def parallelism(spark: Any) -> int:
    return int(spark.sparkContext.defaultParallelism)


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


# -- progress ----------------------------------------------------------------------------

StageProgress = Callable[[int, int, int], None]
"""Called about twice a second during a command's Spark work with (stage number from 1,
tasks of that stage finished, tasks of that stage in all): one stage at a time, each with
its fixed total; the number grows as the work moves on to the next stage."""


@contextmanager
def progress(spark: Any, label: str, on_progress: StageProgress | None) -> Iterator[str]:
    """Report the Spark stages of the body's jobs to `on_progress` while the body runs (the
    command line draws one bar per stage). The current stage is the latest one a task of
    which has started; stages skipped by Spark (a shuffle reused) never start. Yields the
    job group of the body's jobs."""
    context = spark.sparkContext
    group = f"wanconform-{label}-{time.monotonic_ns()}"
    context.setJobGroup(group, label)
    done = threading.Event()

    def poll() -> None:
        try:
            poll_stages()
        except Exception:
            if not _interrupted.is_set():  # (after Ctrl-C the JVM is gone: no news)
                raise

    def poll_stages() -> None:
        assert on_progress is not None
        tracker = context.statusTracker()
        started: list[int] = []  # stage ids in the order they started
        while not done.wait(0.5):
            current = None
            for job_id in tracker.getJobIdsForGroup(group):
                job = tracker.getJobInfo(job_id)
                for stage_id in job.stageIds if job else ():
                    stage = tracker.getStageInfo(stage_id)
                    if stage and stage.numActiveTasks + stage.numCompletedTasks > 0:
                        if stage_id not in started:
                            started.append(stage_id)
                        if current is None or stage_id > current.stageId:
                            current = stage
            if current is not None:
                number = sorted(started).index(current.stageId) + 1
                on_progress(number, current.numCompletedTasks, current.numTasks)

    thread = threading.Thread(target=poll, daemon=True) if on_progress else None
    if thread:
        thread.start()
    try:
        yield group
    finally:
        done.set()
        if thread:
            thread.join()
        if not _interrupted.is_set():  # (after Ctrl-C the JVM is gone)
            context.setLocalProperty("spark.jobGroup.id", None)


# -- a job that fails: one line, and never a wait for executors that are gone --------------

_had_executors = threading.Event()  # this application has had an executor (not local)
_STAGE_FAILURE = re.compile(
    r"Job aborted due to stage failure: (Task \S+ in stage \S+ failed \d+ times?)"
    r"(?:, most recent failure: Lost task [^()]*(?:\([^()]*\)\s*)*: (?:[\w.$]+: )?([^\n]*))?"
)
_JOB_ENDED = re.compile(r"(Job \d+ cancelled[^\n]*|SparkContext was shut down[^\n]*)")
_READ_FAILURE = re.compile(  # a file of the input that Spark cannot read: damaged, or gone
    r"\[FAILED_READ_FILE[\w.]*\] Encountered error while reading file (?:file://)?(\S+?)\.?\s"
)
_CAUSE = re.compile(r"Caused by: [\w.$]+: ([^\n]*)")


def job_failure(exc: BaseException) -> str | None:
    """The reason a Spark job failed, in one line, when `exc` is the failure of a job
    (a task failed as often as Spark tries it: a Python worker or an executor died, a
    machine was lost; the job was cancelled or its context stopped); None otherwise: an
    exception raised by Python code in a task is a bug, shown with its traceback."""
    if type(exc).__module__.split(".")[0] not in ("py4j", "pyspark"):
        return None
    text = str(exc)
    if "org.apache.spark.api.python.PythonException" in text or type(exc).__name__ == (
        "PythonException"
    ):
        return None
    match = _STAGE_FAILURE.search(text)
    if match:
        task, cause = match.group(1), (match.group(2) or "").strip()
        cause = cause.split(". ")[0].rstrip(".")  # its first sentence: not Spark's advice
        return f"{task[0].lower()}{task[1:]}" + (f": {cause}" if cause else "")
    unread = _READ_FAILURE.search(text)
    if unread:
        cause = _CAUSE.search(text, unread.end())
        return f"cannot read {unread.group(1)}" + (f": {cause.group(1).strip()}" if cause else "")
    ended = _JOB_ENDED.search(text)
    return ended.group(1).strip() if ended else None


def _executors(context: Any) -> int:
    """How many executors the application has now (the driver not counted)."""
    return int(context._jsc.sc().getExecutorIds().size())


@contextmanager
def job(spark: Any, label: str, on_progress: StageProgress | None) -> Iterator[str]:
    """The Spark jobs of a command's step (`label`: "check", "generate"), with their
    progress (`progress`). On a cluster, a watchdog: once this application has had an
    executor, no executor at all for `LOST_EXECUTORS_SECONDS` (its workers died) cancels
    the jobs -- Spark would wait for a new executor forever. A job that fails (`job_failure`)
    or is cancelled so is one line, a `WanconformError`; outputs are written after the
    jobs or built aside (`traces.outputs`), so nothing is written. Yields the job group
    (jobs started from other threads join it with `setJobGroup`)."""
    context = spark.sparkContext
    stop = threading.Event()
    lost = threading.Event()

    def watch(group: str) -> None:
        since = None
        while not stop.wait(0.5):
            try:
                count = _executors(context)
            except Exception:  # the JVM is going away: its own error says why
                return
            if count:
                _had_executors.set()
                since = None
            elif _had_executors.is_set():
                since = time.monotonic() if since is None else since
                if time.monotonic() - since >= LOST_EXECUTORS_SECONDS:
                    lost.set()
                    with suppress(Exception):
                        context.cancelJobGroup(group)
                    return

    watchdog = None
    try:
        with progress(spark, label, on_progress) as group:
            if not str(context.master).startswith("local"):
                watchdog = threading.Thread(target=watch, args=(group,), daemon=True)
                watchdog.start()
            yield group
    except Exception as exc:
        if interrupted():
            raise
        if lost.is_set():
            raise WanconformError(
                f"Spark {label} failed: no executor left for {LOST_EXECUTORS_SECONDS:.0f} s "
                f"(its workers were lost; is a worker of {context.master} running?)"
            ) from None
        reason = job_failure(exc)
        if reason is None:
            raise
        raise WanconformError(f"Spark {label} failed: {reason}") from None
    finally:
        stop.set()
        if watchdog is not None:
            watchdog.join()


# -- generate -----------------------------------------------------------------------------


def _given(config_text: str | None) -> Config | None:
    """The configuration given to `generate` (sent to executors as canonical JSON)."""
    return None if config_text is None else parse_config(json.loads(config_text))


ROWS_PER_FILE = 200_000  # a generated trace set's ops rows per file, at most (about)
MIN_FILES = 64  # ... and at least this many files (tasks), when there are traces enough


def traces_per_file(traces: int, ops: int) -> int:
    """How many traces each file of a generated trace set holds: a function of the set's
    size alone, never of Spark's partitions, so the set comes out the same, file for
    file and byte for byte, on any master (a file is a task: MIN_FILES leave room for the
    cores of a cluster)."""
    return max(1, min(ROWS_PER_FILE // max(ops, 1), -(-traces // MIN_FILES)))


WRITTEN_SCHEMA = pa.schema([pa.field("file", pa.string()), pa.field("rows", pa.int64())])


def _write_files(
    files: Iterable[pa.RecordBatch],
    seed: int,
    profiles: list[str],
    ops: int,
    traces: int,
    folder: str,
    config_text: str | None,
) -> Iterator[pa.RecordBatch]:
    """Write the traces of each file number of `files`: `configs/part-N.parquet` and
    `ops/part-N.parquet` in `folder` (N: the file's first trace), with pyarrow, each
    written whole and renamed into place (a retried task writes the same bytes again);
    one row (file, operations) per file. Python writes the Parquet itself: handing the
    rows to the JVM to write cost more than making them."""
    ids = trace_ids(profiles, traces)
    given = _given(config_text)
    per_file = traces_per_file(traces, ops)
    for batch in files:
        for number in batch.column(0).to_pylist():
            first = number * per_file
            name = f"part-{first:09d}.parquet"
            configs, rows = [], 0
            ops_file = Path(folder) / "ops" / name
            partial = ops_file.with_name(f".{name}.{os.getpid()}.tmp")
            with pq.ParquetWriter(partial, OPS_SCHEMA) as writer:
                batcher = OpsBatcher(ROWS_PER_ARROW_BATCH)
                for trace_id, profile in ids[first : first + per_file]:
                    config, trace_rows = generate_rows(seed, trace_id, profile, ops, given)
                    configs.append(config_row(trace_id, config, ops, seed, profile))
                    for written in batcher.add_trace(trace_id, trace_rows):
                        writer.write_batch(written)
                        rows += written.num_rows
                last = batcher.flush()
                if last is not None:
                    writer.write_batch(last)
                    rows += last.num_rows
            os.replace(partial, ops_file)
            configs_file = Path(folder) / "configs" / name
            partial = configs_file.with_name(f".{name}.{os.getpid()}.tmp")
            pq.write_table(pa.Table.from_batches([configs_batch(configs)]), partial)
            os.replace(partial, configs_file)
            yield pa.RecordBatch.from_pylist([{"file": name, "rows": rows}], WRITTEN_SCHEMA)


def generate(
    spark: Any,
    out: str | os.PathLike[str],
    traces: int,
    ops: int,
    profiles: list[str],
    seed: int,
    partitions: int | None = None,
    on_progress: StageProgress | None = None,
    config: Config | None = None,
) -> None:
    """Write a trace set of `traces` generated traces of `ops` operations each (on
    `config` when given: `conformance.generation.profiles`), in files of
    `traces_per_file` traces: the same files whatever `partitions` (default: four per
    core) or the master."""
    target = Path(out)
    config_text = None if config is None else canonical_json(config.to_json())
    files = -(-traces // traces_per_file(traces, ops))
    parts = max(1, min(files, partitions or parallelism(spark) * 4))
    with building_directory(target) as staging:
        folder = str(staging.resolve())  # every executor writes here

        def write_fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return _write_files(batches, seed, profiles, ops, traces, folder, config_text)

        (staging / "ops").mkdir(parents=True)
        (staging / "configs").mkdir()
        with job(spark, "generate", on_progress):
            written = (
                spark.range(0, files, numPartitions=parts)
                .mapInArrow(write_fn, _spark_schema(WRITTEN_SCHEMA))
                .collect()
            )
        expected = traces * ops
        if len(written) != files or sum(row["rows"] for row in written) != expected:
            raise WanconformError(
                f"{target}: generation wrote {sum(row['rows'] for row in written):,} "
                f"operations in {len(written)} files, not {expected:,} in {files}"
            )
        write_marker(staging)


# -- check --------------------------------------------------------------------------------


def _replay_from(path: str) -> Callable[[str, Config], Callable[[], Iterable[Op]]]:
    """How the lockstep re-reads a trace from the start to locate a state-only divergence:
    from the trace set's files (which every executor must be able to read)."""

    def replay_from(trace_id: str, config: Config) -> Callable[[], Iterable[Op]]:
        def replay() -> Iterator[Op]:
            trace_set = open_trace_set(path)
            for seq, text in trace_set.ops_of(trace_id):
                yield parse_op_cell(trace_id, seq, text, config)

        return replay

    return replay_from


def balance(traces: Sequence[TraceInfo], parts: int) -> dict[str, int]:
    """trace id -> partition, the longest traces first, each to the least loaded partition
    (by operations): hashing trace ids instead can put two long traces on one core while
    another waits."""
    loads = [(0, p) for p in range(parts)]
    placement = {}
    for info in sorted(traces, key=lambda t: (-t.operations, t.trace_id)):
        load, part = heapq.heappop(loads)
        placement[info.trace_id] = part
        heapq.heappush(loads, (load + info.operations + 1, part))
    return placement


def _slot_keys(spark: Any, parts: int) -> list[int]:
    """For each partition p, a number that `repartition(parts, column)` sends to p: Spark
    hash-partitions by pmod(murmur3 hash, parts), the same hash as `F.hash`."""
    from pyspark.sql import functions as F

    found = (
        spark.range(0, parts * 64)
        .select("id", F.pmod(F.hash("id"), F.lit(parts)).alias("part"))
        .groupBy("part")
        .agg(F.min("id").alias("id"))
        .collect()
    )
    keys = {int(row["part"]): int(row["id"]) for row in found}
    return [keys.get(p, p) for p in range(parts)]  # a missing one only costs balance


def compare_policies(
    spark: Any, traces: str | os.PathLike[str], on_progress: StageProgress | None = None
) -> Comparison:
    """`campaign --compare-policies` on Spark: the traces of the set split over the cores
    (the longest first, as `check` places them), each part compared in a task
    (`conformance.spark.policies.compare_trace_set`), the parts merged here. The same
    figures as in one process (counts add up)."""
    trace_set = open_trace_set(traces)
    path = str(trace_set.path.resolve())
    parts = max(1, min(len(trace_set.traces), parallelism(spark)))
    placement = balance(trace_set.traces, parts)
    ids = [[t for t, p in sorted(placement.items()) if p == part] for part in range(parts)]

    def compare_part(part: Iterable[list[str]]) -> Iterator[Comparison]:
        tune_gc()
        for chosen in part:
            yield compare_trace_set(path, chosen)

    with job(spark, "policies", on_progress):
        compared = spark.sparkContext.parallelize(ids, parts).mapPartitions(compare_part).collect()
    return Comparison.merged(compared)


def check(
    spark: Any,
    traces: str | os.PathLike[str],
    out: str | os.PathLike[str],
    impl_spec: str | None = None,
    on_progress: StageProgress | None = None,
    say: Callable[[str], None] | None = None,
    dlq_dir: str | os.PathLike[str] | None = None,
    moved_to: tuple[str, str] | None = None,
    segment_ops: int = SEGMENT_OPS,
    on_segments: Callable[[str], None] | None = None,
    queue_dir: str | os.PathLike[str] | None = None,
    shrink_budget: float | None = SHRINK_BUDGET,
) -> list[dict[str, Any]]:
    """Check every trace of a trace set and write the results directory `out`
    (`conformance.spark.results`: the rows, the impl, the largest groups' examples and the
    failing traces; all or nothing). The rows, sorted by trace id. `moved_to`: (the
    trace set's, the results') paths once the caller moves them into place (a campaign
    builds both in a temporary directory), for the manifest and reproduce commands.
    A trace of at least 2 x `segment_ops` operations is checked in segments of that many
    (README "Segments"), with the same row (not with `dlq_dir` or `queue_dir`: a store is
    one run's);
    `on_segments` hears how each was split."""
    from pyspark.sql import functions as F

    spec = impl_spec or DEFAULT_IMPL
    trace_set = open_trace_set(traces)  # layout, schemas, configurations: before any work
    ship_impl(spark, spec)
    path = str(trace_set.path.resolve())
    long = [
        info
        for info in trace_set.traces
        if info.operations >= 2 * segment_ops
        and dlq_dir is None
        and queue_dir is None
        and can_split(spec)
    ]
    long_ids = [info.trace_id for info in long]
    configs = spark.read.parquet(str(Path(path) / "configs")).select(
        "trace_id",
        F.lit(1).cast("long").alias("seq"),
        F.lit("config").alias("kind"),
        F.col("config").alias("json"),
        "profile",
        "seed",
        "operations",
    )
    ops = spark.read.parquet(str(Path(path) / "ops")).select(
        "trace_id",
        "seq",
        F.lit("op").alias("kind"),
        "json",
        F.lit(None).cast("string").alias("profile"),
        F.lit(None).cast("long").alias("seed"),
        F.lit(None).cast("long").alias("operations"),
    )
    parts = max(1, min(len(trace_set.traces), parallelism(spark) * 4))
    slots = _slot_keys(spark, parts)
    placement = spark.createDataFrame(
        [(t, slots[p]) for t, p in balance(trace_set.traces, parts).items()],
        "trace_id string, slot long",
    )
    if long_ids:  # checked in segments below
        configs = configs.filter(~F.col("trace_id").isin(long_ids))
        ops = ops.filter(~F.col("trace_id").isin(long_ids))
    rows = (
        configs.unionByName(ops)
        .join(F.broadcast(placement), "trace_id", "left")  # an unknown id: an error row
        .repartition(parts, "slot")
        .sortWithinPartitions("trace_id", "seq", "kind")  # "config" < "op" at seq 1
    )
    replay_from = _replay_from(path)

    stores = None if dlq_dir is None else str(Path(dlq_dir).resolve())
    queues = None if queue_dir is None else str(Path(queue_dir).resolve())

    def check_fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return check_batches(
            (b.select(CHECK_INPUT_SCHEMA.names) for b in batches),
            spec,
            replay_from,
            stores,
            queues,
        )

    with job(spark, "check", on_progress):
        batches = rows.mapInArrow(check_fn, _spark_schema(ROW_SCHEMA)).toArrow().to_batches()
    for info in long:
        with segment_jobs(spark, spec) as runner:
            batches.append(segmented_batch(path, info, spec, segment_ops, runner, on_segments))
    table = results_table(batches)
    results = [plain_row(row) for row in table.to_pylist()]
    target = Path(out)
    shown_set, shown_out = moved_to or (path, str(target))
    exported = _failing_traces(trace_set, results)
    texts = dict(exported)

    def fetch(trace_id: str) -> tuple[Config, list[Op], list[int], str] | None:
        text = texts.get(trace_id)
        if text is None:
            return None
        trace = parse_trace_lines(text.splitlines(), trace_id)
        lines = list(range(FIRST_OP_SEQ, FIRST_OP_SEQ + len(trace.ops)))
        return (
            trace.config,
            list(trace.ops),
            lines,
            str(Path(shown_out, FAILURES, f"{trace_id}.jsonl")),
        )

    examples, notes = explain_groups(results, fetch, spec, say, shrink_budget)
    write_results(target, table, spec, shown_set, examples, notes, exported)
    return results


def _failing_traces(trace_set: TraceSet, rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(trace id, JSON Lines text) of the failing traces to export: the first of each
    group that gets an example, then the others by trace id, at most
    `MAX_EXPORTED_FAILURES` (one pass over the trace set)."""
    wanted = [members[0]["trace_id"] for _, members in failure_groups(rows)[:MAX_EXAMPLES]]
    wanted += [row["trace_id"] for row in rows if row["failures"]]
    chosen = set(list(dict.fromkeys(wanted))[:MAX_EXPORTED_FAILURES])
    if not chosen:
        return []
    return [
        (trace_id, "".join(line + "\n" for line in lines))
        for trace_id, lines in trace_set_jsonl(trace_set)
        if trace_id in chosen
    ]


class SegmentJobs:
    """Segments of one trace as Spark jobs of one task each (`conformance.spark.segments`),
    started from a pool of threads as soon as the fast pass submits them: they run while
    the fast pass goes on. As many run at once as Spark has cores, except that on a local
    master, while the fast pass runs (in this process, on the same cores), one core is
    left to it: starved, it would hold back every segment after it (measured on 2 cores:
    it ran at half speed beside two segments). A failed segment job stops the fast pass
    at its next submission."""

    def __init__(self, spark: Any, group: str) -> None:
        self.context = spark.sparkContext
        self.group = group
        cores = parallelism(spark)
        during = max(1, cores - 1) if str(self.context.master).startswith("local") else cores
        self.slots = threading.Semaphore(during)  # segments running at once
        self.spare = cores - during  # slots given once the fast pass is over
        self.pool = ThreadPoolExecutor(max_workers=cores)
        self.futures: list[Future[SegmentResult]] = []

    def _run(self, plan: SegmentPlan, index: int) -> SegmentResult:
        from conformance.spark.segments import checkpoint_texts, run_segment

        with self.slots:
            self.context.setJobGroup(self.group, "segments")  # per thread: cancelled together
            texts = checkpoint_texts(plan, index)  # read now: memory for running segments only
            rdd = self.context.parallelize([index], 1)
            [result] = rdd.map(functools.partial(run_segment, plan, texts=texts)).collect()
        return result  # type: ignore[no-any-return]

    def submit(self, plan: SegmentPlan, index: int) -> None:
        for future in self.futures:
            if future.done() and future.exception() is not None:
                future.result()  # raises: the check fails now, not after the fast pass
        self.futures.append(self.pool.submit(self._run, plan, index))

    def finished(self) -> int:
        return sum(1 for future in self.futures if future.done())

    def results(self, tick: Callable[[], None]) -> list[SegmentResult]:
        for _ in range(self.spare):  # the fast pass is over: its core runs segments too
            self.slots.release()
        self.spare = 0
        pending = set(self.futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # the first failure raises at once
            tick()
        return [future.result() for future in self.futures]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


@contextmanager
def segment_jobs(spark: Any, impl_spec: str | None) -> Iterator[SegmentJobs]:
    """The runner of one trace's segments on Spark (`SegmentJobs`), within one job group:
    a failed segment is one line (`job`), Ctrl-C cancels them all."""
    ship_impl(spark, impl_spec if impl_spec != "log" else None)
    with job(spark, "segments", None) as group:
        runner = SegmentJobs(spark, group)
        try:
            yield runner
        finally:
            runner.close()
