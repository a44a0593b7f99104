"""`wanconform bench`: the figures of `conformance.bench`, printed.

The workload (traces.generate.steady_workload) is generated before timing; each engine
is timed alone in this process over the same operations, excluding trace parsing, and
the best of `--repeat` runs is reported. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from traces.errors import WanconformError
from traces.text import plural


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="time the engines (events/s; the default), Spark, start-up, explore, segments "
        "or the durable stores; crash-test the stores",
        description=(
            "Time the model and the impl, each alone and in lockstep, on a deterministic "
            "steady workload: 2 sites, one sender with batch_size 100 and delta on, 10-field "
            "values, mostly delta updates, with the deliver/ack traffic (also with 5 "
            "parallel dispatchers, and with batch conflation on); and one validating "
            "read of its trace file, written canonically and with Python's json.dumps. "
            "Progress goes to stderr."
        ),
    )
    parser.add_argument("--ops", type=int, default=100_000, help="operations (default 100000)")
    parser.add_argument(
        "--keys", type=int, default=None, help="distinct keys (default 10000; with --explore 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help=(
            "rounds, each running every timing once (default 3): rates the best, ratios "
            "the median of the rounds' own"
        ),
    )
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
        "--dlq-crash",
        type=int,
        metavar="N",
        help="instead: kill a dead-letter store's writer with SIGKILL N times (and simulate "
        "power losses): records lost, duplicated or torn must be 0; and the store's write "
        "cost with and without fsync",
    )
    parser.add_argument(
        "--queue-crash",
        type=int,
        metavar="N",
        help="instead: kill a queue store's writer (two dispatchers' queues of a persistent "
        "sender) with SIGKILL N times and simulate power losses: acknowledged events back, "
        "queued events lost, order broken, records torn must all be 0",
    )
    parser.add_argument(
        "--queue-throughput",
        action="store_true",
        help="instead: events/s through a queue store (batches of 100: append, sync, remove, "
        "sync), with fsync per batch and without; best of --repeat runs",
    )
    parser.add_argument(
        "--startup",
        action="store_true",
        help="instead: how long `wanconform --version`, `--help` and a replay of an "
        "11-operation trace take from start to exit (best and median of --repeat runs, "
        "default 3)",
    )
    parser.add_argument(
        "--explore",
        type=int,
        metavar="DEPTH",
        help="instead: exhaustive exploration (`wanconform explore`) of 2 sites replicating "
        "both ways, 2 keys (--keys), to DEPTH: distinct states/s, and the search's time "
        "over the model's plain steps of the same transitions",
    )
    parser.add_argument(
        "--segments",
        metavar="TRACE",
        help="instead: TRACE (a long trace file) checked in segments (`replay --engine both "
        "--check-properties --segment-ops N`, local Spark on --cores CPUs) against the model "
        "alone (`replay --engine model`) and the fast pass's engine alone (`replay --engine "
        "impl --check-properties`): wall, CPU and peak memory of each process tree, and "
        "whether segments took at most 1.25 x model / cores + fast",
    )
    parser.add_argument(
        "--cores", type=int, default=None, help="with --segments: CPUs used (default all)"
    )
    parser.add_argument(
        "--segment-ops",
        type=int,
        default=None,
        metavar="N",
        help="with --segments: operations per segment (default replay's)",
    )
    parser.add_argument(
        "--runs",
        default="model,fast,segments",
        help="with --segments: which of model, fast, segments to run (default all)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=(
            "print one JSON line: ops, events, model_events_per_s, impl_events_per_s, "
            "speedup, lockstep_events_per_s, lockstep_vs_model, lockstep_ahead_vs_model "
            "(null without a second CPU), model_conflation_vs_off, "
            "lockstep_conflation_vs_off, read_canonical_ops_per_s, "
            "read_plain_ops_per_s, impl_compiled, the parallel workload's and the ring's "
            "figures (model_parallel_vs_serial, properties_vs_model, ...) and ratio_rounds "
            "(each ratio's rounds)"
        ),
    )
    parser.set_defaults(func=run)
    parser.set_defaults(
        bench_defaults={
            o: parser.get_default(o) for options in MODE_OPTIONS.values() for o in options
        }
    )


def say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


MODES = ("spark", "dlq_crash", "queue_crash", "queue_throughput", "startup", "explore", "segments")
"""The options that each measure something else instead (one at a time)."""
MODE_OPTIONS: dict[str | None, tuple[str, ...]] = {
    None: ("ops", "keys", "seed", "repeat"),
    "spark": ("traces", "ops", "profile", "master", "plain_traces", "seed"),
    "dlq_crash": ("seed",),
    "queue_crash": ("seed",),
    "queue_throughput": ("repeat",),
    "startup": ("repeat",),
    "explore": ("keys",),
    "segments": ("cores", "segment_ops", "runs"),
}
"""The options each way of bench reads (None: the engines' timing, no mode given),
besides --json, which every one reads."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_modes(args: argparse.Namespace, parser_defaults: dict[str, object]) -> None:
    """One line, exit 2, for two modes at once or an option the chosen mode does not
    read (it would be ignored)."""
    chosen = [m for m in MODES if getattr(args, m) not in (None, False)]
    if len(chosen) > 1:
        raise WanconformError(
            f"bench: {_flag(chosen[0])} and {_flag(chosen[1])} each measure something else; "
            "give one"
        )
    reads = MODE_OPTIONS[chosen[0] if chosen else None]
    for option, default in parser_defaults.items():
        if option not in reads and getattr(args, option) != default:
            users = [
                "the engines' timing (no mode)" if mode is None else _flag(mode)
                for mode, options in MODE_OPTIONS.items()
                if option in options
            ]
            raise WanconformError(f"bench: {_flag(option)} goes with {' or '.join(users)}")


def run(args: argparse.Namespace) -> int:
    check_modes(args, args.bench_defaults)
    if args.spark:
        return run_spark(args)
    if args.dlq_crash is not None:
        return run_dlq_crash(args)
    if args.queue_crash is not None:
        return run_queue_crash(args)
    if args.queue_throughput:
        return run_queue_throughput(args)
    if args.startup:
        return run_startup(args)
    if args.explore is not None:
        return run_explore(args)
    if args.segments is not None:
        return run_segments(args)
    if args.keys is None:
        args.keys = 10_000
    for flag in ("ops", "keys", "repeat"):
        if getattr(args, flag) < 1:
            raise WanconformError(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    if args.ops > sys.maxsize:
        raise WanconformError(f"--ops: at most {sys.maxsize}, got {args.ops}")
    from conformance import bench

    result = bench.engines(args.ops, args.keys, args.seed, args.repeat, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print(
        f"workload: {result['ops']:,} ops, {result['events']:,} client events, {args.keys:,} keys"
    )
    print(f"model: {result['model_events_per_s']:>10,} events/s ({result['model_seconds']:.3f} s)")
    print(f"impl:  {result['impl_events_per_s']:>10,} events/s ({result['impl_seconds']:.3f} s)")
    print(
        f"parallel (113 buckets, 5 dispatchers): model {result['model_parallel_events_per_s']:,} "
        f"events/s ({result['model_parallel_vs_serial']}x the serial per event), impl "
        f"{result['impl_parallel_events_per_s']:,} events/s "
        f"({result['impl_parallel_vs_serial']}x the serial per event)"
    )
    print(
        f"lockstep: {result['lockstep_events_per_s']:>7,} events/s "
        f"({result['lockstep_seconds']:.3f} s, {result['lockstep_vs_model']}x the model alone)"
    )
    print(
        f"batch conflation on (the same operations): model {result['model_conflation_vs_off']}x, "
        f"lockstep {result['lockstep_conflation_vs_off']}x the time with it off"
    )
    cost = (
        f"{result['properties_us_per_op']} us/op beside the model's "
        f"{result['model_ring_us_per_op']} us/op ({result['properties_vs_model']}x the model)"
        if result["properties_us_per_op"] > 0
        else "not measurable in this run: the model with them took "
        f"{result['properties_vs_model']}x the model alone (the machine's noise was larger "
        "than their cost; --repeat more rounds)"
    )
    print(
        f"properties (P2-P12) on {result['ring_ops']:,} ops of a 3-site ring with a settle "
        f"every 100: {cost}"
    )
    ahead = result["lockstep_ahead_vs_model"]
    print(
        "lockstep, the impl ahead in a helper process: "
        + (f"{ahead}x the model alone" if ahead is not None else "not here (one CPU or no fork)")
    )
    print(f"reading, canonical lines: {result['read_canonical_ops_per_s']:>9,} ops/s")
    print(f"reading, json.dumps lines: {result['read_plain_ops_per_s']:>8,} ops/s")
    print(f"impl compiled with mypyc: {'yes' if result['impl_compiled'] else 'no (pure Python)'}")
    print(
        f"speedup: {result['speedup']}x  (python {platform.python_version()}, {platform.machine()})"
    )
    print(
        f"(rates: the best of {plural(args.repeat, 'run')}; ratios: the median of the rounds' "
        f"own, {plural(args.repeat, 'round')}, each running every timing once, in turn: "
        "--json gives each)"
    )
    return 0


def run_spark(args: argparse.Namespace) -> int:
    from conformance.spark import glue
    from wanconform.cmd_generate import profile_list
    from wanconform.progress import start_spark

    profiles = profile_list(args.profile)
    for flag in ("traces", "ops"):
        if getattr(args, flag) < 1:
            raise WanconformError(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    if args.plain_traces is not None and args.plain_traces < 0:
        raise WanconformError(f"--plain-traces: must be at least 0, got {args.plain_traces}")
    spark = start_spark(args.master)
    master = args.master or glue.DEFAULT_MASTER
    from conformance import bench

    result = bench.spark_campaign(
        spark, master, args.traces, args.ops, profiles, args.seed, args.plain_traces, say
    )
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    cores, events = result["cores"], result["events"]
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(
        f"Spark {master} ({cores} cores), {plural(args.traces, args.profile + ' trace')} "
        f"of {args.ops:,} operations, {events:,} events; load average {load}"
    )
    print(
        f"generate: {result['generate_ops_per_s']:>10,} operations/s "
        f"({result['generate_seconds']:.1f} s, {result['generate_cpu_seconds']:.1f} CPU s: "
        f"{result['generate_ops_per_cpu_s']:,} operations/CPU s)"
    )
    print(
        f"check:    {result['check_events_per_s']:>10,} events/s "
        f"({result['check_seconds']:.1f} s, {result['check_cpu_seconds']:.1f} CPU s), "
        f"peak memory {result['check_peak_rss_mb']:,} MB (driver, JVM, Python workers)"
    )
    if result["plain_traces"]:
        print(
            f"plain lockstep, one process, {plural(result['plain_traces'], 'trace')}: "
            f"{result['plain_lockstep_events_per_s']:,} events/s "
            f"({result['plain_lockstep_events_per_cpu_s']:,} events/CPU s)"
        )
        print(
            f"check efficiency vs plain x cores: {result['check_efficiency']:.0%} wall clock, "
            f"{result['check_efficiency_cpu']:.0%} CPU"
        )
    return 0


def run_dlq_crash(args: argparse.Namespace) -> int:
    if args.dlq_crash < 1:
        raise WanconformError(f"--dlq-crash: must be at least 1, got {args.dlq_crash}")
    from conformance import bench

    result = bench.dlq_crash(args.dlq_crash, args.seed, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(
            f"dead-letter store: {result['kills']:,} SIGKILLs in {result['seconds']} s, "
            f"{result['records_durable']:,} records durable, {result['records_removed']:,} "
            f"removed; lost {result['lost']}, duplicated {result['duplicated']}, torn "
            f"accepted {result['torn_accepted']}, removed and back {result['resurrected']}, "
            f"store unopenable {result['unopenable']}; torn tails cut "
            f"{result['torn_tails_cut']}; power losses simulated "
            f"{result['power_loss_trials']:,}"
        )
        print(
            f"write cost: {result['records_per_s_fsync']:,} records/s with fsync, "
            f"{result['records_per_s_no_fsync']:,} without"
        )
    bad = ("lost", "duplicated", "torn_accepted", "unopenable", "resurrected")
    return 1 if any(result[name] for name in bad) else 0


def run_queue_crash(args: argparse.Namespace) -> int:
    if args.queue_crash < 1:
        raise WanconformError(f"--queue-crash: must be at least 1, got {args.queue_crash}")
    from conformance import bench

    result = bench.queue_crash(args.queue_crash, args.seed, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(
            f"queue store: {result['kills']:,} SIGKILLs in {result['seconds']} s, "
            f"{result['events_appended']:,} events appended, {result['events_acked']:,} "
            f"removed, {result['updates']:,} updates; acknowledged and back "
            f"{result['acked_back']}, lost {result['lost']}, never announced "
            f"{result['phantoms']}, out of order {result['out_of_order']}, slots changed "
            f"{result['slots_changed']}, updates lost {result['updates_lost']}, torn accepted "
            f"{result['torn_accepted']}, store unopenable {result['unopenable']}; power losses "
            f"simulated {result['power_loss_trials']:,}, "
            f"torn tails cut {result['torn_tails_cut']:,}"
        )
    return 1 if any(result[name] for name in bench.QUEUE_CRASH_BAD) else 0


def run_queue_throughput(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise WanconformError(f"--repeat: must be at least 1, got {args.repeat}")
    from conformance import bench

    result = bench.queue_throughput(args.repeat, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(
        f"queue store, batches of {result['batch']} (append, sync, remove, sync), best of "
        f"{result['repeat']}: {result['events_per_s_fsync']:,} events/s with fsync per batch, "
        f"{result['events_per_s_no_fsync']:,} without (load average {load})"
    )
    print(
        f"the impl with a persistent sender ({result['impl_ops']:,} steady ops, --queue-dir): "
        f"{result['impl_events_per_s_batch']:,} events/s with fsync per batch, "
        f"{result['impl_events_per_s_none']:,} without fsync, "
        f"{result['impl_events_per_s_memory']:,} with the queue in memory only"
    )
    return 0


def run_startup(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise WanconformError(f"--repeat: must be at least 1, got {args.repeat}")
    from conformance import bench

    result = bench.startup(args.repeat, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(f"start-up, from start to exit (load average {load}):")
    for name, figures in result["commands"].items():
        print(f"  {name:<24} best {figures['best_s']:.3f} s, median {figures['median_s']:.3f} s")
    return 0


def run_explore(args: argparse.Namespace) -> int:
    if args.explore < 1:
        raise WanconformError(f"--explore: must be at least 1, got {args.explore}")
    from conformance import bench

    keys = 2 if args.keys is None else args.keys
    if not 1 <= keys <= 9:
        raise WanconformError(f"--keys: with --explore, 1 to 9, got {keys}")
    result = bench.explore_rate(args.explore, keys, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(
        f"explore: 2 sites both ways, {result['keys']} keys, depth {result['depth']}: "
        f"{result['states']:,} distinct states, {result['transitions']:,} transitions in "
        f"{result['seconds']} s (one core of {result['cores']}; load average {load})"
    )
    print(
        f"  {result['states_per_s']:,} distinct states/s, {result['transitions_per_s']:,} "
        f"transitions/s; the model's plain steps alone: {result['model_steps_per_s']:,}/s; "
        f"search/plain: {result['overhead']}x"
    )
    print(
        f"  TLC (CCF Raft, tlaplus#636): 3.7M distinct states/min on 120 workers = "
        f"{result['tlc_states_per_s_per_core']:,}/s per worker; this: "
        f"{result['per_core_vs_tlc']}x that per core"
    )
    return 0


def run_segments(args: argparse.Namespace) -> int:
    import os

    from conformance import bench
    from conformance.spark.segments import SEGMENT_OPS
    from traces.tracefile import open_trace

    open_trace(args.segments)  # a valid trace: else one line, before any run
    available = len(os.sched_getaffinity(0))
    cores = available if args.cores is None else args.cores
    if not 1 <= cores <= available:
        raise WanconformError(f"--cores: 1 to {available} here, got {cores}")
    segment_ops = SEGMENT_OPS if args.segment_ops is None else args.segment_ops
    if segment_ops < 1:
        raise WanconformError(f"--segment-ops: must be at least 1, got {segment_ops}")
    runs = [name.strip() for name in args.runs.split(",")]
    unknown = [name or "an empty name" for name in runs if name not in bench.SEGMENT_RUNS]
    if unknown:
        choices = ", ".join(bench.SEGMENT_RUNS)
        raise WanconformError(f"--runs: {', '.join(unknown) or 'nothing'}: choose from {choices}")
    result = bench.segments(args.segments, cores, segment_ops, runs, say)
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    print(f"{result['trace']}: {result['cores']} cores, segments of {segment_ops:,} (load {load})")
    for name in runs:
        figures = result[name]
        print(
            f"  {name:<9} {figures['seconds']:>9,.1f} s wall {figures['cpu_seconds']:>9,.1f} s CPU "
            f"{figures['peak_rss_mb']:>7,} MB peak (exit {figures['exit']})"
        )
    if "goal_seconds" in result:
        verdict = "within" if result["within_goal"] else "NOT within"
        goal = f"1.25 x model / {result['cores']} + fast = {result['goal_seconds']:,.1f} s"
        print(f"  goal: {goal}: segments {verdict}")
    return 0
