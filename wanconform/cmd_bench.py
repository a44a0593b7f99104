"""`wanconform bench`: events per second of the model and the impl on the steady workload.

The workload (traces.generate.steady_workload) is generated before timing; each engine
is timed alone in this process over the same operations, excluding trace parsing, and
the best of `--repeat` runs is reported. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from typing import Any

import impl
from traces.generate import steady_workload
from traces.ops import Op
from wanconform.engine import make_engine
from wanconform.errors import WanconformError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="measure model and impl events per second on a steady workload",
        description=(
            "Time the model and the impl on a deterministic steady workload: 2 sites, one "
            "sender with batch_size 100 and delta on, 10-field values, mostly delta updates, "
            "with the deliver/ack traffic. Progress goes to stderr."
        ),
    )
    parser.add_argument("--ops", type=int, default=100_000, help="operations (default 100000)")
    parser.add_argument("--keys", type=int, default=10_000, help="distinct keys (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine, best kept")
    parser.add_argument(
        "--json",
        action="store_true",
        help=(
            "print one JSON line: ops, events, model_events_per_s, impl_events_per_s, "
            "speedup, impl_compiled"
        ),
    )
    parser.set_defaults(func=run)


def time_engine(name: str, config: Any, ops: list[Op]) -> float:
    """Seconds one engine takes to apply every operation (garbage collected first)."""
    engine = make_engine(name, config)
    gc.collect()
    start = time.perf_counter()
    for op in ops:
        engine.apply(op)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> int:
    for flag in ("ops", "keys", "repeat"):
        if getattr(args, flag) < 1:
            raise WanconformError(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    config, ops = steady_workload(args.ops, keys=args.keys, seed=args.seed)
    events = sum(1 for op in ops if op.op in ("put", "delta", "destroy"))
    seconds: dict[str, float] = {}
    for name in ("model", "impl"):
        runs = []
        for attempt in range(1, args.repeat + 1):
            print(
                f"bench: {name} run {attempt}/{args.repeat} on {len(ops)} ops ...",
                file=sys.stderr,
                flush=True,
            )
            runs.append(time_engine(name, config, ops))
        seconds[name] = min(runs)
    result = {
        "ops": len(ops),
        "events": events,
        "model_events_per_s": round(events / seconds["model"]),
        "impl_events_per_s": round(events / seconds["impl"]),
        "speedup": round(seconds["model"] / seconds["impl"], 1),
        "impl_compiled": impl.COMPILED,  # mypyc-compiled (impl/build_compiled.py) or Python
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"workload: {result['ops']} ops, {events} client events, {args.keys} keys")
        print(f"model: {result['model_events_per_s']:>10,} events/s ({seconds['model']:.3f} s)")
        print(f"impl:  {result['impl_events_per_s']:>10,} events/s ({seconds['impl']:.3f} s)")
        print(f"impl compiled with mypyc: {'yes' if impl.COMPILED else 'no (pure Python)'}")
        print(
            f"speedup: {result['speedup']}x  (python {platform.python_version()}, "
            f"{platform.machine()})"
        )
    return 0
