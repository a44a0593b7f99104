"""A real Spark standalone cluster on 127.0.0.1: a master and a worker started from the
installed pyspark (`spark-class`, its wheel has no start-master.sh), a small campaign run
against it by the command line, results identical to local mode (but for `seconds`); the
worker killed mid-check: one line, exit 2, nothing written, in bounded time."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow.parquet as pq
import pytest
from killing import assert_allowed_outcome, busy_python_worker, long_trace_set, run_killing

from conformance.generation.profiles import generate_trace
from conformance.spark import glue
from traces.tracefile import write_trace
from wanconform.cli import main

REGISTRATION_SECONDS = 120  # measured 13-36 s here
CAMPAIGN_SECONDS = 300
CAMPAIGN = ["--traces", "6", "--ops", "200", "--profile", "faults,multisite,dlq", "--seed", "3"]
LOST_SECONDS = 10.0  # the check's bound on "no executor left" in the test (product: 30 s)

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
    reason="no Java: a Spark standalone cluster needs Java 17 (`java` on PATH or JAVA_HOME)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spark_class(*args: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import pyspark

    home = Path(pyspark.__file__).parent
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(home / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**env, "SPARK_HOME": str(home)},
            start_new_session=True,
        )


def wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"no {text!r} within {seconds} s; log:\n{log.read_text(errors='replace')[-3000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Standalone(NamedTuple):
    master: str  # spark://127.0.0.1:PORT
    worker: subprocess.Popen[bytes]  # the Worker JVM (spark-class execs java)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    port = free_port()
    master = spark_class(
        "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
        "--webui-port", str(free_port()), log=tmp_path / "master.log", env=env,
    )  # fmt: skip
    worker = None
    try:
        wait_for(tmp_path / "master.log", "I have been elected leader", master, 60)
        (tmp_path / "work").mkdir()
        worker = spark_class(
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
            "--memory", "3g", "--webui-port", str(free_port()), "--work-dir",
            str(tmp_path / "work"), f"spark://127.0.0.1:{port}",
            log=tmp_path / "worker.log", env=env,
        )  # fmt: skip
        wait_for(
            tmp_path / "worker.log", "Successfully registered with master", worker,
            REGISTRATION_SECONDS,
        )  # fmt: skip
        yield Standalone(f"spark://127.0.0.1:{port}", worker)
    finally:
        if worker is not None:
            stop(worker)
        stop(master)


def rows(path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(path / "results" / "results.parquet")
    return [{k: v for k, v in row.items() if k != "seconds"} for row in table.to_pylist()]


def test_a_standalone_cluster_runs_a_campaign_as_local_mode_and_its_worker_killed_is_one_line(
    standalone: Standalone,
    spark: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One cluster (its start costs 20-30 s) for both: first what runs on it, then its
    worker killed."""
    campaign_and_segments_equal_local_mode(standalone.master, spark, tmp_path / "runs")
    worker_killed_mid_check(standalone, tmp_path / "kill", request, capsys)


def campaign_and_segments_equal_local_mode(cluster: str, spark: Any, tmp_path: Path) -> None:
    tmp_path.mkdir()
    command = [sys.executable, "-m", "wanconform", "campaign", *CAMPAIGN, "--master", cluster]
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "on-cluster")],
        capture_output=True, text=True, timeout=CAMPAIGN_SECONDS,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "traces: 6   operations: 1,200" in done.stdout
    local = tmp_path / "local"
    glue.generate(spark, local / "traces", 6, 200, ["faults", "multisite", "dlq"], 3)
    glue.check(spark, local / "traces", local / "results")
    assert rows(tmp_path / "on-cluster") == rows(local)
    assert len(rows(local)) == 6
    # One long trace in segments on the same cluster (README "Segments"): what a
    # sequential replay prints, here with a planted bug that diverges mid-trace.
    trace = tmp_path / "chaos.jsonl"
    config, ops = generate_trace(5, "seg", "chaos", 1500)
    write_trace(trace, config, list(ops))
    argv = [sys.executable, "-m", "wanconform", "replay", str(trace), "--engine", "both"]
    argv += ["--check-properties", "--impl", "tools.planted_bugs:LateBatchTime"]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    split = subprocess.run(
        [*argv, "--segment-ops", "400", "--master", cluster],
        cwd=root, capture_output=True, text=True, timeout=CAMPAIGN_SECONDS, env=env,
    )  # fmt: skip
    assert split.returncode == 1, split.stderr[-3000:]
    assert "fast pass done: 4 segments of up to 400 operations" in split.stderr
    whole = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=600)
    assert whole.returncode == 1, whole.stderr[-3000:]
    assert split.stdout == whole.stdout


def worker_killed_mid_check(
    standalone: Standalone,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGKILL the one Worker JVM while the check's tasks run on its executor: the
    executor goes with it and Spark would wait for a new one forever; the check's watchdog
    (`glue.job`, its bound lowered here) cancels the job: one line, exit 2, no results, soon
    after the kill. (Identical results, as local mode's, would pass too.)"""
    tmp_path.mkdir()
    traces = long_trace_set(tmp_path / "set")
    out = tmp_path / "killed" / "results"
    out.parent.mkdir()
    check = "import sys; from conformance.spark import glue; from wanconform.cli import main; "
    check += f"glue.LOST_EXECUTORS_SECONDS = {LOST_SECONDS}; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", check, "check", str(traces), "--out", str(out)]
    outcome = run_killing(
        [*command, "--master", standalone.master],
        tmp_path,
        lambda _: standalone.worker.pid if busy_python_worker(standalone.worker.pid) else None,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )

    def undisturbed() -> tuple[int, Path]:  # in local mode, the same results
        request.getfixturevalue("spark")  # the session `main` then uses
        code = main(["check", str(traces), "--out", str(tmp_path / "local")])
        capsys.readouterr()
        return code, tmp_path / "local"

    assert outcome.killed == standalone.worker.pid
    assert_allowed_outcome(outcome, out, undisturbed)
    assert outcome.seconds - outcome.killed_at < LOST_SECONDS + 30  # never a wait for workers
