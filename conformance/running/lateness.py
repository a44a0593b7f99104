"""How late an event log's flushes and timeouts were (docs/LOG.md, "Event logs").

The driven model (`model.driven`) accepts a flush or timeout whenever R15 or R20 allows
it; what the rules *require*, that a due step happens, is this separate check: a step
taken more than `max_late_ms` after it fell due, or not taken that long after, is a
violation "late by N ms", reported beside the properties and never as a divergence.
Every step's lateness goes into a distribution (memory: one counter per bucket).
"""

from __future__ import annotations

from bisect import bisect_left

from conformance.properties.checker import Verdict, Violation
from model.driven import DrivenEngine, DueKey
from traces.ops import Op, Tick
from traces.text import plural

DEFAULT_MAX_LATE_MS = 1000
"""`--max-late-ms`'s default: a real dispatcher on a loaded machine (the asyncio live sites
on this project's 2-core CI) wakes well within it; a step a whole second late is a
scheduling fault worth a look."""

BOUNDS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
"""The distribution's buckets: lateness <= each bound, and one more above the last."""

SHOWN = 5
"""Violations listed (the count says how many there were)."""


def _what(key: DueKey) -> str:
    what, sender, dispatcher = key
    return f"{what} of {sender} dispatcher {dispatcher}"


class LatenessCheck:
    """Feed it the driven engine after every step (`step`); `verdict` at the end."""

    def __init__(self, max_late_ms: int = DEFAULT_MAX_LATE_MS) -> None:
        self.max_late_ms = max_late_ms
        self.counts = [0] * (len(BOUNDS) + 1)
        self.taken = {"flush": 0, "timeout": 0}
        self.worst = 0
        self.violations: list[Violation] = []
        self.count = 0
        self._reported: dict[DueKey, int] = {}  # a pending step reported overdue, by due
        self._overdue: dict[DueKey, int] = {}  # overdue when the last tick brought the time

    def _violate(self, where: str, message: str) -> None:
        self.count += 1
        if len(self.violations) < SHOWN:
            self.violations.append(Violation("lateness", message, where))

    def step(self, engine: DrivenEngine, where: str, op: Op) -> None:
        for key, late in engine.late:
            self.taken[key[0]] += 1
            self.counts[bisect_left(BOUNDS, late)] += 1
            self.worst = max(self.worst, late)
            reported = self._reported.pop(key, None)  # as not taken, while it was pending
            if late > self.max_late_ms and reported is None:
                self._violate(
                    where,
                    f"{_what(key)} late by {late} ms (due at t={engine.state.time - late}; "
                    f"--max-late-ms {self.max_late_ms})",
                )
        now = engine.state.time
        limit = self.max_late_ms
        if type(op) is Tick:  # the line it comes before may be the step itself, or end it
            self._overdue = {k: d for k, d in engine.due.items() if now - d > limit}
            return
        due_now = engine.due
        if self._overdue:  # (seldom: only where the log is late; no cost per line)
            # overdue at this line's time, then ended by it untaken (an ack ends a timeout
            # that was never taken, a pause or site_down a flush): not taken by now either
            overdue, self._overdue = self._overdue, {}
            taken = {key for key, _ in engine.late}
            for key, due in overdue.items():
                if key not in taken and due_now.get(key) != due:
                    self._not_taken(where, key, due, now)
        for key, due in due_now.items():
            if now - due > limit:
                self._not_taken(where, key, due, now)

    def _not_taken(self, where: str, key: DueKey, due: int, now: int) -> None:
        """A step due at `due` not taken by `now`, later than the bound (once for each)."""
        if self._reported.get(key) == due:
            return
        self._reported[key] = due
        self._violate(
            where,
            f"{_what(key)} due at t={due} not taken by t={now}: late by more than "
            f"--max-late-ms {self.max_late_ms}",
        )

    def percentile(self, fraction: float) -> str:
        """The bucket bound that `fraction` of the steps' lateness is within (never above
        the worst lateness, which bounds them all)."""
        total = sum(self.counts)
        running = 0
        for index, count in enumerate(self.counts):
            running += count
            if running >= fraction * total:
                bound = BOUNDS[index] if index < len(BOUNDS) else self.worst
                return f"<= {min(bound, self.worst)} ms"
        return "-"

    def verdict(self) -> Verdict:
        taken = (
            f"{plural(self.taken['flush'], 'flush', 'flushes')} and "
            f"{plural(self.taken['timeout'], 'timeout')}"
        )
        if sum(self.counts):
            taken += (
                f", late by at most {self.worst} ms (p50 {self.percentile(0.5)}, "
                f"p99 {self.percentile(0.99)})"
            )
        if self.count:
            shown = "" if self.count <= SHOWN else f", the first {SHOWN} listed"
            count = f"{plural(self.count, 'violation')}{shown}; {taken}"
            return Verdict("lateness", "failed", count, tuple(self.violations))
        return Verdict("lateness", "held", f"{taken}; bound {self.max_late_ms} ms")
