"""`wanconform generate`: a Parquet trace set of generated traces, on Spark."""

from __future__ import annotations

import argparse
from typing import Any

from conformance.profiles import PROFILES, check_profile
from traces.errors import WanconformError

MAX_OPS = 10_000_000


def profile_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise WanconformError("--profile: give at least one profile")
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
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master, e.g. spark://host:7077 (default: local Spark on every core)",
    )


def check_generation_arguments(args: argparse.Namespace) -> list[str]:
    if args.traces < 1:
        raise WanconformError(f"--traces: must be at least 1, got {args.traces}")
    if not 1 <= args.ops <= MAX_OPS:
        raise WanconformError(f"--ops: must be from 1 to {MAX_OPS:,}, got {args.ops}")
    if not -(2**63) <= args.seed < 2**63:
        raise WanconformError("--seed: must be a 64-bit integer")
    return profile_list(args.profile)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate a Parquet trace set on Spark (deterministic)",
        description=(
            "Generate TRACES traces of OPS operations each into a Parquet trace set (SPEC "
            "§12, see `wanconform convert`). Each trace is a pure function of (seed, trace "
            "id, profile, ops): the same set, byte for byte, whatever Spark's partitions."
        ),
    )
    add_generation_arguments(parser, traces=100, ops=1000)
    parser.add_argument("--out", required=True, help="output directory (the trace set)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    profiles = check_generation_arguments(args)
    from conformance import spark as glue
    from wanconform.cmd_check import stage_progress

    spark = glue.session(args.master)
    bar = stage_progress("generate")
    glue.generate(
        spark,
        args.out,
        args.traces,
        args.ops,
        profiles,
        args.seed,
        on_progress=bar.update,
    )
    bar.close(f"generate  done in {bar.elapsed():.1f} s")
    print(f"{args.out}: {args.traces:,} traces of {args.ops:,} operations ({args.profile})")
    return 0
