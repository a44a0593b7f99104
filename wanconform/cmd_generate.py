"""`wanconform generate`: a Parquet trace set of generated traces, on Spark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.generation.profiles import PROFILES, check_profile
from traces.config import Config
from traces.errors import WanconformError
from traces.outputs import declare_outputs
from traces.text import plural, printable
from wanconform.cmd_import import add_site_options, load_geode_sites

MAX_OPS = 10_000_000


def profile_list(text: str) -> list[str]:
    """`--profile a,b`: the profiles in the order given; an empty one (`chaos,`, `a,,b`)
    is refused as `explore --ops` refuses one, not dropped."""
    names = [name.strip() for name in text.split(",")]
    if "" in names:
        shown = "give at least one profile" if names == [""] else f"an empty name in {text!r}"
        raise WanconformError(f"--profile: {shown} (one of {', '.join(PROFILES)})")
    for name in names:
        check_profile(name)
    return names


def add_generation_arguments(parser: argparse.ArgumentParser, traces: int, ops: int) -> None:
    """The flags `generate` and `campaign` share."""
    profiles = "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values())
    parser.add_argument("--traces", type=int, default=traces, help=f"traces (default {traces})")
    parser.add_argument(
        "--ops", type=int, default=ops, help=f"operations per trace (default {ops})"
    )
    parser.add_argument(
        "--profile",
        default="chaos",
        help=f"profile, or several separated by commas, used in turn (default chaos). {profiles}",
    )
    parser.add_argument("--seed", type=int, default=0, help="the traces' seed (default 0)")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="run on this configuration (SPEC §2 JSON, e.g. written by `wanconform import`, "
        "or a trace file's): its sites, senders and settings are kept as given and the "
        "profile decides only the mix of operations. Or give Geode files with --site",
    )
    add_site_options(parser, required=False)
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master, e.g. spark://host:7077 (default: local Spark on every core)",
    )


@dataclass(frozen=True, slots=True)
class Generation:
    """What `generate` and `campaign` generate: the profiles and the configuration (None:
    each profile draws its own), with the sender names the user wrote in Geode files."""

    profiles: list[str]
    config: Config | None
    names: Mapping[str, str]
    source: str  # where the configuration came from, for the summary

    def describe(self) -> str:
        on = f" on the configuration of {self.source}" if self.config else ""
        return f"profiles {','.join(self.profiles)}{on}"


def check_generation_arguments(args: argparse.Namespace) -> Generation:
    """Check the flags before any work starts; read the configuration (Geode files print
    their warnings here, once)."""
    if args.config and args.site:
        raise WanconformError("--config and --site: give the configuration one way, not both")
    if (args.define or args.allow_partial) and not args.site:
        raise WanconformError("--define and --allow-partial go with --site (Geode files)")
    if args.traces < 1:
        raise WanconformError(f"--traces: must be at least 1, got {args.traces}")
    if not 1 <= args.ops <= MAX_OPS:
        raise WanconformError(f"--ops: must be from 1 to {MAX_OPS:,}, got {args.ops}")
    if not -(2**63) <= args.seed < 2**63:
        raise WanconformError("--seed: must be a 64-bit integer")
    profiles = profile_list(args.profile)
    if args.config:
        from wanconform.cmd_topology import load_config_or_trace

        generation = Generation(profiles, load_config_or_trace(args.config), {}, args.config)
    elif args.site:
        config, names = load_geode_sites(args.site, args.define, args.allow_partial)
        files = " ".join(f"--site {text}" for text in args.site)
        generation = Generation(profiles, config, names, files)
    else:
        return Generation(profiles, None, {}, "")
    for warning in idle_profiles(generation):
        print(f"wanconform: warning: {printable(warning)}", file=sys.stderr)
    return generation


def idle_profiles(generation: Generation) -> list[str]:
    """Profiles that the given configuration leaves with nothing to show: what they are
    for needs a setting no sender has (each profile draws its own configuration only
    when none is given)."""
    config = generation.config
    assert config is not None
    senders = config.senders
    needs = {
        "dlq": (
            any(s.failure_listener == "dlq" for s in senders),
            "no sender has a dead-letter failure listener (failure_listener dlq, R24), so "
            "its injected failures are dropped (R18) and no dead letter is written",
        ),
        "parallel": (
            any(s.parallel or s.dispatcher_threads > 1 for s in senders),
            "no sender is parallel or has more than one dispatcher (R27-R31), so it runs "
            "as the serial senders do",
        ),
    }
    return [
        f"profile {profile} on the configuration of {generation.source}: {why}"
        for profile, (has, why) in needs.items()
        if profile in generation.profiles and not has
    ]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate a Parquet trace set on Spark (deterministic)",
        description=(
            "Generate TRACES traces of OPS operations each into a Parquet trace set (SPEC "
            "§12, see `wanconform convert`). Each trace is a pure function of (seed, trace "
            "id, profile, ops, and the configuration when --config or --site gives one): "
            "the same set, byte for byte, whatever Spark's partitions. Exit 2 on bad input "
            "(nothing written)."
        ),
    )
    add_generation_arguments(parser, traces=100, ops=1000)
    parser.add_argument("--out", required=True, help="output directory (the trace set)")
    declare_outputs(parser, directories=["out"], inputs=["config"], sites=["site"], arrow=["out"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    generation = check_generation_arguments(args)
    from conformance.spark import glue
    from wanconform.progress import stage_progress, start_spark

    spark = start_spark(args.master)
    bar = stage_progress("generate")
    glue.generate(
        spark,
        args.out,
        args.traces,
        args.ops,
        generation.profiles,
        args.seed,
        on_progress=bar.stage,
        config=generation.config,
    )
    bar.close(f"generate  done in {bar.elapsed():.1f} s")
    print(
        f"{printable(args.out)}: {plural(args.traces, 'trace')} of {plural(args.ops, 'operation')} "
        f"({generation.describe()})"
    )
    return 0
