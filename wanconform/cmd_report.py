"""`wanconform report`: one self-contained HTML file of what a set of traces found.

    wanconform report TRACE...|RESULTS_DIR -o report.html [--impl module:Class]

Each TRACE is run once, in lockstep with P2-P12 checked (as `wanconform check` checks a
trace), and the largest failure groups' examples are shrunk and explained; a campaign or
`check` results directory already holds its rows, its impl and its examples, so nothing
is run again: the report shows what that check found. Exit status: 0 written and
nothing failed, 1 written and some trace failed, 2 bad input (nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from traces.engine import DEFAULT_IMPL, load_impl
from traces.errors import WanconformError
from traces.outputs import declare_outputs
from traces.text import plural
from traces.tracefile import open_trace


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report: verdicts, coverage, failures grouped and explained",
        description=(
            "Run each TRACE in lockstep (P1) with P2-P12 checked, or read the results of "
            "a campaign or `check` directory (with the impl that produced them: nothing is "
            "run again), and write one self-contained HTML file: verdicts per property and "
            "profile (a trace's folder), coverage, bandwidth, topologies, and the failures "
            "grouped by signature, each with a shrunk example, model and impl side by side, "
            "a sequence diagram and a regression test. Exit 0 nothing failed, 1 some trace "
            "failed, 2 bad input."
        ),
    )
    parser.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="trace files (.jsonl), or one campaign / check results directory",
    )
    parser.add_argument("-o", "--output", required=True, metavar="HTML", help="the report")
    parser.add_argument(
        "--impl",
        metavar="MODULE:CLASS",
        default=None,
        help=f"with trace files: the engine checked against the model (default {DEFAULT_IMPL}); "
        "a results directory names its own",
    )
    from conformance.search.examples import SHRINK_BUDGET
    from wanconform.options import add_shrink_budget

    add_shrink_budget(parser, SHRINK_BUDGET, "each failure group's example (with trace files)")
    declare_outputs(parser, files=["output"], inputs=["traces"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.spark.check import LocalTrace, check_local
    from conformance.spark.results import read_results
    from reports.render import write_report

    def progress(line: str) -> None:
        print(f"report: {line}", file=sys.stderr)

    policies: list[dict[str, Any]] = []
    settings: dict[str, Any] | None = None
    if len(args.traces) == 1 and os.path.isdir(args.traces[0]):
        results = read_results(args.traces[0])
        if args.impl and args.impl != results.impl:
            raise WanconformError(
                f"--impl {args.impl}: {results.path} holds the results of {results.impl}; "
                "check the traces again to report on another impl"
            )
        rows, examples, notes, impl_spec = (
            results.rows,
            results.examples,
            results.notes,
            results.impl,
        )
        progress(f"reading the results in {results.path}: nothing is run")
        # a campaign's --compare-policies: beside its results directory
        compared = results.path.parent / "policies.json"
        if compared.is_file():
            try:
                document = json.loads(compared.read_text(encoding="utf-8"))
                policies = document.pop("policies")
            except (OSError, ValueError, AttributeError, KeyError) as exc:
                raise WanconformError(f"{compared}: not a policies comparison: {exc}") from None
            settings = document
    else:
        for path in args.traces:
            if os.path.isdir(path):
                raise WanconformError(f"{path}: a directory: give it alone, or give trace files")
        impl_spec = args.impl or DEFAULT_IMPL
        search = sorted({os.path.dirname(os.path.abspath(p)) for p in args.traces})
        factory = load_impl(impl_spec, search)
        sources = [open_trace(path) for path in args.traces]  # validate all before any work
        traces = [
            LocalTrace(s.name, s.config, list(s.ops()), Path(s.name).parent.name or "traces")
            for s in sources
        ]
        rows, examples, notes = check_local(
            traces, impl_spec, factory, progress, args.shrink_budget
        )
    report = write_report(
        rows, examples, notes, args.output, impl_spec, progress, policies, settings=settings
    )
    print(
        f"{args.output}: {plural(report.traces, 'trace')}, {report.failing:,} failing, "
        f"{plural(len(report.groups), 'failure signature')}"
    )
    return 1 if report.failing else 0
