"""`wanconform shrink`: a failing trace, however long, shrunk to a 1-minimal one.

    wanconform shrink TRACE -o MIN.jsonl [--impl module:Class] [--pytest FILE]

The failure is the trace's first divergence of model and impl (P1) or property
violation (P2-P12); the minimal trace fails with the same signature
(`conformance.search.shrink`). Progress goes to stderr, the result to stdout. Exit status: 0
shrunk (the outputs are written, atomically), 2 bad input, including a trace that does not
fail (there is nothing to shrink).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from typing import Any

from conformance.running.run import TraceRun
from conformance.search.shrink import budget_text, pytest_text, replay_command, shrink
from traces.engine import DEFAULT_IMPL, built, load_impl
from traces.errors import WanconformError
from traces.eventlog import event_log_files
from traces.logfile import is_log, open_log
from traces.outputs import declare_outputs, write_text_atomically
from traces.text import plural, printable, visible
from traces.tracefile import open_trace, trace_text, where
from wanconform.options import add_settle_cap, add_shrink_budget, given


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "shrink",
        help="shrink a failing trace to a 1-minimal trace that fails the same way",
        description=(
            "Find TRACE's first failure (a divergence of model and impl, P1, or a violation "
            "of P2-P12), cut the trace after it, keep only the keys, senders and sites "
            "involved, then delta-debug (ddmin) to a trace from which no single operation "
            "can be removed without losing the failure. The failure's signature (the "
            "property; for P1 observations or state and the first differing path) is kept."
        ),
        epilog=(
            "Exit status: 0 shrunk, 2 bad input, or a trace that neither diverges nor "
            "violates a property (nothing to shrink)."
        ),
    )
    parser.add_argument(
        "trace",
        metavar="TRACE",
        help="a failing trace file (.jsonl); or a log (docs/LOG.md): then the trace of its "
        "operations up to its first disagreement with the model is written",
    )
    parser.add_argument("-o", "--output", required=True, metavar="MIN", help="minimal trace")
    parser.add_argument(
        "--impl",
        metavar="MODULE:CLASS",
        default=DEFAULT_IMPL,
        help=f"the engine checked against the model (default {DEFAULT_IMPL}), e.g. "
        "tools.planted_bugs:HighWaterMark",
    )
    parser.add_argument(
        "--pytest", metavar="FILE", help="also write a regression test that fails on it"
    )
    add_settle_cap(parser)
    add_shrink_budget(parser, SHRINK_BUDGET, "the trace")
    declare_outputs(parser, files=["output", "pytest"], inputs=["trace"])
    parser.set_defaults(func=run)


SHRINK_BUDGET = 120.0
"""Seconds `wanconform shrink` shrinks for by default (--shrink-budget)."""


def run(args: argparse.Namespace) -> int:
    folder = os.path.isdir(args.trace)
    if folder or (os.path.isfile(args.trace) and event_log_files([args.trace])):
        raise WanconformError(
            f"{args.trace}: {'a directory' if folder else 'an event log'}: a running "
            "system's event logs (docs/LOG.md) cannot be shrunk, only validated; shrink "
            "takes one trace file, or one log of the model's operations (`shrink LOG -o "
            "T.jsonl` writes its trace up to its first disagreement)"
        )
    if is_log(args.trace):
        return cut_log(args)
    loaded = load_impl(args.impl, [os.path.dirname(os.path.abspath(args.trace))])
    # a user's engine that cannot build is one line (`built`), not a traceback
    factory = functools.partial(built, loaded, args.impl or DEFAULT_IMPL)
    started = time.monotonic()
    source = open_trace(args.trace)
    lines = [line for line, _ in source.ops()]
    ops = [op for _, op in source.ops()]
    print(
        f"shrink: read {plural(len(ops), 'operation')} from {printable(source.name)}",
        file=sys.stderr,
    )

    def progress(line: str) -> None:
        print(printable(f"shrink: {line} [{time.monotonic() - started:.1f} s]"), file=sys.stderr)

    names = [where(source.name, line) for line in lines]
    try:
        result = shrink(source.config, ops, factory, progress, names, args.shrink_budget)
    except WanconformError as exc:
        raise WanconformError(f"{source.name}: {exc}") from None
    minimal = result.ops(ops)
    text = trace_text(result.config, minimal)
    write_text_atomically(args.output, text)
    if args.pytest:
        write_text_atomically(
            args.pytest, pytest_text(text, args.impl, result.failure, args.output)
        )
    seconds = time.monotonic() - started
    kept = ", ".join(str(lines[i]) for i in result.kept)
    print(
        printable(
            f"{source.name}: {result.first_failure.signature} at "
            f"{names[result.first_failure.index]}: shrunk {plural(result.original, 'operation')} "
            f"to {len(minimal):,} in {seconds:.1f} s ({plural(result.tests, 'trace')} run); "
            f"wrote {args.output}" + (f" and {args.pytest}" if args.pytest else "")
        )
    )
    print(f"  kept lines {kept} of {printable(source.name)}")
    if result.out_of_budget:
        print(
            f"  not minimal: the budget of {budget_text(args.shrink_budget)} ran out; this is the "
            "shortest failing trace found by then (--shrink-budget gives it more, 0 no limit)"
        )
    impl = args.impl or DEFAULT_IMPL
    properties = result.failure.signature.property != "P1"
    print(f"  reproduce: {printable(replay_command(impl, properties, args.output))}")
    named = "impl" if impl == DEFAULT_IMPL else f"impl ({impl})"
    print("  " + visible(result.failure.describe(named)).replace("\n", "\n  "))
    return 0


def cut_log(args: argparse.Namespace) -> int:
    """A log (docs/LOG.md) cannot be shrunk: the system that wrote it is not here to run
    the candidates. What can be done: the trace of the log's operations up to its first
    disagreement with the model, to run on the system again (and log, and validate)."""
    if args.pytest or args.impl != DEFAULT_IMPL or given(args, "shrink_budget"):
        raise WanconformError(
            f"{args.trace}: a log is cut, not shrunk: no --impl, --pytest or --shrink-budget"
        )
    source = open_log(args.trace)
    run = TraceRun(source.name, source.config, impl=source.engine, stop_at_failure=True)
    kept = []
    for line, op in source.ops():
        kept.append(op)
        run.step(where(source.name, line), op)
        if run.stopped:
            break
    failure = run.finish().failure
    if failure is None:
        raise WanconformError(
            f"{source.name}: nothing to shrink: the log agrees with the model and P2-P12 hold"
        )
    write_text_atomically(args.output, trace_text(source.config, kept))
    print(
        printable(
            f"{source.name}: {failure.signature} at {failure.where}; a log cannot be shrunk "
            f"without the system that wrote it: wrote the trace of its first "
            f"{plural(len(kept), 'operation')} to {args.output} (run it on the system, log it, "
            "and validate the new log)"
        )
    )
    print("  " + visible(failure.describe("the log")).replace("\n", "\n  "))
    return 0
