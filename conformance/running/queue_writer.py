"""The writer process of `wanconform bench --queue-crash` (`conformance.bench.queue_crash`):

    python -m conformance.running.queue_writer FOLDER START

works the queues of sender ny's two dispatchers in a queue store in FOLDER
(impl/queue_store.py) until it is killed: appends events (dispatcher 1's tagged with a
bucket), removes the oldest as acks and now and then one from the middle as conflation
does, marks events possible duplicates, and rarely clears a queue. Before each operation
it prints `do D OP ID,...` and, once the operation is synced (fsync), `ok SLOT,...` (the
slots of an add): what it reports done is durable, what it announced may or may not be.
"""

from __future__ import annotations

import random
import sys
from typing import Any

from impl.queue_store import QueueLog, open_queue_store

SENDER = "ny"
QUEUES = [(SENDER, 0), (SENDER, 1)]
BUCKETS = 7


def queued_event(number: int, dispatcher: int = 0) -> dict[str, Any]:
    """A queued event as the engine keeps one (deterministic in `number`, so that a
    reader can tell an intact record from a torn one); dispatcher 1's carry a bucket."""
    return {
        "id": f"1:{number}",
        "key": f"k{number % 997}",
        "op": "update",
        "value": {f"f{field}": number * 10 + field for field in range(10)},
        "version": [number % 7 + 1, 1_700_000_000_000 + number, 1],
        "base": number % 5,
        "delta": {"f3": number},
        "recipients": [2],
        "enqueued_at": number,
        "thread": dispatcher,
        "size": 120 + number % 50,
        "bucket": number % BUCKETS if dispatcher == 1 else None,
        "possible_duplicate": False,
        "converted": False,
    }


def number_of(event_id: str) -> int:
    return int(event_id.split(":")[1])


def crash_writer(folder: str, start: int) -> None:
    logs = open_queue_store(folder, QUEUES, lambda line: None, "batch")
    live = {d: [(slot, str(r["id"])) for slot, r in logs[SENDER, d].read_back()] for d in (0, 1)}
    print("ready", flush=True)
    rng = random.Random(start)
    number = start
    while True:
        dispatcher = rng.randrange(2)
        log, queue = logs[SENDER, dispatcher], live[dispatcher]
        roll = rng.random()
        if roll < 0.5 or not queue:
            records = [queued_event(number + i, dispatcher) for i in range(rng.randint(1, 5))]
            number += len(records)
            print(f"do {dispatcher} add {','.join(str(r['id']) for r in records)}", flush=True)
            slots = log.append(records)
            log.sync()
            queue.extend(zip(slots, (str(r["id"]) for r in records), strict=True))
            print(f"ok {','.join(map(str, slots))}", flush=True)
        elif roll < 0.75:  # an ack: the oldest events leave the queue
            acked = queue[: rng.randint(1, min(8, len(queue)))]
            del queue[: len(acked)]
            _remove(log, dispatcher, acked)
        elif roll < 0.85:  # conflation: one event from anywhere in the queue
            gone = queue.pop(rng.randrange(len(queue)))
            _remove(log, dispatcher, [gone])
        elif roll < 0.995:  # a resent batch: its events possible duplicates
            slot, event_id = queue[rng.randrange(len(queue))]
            print(f"do {dispatcher} update {event_id}", flush=True)
            log.update(slot, {"possible_duplicate": True})
            log.sync()
            print("ok", flush=True)
        else:  # a lost queue
            print(f"do {dispatcher} clear", flush=True)
            log.clear()
            log.sync()
            queue.clear()
            print("ok", flush=True)


def _remove(log: QueueLog, dispatcher: int, pairs: list[tuple[int, str]]) -> None:
    print(f"do {dispatcher} remove {','.join(event_id for _, event_id in pairs)}", flush=True)
    log.remove([slot for slot, _ in pairs])
    log.sync()
    print("ok", flush=True)


if __name__ == "__main__":
    crash_writer(sys.argv[1], int(sys.argv[2]))
