"""The receiver's applied-event memory: R16.1's exact duplicate check, in bounded memory.

Rules: R16.1 (duplicate = "an event with this id was already applied with status ok at
this site"), R21 (a wipe forgets it; the engine drops the whole memory of the site).

Design. Geode keeps one high-water mark per (member, thread) and calls every sequence
number at or below it a duplicate. SPEC §13 explains why that is wrong here: R19 re-sends
an earlier event (converted to its full value) *after* later events of the same origin
were applied, and not every sequence number of an origin is applied ok at a given site
(failed, conflict and invalid_delta events are not). Such an event may arrive again and
must then be applied, so "not applied" can never be forgotten, and a high-water mark would
call it a duplicate.

So the memory is exact: per (receiving site, origin site) the set of applied sequence
numbers, held as a sorted list of disjoint, non-adjacent, inclusive ranges
`[starts[i], ends[i]]`. In the common case (events of one origin arrive in sequence order)
an add extends the last range and a check is one comparison against the last range: O(1)
time and O(1) memory however many events were applied. Memory grows only with *gaps*
(sequence numbers never applied ok at this site), and an out-of-order add that closes a
gap merges the two neighbouring ranges, so it shrinks again. Out-of-order operations cost
a binary search plus a list insert or delete.

We do not try to prove "this id will never arrive again" to close gaps early: the proof
needs a global view of every queue that could still hold the id, and the gaps are the
rare case (injected failures, conflicts, invalid deltas).
"""

from __future__ import annotations

from bisect import bisect_right


class AppliedRanges:
    """The applied sequence numbers of one origin at one site, compacted into ranges."""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def __contains__(self, seq: int) -> bool:
        ends = self.ends
        if not ends or seq > ends[-1]:
            return False  # the common case: a new, higher sequence number
        index = bisect_right(self.starts, seq) - 1
        return index >= 0 and seq <= ends[index]

    def add(self, seq: int) -> None:
        """Remember `seq` as applied ok (adding one already present changes nothing)."""
        starts, ends = self.starts, self.ends
        if ends:
            last = ends[-1]
            if seq == last + 1:  # in order: extend the last range
                ends[-1] = seq
                return
            if seq > last:
                starts.append(seq)
                ends.append(seq)
                return
        else:
            starts.append(seq)
            ends.append(seq)
            return
        self._insert(seq)

    def _insert(self, seq: int) -> None:
        """Out of order: place `seq` among the ranges, merging the neighbours it joins."""
        starts, ends = self.starts, self.ends
        index = bisect_right(starts, seq) - 1  # the range starting at or before seq, or -1
        if index >= 0 and seq <= ends[index]:
            return
        joins_left = index >= 0 and ends[index] == seq - 1
        right = index + 1
        joins_right = right < len(starts) and starts[right] == seq + 1
        if joins_left and joins_right:
            ends[index] = ends[right]
            del starts[right]
            del ends[right]
        elif joins_left:
            ends[index] = seq
        elif joins_right:
            starts[right] = seq
        else:
            starts.insert(right, seq)
            ends.insert(right, seq)

    def highest(self) -> int:
        """The highest applied sequence number (0 if none): a Geode-style high-water mark."""
        return self.ends[-1] if self.ends else 0

    def range_count(self) -> int:
        """How many ranges are held: the memory used, in units of two integers."""
        return len(self.starts)

    def ranges(self) -> list[tuple[int, int]]:
        """The ranges, inclusive, in order (for tests and debugging)."""
        return list(zip(self.starts, self.ends, strict=True))
