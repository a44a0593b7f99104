"""`wanconform replay`: run trace files through an engine and print the final state."""

from __future__ import annotations

import argparse
from typing import Any

from traces.canonical import canonical_json
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
    parser.set_defaults(func=run)


def _replay(trace: Trace, engine_name: str) -> dict[str, Any]:
    engine = make_engine(engine_name, trace.config)
    for op in trace.ops:
        engine.apply(op)
    return engine.observe()


def summary(trace: Trace, state: dict[str, Any]) -> str:
    """A short human summary of a final observable state."""
    lines = [f"{trace.name}: {len(trace.ops)} operations, time {state['time']} ms"]
    for site_id, site in state["sites"].items():
        stats = " ".join(f"{k}={v}" for k, v in site["stats"].items())
        lines.append(
            f"  site {site_id}: {'up' if site['up'] else 'DOWN'}, seq {site['seq']}, "
            f"{len(site['entries'])} entries; {stats}"
        )
    for sender_id, sender in state["senders"].items():
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
    for trace in traces:
        if args.engine == "both":
            from conformance.agreement import first_divergence

            state, divergence = first_divergence(trace.config, trace.ops)
            if divergence is not None:
                print(f"{trace.name}: {divergence.describe()}")
                return 1
        else:
            state = _replay(trace, args.engine)
        print(canonical_json(state) if args.json else summary(trace, state))
    return 0
