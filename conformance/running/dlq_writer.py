"""The writer process of `wanconform bench --dlq-crash` (`conformance.bench.dlq_crash`):

    python -m conformance.running.dlq_writer FOLDER START

appends dead letters to a store in FOLDER until it is killed (`impl.dlq_store.crash_writer`).
"""

from __future__ import annotations

import sys

from impl.dlq_store import crash_writer

if __name__ == "__main__":
    crash_writer(sys.argv[1], int(sys.argv[2]))
