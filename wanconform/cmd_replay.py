"""`wanconform replay`: run trace files through an engine and print the final state."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from traces.canonical import canonical_json
from traces.ops import op_to_json
from traces.tracefile import Trace, read_trace
from wanconform.engine import make_engine


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay trace files and print each one's final observable state",
        description=(
            "Replay each TRACE (JSON Lines, SPEC §12) and print its final observable state "
            "(SPEC §10). Every trace is validated before any is run. With --engine both, "
            "model and impl run in lockstep and the first divergence is reported (exit 1)."
        ),
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace file (.jsonl)")
    parser.add_argument(
        "--engine",
        choices=("model", "impl", "both"),
        default="model",
        help="which engine replays the traces (default: model)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print exactly one line of canonical JSON per trace, nothing else",
    )
    parser.add_argument(
        "--check-properties",
        action="store_true",
        help=(
            "check P2-P7 (SPEC §11) after every operation and report every violation "
            "(exit 1 if any); P4 only when the topology is supported (R23)"
        ),
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class Replayed:
    state: dict[str, Any]  # the final observable state (SPEC §10)
    violations: list[str]  # property violations, one line each (with --check-properties)
    notes: list[str]


PROGRESS_EVERY = 100_000  # operations between progress lines on a terminal


def _progress(trace: Trace, done: int) -> None:
    """On a terminal, long replays say how far they are (one stderr line, rewritten)."""
    total = len(trace.ops)
    due = done % PROGRESS_EVERY == 0 or done == total
    if total >= PROGRESS_EVERY and due and sys.stderr.isatty():
        end = "\n" if done == total else ""
        print(f"\r{trace.name}: {done:,}/{total:,} operations", end=end, file=sys.stderr)


def _replay(trace: Trace, engine_name: str, check: bool) -> Replayed:
    engine = make_engine(engine_name, trace.config)
    if not check:
        for number, op in enumerate(trace.ops, start=1):
            engine.apply(op)
            _progress(trace, number)
        return Replayed(engine.observe(), [], [])
    from conformance.properties import PropertyChecker
    from conformance.topology import analyse_topology

    notes = []
    if not analyse_topology(trace.config).supported:
        notes.append(
            f"{trace.name}: note: the topology is unsupported (R23), so P4 is not expected "
            "to hold; `wanconform topology` names the duplicate paths"
        )
    checker = PropertyChecker(trace.config)
    violations: list[str] = []
    for number, op in enumerate(trace.ops, start=1):
        found = checker.after_step(op, engine.apply(op), engine.observe)
        _progress(trace, number)
        violations.extend(
            f"{trace.name}: operation {number} {canonical_json(op_to_json(op))}: {violation}"
            for violation in found
        )
    return Replayed(engine.observe(), violations, notes)


def summary(trace: Trace, state: dict[str, Any]) -> str:
    """A short human summary of a final observable state."""
    lines = [f"{trace.name}: {len(trace.ops)} operations, time {state['time']} ms"]
    for site_id, site in sorted(state["sites"].items(), key=lambda item: int(item[0])):
        stats = " ".join(f"{k}={v}" for k, v in site["stats"].items())
        lines.append(
            f"  site {site_id}: {'up' if site['up'] else 'DOWN'}, seq {site['seq']}, "
            f"{len(site['entries'])} entries; {stats}"
        )
    for sender_id, sender in sorted(state["senders"].items()):
        config = trace.config.sender(sender_id)
        flight = sender["in_flight"]
        in_flight = (
            "none"
            if flight is None
            else f"batch {flight['batch_id']} ({len(flight['events'])} events, "
            f"sent at {flight['sent_at']})"
        )
        nonzero = " ".join(f"{k}={v}" for k, v in sender["stats"].items() if v)
        lines.append(
            f"  sender {sender_id} ({config.site}->{config.remote}): queue {len(sender['queue'])}, "
            f"in flight {in_flight}, dead letters {len(sender['dlq'])}; {nonzero or 'no traffic'}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    traces = [read_trace(path) for path in args.traces]  # validate all before any output
    status = 0
    for trace in traces:
        if args.engine == "both":
            from conformance.agreement import first_divergence

            _, divergence = first_divergence(trace.config, trace.ops)
            if divergence is not None:
                print(f"{trace.name}: {divergence.describe()}")
                return 1
        result = _replay(
            trace, "model" if args.engine == "both" else args.engine, args.check_properties
        )
        print(canonical_json(result.state) if args.json else summary(trace, result.state))
        report = sys.stderr if args.json else sys.stdout  # stdout: one JSON line per trace
        for line in [*result.notes, *result.violations]:
            print(line, file=report)
        if args.check_properties and not result.violations:
            print(f"{trace.name}: P2-P7 hold", file=report)
        if result.violations:
            status = 1
    return status
