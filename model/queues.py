"""Queues of a sender's dispatchers: where an event is appended (R11, R22, R26 through
R29's routing), what it holds of queue memory (R35, accounting only), a parallel
dispatcher's bucket FIFOs (R31), queue conflation at enqueue (R32, R34), and what
leaving a queue undoes (R18, R36, R37).

A queue is a `Seq` in append order; its events are named by position (`Seq`), so a
parallel dispatcher's batch, which is not a prefix, is removed by its positions. With
conflation a dispatcher also keeps its index (R32): key -> the positions of its indexed
updates (every update appended since the sender last (re)started: not `recovered`).
"""

from __future__ import annotations

from dataclasses import replace

from immutables import Map

from model.routing import dispatcher_of
from model.state import Dispatcher, GatewayEvent, Sender, Seq
from model.tags import wins
from traces.config import SenderConfig
from traces.observations import Observation


def new_sender(sender: SenderConfig) -> Sender:
    """A sender as configured: N idle dispatchers (R29), a parallel one's cursor at its
    first bucket (R31); stopped if it starts manually (R37)."""
    return Sender(dispatchers=fresh_dispatchers(sender, ()), running=not sender.manual_start)


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
    if len(sender.dispatchers) == 1:
        return sender._replace(dispatchers=(dispatcher,))
    dispatchers = list(sender.dispatchers)  # (a list's copy: twice as fast as slices)
    dispatchers[index] = dispatcher
    return sender._replace(dispatchers=tuple(dispatchers))


def not_queued(current: Sender) -> Sender:
    """R37: a stopped sender does not queue an event: it counts it."""
    stats = current.stats
    return current._replace(
        stats=stats._replace(events_not_queued_stopped=stats.events_not_queued_stopped + 1)
    )


def not_queued_observation(sender: str, event: str) -> Observation:
    return {"kind": "not_queued", "sender": sender, "event": event, "reason": "stopped"}


def enqueue(
    sender: SenderConfig, current: Sender, event: GatewayEvent
) -> tuple[Sender, int, list[Observation]]:
    """R29: append `event` to the dispatcher its key (or thread, or bucket) routes it to,
    then R32's queue conflation. Returns the sender, the dispatcher's index and the
    `conflated` observations."""
    indexed = sender.enable_batch_conflation and event.op == "update"
    if sender.dispatcher_threads == 1 and not sender.parallel:
        # R29's serial N = 1, `append` written out (most writes come here)
        index = 0
        dispatcher = current.dispatchers[0]
        queue, memory = dispatcher.queue, dispatcher.memory_bytes + event.size
        earlier = _still_queued(dispatcher, event.key) if indexed else ()
        if indexed:  # R32: the index forgets what left the queue
            conflation = dispatcher.conflation.set(event.key, (*earlier, queue.end))
            dispatcher = dispatcher._replace(conflation=conflation)
        if memory <= sender.maximum_queue_memory_bytes:  # R35
            dispatcher = dispatcher._replace(queue=queue.append(event), memory_bytes=memory)
        else:
            on_disk = dispatcher.on_disk.set(queue.end, event.size)
            dispatcher = dispatcher._replace(queue=queue.append(event), on_disk=on_disk)
        current = current._replace(dispatchers=(dispatcher,))
    else:
        index = dispatcher_of(sender, event.key, event.thread, event.bucket)
        earlier = _still_queued(current.dispatchers[index], event.key) if indexed else ()
        current = append(sender, current, index, event, earlier)
    if not earlier:
        return current, index, []
    current, observations = _conflate_in_queue(sender, current, index, earlier[-1])
    return current, index, observations


def _still_queued(dispatcher: Dispatcher, key: str) -> tuple[int, ...]:
    """R32: the positions of the indexed updates of `key` still in the queue."""
    positions = dispatcher.conflation.get(key)
    if positions is None:
        return ()
    items = dispatcher.queue.items
    return tuple(p for p in positions if p in items)


def append(
    sender: SenderConfig,
    current: Sender,
    index: int,
    event: GatewayEvent,
    earlier: tuple[int, ...] | None = None,
) -> Sender:
    """Append `event` to dispatcher `index`'s queue: R35 places it in memory or on disk; a
    parallel dispatcher's bucket FIFO gets it too (R31), a conflating one's index an
    update (R32: after `earlier`, its key's positions still queued, when known)."""
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
        fifo = buckets.get(bucket, _NO_POSITIONS)
        buckets = buckets.set(bucket, fifo.append(position))
    conflation_index = dispatcher.conflation
    if sender.enable_batch_conflation and event.op == "update":  # R32: indexed
        if earlier is None:
            earlier = conflation_index.get(event.key, ())
        conflation_index = conflation_index.set(event.key, (*earlier, position))
    updated = dispatcher._replace(
        queue=queue.append(event),
        buckets=buckets,
        memory_bytes=memory,
        on_disk=on_disk,
        conflation=conflation_index,
    )
    return with_dispatcher(current, index, updated)


_NO_POSITIONS: Seq[int] = Seq()


def _conflate_in_queue(
    sender: SenderConfig, current: Sender, index: int, p_position: int
) -> tuple[Sender, list[Observation]]:
    """R32 after an update `e` was appended (and indexed) at dispatcher `index`, where
    `p_position` holds `p`, the most recently appended indexed update of its key still
    queued before it: `p` leaves the queue, unless it is in the batch in flight or `e`'s
    tag is not newer (R16.3). R34: a survivor that would ship as a delta on `p`'s tag
    ships its full value."""
    dispatcher = current.dispatchers[index]
    queue = dispatcher.queue
    e_position = queue.end - 1
    event = queue.at(e_position)
    in_flight = dispatcher.in_flight
    previous = queue.at(p_position)
    if (in_flight is not None and p_position in in_flight.members) or not wins(
        event.version, previous.version
    ):
        return current, []
    stats = current.stats
    survivor = event
    if loses_its_base(sender, event, previous):  # R34
        survivor = event._replace(converted=True)
        dispatcher = dispatcher._replace(queue=queue.replace({e_position: survivor}))
        stats = stats._replace(conflation_full_values=stats.conflation_full_values + 1)
    dispatcher = remove(dispatcher, [p_position])
    stats = stats._replace(events_conflated_in_queue=stats.events_conflated_in_queue + 1)
    observation: Observation = {
        "kind": "conflated",
        "sender": sender.id,
        "dispatcher": index,
        "event": previous.event_id,
        "by": event.event_id,
        "where": "queue",
    }
    return with_dispatcher(current, index, dispatcher)._replace(stats=stats), [observation]


def loses_its_base(sender: SenderConfig, survivor: GatewayEvent, gone: GatewayEvent) -> bool:
    """R34: would `survivor` ship as a delta (R14) on the tag of the conflated `gone`?"""
    return (
        sender.delta
        and survivor.delta is not None
        and not survivor.converted
        and survivor.base_version == gone.version
    )


def remove(dispatcher: Dispatcher, positions: list[int]) -> Dispatcher:
    """The dispatcher without the events at `positions`: each frees its memory or leaves
    `on_disk` (R35), leaves its bucket's FIFO (R31), the resend list and `recovered`."""
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
        by_bucket: dict[int, list[int]] = {}
        for position in positions:
            by_bucket.setdefault(items[position].bucket, []).append(position)  # type: ignore[arg-type]
        fifos = buckets.mutate()  # one new map for every bucket changed
        for bucket, gone in by_bucket.items():
            fifo = fifos[bucket]
            if len(gone) == len(fifo.items):  # all of it
                del fifos[bucket]
            else:
                fifos[bucket] = fifo.remove(_indexes(fifo, gone))
        buckets = fifos.finish()
    recovered, resend = dispatcher.recovered, dispatcher.resend
    if recovered:
        for position in positions:
            if position in recovered:
                recovered = recovered.delete(position)
    if resend:
        leaving = set(positions)
        resend = tuple(p for p in resend if p not in leaving)
    conflation = dispatcher.conflation
    if conflation:  # R32: the index holds only what is queued (as a checkpoint's does)
        index = conflation.mutate()  # one new map for every key changed
        for position in positions:
            key = items[position].key
            indexed = index.get(key)
            if indexed is not None and position in indexed:
                kept = tuple(p for p in indexed if p != position)
                if kept:
                    index[key] = kept
                else:
                    del index[key]
        conflation = index.finish()
    return dispatcher._replace(
        queue=queue.remove(positions),
        buckets=buckets,
        memory_bytes=memory,
        on_disk=on_disk,
        recovered=recovered,
        resend=resend,
        conflation=conflation,
    )


def _indexes(fifo: Seq[int], gone: list[int]) -> list[int] | range:
    """Where a bucket's FIFO holds the positions `gone` (ascending): most often its first
    ones (R31: a batch takes a bucket's oldest events), else among them."""
    items, start, count = fifo.items, fifo.start, len(gone)
    prefix = range(start, start + count)
    if [items.get(index) for index in prefix] == gone:
        return prefix
    wanted = set(gone)
    indexes = []
    for index in range(start, fifo.end):
        if items.get(index) in wanted:
            indexes.append(index)
            if len(indexes) == count:
                break
    return indexes


def flagged(dispatcher: Dispatcher, positions: tuple[int, ...]) -> Seq[GatewayEvent]:
    """R20: the queue with these events marked as possible duplicates."""
    queue = dispatcher.queue
    return queue.replace({p: queue.at(p)._replace(possible_duplicate=True) for p in positions})


def abandon(sender: SenderConfig, dispatcher: Dispatcher) -> Dispatcher:
    """R20's abandonment of the batch in flight (a timeout, R37's stop, R36's restart):
    its messages leave the network, every member becomes a possible duplicate, and a
    parallel dispatcher will send the members first again (R31)."""
    in_flight = dispatcher.in_flight
    if in_flight is None:
        return dispatcher._replace(batch_message=None, ack_message=None)
    return dispatcher._replace(
        queue=flagged(dispatcher, in_flight.positions),
        in_flight=None,
        batch_message=None,
        ack_message=None,
        resend=in_flight.positions if dispatcher.cursor is not None else (),
    )


def reappended(sender: SenderConfig, index: int, dispatcher: Dispatcher) -> Dispatcher:
    """R36 with persistence: the dispatcher's queued events appended again in order, each
    `recovered` (not indexed, R32), R35 placing each anew; nothing else kept but the
    batch-id counter (a new processor: cursor at its first bucket, R31)."""
    rebuilt = Sender(
        dispatchers=(
            Dispatcher(
                cursor=index if sender.parallel else None,
                last_batch_id=dispatcher.last_batch_id,
            ),
        )
    )
    not_indexing = replace(sender, enable_batch_conflation=False)  # recovered: not indexed
    for event in dispatcher.queue:
        rebuilt = append(not_indexing, rebuilt, 0, event)
    fresh = rebuilt.dispatchers[0]
    return fresh._replace(recovered=Map({p: True for p, _ in fresh.queue.positioned()}))
