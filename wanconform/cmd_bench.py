"""`wanconform bench`: events per second of the model and the impl on the steady workload.

The workload (traces.generate.steady_workload) is generated before timing; each engine
is timed alone in this process over the same operations, excluding trace parsing, and
the best of `--repeat` runs is reported. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import threading
import time
from typing import Any

import impl
from traces.engine import make_engine
from traces.errors import WanconformError
from traces.generate import steady_workload
from traces.ops import Op


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="measure model and impl events per second on a steady workload",
        description=(
            "Time the model and the impl on a deterministic steady workload: 2 sites, one "
            "sender with batch_size 100 and delta on, 10-field values, mostly delta updates, "
            "with the deliver/ack traffic. Progress goes to stderr."
        ),
    )
    parser.add_argument("--ops", type=int, default=100_000, help="operations (default 100000)")
    parser.add_argument("--keys", type=int, default=10_000, help="distinct keys (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine, best kept")
    parser.add_argument(
        "--spark",
        action="store_true",
        help=(
            "instead: campaign figures on Spark (generation ops/s, check events/s, and "
            "the single-process lockstep rate on the same traces); --traces, --ops, "
            "--profile and --master choose the workload"
        ),
    )
    parser.add_argument("--traces", type=int, default=8, help="with --spark: traces (default 8)")
    parser.add_argument(
        "--profile", default="steady", help="with --spark: profile (default steady)"
    )
    parser.add_argument("--master", default=None, help="with --spark: Spark master (default local)")
    parser.add_argument(
        "--plain-traces",
        type=int,
        default=None,
        help="with --spark: how many traces the plain lockstep checks too (default all; 0: none)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=(
            "print one JSON line: ops, events, model_events_per_s, impl_events_per_s, "
            "speedup, impl_compiled"
        ),
    )
    parser.set_defaults(func=run)


def time_engine(name: str, config: Any, ops: list[Op]) -> float:
    """Seconds one engine takes to apply every operation (garbage collected first)."""
    engine = make_engine(name, config)
    gc.collect()
    start = time.perf_counter()
    for op in ops:
        engine.apply(op)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> int:
    if args.spark:
        return run_spark(args)
    for flag in ("ops", "keys", "repeat"):
        if getattr(args, flag) < 1:
            raise WanconformError(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    config, ops = steady_workload(args.ops, keys=args.keys, seed=args.seed)
    events = sum(1 for op in ops if op.op in ("put", "delta", "destroy"))
    seconds: dict[str, float] = {}
    for name in ("model", "impl"):
        runs = []
        for attempt in range(1, args.repeat + 1):
            print(
                f"bench: {name} run {attempt}/{args.repeat} on {len(ops)} ops ...",
                file=sys.stderr,
                flush=True,
            )
            runs.append(time_engine(name, config, ops))
        seconds[name] = min(runs)
    result = {
        "ops": len(ops),
        "events": events,
        "model_events_per_s": round(events / seconds["model"]),
        "impl_events_per_s": round(events / seconds["impl"]),
        "speedup": round(seconds["model"] / seconds["impl"], 1),
        "impl_compiled": impl.COMPILED,  # mypyc-compiled (tools/build_compiled.py) or Python
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"workload: {result['ops']} ops, {events} client events, {args.keys} keys")
        print(f"model: {result['model_events_per_s']:>10,} events/s ({seconds['model']:.3f} s)")
        print(f"impl:  {result['impl_events_per_s']:>10,} events/s ({seconds['impl']:.3f} s)")
        print(f"impl compiled with mypyc: {'yes' if impl.COMPILED else 'no (pure Python)'}")
        print(
            f"speedup: {result['speedup']}x  (python {platform.python_version()}, "
            f"{platform.machine()})"
        )
    return 0


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


def run_spark(args: argparse.Namespace) -> int:
    """Campaign figures: generation and check on Spark (wall and CPU seconds of the whole
    process tree: driver, JVM, Python workers; peak resident memory of that tree), and the
    plain single-process lockstep (`conformance.check.check_trace`, same operation parser)
    on the same traces, for Spark's overhead."""
    import tempfile
    from pathlib import Path

    from conformance import spark as glue
    from conformance.check import check_trace
    from traces.parquet import op_parser, open_trace_set
    from wanconform.cmd_generate import profile_list

    profiles = profile_list(args.profile)
    for flag in ("traces", "ops"):
        if getattr(args, flag) < 1:
            raise WanconformError(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    if args.plain_traces is not None and args.plain_traces < 0:
        raise WanconformError(f"--plain-traces: must be at least 0, got {args.plain_traces}")
    spark = glue.session(args.master)
    cores = glue.parallelism(spark)
    operations = args.traces * args.ops
    with tempfile.TemporaryDirectory(prefix="wanconform-bench-") as tmp, ProcessTree() as tree:
        folder = Path(tmp)
        # a first, small run warms up the JVM and the Python workers
        glue.generate(spark, folder / "warm", cores, 100, profiles, args.seed)
        glue.check(spark, folder / "warm", folder / "warm-results")
        print("bench: generating ...", file=sys.stderr, flush=True)
        cpu, start = tree.cpu(), time.perf_counter()
        glue.generate(spark, folder / "set", args.traces, args.ops, profiles, args.seed)
        generated, generated_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        print("bench: checking on Spark ...", file=sys.stderr, flush=True)
        tree.peak_rss = tree.rss()
        cpu, start = tree.cpu(), time.perf_counter()
        rows = glue.check(spark, folder / "set", folder / "results")
        checked, checked_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        check_peak = max(tree.peak_rss, tree.rss())
        trace_set = open_trace_set(folder / "set")
        plain_traces = trace_set.traces[: args.plain_traces]
        print(f"bench: {len(plain_traces)} traces in one process ...", file=sys.stderr, flush=True)
        start, start_cpu = time.perf_counter(), time.process_time()
        plain_events = 0
        for info in plain_traces:
            parse = op_parser(info.trace_id, info.config)
            ops = ((seq, parse(seq, text)) for seq, text in trace_set.ops_of(info.trace_id))
            plain_events += check_trace(info.trace_id, info.config, ops)["events"]
        plain, plain_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    events = sum(row["events"] for row in rows)
    result: dict[str, Any] = {
        "master": args.master or glue.DEFAULT_MASTER,
        "cores": cores,
        "traces": args.traces,
        "operations": operations,
        "events": events,
        "generate_seconds": round(generated, 2),
        "generate_cpu_seconds": round(generated_cpu, 2),
        "generate_ops_per_s": round(operations / generated),
        "check_seconds": round(checked, 2),
        "check_cpu_seconds": round(checked_cpu, 2),
        "check_events_per_s": round(events / checked),
        "check_peak_rss_mb": round(check_peak / 2**20),
        "plain_traces": len(plain_traces),
    }
    if plain_traces:
        rate, cpu_rate = plain_events / plain, plain_events / plain_cpu
        result |= {
            "plain_lockstep_events_per_s": round(rate),
            "plain_lockstep_events_per_cpu_s": round(cpu_rate),
            # Spark's rate over (the plain rate x cores): wall clock, and CPU seconds
            "check_efficiency": round(events / checked / (rate * cores), 2),
            "check_efficiency_cpu": round(events / checked_cpu / cpu_rate, 2),
        }
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"Spark {result['master']} ({cores} cores), {args.traces} {args.profile} traces "
        f"of {args.ops:,} operations, {events:,} events; load average {load}"
    )
    print(
        f"generate: {result['generate_ops_per_s']:>10,} operations/s ({generated:.1f} s, "
        f"{generated_cpu:.1f} CPU s: {operations / generated_cpu:,.0f} operations/CPU s)"
    )
    print(
        f"check:    {result['check_events_per_s']:>10,} events/s ({checked:.1f} s, "
        f"{checked_cpu:.1f} CPU s), peak memory {result['check_peak_rss_mb']:,} MB "
        "(driver, JVM, Python workers)"
    )
    if plain_traces:
        print(
            f"plain lockstep, one process, {len(plain_traces)} traces: "
            f"{result['plain_lockstep_events_per_s']:,} events/s "
            f"({result['plain_lockstep_events_per_cpu_s']:,} events/CPU s)"
        )
        print(
            f"check efficiency vs plain x cores: {result['check_efficiency']:.0%} wall clock, "
            f"{result['check_efficiency_cpu']:.0%} CPU"
        )
    return 0
