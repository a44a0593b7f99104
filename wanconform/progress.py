"""Progress on a terminal: the one helper every command uses for long work.

One line on stderr, rewritten at most twice a second from the first half second on, and
only when stderr is a terminal (a pipe or a file gets nothing); erased when the work is
done, or replaced by a closing line. `Progress("replaying t.jsonl", total)` counts
operations; Spark work shows one bar per stage, each with its stage's fixed number of
tasks (`Progress.stage`). A count never goes backwards. `status("starting Spark")` says
what happens while there is nothing to count.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from traces.text import printable

BAR = 30  # characters of a bar
_open: list[Progress] = []  # the progress lines on the terminal now, not yet closed


class Progress:
    def __init__(
        self, what: str, total: int | None = None, unit: str = "operations", bar: bool = False
    ) -> None:
        self.what = printable(what)  # a trace's name, on one line
        self.total = total
        self.unit = unit
        self.bar = bar
        self.active = sys.stderr.isatty()
        self.started = time.monotonic()
        self.next_at = self.started + 0.5
        self.shown = False
        self.done = 0
        self.part = 0  # the Spark stage shown (0: none yet)

    def text(self, done: int, total: int | None = None) -> str:
        """The line for `done` (of `total`), never below what was shown before."""
        self.done = max(self.done, done)
        total = self.total if total is None else total
        of = "" if total is None else f"/{total:,}"
        if not self.bar:
            return f"{self.what}: {self.done:,}{of} {self.unit}"
        filled = min(BAR, int(BAR * self.done / total)) if total else 0
        drawn = "#" * filled + "." * (BAR - filled)
        what = f"{self.what} stage {self.part}" if self.part else self.what
        elapsed = time.monotonic() - self.started
        return f"{what:<9} [{drawn}] {self.done:,}{of} {self.unit} {elapsed:5.0f} s"

    def update(self, done: int, total: int | None = None) -> None:
        if not self.active or time.monotonic() < self.next_at:
            self.done = max(self.done, done)
            return
        self.next_at = time.monotonic() + 0.5
        print(f"\r\033[K{self.text(done, total)}", end="", file=sys.stderr, flush=True)
        if not self.shown:
            _open.append(self)
        self.shown = True

    def stage(self, number: int, done: int, total: int) -> None:
        """One Spark stage's tasks (`conformance.spark.glue.progress`): a later stage starts a
        new bar with its own fixed total; an earlier one is never shown again."""
        if number < self.part:
            return
        if number > self.part:
            self.part, self.done, self.total = number, 0, total
        self.update(done, self.total)

    def close(self, final: str = "") -> None:
        """Erase the line; on a terminal, print `final` instead (e.g. "check done in 3 s")."""
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
            self.shown = False
            _open.remove(self)
        if final and self.active:
            print(final, file=sys.stderr, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def erase() -> None:
    """Erase a progress line left on the terminal (an error or Ctrl-C in the middle of
    the work), so that the one line said next stands alone."""
    while _open and sys.stderr.isatty():
        _open[-1].close()


@contextmanager
def status(what: str) -> Iterator[None]:
    """`what ...` on a terminal while the body runs (e.g. "starting Spark"), erased after."""
    active = sys.stderr.isatty()
    if active:
        print(f"{what} ...", end="", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if active:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def stage_progress(label: str) -> Progress:
    """A bar of one Spark stage's tasks (on a terminal)."""
    return Progress(label, unit="tasks", bar=True)


def start_spark(master: str | None) -> Any:
    """The Spark session, saying "starting Spark" on a terminal while it starts."""
    from conformance.spark import glue

    with status(f"starting Spark ({master or glue.DEFAULT_MASTER})"):
        return glue.session(master)
