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
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from traces.engine import DEFAULT_IMPL, load_impl
from traces.errors import WanconformError
from traces.outputs import declare_outputs
from traces.text import plural, printable
from traces.tracefile import open_trace
from wanconform.options import given
from wanconform.progress import Progress, erase


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
        erase()  # the count of operations run, on a terminal
        print(printable(f"report: {line}"), file=sys.stderr)  # one line, whatever it names

    policies: list[dict[str, Any]] = []
    settings: dict[str, Any] | None = None
    _refuse_logs(args.traces)
    if len(args.traces) == 1 and os.path.isdir(args.traces[0]):
        results = read_results(args.traces[0])
        if given(args, "shrink_budget"):
            raise WanconformError(
                f"--shrink-budget: {results.path} holds results whose examples are shrunk "
                "already; the option goes with trace files"
            )
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
                _check_comparison(document)
                policies = document.pop("policies")
            except (OSError, ValueError, AttributeError, KeyError) as exc:
                raise WanconformError(f"{compared}: not a policies comparison: {exc}") from None
            settings = document
    else:
        seen: dict[tuple[int, int], str] = {}  # (device, inode) -> the path given first
        for path in args.traces:
            if os.path.isdir(path):
                raise WanconformError(f"{path}: a directory: give it alone, or give trace files")
            with contextlib.suppress(OSError):  # (a missing file is open_trace's to name)
                status = os.stat(path)
                file = (status.st_dev, status.st_ino)
                if file in seen:
                    raise WanconformError(
                        f"{path}: given twice (also as {seen[file]}): a report counts each "
                        "trace once"
                    )
                seen[file] = path
        impl_spec = args.impl or DEFAULT_IMPL
        search = sorted({os.path.dirname(os.path.abspath(p)) for p in args.traces})
        factory = load_impl(impl_spec, search)
        sources = [open_trace(path) for path in args.traces]  # validate all before any work
        traces = [
            LocalTrace(s.name, s.config, list(s.ops()), Path(s.name).parent.name or "traces")
            for s in sources
        ]
        running = Progress(
            f"report: running {plural(len(traces), 'trace')}", sum(len(t.ops) for t in traces)
        )
        rows, examples, notes = check_local(
            traces, impl_spec, factory, progress, args.shrink_budget, running.update
        )
        running.close()
    report = write_report(
        rows, examples, notes, args.output, impl_spec, progress, policies, settings=settings
    )
    print(
        f"{printable(args.output)}: {plural(report.traces, 'trace')}, {report.failing:,} failing, "
        f"{plural(len(report.groups), 'failure signature')}"
    )
    return 1 if report.failing else 0


def _refuse_logs(paths: list[str]) -> None:
    """A log given as a trace is one line saying what it is and what reports on it
    (`validate ... --report`), not the first field a trace does not have."""
    from conformance.spark.results import results_directory
    from traces.eventlog import event_log_files
    from traces.logfile import is_log

    for path in paths:
        if os.path.isdir(path):
            try:
                results_directory(path)
                continue
            except WanconformError:
                pass  # not results: event logs, or nothing `report` takes (said below)
            logs = sorted(Path(path).glob("*.jsonl"))
            kind = "a directory of event logs" if logs and event_log_files([str(logs[0])]) else ""
            given = "DIR"
        elif os.path.isfile(path) and event_log_files([path]):
            kind, given = "an event log", "DIR"
        else:
            kind, given = ("a log" if is_log(path) else ""), "LOG"
        if kind:
            raise WanconformError(
                f"{path}: {kind} (docs/LOG.md): `wanconform validate {given} --report HTML` "
                "reports on it; report takes trace files or a results directory"
            )


def _check_comparison(document: Any) -> None:
    """A campaign's policies.json has the shape `Comparison.to_json` writes (each figure
    of a row of the type of a fresh row's; only those the report does not need, or
    defaults, may be absent), or ValueError naming the first cell that differs: an
    edited one was a traceback while the report was drawn."""
    from conformance.spark.policies import SETTINGS, PolicyFigures, SettingFigures

    def same_shape(where: str, value: Any, like: Any, optional: tuple[str, ...] = ()) -> None:
        if isinstance(like, dict):
            if not isinstance(value, dict):
                raise ValueError(f"{where}: not an object")
            for key, inner in like.items():
                if key in value:
                    same_shape(f"{where}.{key}", value[key], inner)
                elif key not in optional:
                    raise ValueError(f"{where}: no {key}")
        elif type(value) is not type(like):  # bool is no int here, nor int a bool
            raise ValueError(f"{where}: not {type(like).__name__}")

    optional = {"policies": ("policy", "traces")}  # not shown
    if not isinstance(document, dict) or "policies" not in document:
        raise ValueError("no policies")
    rows = {"policies": PolicyFigures("drop").to_json()} | {
        setting: SettingFigures(setting, True).to_json() for setting in SETTINGS
    }
    for name, figures in document.items():
        if name not in rows:
            raise ValueError(f"{name}: not a comparison wanconform makes")
        if not isinstance(figures, list):
            raise ValueError(f"{name}: not a list")
        for index, row in enumerate(figures):
            same_shape(
                f"{name}[{index}]",
                row,
                rows[name],
                (*optional.get(name, ()), "keys_differing_after_wipe"),  # a default
            )
