"""`wanconform live`: a real concurrent system under test that writes event logs.

One OS process per site (asyncio; real timers, TCP on 127.0.0.1), a fault proxy in front
of every sender's remote, a seeded client load, for a bounded time; DIR gets each site's
event log (docs/LOG.md) and `live.json`, then `wanconform validate DIR` checks them
(`conformance.live`, docs/LIVE.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from traces.errors import WanconformError
from traces.outputs import declare_outputs
from traces.text import plural, printable, shell_word
from wanconform.options import non_negative_int, positive_int


def probability(text: str) -> float:
    """An argparse type: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 3600, got {text}")
    return value


PROBABILITIES = {
    "--fail": "each client step is, with probability P, a failure injected at its site "
    "instead (R16.2: 1-3 attempts at a key fail; R24 dead-letters them with "
    "failure_listener dlq, in DIR/dlq-site-N)",
    "--lifecycle": "each client step is, with probability P, an operator's step on one of "
    "its site's senders instead (R36, R37: stop, start, clean start, pause, resume, "
    "restart, as enabled; R26: redeliver its dead letters)",
    "--drop": "the proxies drop each batch or ack with probability P",
    "--duplicate": "the proxies pass each batch twice with probability P (the receiver "
    "answers the copy without applying it, as Geode's does a batch id it has replied to)",
    "--reset": "the proxies close the link instead of passing a frame with probability P "
    "(a connection reset)",
}
"""`live`'s probabilities: the flag and what it does."""


def register(subparsers: Any) -> None:
    from conformance.live.site import BUGS

    parser = subparsers.add_parser(
        "live",
        help="run live sites (processes, TCP, real timers) that write event logs",
        description=(
            "Run one OS process per site of CONFIG (SPEC v2.0: docs/LIVE.md), a fault "
            "proxy in front of every sender's remote and a seeded client load for "
            "--duration seconds; write each site's event log (docs/LOG.md) into DIR, then "
            "check them with `wanconform validate DIR`."
        ),
        epilog="Exit status: 0 the run finished and DIR holds its logs, 2 bad input.",
    )
    parser.add_argument("--config", required=True, help="the configuration (JSON, SPEC §2)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the logs go")
    parser.add_argument(
        "--duration", type=positive_float, default=20.0, help="seconds of client load (default 20)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the load's and the faults' seed (default 0)"
    )
    parser.add_argument(
        "--rate", type=positive_float, default=50.0,
        help="client steps per second per site, on average (exponential intervals paced "
        "against the clock; a ceiling when a site cannot keep up); default 50",
    )  # fmt: skip
    parser.add_argument(
        "--keys", type=positive_int, default=20, help="keys the load writes (default 20)"
    )
    for flag, what in PROBABILITIES.items():
        parser.add_argument(flag, type=probability, default=0.0, metavar="P",
                            help=f"{what}; default 0")  # fmt: skip
    parser.add_argument(
        "--delay", type=non_negative_int, default=0, metavar="MS",
        help="the proxies delay each frame by up to MS (seeded; below a quarter of every "
        "ack_timeout_ms); default 0",
    )  # fmt: skip
    parser.add_argument(
        "--nemesis", default="", metavar="KINDS",
        help="comma-separated kill, wipe, partition: every 0.8-2 s (seeded) a site is "
        "killed with SIGKILL and started again 0.2-0.8 s later, from its log (kill) or "
        "wiped (wipe), or a sender's proxy loses every frame for 0.3-1.2 s (partition); "
        "default none",
    )  # fmt: skip
    parser.add_argument(
        "--bug", choices=BUGS, default=None,
        help="plant a bug in every site (to see validate find it)",
    )  # fmt: skip
    declare_outputs(parser, directories=["out"], inputs=["config"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.live.run import Faults, live
    from wanconform.cmd_topology import load_config_or_trace

    if not -(2**63) <= args.seed < 2**63:  # as generate's (live.json records it)
        raise WanconformError(f"--seed: must be a 64-bit integer, got {args.seed}")
    config = load_config_or_trace(args.config, site_flag=False)
    load = {"rate": args.rate, "keys": args.keys, "fail": args.fail, "lifecycle": args.lifecycle}
    from wanconform.progress import Progress

    shown = Progress("live", unit="s")  # on a terminal: the seconds of the run and its drain
    record = live(
        config, config.to_json(), Path(args.out), args.duration, args.seed, load,
        Faults(args.drop, args.delay, args.duplicate, args.reset),
        args.nemesis.split(",") if args.nemesis else [], args.bug,
        lambda line: print(line, file=sys.stderr, flush=True), shown.update,
    )  # fmt: skip
    shown.close()
    for name, count in record["lines"].items():
        print(f"{printable(os.path.join(args.out, name))}: {plural(count, 'step')}")
    dropped = sum(sum(kinds.values()) for kinds in record["dropped"].values())
    if args.drop or dropped:  # (a partition drops every frame while it lasts)
        print(f"the proxies dropped {plural(dropped, 'message')}")
    if args.duplicate:
        twice = plural(sum(record["duplicated"].values()), "batch", "batches")
        print(f"the proxies passed {twice} twice")
    if args.reset:
        print(f"the proxies reset {plural(sum(record['resets'].values()), 'link')}")
    if record["nemesis"]:
        kills, wipes = record["kills"], record["wipes"]
        partitions = plural(record["partitions"], "partition")
        print(f"the nemesis killed {plural(kills, 'site')} ({wipes} of them wiped), {partitions}")
    stores = record.get("queue_stores")
    lost = stores["lost"] if stores else []
    if stores:
        recoveries = plural(stores["recoveries"], "recovery", "recoveries")
        print(
            f"the persistent queues' stores after {recoveries}: "
            f"{stores['exact']} as the log says, {stores['behind']} a step behind it "
            f"(the kill came between the line and the store), "
            + (f"{len(lost)} LOST OR CHANGED: {', '.join(lost)}" if lost else "none lost")
        )
    print(f"check them: wanconform validate {shell_word(args.out)}")
    # R36: a persistent queue's store that lost or changed an event its log says was queued
    # is a failure of the run itself, which validate (reading the logs) cannot see
    return 1 if lost else 0
