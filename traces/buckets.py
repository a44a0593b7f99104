"""R28, the bucket of a key, as the spec says it: Java's `String.hashCode` over UTF-16
code units in signed 32-bit arithmetic, then Java's `%` (which truncates toward zero, so
`|x rem n| == |x| mod n`). The model routes with it (`model.routing`) and a checkpoint's
parallel queues are checked with it (`traces.checkpoint`); the impl and the live sites
compute it on their own (`impl.state`, `conformance.live.site`)."""

from __future__ import annotations

from collections.abc import Iterable


def java_hash(key: str) -> int:
    """Java's `String.hashCode`: `h = 31*h + c` for each UTF-16 code unit `c`, as a
    signed 32-bit integer (a key outside the BMP counts its two surrogates)."""
    units: Iterable[int]
    if key.isascii():  # one code unit per character, the character's byte
        units = key.encode("ascii")
    else:
        data = key.encode("utf-16-be", "surrogatepass")
        units = [data[i] << 8 | data[i + 1] for i in range(0, len(data), 2)]
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_abs_rem(x: int, n: int) -> int:
    """`|x rem n|` with Java's truncating `%` (n > 0)."""
    return abs(x) % n


def bucket_index(key: str, buckets: int) -> int:
    """R28: `|h(k) rem B|`."""
    return java_abs_rem(java_hash(key), buckets)
