"""`wanconform report`: one self-contained HTML file of what a set of traces found.

    wanconform report TRACE...|CAMPAIGN_DIR -o report.html [--impl module:Class]

Each TRACE is checked as `wanconform check` checks a trace (lockstep P1, P2-P7); a
campaign directory (or a `check` results directory) gives its result rows instead. The
failures are grouped by signature and each group's example is shrunk and explained
(`reports.report_data`). Exit status: 0 written and nothing failed, 1 written and some trace failed,
2 bad input (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from reports.render import write_report
from reports.report_data import records_from_traces
from traces.engine import DEFAULT_IMPL, load_impl


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report: verdicts, coverage, failures grouped and explained",
        description=(
            "Replay each TRACE in lockstep (P1) with P2-P7 checked, or read the results of "
            "a campaign directory, and write one "
            "self-contained HTML file: verdicts per property and profile (a trace's folder), "
            "coverage, bandwidth, topologies, and the failures grouped by signature, each "
            "with a shrunk example, model and impl side by side, a sequence diagram and a "
            "regression test. Exit 0 nothing failed, 1 some trace failed, 2 bad input."
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
        default=DEFAULT_IMPL,
        help=f"the engine checked against the model (default {DEFAULT_IMPL})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    load_impl(args.impl)  # a bad spec fails before any work
    records = records_from_traces(args.traces, args.impl)

    def progress(line: str) -> None:
        print(f"report: {line}", file=sys.stderr)

    report = write_report(records, args.output, args.impl, progress)
    print(
        f"{args.output}: {report.traces:,} traces, {report.failing:,} failing, "
        f"{len(report.groups):,} failure signatures"
    )
    return 1 if report.failing else 0
