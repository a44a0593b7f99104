"""Progress on a terminal: the one helper every command uses for long work.

One line on stderr, rewritten at most twice a second from the first half second on, and
only when stderr is a terminal (a pipe or a file gets nothing); erased when the work is
done, or replaced by a closing line. `Progress("replaying t.jsonl", total)` counts
operations; a Spark stage counts tasks with a bar (`unit="tasks"`).
"""

from __future__ import annotations

import sys
import time

BAR = 30  # characters of a bar


class Progress:
    def __init__(
        self, what: str, total: int | None = None, unit: str = "operations", bar: bool = False
    ) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.bar = bar
        self.active = sys.stderr.isatty()
        self.started = time.monotonic()
        self.next_at = self.started + 0.5
        self.shown = False

    def update(self, done: int, total: int | None = None) -> None:
        if not self.active or time.monotonic() < self.next_at:
            return
        self.next_at = time.monotonic() + 0.5
        total = self.total if total is None else total
        of = "" if total is None else f"/{total:,}"
        elapsed = time.monotonic() - self.started
        if self.bar:
            filled = int(BAR * done / total) if total else 0
            drawn = "#" * filled + "." * (BAR - filled)
            text = f"{self.what:<9} [{drawn}] {done:,}{of} {self.unit} {elapsed:5.0f} s"
        else:
            text = f"{self.what}: {done:,}{of} {self.unit}"
        print(f"\r\033[K{text}", end="", file=sys.stderr, flush=True)
        self.shown = True

    def close(self, final: str = "") -> None:
        """Erase the line; on a terminal, print `final` instead (e.g. "check done in 3 s")."""
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        if final and self.active:
            print(final, file=sys.stderr, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.started
