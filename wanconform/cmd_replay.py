"""`wanconform replay`: run trace files through an engine and say what happened.

Every trace is validated (a streaming pass) before any output; then each is replayed,
streaming again, so memory follows the engines' state, not the trace's length. Text
output: a summary per trace (with `--steps`, one line per operation first); `--json`:
exactly one canonical JSON line per trace, whatever happens. Exit 1 if any trace
diverged (`--engine both`) or violated a property (`--check-properties`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.lockstep import Divergence, Lockstep
from conformance.narrative import Narrator
from conformance.properties import PropertyChecker, Verdict
from reports.render import write_report
from reports.report_data import records_from_traces
from traces.canonical import canonical_json
from traces.engine import DEFAULT_IMPL, Engine, EngineFactory, load_impl, make_engine
from traces.errors import WanconformError
from traces.observations import Observation
from traces.ops import Op, op_to_json
from traces.text import plural
from traces.tracefile import TraceSource, open_trace, where

SPEC = "docs/SPEC.md"
MAX_LISTED_KEYS = 10  # differing keys listed by the convergence verdict


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay trace files and say what happened, step by step or in summary",
        description=(
            f"Replay each TRACE (JSON Lines, {SPEC} §12) and print a summary of its final "
            f"observable state ({SPEC} §10), the number of skipped operations, and whether all "
            "sites hold identical entries. Every trace is validated before any is run; "
            "operations are named by file and line (t.jsonl:9) everywhere."
        ),
        epilog=(
            "Exit status: 0 fine, 1 a divergence or a property violation in some trace, "
            "2 bad input."
        ),
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace file (.jsonl)")
    parser.add_argument(
        "--engine",
        choices=("model", "impl", "both"),
        default="model",
        help=(
            "which engine replays the traces (default: model); both = model and impl in "
            "lockstep (P1): the first operation after which they differ is reported"
        ),
    )
    parser.add_argument(
        "--impl",
        metavar="MODULE:CLASS",
        help=(
            "the engine run as the impl (with --engine impl or both; default impl:Engine): "
            "any class with the impl's surface, e.g. tools.planted_bugs:HighWaterMark"
        ),
    )
    parser.add_argument(
        "--report",
        metavar="HTML",
        help=(
            "also write the HTML report of the traces (as `wanconform report`): verdicts, "
            "failures grouped, each explained with a shrunk example"
        ),
    )
    parser.add_argument(
        "--steps",
        action="store_true",
        help="one line per operation: its file line, the operation and what happened",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=(
            "print exactly one line of canonical JSON per trace: trace, operations, skipped, "
            "state, converged, divergence, and with the options properties and steps"
        ),
    )
    parser.add_argument(
        "--check-properties",
        action="store_true",
        help=(
            "check P2-P7 on the run and report each as held, FAILED (with the violations) "
            "or not applicable and why (e.g. P4 on an unsupported topology, R23)"
        ),
    )
    parser.set_defaults(func=run)


@dataclass(slots=True)
class Replayed:
    """What one trace's replay found."""

    source: TraceSource
    operations: int = 0
    skipped: int = 0
    state: dict[str, Any] = field(default_factory=dict)  # final observable state (§10)
    divergence: Divergence | None = None
    verdicts: list[Verdict] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # --steps --json

    @property
    def failed(self) -> bool:
        failed_property = any(v.status == "failed" for v in self.verdicts or [])
        return self.divergence is not None or failed_property


class Progress:
    """On a terminal, long work says how far it is: one stderr line, rewritten at most
    twice a second, from the first half second on; erased when done."""

    def __init__(self, what: str, total: int | None = None) -> None:
        self.what = what
        self.total = total
        self.active = sys.stderr.isatty()
        self.next_at = time.monotonic() + 0.5
        self.shown = False

    def update(self, done: int) -> None:
        if self.active and time.monotonic() >= self.next_at:
            self.next_at = time.monotonic() + 0.5
            of = "" if self.total is None else f"/{self.total:,}"
            print(f"\r{self.what}: {done:,}{of} operations", end="", file=sys.stderr, flush=True)
            self.shown = True

    def close(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def replay(
    source: TraceSource,
    engine_name: str,
    check: bool,
    on_step: Callable[[str, Op, list[Observation], Callable[[], dict[str, Any]]], None]
    | None = None,
    impl_factory: EngineFactory | None = None,
) -> Replayed:
    """Replay one trace; `on_step(where, op, observations, state)` sees every step;
    `impl_factory` builds the impl (default: impl.Engine)."""
    result = Replayed(source)
    lockstep: Lockstep | None = None
    engine: Engine
    if engine_name == "both":
        lockstep = Lockstep(
            source.config, impl_factory, replay=lambda: (op for _, op in source.ops())
        )
        engine = lockstep.model
    elif engine_name == "impl" and impl_factory is not None:
        engine = impl_factory(source.config)
    else:
        engine = make_engine(engine_name, source.config)
    checker = PropertyChecker(source.config) if check else None
    progress = Progress(f"replaying {source.name}", source.op_count)
    for line, op in source.ops():
        here = where(source.name, line)
        observations = engine.apply(op) if lockstep is None else lockstep.step(op, here)
        result.operations += 1
        if len(observations) == 1 and observations[0]["kind"] == "skipped":
            result.skipped += 1
        if checker is not None:
            checker.after_step(op, observations, engine.observe, here)
        if on_step is not None:
            on_step(here, op, observations, engine.observe)
        if lockstep is not None and lockstep.divergence is not None:
            break
        progress.update(result.operations)
    progress.close()
    if lockstep is not None:
        result.divergence = lockstep.finish()
    result.state = engine.observe()
    if checker is not None:
        checker.finish(result.state)
        result.verdicts = checker.verdicts()
    return result


def convergence(state: dict[str, Any]) -> tuple[bool, list[str]]:
    """Do all sites hold identical entries (values and tags)? If not, each differing key
    and what every site holds for it (at most `MAX_LISTED_KEYS` keys)."""
    sites = sorted(state["sites"].items(), key=lambda item: int(item[0]))
    keys = sorted({key for _, site in sites for key in site["entries"]})
    differing = [
        key for key in keys if len({canonical_json(s["entries"].get(key)) for _, s in sites}) > 1
    ]
    lines = []
    for key in differing[:MAX_LISTED_KEYS]:
        held = []
        for site_id, site in sites:
            entry = site["entries"].get(key)
            what = (
                "absent"
                if entry is None
                else f"{canonical_json(entry['value'])} {canonical_json(entry['version'])}"
            )
            held.append(f"site {site_id} {what}")
        lines.append(f"{key}: {', '.join(held)}")
    if len(differing) > MAX_LISTED_KEYS:
        lines.append(f"... and {plural(len(differing) - MAX_LISTED_KEYS, 'more key')}")
    return not differing, lines


def summary(result: Replayed) -> str:
    """The text a person reads after a replay."""
    source, state = result.source, result.state
    lines = [
        f"{source.name}: {plural(result.operations, 'operation')} "
        f"({result.skipped:,} skipped), time {state['time']} ms"
    ]
    for site_id, site in sorted(state["sites"].items(), key=lambda item: int(item[0])):
        stats = " ".join(f"{k}={v}" for k, v in site["stats"].items())
        lines.append(
            f"  site {site_id}: {'up' if site['up'] else 'DOWN'}, seq {site['seq']}, "
            f"{plural(len(site['entries']), 'entry', 'entries')}; {stats}"
        )
    for sender_id, sender in sorted(state["senders"].items()):
        config = source.config.sender(sender_id)
        flight = sender["in_flight"]
        in_flight = (
            "none"
            if flight is None
            else f"batch {flight['batch_id']} ({plural(len(flight['events']), 'event')}, "
            f"sent at {flight['sent_at']})"
        )
        nonzero = " ".join(f"{k}={v}" for k, v in sender["stats"].items() if v)
        lines.append(
            f"  sender {sender_id} ({config.site}->{config.remote}): "
            f"queue {len(sender['queue'])}, in flight {in_flight}, "
            f"{plural(len(sender['dlq']), 'dead letter')}; {nonzero or 'no traffic'}"
        )
    if result.divergence is not None:
        lines.append(f"P1: FAILED: model and impl diverge at {result.divergence.describe()}")
    for verdict in result.verdicts or []:
        lines.append(f"  {verdict}")
        lines.extend(f"    {violation}" for violation in verdict.violations)
    converged, differing = convergence(state)
    if converged:
        lines.append("  all sites hold identical entries")
    else:
        lines.append("  sites differ:")
        lines.extend(f"    {line}" for line in differing)
    return "\n".join(lines)


def as_json(result: Replayed, with_steps: bool) -> dict[str, Any]:
    """The one JSON line of a trace (`--json`)."""
    converged, _ = convergence(result.state)
    out: dict[str, Any] = {
        "trace": result.source.name,
        "operations": result.operations,
        "skipped": result.skipped,
        "state": result.state,
        "converged": converged,
        "divergence": None if result.divergence is None else result.divergence.to_json(),
    }
    if result.verdicts is not None:
        out["properties"] = {
            v.property: {
                "status": v.status,
                "reason": v.reason,
                "violations": [{"where": x.where, "message": x.message} for x in v.violations],
            }
            for v in result.verdicts
        }
    if with_steps:
        out["steps"] = result.steps
    return out


def run(args: argparse.Namespace) -> int:
    impl_factory = load_impl(args.impl) if args.impl else None
    if impl_factory is not None and args.engine == "model":
        raise WanconformError("--impl: needs --engine impl or --engine both")
    sources = []
    for path in args.traces:  # validate every trace before any output
        progress = Progress(f"validating {path}")
        sources.append(open_trace(path, progress.update))
        progress.close()
    status = 0
    for source in sources:
        narrator = Narrator(source.config)
        steps: list[dict[str, Any]] = []

        def on_step(
            here: str,
            op: Op,
            observations: list[Observation],
            state: Callable[[], dict[str, Any]],
            narrator: Narrator = narrator,
            steps: list[dict[str, Any]] = steps,
        ) -> None:
            text = narrator.line(here, op, observations, state)
            if args.json:
                steps.append({"where": here, "op": op_to_json(op), "text": text})
            else:
                print(text)

        steps_to = on_step if args.steps else None
        result = replay(source, args.engine, args.check_properties, steps_to, impl_factory)
        result.steps = steps
        if args.json:
            print(canonical_json(as_json(result, args.steps)))
        else:
            print(summary(result))
        if result.failed:
            status = 1
    if args.report:  # the report checks the traces again, as `wanconform report` does
        impl_spec = args.impl or DEFAULT_IMPL
        write_report(records_from_traces(args.traces, impl_spec), args.report, impl_spec)
        print(f"report: {args.report}", file=sys.stderr if args.json else sys.stdout)
    return status
