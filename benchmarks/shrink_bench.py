"""Benchmark of `wanconform shrink` (issue 10): a planted bug found late in a
1,000,000-operation trace, shrunk to a few operations. Not a test: run it by hand,

    .venv/bin/python benchmarks/shrink_bench.py [OPS] [DIR]

It writes DIR/long.jsonl (default out/shrink-bench/): the bench workload
(`traces.generate.steady_workload`: sender ny 1->2, delta on) with batch_size 10 with a
harmless pause (`tick 10000` after an ack, nothing in flight; a partial batch flushes by
time, R15) every 50,000 operations, and one lost batch (`drop ny`, `tick 10000`,
`tick 5000`: the ack times out and the batch is resent, R20) at 95% of the trace.
`tools.planted_bugs:ResendWithoutPossibleDuplicate` resends without the
possible-duplicate flag, so model and impl first diverge there. Then it times
`wanconform shrink` on it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from traces.generate import steady_workload
from traces.ops import Deliver, DeliverAck, Drop, Op, Tick
from traces.tracefile import write_trace
from wanconform.cli import main

PAUSE_EVERY = 50_000
BATCH_SIZE = 10


def long_trace(ops: int) -> list[Op]:
    config_ops = steady_workload(ops, keys=10_000, seed=1, batch_size=BATCH_SIZE)[1]
    out: list[Op] = []
    fault_at = ops * 95 // 100
    pauses = 0
    for position, op in enumerate(config_ops):
        if position >= fault_at and isinstance(op, Deliver) and fault_at >= 0:
            # the batch is lost, its ack times out (R20), it is resent after retry_interval_ms
            out.extend((Drop(op.sender), Tick(10_000), Tick(5_000)))
            fault_at = -1
            continue
        out.append(op)
        if position // PAUSE_EVERY > pauses and isinstance(op, DeliverAck):
            out.append(Tick(10_000))  # nothing in flight: a harmless pause
            pauses += 1
    return out[:ops]


def main_bench() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    folder = Path(sys.argv[2] if len(sys.argv) > 2 else "out/shrink-bench")
    folder.mkdir(parents=True, exist_ok=True)
    config = steady_workload(1, batch_size=BATCH_SIZE)[0]
    trace = folder / "long.jsonl"
    write_trace(trace, config, long_trace(ops))
    started = time.monotonic()
    code = main(
        [
            "shrink",
            str(trace),
            "-o",
            str(folder / "min.jsonl"),
            "--impl",
            "tools.planted_bugs:ResendWithoutPossibleDuplicate",
            "--pytest",
            str(folder / "test_min.py"),
        ]
    )
    print(f"shrink of {ops:,} operations: exit {code}, {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main_bench()
