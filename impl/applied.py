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
gap merges the two neighbouring ranges, so it shrinks again.

Sequence numbers above the highest range and not next to it wait in a set (`_ahead`)
until the range reaches them: a parallel sender's dispatchers deliver an origin's events
out of sequence order all the time (R29: each dispatcher ships its own buckets' events),
and most of them would otherwise open a range of their own among a hundred others and
close it again (a binary search and a list insert and delete each: 4,000 instructions
an event of the parallel steady workload, 400 through the set). The set holds at most
`AHEAD_LIMIT` numbers: past that (a gap that stays open) it becomes ranges. Other
out-of-order adds cost a binary search plus a list insert or delete.

We do not try to prove "this id will never arrive again" to close gaps early: the proof
needs a global view of every queue that could still hold the id, and the gaps are the
rare case (injected failures, conflicts, invalid deltas).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Final, final

from mypy_extensions import mypyc_attr

AHEAD_LIMIT: Final = 4096
"""The most sequence numbers `AppliedRanges` keeps above its highest range, unranged."""


@final
@mypyc_attr(acyclic=True)
class AppliedRanges:
    """The applied sequence numbers of one origin at one site, compacted into ranges.

    The highest range is kept in two plain ints (`_last_start`, `_last_end`), the
    earlier ones in the sorted lists `_starts` and `_ends`: the common, in-order case
    only reads and writes those two ints. Numbers above the highest range and not next
    to it are in the set `_ahead` until they join it.
    """

    __slots__ = ("_ahead", "_ends", "_last_end", "_last_start", "_nonempty", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []  # the ranges below the highest one
        self._ends: list[int] = []
        self._last_start = 0  # the highest range, if `_nonempty`
        self._last_end = 0
        self._nonempty = False
        self._ahead: set[int] = set()  # each above `_last_end + 1`

    @staticmethod
    def from_ranges(ranges: list[list[int]]) -> AppliedRanges:
        """The memory holding exactly `ranges` (ascending, disjoint, not adjacent, as
        `ranges()` gives them): a checkpoint restored."""
        memory = AppliedRanges()
        if ranges:
            memory._starts = [start for start, _ in ranges[:-1]]
            memory._ends = [end for _, end in ranges[:-1]]
            memory._last_start, memory._last_end = ranges[-1][0], ranges[-1][1]
            memory._nonempty = True
        return memory

    def __contains__(self, seq: int) -> bool:
        if seq > self._last_end or not self._nonempty:
            # the common case: a new, higher sequence number
            return bool(self._ahead) and seq in self._ahead
        if seq >= self._last_start:
            return True
        index = bisect_right(self._starts, seq) - 1
        return index >= 0 and seq <= self._ends[index]

    def add(self, seq: int) -> None:
        """Remember `seq` as applied ok (adding one already present changes nothing)."""
        if not self._nonempty:
            self._last_start = self._last_end = seq
            self._nonempty = True
            return
        last_end = self._last_end
        if seq == last_end + 1:  # in order: extend the highest range
            ahead = self._ahead
            while ahead and seq + 1 in ahead:  # ... over the numbers waiting next to it
                seq += 1
                ahead.remove(seq)
            self._last_end = seq
        elif seq > last_end:  # after a gap: it waits for the highest range
            ahead = self._ahead
            ahead.add(seq)
            if len(ahead) > AHEAD_LIMIT:
                self._rank_ahead()
        elif seq >= self._last_start:
            pass  # already there
        elif seq == self._last_start - 1:  # extends the highest range down ...
            ends = self._ends
            if ends and ends[-1] == seq - 1:  # ... and closes the gap below it
                self._last_start = self._starts.pop()
                ends.pop()
            else:
                self._last_start = seq
        else:
            self._insert(seq)

    def _rank_ahead(self) -> None:
        """The waiting numbers become ranges, the highest of them the highest range."""
        starts, ends = self._starts, self._ends
        starts.append(self._last_start)
        ends.append(self._last_end)
        waiting = sorted(self._ahead)
        self._ahead.clear()
        start = end = waiting[0]
        for seq in waiting:
            if seq > end + 1:  # a gap: the run before it is a range
                starts.append(start)
                ends.append(end)
                start = seq
            end = seq
        self._last_start, self._last_end = start, end

    def _insert(self, seq: int) -> None:
        """Place `seq` among the lower ranges (it is below the highest one and not next to
        it), merging the neighbours it joins."""
        starts, ends = self._starts, self._ends
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
        if self._ahead:
            return max(self._ahead)
        return self._last_end if self._nonempty else 0

    def range_count(self) -> int:
        """How many ranges the numbers make (the memory used, in units of two integers,
        besides the numbers waiting)."""
        return len(self.ranges())

    def ranges(self) -> list[tuple[int, int]]:
        """The ranges, inclusive, in order, the waiting numbers' included (a checkpoint's,
        tests')."""
        ranges = list(zip(self._starts, self._ends, strict=True))
        if self._nonempty:
            ranges.append((self._last_start, self._last_end))
        for seq in sorted(self._ahead):
            if seq == ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], seq)
            else:
                ranges.append((seq, seq))
        return ranges
