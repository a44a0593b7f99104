"""`wanconform replay`: run trace files through an engine and say what happened.

Every trace is validated (a streaming pass) before any output; then each is replayed,
streaming again, so memory follows the engines' state, not the trace's length. Text
output: a summary per trace (with `--steps`, one line per operation first); `--json`:
exactly one canonical JSON line per trace, whatever happens. Exit 1 if any trace
diverged (`--engine both`) or violated a property (`--check-properties`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from conformance.properties.checker import Verdict
from conformance.running import geode_stats
from conformance.running.coverage import capped_settles
from conformance.running.run import RunResult, Step, TraceRun, stopped_line
from conformance.running.stores import (
    StoreEngines,
    refuse_earlier_store,
    store_engine_class,
    store_root,
)
from impl.dlq_store import check_directory
from traces.canonical import canonical_json
from traces.config import Config, SenderConfig
from traces.config import show as show_value
from traces.engine import DEFAULT_IMPL, EngineFactory, load_impl
from traces.errors import WanconformError
from traces.logfile import LogSource
from traces.ops import Op, op_to_json
from traces.outputs import declare_outputs, say_written
from traces.text import cut, plural, printable, visible
from traces.tracefile import open_trace, where
from wanconform.options import add_settle_cap, positive_int
from wanconform.progress import Progress

if TYPE_CHECKING:
    from conformance.search.examples import Example

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
        "--dlq-dir",
        metavar="DIR",
        help="keep the impl's dead letters in a durable store (docs/DLQ_STORE.md) under "
        "DIR/TRACE_NAME/ (with --engine impl or both; DIR is made if missing, TRACE_NAME/ "
        "must not hold a store yet): the lockstep compares the records read back from it; "
        "inspect it with `wanconform dlq DIR`",
    )
    parser.add_argument(
        "--queue-dir",
        metavar="DIR",
        help="keep the queues of the impl's persistent senders (enable_persistence) in a "
        "durable store (docs/QUEUE_STORE.md) under DIR/TRACE_NAME/ (with --engine impl or "
        "both; DIR is made if missing, TRACE_NAME/ must not hold a store yet): restart_sender "
        "reads "
        "each queue back from it, and the lockstep compares what it read with the model's",
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
            "state, converged, p1 (its verdict), divergence, stopped (where the impl "
            'stopped, or ""), and with the options properties and steps'
        ),
    )
    parser.add_argument(
        "--check-properties",
        action="store_true",
        help=(
            "check P2-P12 on the run and report each as held, FAILED (with the violations) "
            "or not applicable and why (e.g. P4 on an unsupported topology, R23)"
        ),
    )
    parser.add_argument(
        "--from",
        dest="start",
        metavar="CHECKPOINT",
        help=(
            "start from a checkpoint (docs/CHECKPOINT.md) instead of the initial state: "
            "the trace's first operations, as many as its position says, are skipped"
        ),
    )
    parser.add_argument(
        "--checkpoint",
        metavar="OUT",
        help="write the engine's full state after the run as a checkpoint (one trace)",
    )
    parser.add_argument(
        "--one-process",
        action="store_true",
        help=(
            "with --engine both, model and impl both in this process, on one core (by "
            "default, on a trace of 20,000 operations or more and with a second CPU, the "
            "impl runs ahead in a helper process and only the text of its observations and "
            "digests of its states are compared here; any difference is checked again here: "
            "the same result, sooner)"
        ),
    )
    add_settle_cap(parser)
    add_segment_arguments(
        parser,
        "trace",
        unless="only with --engine both; run whole with --steps, --report, --checkpoint, "
        "--from, --dlq-dir or --queue-dir",
    )
    declare_outputs(
        parser,
        files=["report", "checkpoint"],
        inputs=["traces", "start"],
        stores=["dlq_dir", "queue_dir"],
    )
    parser.set_defaults(func=run)


def add_segment_arguments(
    parser: argparse.ArgumentParser,
    what: str,
    unless: str,
    master: str | None = "only with --engine both",
) -> None:
    """`--segment-ops` and, unless `master` is None, `--master` (the note on where it
    goes): a long run in parallel segments on Spark."""
    from conformance.spark.segments import SEGMENT_OPS

    checkpoints = "the model's" if what == "log" else "the impl's"
    parser.add_argument(
        "--segment-ops",
        type=positive_int,
        default=None,  # given or not: `refuse_segments`; the size: `segment_size`
        metavar="N",
        help=(
            f"a {what} of at least 2N operations compared in lockstep is checked in "
            f"segments of N operations in parallel on Spark, from {checkpoints} "
            "checkpoints (docs/CHECKPOINT.md), with the result of a sequential run "
            f"(default {SEGMENT_OPS:,}; {unless})"
        ),
    )
    if master is not None:
        parser.add_argument(
            "--master",
            default=None,
            help=f"Spark master for the segments (default: local; {master})",
        )


def segment_size(args: argparse.Namespace) -> int:
    """`--segment-ops N`, or its default."""
    from conformance.spark.segments import SEGMENT_OPS

    return SEGMENT_OPS if args.segment_ops is None else int(args.segment_ops)


WHOLE_RUNS = {
    "steps": "--steps",
    "report": "--report",
    "checkpoint": "--checkpoint",
    "start": "--from",
    "dlq_dir": "--dlq-dir",
    "queue_dir": "--queue-dir",
}
"""The options (dest: flag) with which every trace or log is run whole, not in segments."""


def refuse_segments(args: argparse.Namespace, why: str) -> None:
    """`--segment-ops` or `--master` given where no run can be cut into segments is
    refused (`why`), not ignored. (With an option of `WHOLE_RUNS` each run is whole, as
    the help says.)"""
    for flag in ("--segment-ops", "--master"):
        if getattr(args, flag[2:].replace("-", "_"), None) is not None:
            raise WanconformError(f"{flag}: {why}")


def segmented(
    args: argparse.Namespace, source: Source, impl_spec: str | None, properties: bool
) -> RunResult | None:
    """The run of a long trace or log in segments (`conformance.spark.segments`), or None when
    it is run whole: too short, --steps or --report, --checkpoint (the state after the
    whole run) or a store (--dlq-dir, --queue-dir: the segments' engines keep none), or
    an impl that cannot start from a checkpoint."""
    from conformance.spark.segments import EngineFailed, can_split, check_in_segments

    count = source.op_count
    if (
        any(getattr(args, dest, None) for dest in WHOLE_RUNS)
        or count is None
        or count < 2 * segment_size(args)
        or (impl_spec != "log" and not can_split(impl_spec))
    ):
        return None

    def say(line: str) -> None:
        progress.close()
        print(printable(f"{source.name}: {line}"), file=sys.stderr)

    from conformance.spark import glue
    from wanconform.progress import start_spark

    segments = -(-count // segment_size(args))  # the fast pass cuts every N
    spark = start_spark(args.master)
    progress = Progress(f"segments of {source.name}", count)

    def show(operations: int, finished: int) -> None:
        progress.unit = f"operations in the fast pass, {finished}/{segments} segments checked"
        progress.update(operations)

    try:
        with glue.segment_jobs(spark, impl_spec) as runner:
            result = check_in_segments(
                source.name,
                source.config,
                impl_spec,
                segment_size(args),
                properties,
                runner,
                show,
                say,
            )
    except EngineFailed as failed:  # the user's engine failed: the whole run reports it (P1)
        say(f"fast pass: {failed}; running it whole")
        return None
    progress.close()
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
                else f"{cut(canonical_json(entry['value']))} {canonical_json(entry['version'])}"
            )
            held.append(f"site {site_id} {what}")
        lines.append(f"{key}: {', '.join(held)}")
    if len(differing) > MAX_LISTED_KEYS:
        lines.append(f"... and {plural(len(differing) - MAX_LISTED_KEYS, 'more key')}")
    return not differing, lines


def sender_line(config: SenderConfig, sender: dict[str, Any]) -> str:
    """One sender's observed state in a line: its kind (R27, R29), queue and batches in
    flight (per dispatcher when it has several), dead letters and counters."""
    lanes = sender["dispatchers"]
    kind = ""
    if config.parallel or len(lanes) > 1:
        kind = ", parallel" if config.parallel else ", serial"
        kind += f", {plural(len(lanes), 'dispatcher')}"
        if not config.parallel:
            kind += f" by {config.order_policy}"
    if not sender.get("running", True):
        kind += ", STOPPED"
    elif sender.get("paused", False):
        kind += ", PAUSED"
    flights = [(index, lane["in_flight"]) for index, lane in enumerate(lanes) if lane["in_flight"]]
    in_flight = (
        "none"
        if not flights
        else "; ".join(
            ("" if len(lanes) == 1 else f"d{index} ")
            + f"batch {flight['batch_id']} ({plural(len(flight['events']), 'event')}, "
            f"sent at {flight['sent_at']})"
            for index, flight in flights
        )
    )
    queued = sum(len(lane["queue"]) for lane in lanes)
    nonzero = " ".join(f"{k}={v}" for k, v in sender["stats"].items() if v)
    return (
        f"sender {printable(config.id)} ({config.site}->{config.remote}{kind}): "
        f"queue {queued}, in flight {in_flight}, "
        f"{plural(len(sender['dlq']), 'dead letter')}; {nonzero or 'no traffic'}"
    )


def summary(result: RunResult, other: str = "impl") -> str:
    """The text a person reads after a replay (`other`: what the model ran against)."""
    state = result.state
    ran = f"({result.skipped:,} skipped)"
    if result.ticks is not None:  # an event log: its lines, and the ticks to their times
        ran = (
            f"({plural(result.operations - result.ticks, 'logged step')} and "
            f"{plural(result.ticks, 'tick')} to their times; {result.skipped:,} skipped)"
        )
    elif result.offset:  # --from: the checkpoint holds the first ones
        ran = (
            f"(the first {result.offset:,} from the checkpoint; "
            f"{plural(result.operations - result.offset, 'operation')} replayed, "
            f"{result.skipped:,} of them skipped)"
        )
    lines = [
        f"{printable(result.name)}: {plural(result.operations, 'operation')} {ran}, "
        f"time {state['time']} ms"
    ]
    for site_id, site in sorted(state["sites"].items(), key=lambda item: int(item[0])):
        stats = " ".join(f"{k}={v}" for k, v in site["stats"].items())
        lines.append(
            f"  site {site_id}: {'up' if site['up'] else 'DOWN'}, seq {site['seq']}, "
            f"{plural(len(site['entries']), 'entry', 'entries')}; {stats}"
        )
    for sender_id, sender in sorted(state["senders"].items()):
        lines.append(f"  {sender_line(result.config.sender(sender_id), sender)}")
    if result.divergence is not None:
        described = visible(result.divergence.describe(other.removeprefix("the ")))
        described = described.replace("\n", "\n  ")
        named = (
            f"{other} ({result.impl})" if other == "impl" and result.impl != DEFAULT_IMPL else other
        )
        lines.append(f"  P1: FAILED: model and {named} diverge at {described}")
    else:
        lines.append(f"  {result.verdicts[0]}")
    stopped = stopped_line(result, subject(other))
    if stopped:
        lines.append(f"  {stopped}")
    for verdict in result.verdicts[1:]:
        lines.append(f"  {verdict}")
        lines.extend(f"    {printable(str(violation))}" for violation in verdict.violations)
    capped = capped_settles(result.coverage)
    if capped:
        lines.append(f"  {capped}")
    counted = (  # counted from the observations: those of the operations run here
        f", over the {plural(result.operations - result.offset, 'operation')} replayed "
        "(not the checkpoint's)"
        if result.offset
        else ""
    )
    lines.append(f"  in Geode's statistics (docs/GEODE_STATS.md){counted}:")
    lines.extend(f"    {line}" for line in geode_stats.lines(result.coverage))
    converged, differing = convergence(state)
    if converged:
        lines.append("  all sites hold identical entries")
    else:
        lines.append("  sites differ:")
        lines.extend(f"    {printable(line)}" for line in differing)  # keys as written
    return "\n".join(lines)


def subject(other: str) -> str:
    """The subject of a sentence: "the impl", or "the log" as it is."""
    return "the impl" if other == "impl" else other


def as_json(
    result: RunResult, steps: list[dict[str, Any]] | None, other: str = "impl"
) -> dict[str, Any]:
    """The one JSON line of a trace (`--json`)."""
    converged, _ = convergence(result.state)

    def verdict_json(verdict: Verdict) -> dict[str, Any]:
        return {
            "status": verdict.status,
            "reason": verdict.reason,
            "violations": [{"where": x.where, "message": x.message} for x in verdict.violations],
        }

    out: dict[str, Any] = {
        "trace": result.name,
        "operations": result.operations,
        "skipped": result.skipped,
        **({"ticks": result.ticks} if result.ticks is not None else {}),
        "state": result.state,
        "converged": converged,
        "divergence": None if result.divergence is None else result.divergence.to_json(),
        "p1": verdict_json(result.verdicts[0]),
        "stopped": stopped_line(result, subject(other)),
    }
    if len(result.verdicts) > 1:
        out["properties"] = {v.property: verdict_json(v) for v in result.verdicts[1:]}
    if steps is not None:
        out["steps"] = steps
    return out


class Watch(Protocol):
    """What sees every step of a run and gives a verdict at its end (`replay_sources`)."""

    def step(self, engine: Any, where: str, op: Op) -> None: ...
    def verdict(self) -> Verdict: ...


class Source(Protocol):
    """A validated trace or log (`TraceSource`, `LogSource`)."""

    @property
    def name(self) -> str: ...
    @property
    def config(self) -> Config: ...
    @property
    def op_count(self) -> int | None:
        """None: known only once the run has read it all (an event log, read once)."""
        ...

    def ops(self) -> Iterator[tuple[int | str, Op]]:
        """(file line, or where for a merged event log, operation)"""
        ...


def run(args: argparse.Namespace) -> int:
    search = sorted({os.path.dirname(os.path.abspath(path)) for path in args.traces})
    impl_factory = load_impl(args.impl, search) if args.impl else None
    impl_spec = args.impl or DEFAULT_IMPL
    if impl_factory is not None and args.engine == "model":
        raise WanconformError("--impl: needs --engine impl or --engine both")
    if args.one_process and args.engine != "both":
        raise WanconformError("--one-process: needs --engine both (one engine runs alone)")
    if args.engine != "both":
        refuse_segments(args, "needs --engine both (segments are lockstep)")
    if args.start and (args.dlq_dir or args.queue_dir):  # from_checkpoint opens no store
        flag = "--dlq-dir" if args.dlq_dir else "--queue-dir"
        raise WanconformError(
            f"{flag}: an engine started from a checkpoint (--from) keeps its dead letters and "
            f"queues in memory, not in a store; drop {flag} or --from"
        )
    stores = durable_stores(
        args.dlq_dir, args.queue_dir, args.traces, args.engine, args.impl, search
    )
    if args.checkpoint and len(args.traces) > 1:
        raise WanconformError("--checkpoint: give one trace")
    alone = args.engine == "impl" and impl_spec != DEFAULT_IMPL  # a user's engine writes it
    if args.checkpoint and alone and not callable(getattr(impl_factory, "checkpoint", None)):
        raise WanconformError(f"--checkpoint: {args.impl} cannot write a checkpoint")
    if args.start and (args.check_properties or args.report):
        raise WanconformError(
            "--from: P2-P12 are checked on a run from its start; drop --check-properties/--report"
        )
    if args.start:
        from traces.checkpoint import read_checkpoint

        args.start_doc = read_checkpoint(args.start)
    sources = []
    for path in args.traces:  # validate every trace before any output
        progress = Progress(f"validating {path}")
        sources.append(open_trace(path, progress.update))
        progress.close()
        if args.start:  # the checkpoint fits every trace before any is run
            from_checkpoint(args, sources[-1], args.engine)
    if stores:
        open_store_roots(args.dlq_dir, args.queue_dir, args.traces)
        return replay_sources(args, sources, args.engine, lambda s: stores[s.name], impl_spec)
    return replay_sources(args, sources, args.engine, lambda source: impl_factory, impl_spec)


def durable_stores(
    dlq_dir: str | None,
    queue_dir: str | None,
    traces: list[str],
    engine: str,
    spec: str | None,
    search: list[str],
) -> dict[str, StoreEngines]:
    """Per trace, the engines of `--dlq-dir` and `--queue-dir` (checked before any work,
    nothing made yet: `open_store_roots` once the traces are valid); {} without them."""
    chosen = {
        flag: value for flag, value in (("--dlq-dir", dlq_dir), ("--queue-dir", queue_dir)) if value
    }
    if not chosen:
        return {}
    if engine == "model":
        raise WanconformError(
            f"{next(iter(chosen))}: the model keeps no store; use --engine impl or both"
        )
    named: dict[str, str] = {}
    for path in traces:  # each trace's store is DIR/TRACE/: two traces cannot share one
        stem = Path(path).stem
        if stem in named:
            option, root = next(iter(chosen.items()))
            first = named[stem]
            which = f"{path} is given twice" if first == path else f"{first} and {path}"
            raise WanconformError(
                f"{option}: {which}: their runs would share the store {Path(str(root)) / stem} "
                "(a trace's store is DIR/TRACE/); give each trace once, under its own name"
            )
        named[stem] = path
    folders: dict[str, list[Path | None]] = {path: [] for path in traces}
    engine_class = None
    for flag, directory in (("--dlq-dir", dlq_dir), ("--queue-dir", queue_dir)):
        if directory is None:
            for path in traces:
                folders[path].append(None)
            continue
        if engine == "model":
            raise WanconformError(f"{flag}: the model keeps no store; use --engine impl or both")
        engine_class = store_engine_class(spec, search, flag[2:].replace("-", "_"))
        for path in traces:
            folders[path].append(refuse_earlier_store(flag, directory, Path(path).stem))
    return {
        path: StoreEngines(engine_class, dlq, queues=queues)
        for path, (dlq, queues) in folders.items()
    }


def open_store_roots(dlq_dir: str | None, queue_dir: str | None, traces: list[str]) -> None:
    """Make `--dlq-dir` and `--queue-dir` if missing (after the traces are validated: bad
    input leaves no directory behind) and say where each trace's store is."""
    for flag, directory in (("--dlq-dir", dlq_dir), ("--queue-dir", queue_dir)):
        if directory is None:
            continue
        check_directory(store_root(flag, directory))
        what = "dead letters" if flag == "--dlq-dir" else "persistent queues"
        for path in traces:
            stem = Path(path).stem
            print(
                printable(f"{Path(path).name}: {what} in {Path(directory) / stem}"), file=sys.stderr
            )


def from_checkpoint(args: argparse.Namespace, source: Source, engine: str) -> dict[str, Any]:
    """`--from`: TraceRun's engines built from the checkpoint, and its offset."""
    import model
    from conformance.spark.segments import impl_class
    from traces.checkpoint import CheckpointError, check_fits

    doc, name = args.start_doc, args.start
    check_fits(source.config, doc, name)
    operations = doc.get("position", {}).get("operations", 0)  # an int >= 0: the schema's
    if source.op_count is None or operations > source.op_count:
        raise CheckpointError(
            f"{name}: position.operations: {show_value(operations)} is not an operation count of "
            f"{source.name} (0..{source.op_count})"
        )
    built = impl_class(args.impl)
    if engine != "model" and not callable(getattr(built, "from_checkpoint", None)):
        raise WanconformError(f"--from: {args.impl} cannot start from a checkpoint")
    return {
        "model": lambda cfg: model.Engine.from_checkpoint(cfg, doc, name),
        "impl": lambda cfg: built.from_checkpoint(cfg, doc, name),
        "offset": operations,
    }


def runs_ahead(
    args: argparse.Namespace, source: Source, engine: str, impl: Any, offset: int
) -> bool:
    """May the impl run ahead in a helper process (`conformance.running.ahead`)? With --engine
    both on a trace (not a log) of at least `AHEAD_OPERATIONS` operations, unless
    --one-process, or the impl keeps a durable store (two would write it)."""
    from conformance.running.ahead import AHEAD_OPERATIONS

    return (
        engine == "both"
        and not getattr(args, "one_process", True)
        and not isinstance(source, LogSource)
        and not isinstance(impl, StoreEngines)
        and (source.op_count or 0) - offset >= AHEAD_OPERATIONS
    )


def show(
    args: argparse.Namespace, result: RunResult, steps: list[dict[str, Any]] | None, other: str
) -> int:
    """Print one run's summary (or JSON line); its exit status."""
    if args.json:
        print(canonical_json(as_json(result, steps, other)))
    else:
        print(summary(result, other))
    return 1 if result.failed else 0


def replay_sources(
    args: argparse.Namespace,
    sources: Sequence[Source],
    engine: str,
    impl_of: Callable[[Any], EngineFactory | None],
    impl_spec: str,
    other: str = "impl",
    no_example: str = "",
    model_of: Callable[[Any], EngineFactory | None] = lambda source: None,
    watch: Callable[[], Watch] | None = None,
) -> int:
    """Run validated traces (or logs: `impl_of` makes the engine that plays the system
    from one) and print what happened; with `--report` the report. `no_example`: why
    there are no shrunk examples (a log cannot be re-run), or "" to make them.
    `model_of`: the model's engine for a source (default the model); `watch`: makes, per
    source, what sees every step and adds its verdict to the result (an event log's
    lateness)."""
    status = 0
    rows: list[dict[str, Any]] = []
    kept: dict[str, tuple[Config, list[Op], list[int], str]] = {}
    watched: dict[str, str] = {}  # the watch's verdict -> the violations it lists, in words
    verdicts: list[str] = []  # the watch's verdict of each run, in words (the summary's)
    for source in sources:
        steps: list[dict[str, Any]] | None = [] if args.steps and args.json else None

        def on_step(step: Step, steps: list[dict[str, Any]] | None = steps) -> None:
            if steps is not None:
                steps.append({"where": step.where, "op": op_to_json(step.op), "text": step.text})
            else:
                print(step.text)

        properties = args.check_properties or bool(args.report)
        split = "log" if isinstance(source, LogSource) else getattr(args, "impl", None)
        start = getattr(args, "start_doc", None)
        result = (  # a watch sees every step here: such a run is not cut into segments
            segmented(args, source, split, properties)
            if engine == "both" and start is None and watch is None
            else None
        )
        if result is not None:
            status = max(status, show(args, result, steps, other))
            continue
        # With --report the operations are kept (the examples shrink them), and the
        # lockstep re-reads them from memory: the file is read twice, validation and run.
        ops: list[tuple[int | str, Op]] | None = [] if args.report and not no_example else None
        engines: dict[str, Any] = {"impl": impl_of(source)}
        if (model_engine := model_of(source)) is not None:
            engines["model"] = model_engine
        watcher = watch() if watch is not None else None
        if start is not None:  # --from: both engines built from the checkpoint
            engines |= from_checkpoint(args, source, engine)
        offset = engines.get("offset", 0)

        def read_again(source: Source = source, offset: int = offset) -> Iterator[Op]:
            """The run's operations again, from the file (from --from's position)."""
            return (op for _, op in itertools.islice(source.ops(), offset, None))

        replay = (lambda ops=ops: (op for _, op in ops)) if ops is not None else read_again
        if runs_ahead(args, source, engine, engines["impl"], offset):
            engines["ahead"] = read_again
        trace_run = TraceRun(
            source.name,
            source.config,
            engine=engine,
            impl_spec=impl_spec,
            properties=properties,
            explain=args.steps,
            on_step=on_step if args.steps else None,
            replay=replay,
            **engines,
        )
        progress = Progress(f"replaying {source.name}", source.op_count)
        last: int | str = 1
        skip = trace_run.operations
        for last, op in source.ops():
            if skip:
                skip -= 1
                continue
            if ops is not None:
                ops.append((last, op))
            here = last if isinstance(last, str) else where(source.name, last)
            trace_run.step(here, op)
            if watcher is not None and trace_run.divergence is None:
                # once the log diverged, the model's due times are no longer the log's
                watcher.step(trace_run.engine, here, op)
            progress.update(trace_run.operations)
        progress.close()
        result = trace_run.finish(last if isinstance(last, str) else where(source.name, last))
        result.ticks = getattr(source, "ticks", None)
        if watcher is not None:
            verdict = watcher.verdict()
            result.verdicts = (*result.verdicts, verdict)
            verdicts.append(str(verdict))
            if verdict.violations:  # the report names those its summary says it lists
                listed = "; ".join(str(violation) for violation in verdict.violations)
                watched.setdefault(verdict.property, listed)
        if getattr(args, "checkpoint", None):
            from traces.checkpoint import checkpoint_text
            from traces.outputs import write_text_atomically

            doc = trace_run.engine.checkpoint()  # type: ignore[attr-defined]
            doc["position"] = {"operations": trace_run.operations}
            write_text_atomically(args.checkpoint, checkpoint_text(doc) + "\n")
            say_written(args.checkpoint)
        status = max(status, show(args, result, steps, other))
        if args.report:
            from conformance.spark.results import result_row  # pyarrow: only for a report

            profile = Path(source.name).parent.name or "traces"
            rows.append(result_row(result, profile=profile))
            if result.failures() and ops is not None:
                lines = [line for line, _ in ops]
                assert all(isinstance(line, int) for line in lines)  # a trace's (a log keeps none)
                kept[source.name] = (
                    source.config,
                    [op for _, op in ops],
                    cast(list[int], lines),
                    source.name,
                )
    if args.report:
        from conformance.search.examples import explain_groups
        from reports.render import write_report

        examples: list[Example]
        if no_example:
            examples = []
            notes = {signature: no_example for row in rows for signature in row["failures"]}
            notes |= {name: f"first: {first}" for name, first in watched.items()}
        else:
            examples, notes = explain_groups(rows, kept.get, impl_spec)
        write_report(
            rows,
            {e.signature: e for e in examples},
            notes,
            args.report,
            impl_spec,
            lateness=verdicts,
        )
        say_written(args.report)
    return status
