"""`wanconform check`: every trace of a trace set, model vs impl (P1) with P2-P12, on
Spark."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.running.stores import refuse_earlier_store, store_engine_class, store_root
from conformance.search.examples import SHRINK_BUDGET
from impl.dlq_store import check_directory
from traces.engine import DEFAULT_IMPL, load_impl
from traces.errors import WanconformError
from traces.outputs import declare_outputs, output_kind
from traces.text import printable, shell_word
from wanconform.options import add_settle_cap, add_shrink_budget
from wanconform.progress import stage_progress, start_spark


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    add_settle_cap(parser)
    add_shrink_budget(parser, SHRINK_BUDGET, "each failure group's example")
    parser.add_argument(
        "--impl",
        default=None,
        metavar="MODULE:CLASS",
        help=(
            "the engine checked against the model (default: impl:Engine); any class with "
            "the impl's surface, e.g. tools.planted_bugs:HighWaterMark"
        ),
    )
    parser.add_argument(
        "--dlq-dir",
        metavar="DIR",
        help="keep the impl's dead letters in a durable store per trace, DIR/TRACE_ID/ "
        "(docs/DLQ_STORE.md; DIR is made if missing and must be seen by every executor); "
        "inspect them with `wanconform dlq DIR`",
    )
    parser.add_argument(
        "--queue-dir",
        metavar="DIR",
        help="keep the queues of the impl's persistent senders (enable_persistence) in a "
        "durable store per trace, DIR/TRACE_ID/ (docs/QUEUE_STORE.md; DIR is made if "
        "missing and must be seen by every executor): restart_sender reads each queue back "
        "from it, and the lockstep compares what it read with the model's",
    )


def check_dlq_dir(args: argparse.Namespace, trace_ids: Iterable[str]) -> None:
    """`--dlq-dir` and `--queue-dir`, checked before Spark starts: a store an earlier run
    left for one of `trace_ids` is refused, as `replay` refuses it (the run would empty
    it: its records would be lost); so is one in any output wanconform wrote (files it
    did not write would block its --force). (One in this command's output or input:
    `traces.outputs.check_outputs`.)"""
    for flag, directory in (("--dlq-dir", args.dlq_dir), ("--queue-dir", args.queue_dir)):
        if directory is None:
            continue
        store = Path(os.path.realpath(directory))
        for folder in (store, *store.parents):  # its stores would be foreign files there
            kind = output_kind(folder)
            if kind is not None:
                raise WanconformError(
                    f"{flag}: {directory}: is in {folder}, {kind} wanconform wrote; give the "
                    "store a path of its own"
                )
        for trace_id in trace_ids:
            refuse_earlier_store(flag, directory, trace_id)
    if args.dlq_dir is not None:
        store_engine_class(args.impl)
        check_directory(store_root("--dlq-dir", args.dlq_dir))
        stores = os.path.join(args.dlq_dir, "TRACE_ID")
        print(
            printable(
                f"dead letters: one store per trace, {stores} "
                f"(inspect with `wanconform dlq {shell_word(args.dlq_dir)}`)"
            ),
            file=sys.stderr,
        )
    if args.queue_dir is not None:
        store_engine_class(args.impl, argument="queue_dir")
        check_directory(store_root("--queue-dir", args.queue_dir))
        stores = os.path.join(args.queue_dir, "TRACE_ID")
        print(printable(f"persistent queues: one store per trace, {stores}"), file=sys.stderr)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check a trace set in lockstep (P1) with P2-P12 on Spark",
        description=(
            "Run every trace of the trace set TRACES through the model and the impl in "
            "lockstep (P1) and check P2-P12 (docs/SPEC.md §11), streaming through each "
            "trace. Writes RESULTS/results.parquet (one row per trace; all or nothing) and "
            "prints a summary. Exit 1 if any trace diverged or failed a property."
        ),
    )
    parser.add_argument("traces", metavar="TRACES", help="trace set directory")
    parser.add_argument("--out", required=True, metavar="RESULTS", help="results directory")
    add_check_arguments(parser)
    parser.add_argument("--master", default=None, help="Spark master (default: local)")
    from wanconform.cmd_replay import add_segment_arguments

    add_segment_arguments(parser, "trace", master=None, unless="not with --dlq-dir or --queue-dir")
    declare_outputs(
        parser,
        directories=["out"],
        inputs=["traces"],
        stores=["dlq_dir", "queue_dir"],
        arrow=["out"],
    )
    parser.set_defaults(func=run)


def say(line: str) -> None:
    """The lines of long driver-side work (examples being explained), on a terminal."""
    if sys.stderr.isatty():
        print(f"check: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.impl:
        # a bad spec is one line before Spark starts; a module may sit next to the set
        folder = os.path.abspath(args.traces)
        load_impl(args.impl, [folder, os.path.dirname(folder)])
    from conformance.spark import glue
    from traces.parquet import open_trace_set
    from wanconform.cmd_replay import segment_size

    trace_set = open_trace_set(args.traces)
    check_dlq_dir(args, [trace.trace_id for trace in trace_set.traces])
    spark = start_spark(args.master)
    started = time.perf_counter()
    from conformance.spark.campaign import render, summarize
    from conformance.spark.results import FAILURES

    bar = stage_progress("check")
    rows = glue.check(
        spark,
        args.traces,
        args.out,
        args.impl,
        bar.stage,
        say,
        args.dlq_dir,
        queue_dir=args.queue_dir,
        shrink_budget=args.shrink_budget,
        segment_ops=segment_size(args),
        on_segments=lambda line: print(f"check: {line}", file=sys.stderr),
    )
    bar.close(f"check     done in {bar.elapsed():.1f} s")
    summary = summarize(rows, time.perf_counter() - started)
    print(render(summary, str(Path(args.out) / FAILURES), args.impl or DEFAULT_IMPL))
    print(f"\nresults: {printable(args.out)}/results.parquet")
    return 1 if summary.failed else 0
