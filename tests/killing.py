"""A process of a running `wanconform check` killed (SIGKILL) at a useful moment, and the
only two outcomes allowed then (tests/test_spark.py kills a Python worker, tests/
test_cluster.py the standalone Worker JVM): the check completes with the results of an
undisturbed run (Spark ran the task again), or it fails with one line on stderr, exit 2,
and writes nothing. Processes are found in /proc (no psutil)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.generation.profiles import generate_trace
from traces.outputs import CONTENTS
from traces.parquet import jsonl_to_parquet
from traces.tracefile import trace_text

TRACES = 4  # one per task: 4 tasks on 2 cores
OPS = 10_000  # a task checks its trace for several CPU seconds
BUSY_CPU_SECONDS = 1.5  # a Python worker's start-up costs about 0.6 s of CPU
KILLED_CHECK_SECONDS = 240  # a check with a kill: measured 30-50 s alone on 2 cores
GONE_SECONDS = 20  # after the command, its JVM and Python workers are gone within this
SPARK_FAILED = "wanconform: error: Spark check failed: "


def long_trace_set(out: Path) -> Path:
    """A trace set of `TRACES` faults traces of `OPS` operations, written without Spark."""
    folder = out.with_name(f"{out.name}-jsonl")
    folder.mkdir()
    for index in range(TRACES):
        trace_id = f"faults-{index:06d}"
        config, ops = generate_trace(11, trace_id, "faults", OPS)
        (folder / f"{trace_id}.jsonl").write_text(trace_text(config, list(ops)))
    jsonl_to_parquet(sorted(folder.glob("*.jsonl")), out)
    return out


# -- processes, from /proc -----------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name ([0] is the state)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if len(fields) > 1 and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    waiting = [pid]
    while waiting:
        below = children(waiting.pop())
        found += below
        waiting += below
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    if len(fields) < 13:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_python_worker(root: int) -> int | None:
    """A Spark Python worker under process `root` (a child of a `pyspark.daemon`) that
    has been checking a while: beyond its start-up, so the check's tasks run. The
    daemon's first workers take the placement's rows and stay idle (below it)."""
    for pid in descendants(root):
        if "pyspark.daemon" in command_line(pid):
            for worker in children(pid):
                if cpu_seconds(worker) >= BUSY_CPU_SECONDS:
                    return worker
    return None


# -- a run with a kill, and its outcome ----------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    killed: int | None  # the process killed, None if none was found in time
    killed_at: float  # seconds from the start to the kill
    seconds: float  # from the start to the end


def run_killing(
    command: Sequence[str],
    folder: Path,
    victim: Callable[[int], int | None],
    env: dict[str, str] | None = None,
    timeout: float = KILLED_CHECK_SECONDS,
) -> Outcome:
    """Run `command` (in a session of its own) and SIGKILL the process `victim(pid of the
    command)` names as soon as it names one. A run beyond `timeout` is a hang, and a
    process of the command's session still there `GONE_SECONDS` after it (its JVM, a
    Python worker) is one left behind: either kills the whole session and fails."""
    started = time.monotonic()
    out, err = folder / "stdout.txt", folder / "stderr.txt"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, env=env, start_new_session=True
        )
    killed, killed_at = None, 0.0
    try:
        while process.poll() is None and time.monotonic() - started < timeout:
            target = victim(process.pid) if killed is None else None
            if target is not None:
                with suppress(ProcessLookupError):
                    os.kill(target, signal.SIGKILL)
                    killed, killed_at = target, time.monotonic() - started
            time.sleep(0.1)
        process.wait(timeout=max(0.1, timeout - (time.monotonic() - started)))
        ended = time.monotonic() - started
        left = _session(process.pid)
        while left and time.monotonic() - started - ended < GONE_SECONDS:
            time.sleep(0.5)
            left = _session(process.pid)
        assert left == [], f"left behind by the command: {left}"
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"no end within {timeout:.0f} s (the kill of {killed} at {killed_at:.1f} s); "
            + "stderr:\n"
            + err.read_text(errors="replace")[-3000:]
        )
    finally:
        for line in _session(process.pid):
            with suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        process.wait()
    return Outcome(
        process.returncode,
        out.read_text(errors="replace"),
        err.read_text(errors="replace"),
        killed,
        killed_at,
        ended,
    )


def _session(session: int) -> list[str]:
    """The living processes of a session (the command's: its pid), zombies aside."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if len(fields) > 4 and int(fields[4]) == session and fields[0] != "Z":
                found.append(f"{entry.name} {command_line(int(entry.name))[:200]}")
    return found


def results_files(results: Path) -> dict[str, Any]:
    """Every file of a results directory, its bytes: but timings.json (the time each
    trace took, which no two runs share) and the contents list (which lists its digest)."""
    return {
        str(path.relative_to(results)): path.read_bytes()
        for path in sorted(p for p in results.rglob("*") if p.is_file())
        if path.name not in (CONTENTS, "timings.json")
    }


def assert_allowed_outcome(
    outcome: Outcome, out: Path, undisturbed: Callable[[], tuple[int, Path]]
) -> str:
    """The kill happened, and the check then either failed as one line, exit 2, nothing
    on stdout, and no results directory nor any leftover of its staging beside it; or it
    completed as an undisturbed run of the same set (`undisturbed()` makes one: its exit
    status and results directory): the same status, nothing on stderr, the same results
    files. Returns which: "failed" or "recovered"."""
    assert outcome.killed is not None, "nothing to kill was found while the check ran"
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]
    assert leftovers == []
    if outcome.code == 2:
        assert outcome.stderr.startswith(SPARK_FAILED), outcome.stderr[-3000:]
        assert outcome.stderr.count("\n") == 1 and outcome.stderr.endswith("\n"), outcome.stderr
        assert outcome.stdout == ""
        assert not out.exists(), "a failed check wrote its results"
        return "failed"
    assert outcome.code in (0, 1), f"exit {outcome.code}; stderr:\n{outcome.stderr[-3000:]}"
    assert outcome.stderr == ""
    assert f"results: {out}/results.parquet" in outcome.stdout
    code, results = undisturbed()
    assert outcome.code == code
    assert results_files(out) == results_files(results)
    return "recovered"
