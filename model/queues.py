"""Queues of a sender's dispatchers: where an event is appended (R11, R22, R26 through
R29's routing), what it holds of queue memory (R35, accounting only), a parallel
dispatcher's bucket FIFOs (R31), and what leaving a queue undoes (R18).

A queue is a `Seq` in append order; its events are named by position (`Seq`), so a
parallel dispatcher's batch, which is not a prefix, is removed by its positions.
"""

from __future__ import annotations

from model.routing import dispatcher_of
from model.state import Dispatcher, GatewayEvent, Sender, Seq
from traces.config import SenderConfig


def new_sender(sender: SenderConfig) -> Sender:
    """A sender as configured: N idle dispatchers (R29), a parallel one's cursor at its
    first bucket (R31)."""
    return Sender(dispatchers=fresh_dispatchers(sender, ()))


def fresh_dispatchers(sender: SenderConfig, old: tuple[Dispatcher, ...]) -> tuple[Dispatcher, ...]:
    """Empty dispatchers; each keeps its batch-id counter from `old` (R15: never reset)."""
    return tuple(
        Dispatcher(
            cursor=d if sender.parallel else None,
            last_batch_id=old[d].last_batch_id if old else 0,
        )
        for d in range(sender.dispatcher_threads)
    )


def with_dispatcher(sender: Sender, index: int, dispatcher: Dispatcher) -> Sender:
    dispatchers = sender.dispatchers
    if len(dispatchers) == 1:
        return sender._replace(dispatchers=(dispatcher,))
    return sender._replace(
        dispatchers=(*dispatchers[:index], dispatcher, *dispatchers[index + 1 :])
    )


def enqueue(sender: SenderConfig, current: Sender, event: GatewayEvent) -> tuple[Sender, int]:
    """R29: append `event` to the dispatcher its key (or thread, or bucket) routes it to.
    Returns the sender and the dispatcher's index."""
    if sender.dispatcher_threads == 1 and not sender.parallel:  # R29's serial N = 1:
        dispatcher = current.dispatchers[0]  # `append`, written out (most writes come here)
        queue, memory = dispatcher.queue, dispatcher.memory_bytes + event.size
        if memory <= sender.maximum_queue_memory_bytes:  # R35
            dispatcher = dispatcher._replace(queue=queue.append(event), memory_bytes=memory)
        else:
            on_disk = dispatcher.on_disk.set(queue.end, event.size)
            dispatcher = dispatcher._replace(queue=queue.append(event), on_disk=on_disk)
        return current._replace(dispatchers=(dispatcher,)), 0
    index = dispatcher_of(sender, event.key, event.thread, event.bucket)
    return append(sender, current, index, event), index


def append(sender: SenderConfig, current: Sender, index: int, event: GatewayEvent) -> Sender:
    """Append `event` to dispatcher `index`'s queue: R35 places it in memory or on disk; a
    parallel dispatcher's bucket FIFO gets it too (R31)."""
    dispatcher = current.dispatchers[index]
    queue = dispatcher.queue
    position = queue.end
    limit = sender.maximum_queue_memory_bytes // sender.dispatcher_threads  # R35
    memory, on_disk = dispatcher.memory_bytes, dispatcher.on_disk
    if memory + event.size <= limit:
        memory += event.size
    else:
        on_disk = on_disk.set(position, event.size)
    buckets = dispatcher.buckets
    if dispatcher.cursor is not None:  # parallel (R31)
        bucket = event.bucket
        assert bucket is not None  # R27: a parallel sender's site is partitioned
        fifo = buckets.get(bucket)
        buckets = buckets.set(bucket, (fifo or _NO_POSITIONS).append(position))
    updated = dispatcher._replace(
        queue=queue.append(event), buckets=buckets, memory_bytes=memory, on_disk=on_disk
    )
    dispatchers = current.dispatchers
    if len(dispatchers) == 1:
        return current._replace(dispatchers=(updated,))
    return current._replace(dispatchers=(*dispatchers[:index], updated, *dispatchers[index + 1 :]))


_NO_POSITIONS: Seq[int] = Seq()


def remove(dispatcher: Dispatcher, positions: list[int]) -> Dispatcher:
    """The dispatcher without the events at `positions`: each frees its memory or leaves
    `on_disk` (R35) and leaves its bucket's FIFO (R31)."""
    if not positions:
        return dispatcher
    queue, memory, on_disk = dispatcher.queue, dispatcher.memory_bytes, dispatcher.on_disk
    items = queue.items
    if on_disk:
        for position in positions:
            if position in on_disk:
                on_disk = on_disk.delete(position)
            else:
                memory -= items[position].size
    else:
        memory -= sum(items[position].size for position in positions)
    buckets = dispatcher.buckets
    if dispatcher.cursor is not None:  # parallel: each bucket's members leave its FIFO
        by_bucket: dict[int, set[int]] = {}
        for position in positions:
            by_bucket.setdefault(items[position].bucket, set()).add(position)  # type: ignore[arg-type]
        for bucket, gone in by_bucket.items():
            fifo = buckets[bucket]
            fifo = fifo.remove(_indexes(fifo, gone))
            buckets = buckets.set(bucket, fifo) if len(fifo) else buckets.delete(bucket)
    return dispatcher._replace(
        queue=queue.remove(positions), buckets=buckets, memory_bytes=memory, on_disk=on_disk
    )


def _indexes(fifo: Seq[int], gone: set[int]) -> list[int]:
    """Where a bucket's FIFO holds the positions `gone`: among its first ones (R31: a
    batch takes a bucket's oldest events)."""
    indexes = []
    items = fifo.items
    for index in range(fifo.start, fifo.end):
        if items.get(index) in gone:
            indexes.append(index)
            if len(indexes) == len(gone):
                break
    return indexes


def flagged(dispatcher: Dispatcher, positions: tuple[int, ...]) -> Seq[GatewayEvent]:
    """R20: the queue with these events marked as possible duplicates."""
    queue = dispatcher.queue
    return queue.replace({p: queue.at(p)._replace(possible_duplicate=True) for p in positions})
