"""`wanconform campaign`: generate, check and summarize, on Spark.

OUT/traces is the trace set, OUT/results/ the results directory (`conformance.spark.results`:
the rows, the impl, the examples of the largest failure groups and the failing traces as
failures/TRACE_ID.jsonl), OUT/summary.txt what was printed and OUT/report.html the report
of those results, OUT/campaign.json what was asked (and the mark of a campaign directory).
The whole directory is built beside OUT and appears whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

from conformance.properties.topology import analyse_topology
from traces.engine import DEFAULT_IMPL, load_impl
from traces.outputs import (
    CAMPAIGN_MARKER,
    building_directory,
    declare_outputs,
    write_text_atomically,
)
from traces.text import printable
from wanconform.cmd_check import add_check_arguments, check_dlq_dir, say
from wanconform.cmd_generate import add_generation_arguments, check_generation_arguments
from wanconform.cmd_topology import format_table, sender_settings
from wanconform.progress import stage_progress, start_spark


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "campaign",
        help="generate traces and check them on Spark, with a summary",
        description=(
            "`wanconform generate` then `wanconform check`: OUT/traces (the trace set), "
            "OUT/results/ (results.parquet, the examples, and the failing traces as "
            "failures/TRACE_ID.jsonl to replay), OUT/summary.txt, OUT/report.html. Prints "
            "traces, operations, "
            "events checked per second, divergences grouped by signature, verdicts per "
            "property, the coverage table and bandwidth. Exit 1 if anything failed."
        ),
    )
    add_generation_arguments(parser, traces=200, ops=1000)
    add_check_arguments(parser)
    parser.add_argument(
        "--compare-policies",
        action="store_true",
        help="also run every generated trace under each failure policy (Geode's drop, "
        "blocking retries, dead letters kept, dead letters redelivered) and compare events "
        "lost, keys that differ, backlog, records left and redelivery outcomes; and, on the "
        "model, with batch conflation on and off (bytes shipped, events conflated, keys "
        "that differ) and queue persistence on and off (events lost and re-sent on "
        "restarts) (OUT/policies.json, the summary's tables, charts in the report)",
    )
    parser.add_argument("--out", required=True, help="campaign directory")
    declare_outputs(
        parser,
        directories=["out"],
        inputs=["config"],
        sites=["site"],
        stores=["dlq_dir", "queue_dir"],
        arrow=["out"],
    )
    parser.set_defaults(func=run)


def rerun_record(args: argparse.Namespace, generation: Any) -> dict[str, Any]:
    """campaign.json: what the campaign ran, everything needed to run it again (issue 31):
    the options, the configuration it was given (None: each profile draws its own), the
    impl, and the versions of wanconform, Python and PySpark."""
    import importlib.metadata
    import platform

    return {
        "kind": "wanconform campaign",
        "seed": args.seed,
        "traces": args.traces,
        "ops": args.ops,
        "profiles": list(generation.profiles),
        "config": generation.config.to_json() if generation.config else None,
        "config_from": generation.source if generation.config else None,
        "impl": args.impl or DEFAULT_IMPL,
        "master": args.master or "local",
        "compare_policies": bool(args.compare_policies),
        "dlq_dir": args.dlq_dir,
        "queue_dir": args.queue_dir,
        "shrink_budget": args.shrink_budget,
        "settle_cap": args.settle_cap,
        "versions": {
            "wanconform": importlib.metadata.version("wanconform"),
            "python": platform.python_version(),
            "pyspark": importlib.metadata.version("pyspark"),
        },
    }


def run(args: argparse.Namespace) -> int:
    generation = check_generation_arguments(args)
    if args.impl:
        load_impl(args.impl)
    from conformance.generation.profiles import trace_ids

    check_dlq_dir(
        args, [trace_id for trace_id, _ in trace_ids(list(generation.profiles), args.traces)]
    )
    from conformance.spark import glue
    from conformance.spark.campaign import render, summarize
    from conformance.spark.policies import (
        KEYS_NOTE,
        render_settings,
        render_table,
    )
    from conformance.spark.results import FAILURES, read_results
    from reports.render import write_report

    out = Path(args.out)
    final = Path(os.path.abspath(out))
    began = time.perf_counter()
    spark = start_spark(args.master)
    spent = {"Spark's start": time.perf_counter() - began}  # where the time went (issue 32)
    with building_directory(out) as staging:  # the campaign appears whole or not at all
        started = time.perf_counter()
        bar = stage_progress("generate")
        glue.generate(
            spark,
            staging / "traces",
            args.traces,
            args.ops,
            generation.profiles,
            args.seed,
            on_progress=bar.stage,
            config=generation.config,
        )
        bar.close(f"generate  done in {bar.elapsed():.1f} s")
        generated = time.perf_counter() - started
        started = time.perf_counter()
        bar = stage_progress("check")
        rows = glue.check(
            spark,
            staging / "traces",
            staging / "results",
            args.impl,
            bar.stage,
            say,
            args.dlq_dir,
            moved_to=(str(final / "traces"), str(final / "results")),
            queue_dir=args.queue_dir,
            shrink_budget=args.shrink_budget,
        )
        bar.close(f"check     done in {bar.elapsed():.1f} s")
        summary = summarize(rows, time.perf_counter() - started)
        spent["generation"], spent["check"] = generated, time.perf_counter() - started
        policies: list[dict[str, Any]] = []
        settings: dict[str, list[dict[str, Any]]] = {}
        if args.compare_policies:
            bar = stage_progress("policies")
            say("comparing the failure policies on every trace")
            comparison = glue.compare_policies(spark, staging / "traces", bar.stage)
            bar.close(f"policies  done in {bar.elapsed():.1f} s")
            spent["policies"] = bar.elapsed()
            compared = comparison.to_json()
            policies = compared.pop("policies")
            settings = compared
            document = json.dumps(comparison.to_json(), indent=1)
            write_text_atomically(staging / "policies.json", document + "\n")
        operations = args.traces * args.ops
        text = (
            f"campaign: seed {args.seed}, {generation.describe()}, impl "
            f"{args.impl or DEFAULT_IMPL}, generated {operations:,} operations in "
            f"{generated:.1f} s ({operations / generated:,.0f} ops/s wall, Spark's job "
            "start-up included)\n"
        )
        if generation.config is not None:
            text += "\n" + format_table(analyse_topology(generation.config), generation.names)
            text += "\n\n" + sender_settings(generation.config, generation.names) + "\n"
        text += render(summary, str(out / "results" / FAILURES), args.impl or DEFAULT_IMPL)
        if policies:
            text += "\n\nfailure policies compared (the same traces):\n"
            text += render_table(comparison.policies)
            text += "\n\nconflation and persistence, on and off (the same traces):\n"
            text += render_settings(comparison.settings)
            text += "\n\n" + textwrap.fill(KEYS_NOTE, 92)
        write_text_atomically(staging / "summary.txt", text + "\n")
        results = read_results(staging / "results")
        started = time.perf_counter()
        write_report(
            results.rows,
            results.examples,
            results.notes,
            staging / "report.html",
            results.impl,
            say,
            policies,
            settings=settings,
        )
        spent["report"] = time.perf_counter() - started
        marker = rerun_record(args, generation)
        write_text_atomically(staging / CAMPAIGN_MARKER, json.dumps(marker, sort_keys=True) + "\n")
    print(text)
    where = printable(str(out))
    print(f"\ncampaign written to {where}/ (traces/, results/results.parquet, summary.txt)")
    total = time.perf_counter() - began
    print(
        "time: "
        + ", ".join(f"{name} {taken:.1f} s" for name, taken in spent.items())
        + (f" (in all {total:.1f} s)")
    )
    print(f"report: {printable(str(out / 'report.html'))}")
    return 1 if summary.failed else 0
