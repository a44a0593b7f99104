"""`wanconform explore`: every behaviour of a configuration up to a bound, breadth first.

    wanconform explore CONFIG --depth N [--keys K] [--values V] [--ops LIST]
                       [--engine model|both] [--impl MODULE:CLASS] [--symmetry] [--all]
                       [--max-states M] [--out DIR] [--report HTML] [--master URL]

The search is `conformance.search.explore`'s; docs/EXPLORE.md gives its readings. Figures and
the coverage table go to stdout (the same bytes for the same input: no timings); the
rate (states/s) to stderr. Exit status: 0 every behaviour up to the bound is clean,
1 a violation or divergence (the shortest counterexample, explained, and written under
--out as a trace that replay, shrink and report accept), 2 bad input, 3 the
--max-states cap was reached before the bound was covered.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any

from traces.engine import impl_command
from traces.errors import WanconformError
from traces.outputs import declare_outputs, say_written
from traces.text import plural, printable, shell_word, visible

EXIT_CLEAN, EXIT_FOUND, EXIT_CAPPED = 0, 1, 3
COUNTEREXAMPLE = "counterexample"  # DIR/counterexample.jsonl (with --all: -1, -2, ...)


def register(subparsers: Any) -> None:
    from traces.ops import OP_NAMES
    from wanconform.cmd_import import add_site_options

    parser = subparsers.add_parser(
        "explore",
        help="explore every operation sequence of a configuration up to a depth (BFS)",
        description=(
            "Breadth-first search over every operation sequence from the initial state of "
            "CONFIG: client writes over --keys keys and --values values, every network and "
            "fault operation of SPEC §3, and ticks to every due time of R15/R20 and by 1 ms "
            "(docs/EXPLORE.md). States are deduplicated by a digest of the model's full "
            "state. P3, P4, P6-P9 and P11 are checked on every transition, P2, P5 and P12 "
            "after settle from every explored state (P10 compares two runs: not here); with "
            "--engine both the impl is stepped on every edge too (P1). Prints distinct "
            "states, transitions, depth reached and a coverage table (shallowest depth of "
            "every observation kind, receiver status and sender outcome); states/s on "
            "stderr."
        ),
        epilog=(
            "Exit status: 0 every behaviour up to the bound is clean, 1 a violation or "
            "divergence was found (its shortest counterexample is shown, and written under "
            "--out), 2 bad input, 3 the --max-states cap was reached: the bound was not "
            "covered."
        ),
    )
    parser.add_argument(
        "source",
        nargs="?",
        metavar="CONFIG",
        help='a configuration ({"sites": ...} or {"config": {...}}) or a trace file (its '
        "configuration line is used)",
    )
    add_site_options(parser, required=False)
    parser.add_argument(
        "--depth", required=True, metavar="N", help="operations per path (a positive integer)"
    )
    parser.add_argument(
        "--keys", default="1", metavar="K", help="keys written, k1..kK (default 1, at most 9)"
    )
    parser.add_argument(
        "--values",
        default="1",
        metavar="V",
        help='values written, {"v": 1}..{"v": V} (default 1, at most 9)',
    )
    parser.add_argument(
        "--ops",
        metavar="LIST",
        help="the operations tried, comma-separated (default all: " + ", ".join(OP_NAMES) + ")",
    )
    parser.add_argument(
        "--engine",
        choices=("model", "both"),
        default="model",
        help="model (default), or both: the impl is stepped on every edge from the same "
        "state and its observations and observable state compared (P1)",
    )
    parser.add_argument(
        "--impl",
        metavar="MODULE:CLASS",
        help="with --engine both: the engine run as the impl (default impl:Engine), e.g. "
        "tools.planted_bugs:HighWaterMark",
    )
    parser.add_argument(
        "--symmetry",
        action="store_true",
        help="treat keys and values as interchangeable (the configuration names none): "
        "states are canonicalised by a relabelling; reports the reduction factor",
    )
    parser.add_argument(
        "--all",
        dest="collect_all",
        action="store_true",
        help="go on after a violation and collect every one (each with its shortest path "
        "to the violating step); default: stop at the first",
    )
    parser.add_argument(
        "--max-states",
        default="2000000",
        metavar="M",
        help="stop before a level would pass M distinct states (default 2,000,000: about 10 GB): "
        "exit 3, the bound not covered",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="explore on Spark (local[*], spark://host:port): one job per level, the "
        "frontier partitioned by state hash and deduplicated by a shuffle on it; the "
        "same figures and counterexample as without",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write explore.json (the figures and the coverage) and each counterexample "
        "as a trace file with its explanation (counterexample.jsonl, counterexample.txt)",
    )
    parser.add_argument(
        "--report",
        metavar="HTML",
        help="also write the HTML report of `wanconform report`: the exploration's "
        "figures, new states per depth and coverage, and each counterexample checked and "
        "explained as a failing trace",
    )
    declare_outputs(
        parser, files=["report"], directories=["out"], inputs=["source"], sites=["site"]
    )
    parser.set_defaults(func=run)


def positive(flag: str, text: str, most: int | None = None) -> int:
    """A bound given on the command line: a positive integer (at most `most`)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1 or not text.strip().isdigit():
        raise WanconformError(f"--{flag}: must be a positive integer, got {text!r}")
    if most is not None and value > most:
        raise WanconformError(f"--{flag}: at most {most}, got {value}")
    return value


def op_names(text: str | None) -> tuple[str, ...]:
    from traces.ops import OP_NAMES

    if text is None:
        return OP_NAMES
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name not in OP_NAMES:
            raise WanconformError(
                f"--ops: unknown operation {name!r} (one of {', '.join(OP_NAMES)})"
            )
    return tuple(name for name in OP_NAMES if name in names)


def run(args: argparse.Namespace) -> int:
    from conformance.search.explore import MAX_KEYS, MAX_VALUES, Bounds, explore
    from traces.engine import DEFAULT_IMPL, built, load_impl
    from wanconform.cmd_import import load_geode_sites
    from wanconform.cmd_topology import load_config_or_trace
    from wanconform.progress import Progress

    bounds = Bounds(
        depth=positive("depth", args.depth),
        keys=positive("keys", args.keys, MAX_KEYS),
        values=positive("values", args.values, MAX_VALUES),
        ops=op_names(args.ops),
        max_states=positive("max-states", args.max_states),
        symmetry=args.symmetry,
        collect_all=args.collect_all,
    )
    if args.impl is not None and args.engine != "both":
        raise WanconformError("--impl: goes with --engine both")
    if (args.source is None) == (not args.site):
        raise WanconformError(
            "explore: give either CONFIG or one --site [DSID=]FILE[,FILE...] per site, not "
            + ("both" if args.source is not None else "neither")
        )
    if (args.define or args.allow_partial) and not args.site:  # as generate says it
        raise WanconformError("--define and --allow-partial go with --site (Geode files)")
    if args.source:
        config = load_config_or_trace(args.source)
        name = args.source
    else:
        config, _ = load_geode_sites(args.site, args.define, args.allow_partial)
        name = "the --site files"
    impl_spec = args.impl or DEFAULT_IMPL
    impl = None
    if args.engine == "both":
        search = [os.path.dirname(os.path.abspath(args.source))] if args.source else []
        # a user's engine that cannot build is one line (`built`), not a traceback
        impl = functools.partial(built, load_impl(impl_spec, search), impl_spec)
    shown = Progress(f"exploring {name}", unit="states")

    def progress(depth: int, states: int, transitions: int) -> None:
        shown.what = f"exploring {name} depth {depth}"
        shown.update(states)

    if args.master:
        from conformance.spark.explore_spark import explore_on_spark
        from wanconform.progress import start_spark

        spark = start_spark(args.master)
        spec = impl_spec if impl is not None else None
        result = explore_on_spark(spark, config, bounds, spec, progress)
    else:
        result = explore(config, bounds, impl, progress)
    shown.close()
    from conformance.search.explore import summary_lines

    print("\n".join(summary_lines(name, config, bounds, result, impl_spec if impl else None)))
    print(
        f"explore: {plural(result.states, 'state')}, "
        f"{plural(result.transitions, 'transition')} in "
        f"{result.seconds:.1f} s: {result.states_per_s:,.0f} states/s",
        file=sys.stderr,
    )
    labels = [
        f"{COUNTEREXAMPLE}-{number}" if bounds.collect_all else COUNTEREXAMPLE
        for number in range(1, len(result.found) + 1)
    ]
    texts = [
        _counterexample(
            config,
            found.path,
            impl,
            impl_spec,
            f"{label}.jsonl",
            os.path.join(args.out, f"{label}.jsonl") if args.out else None,
        )
        for found, label in zip(result.found, labels, strict=True)
    ]
    for found, label, (trace, words) in zip(result.found, labels, texts, strict=True):
        print()
        print(printable(f"{found.property} at depth {len(found.path)}: {found.message}"))
        print(
            f"shortest counterexample ({len(found.path)} operations)"
            + (f": {printable(os.path.join(args.out, label))}.jsonl" if args.out else ":")
        )
        if not args.out:
            print("  " + visible(trace.rstrip("\n")).replace("\n", "\n  "))
        print("  " + visible(words.rstrip("\n")).replace("\n", "\n  "))
    if args.out:
        _write(args.out, result, bounds, dict(zip(labels, texts, strict=True)), config, name)
    if args.report:
        _report(args.report, name, config, bounds, result, labels, impl, impl_spec)
    if result.found:
        return EXIT_FOUND
    return EXIT_CAPPED if result.capped else EXIT_CLEAN


def _counterexample(
    config: Any,
    path: tuple[Any, ...],
    impl: Any,
    impl_spec: str,
    name: str,
    saved_as: str | None,
) -> tuple[str, str]:
    """The trace text of a counterexample and its explanation: the run in words, as
    `replay --steps` tells it, its first failure as `replay` describes it, and the
    command that reproduces it from where the user stands (the trace `saved_as`, in the
    `--out` directory; without one, printed to be saved as `name`)."""
    from conformance.running.run import TraceRun
    from traces.tracefile import trace_text, where

    run = TraceRun(
        name,
        config,
        engine="both" if impl is not None else "model",
        impl=impl,
        impl_spec=impl_spec,
        explain=True,
    )
    for index, op in enumerate(path):
        run.step(where(name, index + 2), op)  # line 1 holds the configuration
    result = run.finish()
    lines = [step.text for step in result.steps or []]
    if result.failure is not None:
        lines.append(result.failure.describe())
    command = "replay --check-properties" + (
        f" --engine both --impl {shell_word(impl_spec)}" if impl is not None else ""
    )
    if saved_as is None:
        lines.append(f"reproduce: save the trace above as {name}, then")
    start = "wanconform" if impl is None else impl_command(impl_spec)
    lines.append(f"reproduce: {start} {command} --steps {shell_word(saved_as or name)}")
    return trace_text(config, list(path)), "\n".join(lines) + "\n"


def _write(
    out: str,
    result: Any,
    bounds: Any,
    texts: dict[str, tuple[str, str]],
    config: Any,
    name: str,
) -> None:
    from conformance.search.explore import result_json
    from traces.canonical import canonical_json
    from traces.outputs import EXPLORE_MARKER, building_directory

    with building_directory(out) as folder:
        for label, (trace, words) in texts.items():
            (folder / f"{label}.jsonl").write_text(trace, encoding="utf-8")
            (folder / f"{label}.txt").write_text(words, encoding="utf-8")
        document = result_json(name, config, bounds, result)
        (folder / EXPLORE_MARKER).write_text(canonical_json(document) + "\n", encoding="utf-8")


def _report(
    path: str,
    name: str,
    config: Any,
    bounds: Any,
    result: Any,
    labels: list[str],
    impl: Any,
    impl_spec: str,
) -> None:
    """The HTML report: the exploration's figures, and its counterexamples run as
    `wanconform report` runs traces (in lockstep, P2-P12 checked, shrunk, explained)."""
    from conformance.search.explore import coverage_rows, summary_lines
    from conformance.spark.check import LocalTrace, check_local
    from reports.render import write_report
    from reports.report_data import ExploreView

    traces = [
        LocalTrace(f"{label}.jsonl", config, list(enumerate(found.path, 2)), "explore")
        for label, found in zip(labels, result.found, strict=True)
    ]
    rows, examples, notes = check_local(traces, impl_spec, impl)
    if result.capped:
        covered = f"NOT covered: the cap of {bounds.max_states:,} states"
    elif result.covered_depth < bounds.depth:
        covered = f"stopped at a violation: clean to depth {result.covered_depth}"
    else:
        covered = "covered"
    view = ExploreView(
        summary=summary_lines(name, config, bounds, result, None)[0],
        figures=(
            ("distinct states", f"{result.states:,}"),
            ("transitions", f"{result.transitions:,}"),
            ("operations not enabled", f"{result.skipped:,}"),
            ("depth reached", str(result.depth_reached)),
            (f"bound {bounds.depth}", covered),
            ("violations", str(len(result.found))),
        ),
        levels=tuple(enumerate(result.levels)),
        coverage=tuple(
            (item, count, "never" if depth is None else str(depth))
            for item, count, depth in coverage_rows(result)
        ),
    )
    write_report(rows, examples, notes, path, impl_spec, explore=view)
    say_written(path)
