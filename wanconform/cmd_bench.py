"""`wanconform bench`: events per second of the model and the impl on the steady workload.

The workload (traces.generate.steady_workload) is generated before timing; each engine
is timed alone in this process over the same operations, excluding trace parsing, and
the best of `--repeat` runs is reported. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from typing import Any

import impl
from traces.generate import steady_workload
from traces.ops import Op
from wanconform.engine import make_engine
from wanconform.errors import WanconformError


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
        "impl_compiled": impl.COMPILED,  # mypyc-compiled (impl/build_compiled.py) or Python
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


def run_spark(args: argparse.Namespace) -> int:
    """Campaign figures: generation and check on Spark, and the plain single-process
    lockstep (`conformance.check.check_trace`) on the same traces, for the overhead."""
    import tempfile
    from pathlib import Path

    from conformance import spark as glue
    from conformance.check import check_trace
    from traces.parquet import open_trace_set, parse_op_cell
    from wanconform.cmd_generate import profile_list

    profiles = profile_list(args.profile)
    spark = glue.session(args.master)
    cores = glue.parallelism(spark)
    operations = args.traces * args.ops
    with tempfile.TemporaryDirectory(prefix="wanconform-bench-") as tmp:
        folder = Path(tmp)
        # a first, small run warms up the JVM and the Python workers
        glue.generate(spark, folder / "warm", cores, 100, profiles, args.seed)
        glue.check(spark, folder / "warm", folder / "warm-results")
        start = time.perf_counter()
        glue.generate(spark, folder / "set", args.traces, args.ops, profiles, args.seed)
        generated = time.perf_counter() - start
        start = time.perf_counter()
        table = glue.check(spark, folder / "set", folder / "results")
        checked = time.perf_counter() - start
        trace_set = open_trace_set(folder / "set")
        start = time.perf_counter()
        for info in trace_set.traces:
            ops = (
                (seq, parse_op_cell(info.trace_id, seq, text, info.config))
                for seq, text in trace_set.ops_of(info.trace_id)
            )
            check_trace(info.trace_id, info.config, ops)
        plain = time.perf_counter() - start
    events = sum(table.column("events").to_pylist())
    result = {
        "master": args.master or glue.DEFAULT_MASTER,
        "cores": cores,
        "traces": args.traces,
        "operations": operations,
        "events": events,
        "generate_ops_per_s": round(operations / generated),
        "check_events_per_s": round(events / checked),
        "plain_lockstep_events_per_s": round(events / plain),
        "check_efficiency": round(plain / (checked * cores), 2),
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(
            f"Spark {result['master']} ({cores} cores), {args.traces} {args.profile} traces "
            f"of {args.ops:,} operations, {events:,} events"
        )
        print(f"generate: {result['generate_ops_per_s']:>10,} operations/s ({generated:.1f} s)")
        print(f"check:    {result['check_events_per_s']:>10,} events/s ({checked:.1f} s)")
        print(
            f"plain lockstep, one process: {result['plain_lockstep_events_per_s']:,} events/s "
            f"({plain:.1f} s)"
        )
        print(f"check efficiency vs plain x cores: {result['check_efficiency']:.0%}")
    return 0
