"""`wanconform validate`: check the log of any system under test against the model.

A log (docs/LOG.md) is a trace whose operations also carry what the system observed
and, now and then, its observable state. The model replays the operations; every
logged observation and state is compared (`conformance.running.run` with the log playing the
impl, `traces.logfile`), and the first disagreement is reported exactly as `replay
--engine both` reports a divergence: text, `--json`, `--report`; P2-P12 are checked on
the run with `--check-properties` (and in the report).

An event log (a directory, or files with an event log's header: `traces.eventlog`) is
what the processes of a running system logged, one file each: merged into one run, it is
checked against the driven model (`model.driven`: the log chooses when flushes and
timeouts happen, among the moments R15 and R20 allow), and how late they were against
`--max-late-ms` (`conformance.running.lateness`).
"""

from __future__ import annotations

import argparse
from typing import Any

from conformance.running.lateness import DEFAULT_MAX_LATE_MS
from traces.errors import WanconformError
from traces.eventlog import event_log_files
from traces.logfile import LogSource, open_log
from traces.outputs import declare_outputs
from wanconform.cmd_replay import add_segment_arguments, refuse_segments, replay_sources
from wanconform.options import non_negative_int
from wanconform.progress import Progress

NO_EXAMPLE = (
    "no example: a log cannot be shrunk without the system that wrote it; `wanconform "
    "shrink LOG -o T.jsonl` writes the trace up to the disagreement to run on it again"
)
NO_EVENT_LOG_EXAMPLE = (
    "no example: a running system's event logs cannot be shrunk, not even cut to a trace "
    "(`wanconform shrink` refuses them): they are only validated (docs/LOG.md)"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check the log of your own system (any language) against the model",
        description=(
            "Replay each LOG's operations on the model and compare every observation and "
            "state the system logged (docs/LOG.md; JSON Schema docs/log.schema.json). The "
            "first disagreement is reported as a divergence (P1), 'impl' being what the "
            "log says. Every log is validated before any output."
        ),
        epilog="Exit status: 0 the logs agree with the model, 1 a disagreement or a "
        "property violation, 2 bad input.",
    )
    parser.add_argument(
        "logs",
        nargs="+",
        metavar="LOG",
        help="log file (.jsonl); or one run's event logs: their directory, or its files",
    )
    parser.add_argument(
        "--max-late-ms",
        type=non_negative_int,
        default=None,
        metavar="MS",
        help=(
            "event logs: a flush or timeout taken more than MS after R15/R20 made it due "
            f"(or not taken by then) is a lateness violation (default {DEFAULT_MAX_LATE_MS})"
        ),
    )
    parser.add_argument(
        "--steps", action="store_true", help="one line per operation, as `replay --steps`"
    )
    parser.add_argument(
        "--json", action="store_true", help="exactly one line of canonical JSON per log"
    )
    parser.add_argument(
        "--check-properties", action="store_true", help="also check P2-P12 on the run"
    )
    parser.add_argument("--report", metavar="HTML", help="also write the HTML report")
    add_segment_arguments(
        parser,
        "log",
        unless="run whole with --steps or --report; not on an event log",
        master="not on an event log",
    )
    declare_outputs(parser, files=["report"], inputs=["logs"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    files = event_log_files(args.logs)
    if files is not None:
        refuse_segments(args, "an event log is checked whole, not in segments")
        return run_events(args, files)
    if args.max_late_ms is not None:
        raise WanconformError(
            f"--max-late-ms: only an event log has lateness (docs/LOG.md, 'Event logs'); "
            f"{args.logs[0]} is a log of operations"
        )
    sources = []
    for path in args.logs:  # validate every log before any output
        progress = Progress(f"validating {path}")
        sources.append(open_log(path, progress.update))
        progress.close()

    def engine_of(source: LogSource) -> Any:
        return source.engine

    return replay_sources(
        args, sources, "both", engine_of, "the log", other="the log", no_example=NO_EXAMPLE
    )


def run_events(args: argparse.Namespace, files: list[str]) -> int:
    """One run's event logs, checked against the driven model with their lateness
    (docs/LOG.md, "Event logs"): validated and merged as the run reads them, once (the
    result is printed after the last line); with --steps, validated first."""
    from conformance.running.events import EventRun
    from conformance.running.lateness import LatenessCheck
    from traces.eventlog import open_event_log

    name = args.logs[0] if len(args.logs) == 1 else "+".join(files)
    source = open_event_log(files, name)
    if args.steps:  # printed as the run goes: every line validated first
        progress = Progress(f"validating {name}")
        source.validate(progress.update)
        progress.close()
    return replay_sources(
        args,
        [EventRun(source)],
        "both",
        lambda run: run.log_engine,
        "the log",
        other="the log",
        no_example=NO_EVENT_LOG_EXAMPLE,
        model_of=lambda run: run.model_engine,
        watch=lambda: LatenessCheck(
            DEFAULT_MAX_LATE_MS if args.max_late_ms is None else args.max_late_ms
        ),
    )
