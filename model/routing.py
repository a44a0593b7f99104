"""Where an event goes: R28 (the bucket of a key) and R29 (the dispatcher of a sender).

Written as the spec says it, for the reader to check against it: Java's
`String.hashCode` over UTF-16 code units in signed 32-bit arithmetic, Java's `%`
(which truncates toward zero, so `|x rem n| == |x| mod n`), then the order policies.
"""

from __future__ import annotations

from traces.buckets import java_abs_rem, java_hash
from traces.config import Config, SenderConfig


def bucket_of(config: Config, site: int, key: str) -> int | None:
    """R28: the key's bucket at `site`, or None when the site's region is replicated."""
    buckets = config.buckets(site)
    return bucket(key, buckets) if buckets else None


def bucket(key: str, buckets: int) -> int:
    """R28: `|h(k) rem B|` (remembered: it is asked again for every write of a key)."""
    known = _BUCKETS.get(buckets)
    if known is None:
        known = _BUCKETS[buckets] = {}
    found = known.get(key)
    if found is None:
        if len(known) >= _REMEMBERED:
            known.clear()
        found = known[key] = java_abs_rem(java_hash(key), buckets)
    return found


_BUCKETS: dict[int, dict[str, int]] = {}
"""R28's buckets already computed: bucket count -> key -> bucket (a plain dict, about a
third cheaper to ask than `functools.lru_cache`, which keeps an order of use)."""
_REMEMBERED = 1 << 20
"""At most this many keys per bucket count (then they are forgotten and computed anew)."""


def dispatcher_of(sender: SenderConfig, key: str, thread: int, bucket: int | None) -> int:
    """R29: the dispatcher of `sender` that queues an event of `key` written by client
    thread `thread` (`bucket`: the key's bucket at the sender's site, or None)."""
    count = sender.dispatcher_threads
    if sender.parallel:
        assert bucket is not None  # R27: a parallel sender's site is partitioned
        return bucket % count
    if count == 1:
        return 0
    if sender.order_policy == "thread":
        return java_abs_rem(thread, count)
    if sender.order_policy == "partition" and bucket is not None:
        return java_abs_rem(bucket, count)
    return java_abs_rem(java_hash(key), count)


def owned_buckets(sender: SenderConfig, dispatcher: int, buckets: int) -> range:
    """R31: the buckets a parallel dispatcher owns, ascending: d, d+N, d+2N, ... < B."""
    return range(dispatcher, buckets, sender.dispatcher_threads)
