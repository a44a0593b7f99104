"""Benchmarks: what `wanconform bench` measures, as plain functions returning figures.

Speed is measured here, never asserted in a test (the README records the figures with
the machine). `engines` times the model and the impl alone on the steady workload;
`spark_campaign` generates and checks a trace set on Spark and measures the whole
process tree (driver, JVM, Python workers) from /proc, against the plain single-process
run of the same traces.
"""

from __future__ import annotations

import gc
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import impl
from conformance.check import check_trace
from traces.engine import make_engine
from traces.generate import steady_workload
from traces.ops import Op
from traces.parquet import op_parser, open_trace_set

Say = Callable[[str], None]


def time_engine(name: str, config: Any, ops: list[Op]) -> float:
    """Seconds one engine takes to apply every operation (garbage collected first)."""
    engine = make_engine(name, config)
    gc.collect()
    start = time.perf_counter()
    for op in ops:
        engine.apply(op)
    return time.perf_counter() - start


def engines(ops: int, keys: int, seed: int, repeat: int, say: Say) -> dict[str, Any]:
    """Model and impl, each alone in this process, on the steady workload (its
    generation excluded); the best of `repeat` runs of each."""
    config, workload = steady_workload(ops, keys=keys, seed=seed)
    events = sum(1 for op in workload if op.op in ("put", "delta", "destroy"))
    seconds: dict[str, float] = {}
    for name in ("model", "impl"):
        runs = []
        for attempt in range(1, repeat + 1):
            say(f"{name} run {attempt}/{repeat} on {len(workload)} ops ...")
            runs.append(time_engine(name, config, workload))
        seconds[name] = min(runs)
    return {
        "ops": len(workload),
        "events": events,
        "keys": keys,
        "model_seconds": round(seconds["model"], 3),
        "impl_seconds": round(seconds["impl"], 3),
        "model_events_per_s": round(events / seconds["model"]),
        "impl_events_per_s": round(events / seconds["impl"]),
        "speedup": round(seconds["model"] / seconds["impl"], 1),
        "impl_compiled": impl.COMPILED,  # mypyc-compiled (tools/build_compiled.py) or Python
    }


class ProcessTree:
    """CPU seconds and resident memory of this process and all its descendants (the Spark
    JVM, its Python workers), read from /proc (Linux); a background thread samples the
    memory every `interval` seconds and keeps the peak of the sum."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def _stats() -> dict[int, tuple[int, float]]:
        """pid -> (rss bytes, cpu seconds) of the tree rooted at this process."""
        parents: dict[int, int] = {}
        stats: dict[int, tuple[int, float]] = {}
        page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as file:
                    fields = file.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            pid = int(entry)
            parents[pid] = int(fields[1])
            cpu = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
            stats[pid] = (int(fields[21]) * page, cpu)  # rss pages
        root = os.getpid()
        tree = {root}
        changed = True
        while changed:
            changed = False
            for pid, parent in parents.items():
                if parent in tree and pid not in tree:
                    tree.add(pid)
                    changed = True
        return {pid: stats[pid] for pid in tree if pid in stats}

    def rss(self) -> int:
        return sum(rss for rss, _ in self._stats().values())

    def cpu(self) -> dict[int, float]:
        return {pid: cpu for pid, (_, cpu) in self._stats().items()}

    def __enter__(self) -> ProcessTree:
        self.peak_rss = self.rss()

        def sample() -> None:
            while not self._stop.wait(self.interval):
                self.peak_rss = max(self.peak_rss, self.rss())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.peak_rss = max(self.peak_rss, self.rss())


def cpu_since(tree: ProcessTree, before: dict[int, float]) -> float:
    """CPU seconds the tree used since `before` (processes born since count whole)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in tree.cpu().items())


def spark_campaign(
    spark: Any,
    master: str,
    traces: int,
    ops: int,
    profiles: list[str],
    seed: int,
    plain_traces: int | None,
    say: Say,
) -> dict[str, Any]:
    """Campaign figures: generation and check on Spark (wall and CPU seconds of the whole
    process tree: driver, JVM, Python workers; peak resident memory of that tree), and the
    plain single-process lockstep (`conformance.check.check_trace`, same operation parser)
    on the same traces, for Spark's overhead."""
    from conformance import spark as glue

    cores = glue.parallelism(spark)
    operations = traces * ops
    with tempfile.TemporaryDirectory(prefix="wanconform-bench-") as tmp, ProcessTree() as tree:
        folder = Path(tmp)
        # a first, small run warms up the JVM and the Python workers
        glue.generate(spark, folder / "warm", cores, 100, profiles, seed)
        glue.check(spark, folder / "warm", folder / "warm-results")
        say("generating ...")
        cpu, start = tree.cpu(), time.perf_counter()
        glue.generate(spark, folder / "set", traces, ops, profiles, seed)
        generated, generated_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        say("checking on Spark ...")
        tree.peak_rss = tree.rss()
        cpu, start = tree.cpu(), time.perf_counter()
        rows = glue.check(spark, folder / "set", folder / "results")
        checked, checked_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        check_peak = max(tree.peak_rss, tree.rss())
        trace_set = open_trace_set(folder / "set")
        plain = trace_set.traces[:plain_traces]
        say(f"{len(plain)} traces in one process ...")
        start, start_cpu = time.perf_counter(), time.process_time()
        plain_events = 0
        for info in plain:
            parse = op_parser(info.trace_id, info.config)
            stream = ((seq, parse(seq, text)) for seq, text in trace_set.ops_of(info.trace_id))
            plain_events += check_trace(info.trace_id, info.config, stream)["events"]
        plain_seconds, plain_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    events = sum(row["events"] for row in rows)
    result: dict[str, Any] = {
        "master": master,
        "cores": cores,
        "traces": traces,
        "operations": operations,
        "events": events,
        "generate_seconds": round(generated, 2),
        "generate_cpu_seconds": round(generated_cpu, 2),
        "generate_ops_per_s": round(operations / generated),
        "generate_ops_per_cpu_s": round(operations / generated_cpu),
        "check_seconds": round(checked, 2),
        "check_cpu_seconds": round(checked_cpu, 2),
        "check_events_per_s": round(events / checked),
        "check_peak_rss_mb": round(check_peak / 2**20),
        "plain_traces": len(plain),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    if plain:
        rate, cpu_rate = plain_events / plain_seconds, plain_events / plain_cpu
        result |= {
            "plain_lockstep_events_per_s": round(rate),
            "plain_lockstep_events_per_cpu_s": round(cpu_rate),
            # Spark's rate over (the plain rate x cores): wall clock, and CPU seconds
            "check_efficiency": round(events / checked / (rate * cores), 2),
            "check_efficiency_cpu": round(events / checked_cpu / cpu_rate, 2),
        }
    return result
