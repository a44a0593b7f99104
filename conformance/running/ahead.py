"""The impl's half of the lockstep in a helper process on another core (`Lockstep(ahead=...)`).

On one core a lockstep pays for the model, the impl and the comparisons one after the
other. With a second core the impl runs in a helper process forked from this one: it
reads the operations itself, applies them to its own impl and after each one writes a
record, the digest of its observations; where the lockstep's schedule compares states
(the same schedule, see `Lockstep`), one more record, the digest of its observable
state. This process steps only the model and compares each digest with the one of the
model's observations or state. Digests are taken of `sorted_json`, which tells bool,
int and float apart and ignores key order, as the one-process comparison does: equal
digests mean equal observations or states (two different ones agree with a chance of
2^-64 for a step's observations, 2^-128 for a state: `record`).

The helper decides nothing. Whatever is not an equal digest where one is due (another
digest, the impl raising, the helper gone, a run that stops before the trace's end) and
whatever needs the impl itself (its state for a failure's record) brings the impl into
this process, replayed from the start to that operation, and the lockstep goes on as if
it had run here all along: the result is the one-process lockstep's, every difference
found and described by the same code. The helper runs at most a pipe's worth of records
(about 60,000 operations) ahead, and is stopped when the lockstep no longer needs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import struct
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO, NoReturn

from traces.config import Config
from traces.engine import EngineFactory, gc_paused
from traces.ops import Op

AHEAD_OPERATIONS = 20_000
"""The fewest operations a run needs for a helper to pay (its start: a fork, its own
reading of the trace; a few milliseconds), a guide for callers."""
OBSERVED, STATE = b"o", b"s"
"""Record kinds: a step's observations, an observable state (each with its digest)."""
DIGEST = 16
_STEP = struct.Struct("<cQq")  # a step's record: kind, the text's length, its hash
RECORD = _STEP.size  # every record: 1 + 16 bytes
PIPE_BYTES = 1 << 20
"""The pipe's capacity asked for (Linux allows 1 MiB unprivileged): the fewer times the
two processes wait for each other, the better (64 KiB, the default, cost 0.5 s in 300,000
operations)."""


def record(kind: bytes, text: bytes) -> bytes:
    """A record: its kind, then 16 bytes that stand for `text`. A state's: the 128-bit
    BLAKE2b digest. A step's observations: the text's length and Python's 64-bit hash of
    it (SipHash, keyed by the secret the helper shares with this process, forked from
    it): at every operation a third of BLAKE2b's cost, and two different texts of the
    same length agree with a chance of 2^-64."""
    if kind == STATE:
        return STATE + hashlib.blake2b(text, digest_size=DIGEST).digest()
    return _STEP.pack(kind, len(text), hash(text))


Encode = Callable[[Any], bytes]
Schedule = Callable[[int], int]


def possible() -> bool:
    """Can a helper run here: a second CPU for this process, `fork`, and no other thread
    (a forked child gets only the forking thread, and locks other threads held)?"""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) >= 2 and hasattr(os, "fork") and threading.active_count() == 1


class Ahead:
    """The helper process and the records it has written (`next_is`)."""

    def __init__(
        self,
        config: Config,
        impl_factory: EngineFactory,
        ops: Callable[[], Iterable[Op]],
        encode: Encode,
        schedule: Schedule,
    ) -> None:
        """Fork the helper: it builds the impl with `impl_factory`, runs `ops()` (the
        lockstep's operations from its first), encodes observations and states with
        `encode`, and after a state of `n` bytes compares again `schedule(n)` operations
        later, as the lockstep does. Its first record is the initial state's."""
        read_end, write_end = os.pipe()
        with contextlib.suppress(OSError):  # a smaller pipe only means more waiting
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _helper(write_end, config, impl_factory, ops, encode, schedule)
        os.close(write_end)
        self.pid = pid
        self._records: BinaryIO = os.fdopen(read_end, "rb", buffering=1 << 16)
        self._stop = weakref.finalize(self, _stop, pid, self._records)

    def next_is(self, kind: bytes, text: bytes) -> bool:
        """Is the helper's next record the `record` of `kind` and `text`? (No when the
        helper has ended: the impl raised, or it was stopped.)"""
        return self._records.read(RECORD) == record(kind, text)

    def close(self) -> None:
        """Stop the helper (if still running) and reap it."""
        self._stop()


def _stop(pid: int, records: BinaryIO) -> None:
    records.close()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # already reaped
        os.waitpid(pid, 0)


def _helper(
    fd: int,
    config: Config,
    impl_factory: EngineFactory,
    ops: Callable[[], Iterable[Op]],
    encode: Encode,
    schedule: Schedule,
) -> NoReturn:
    """The helper's whole life: the impl on every operation, a record after each. Any
    exception (the impl's, a closed pipe, Ctrl-C) ends it quietly: the records written so
    far are flushed, and the lockstep finds no record where it needs one."""
    try:
        with os.fdopen(fd, "wb", buffering=1 << 16) as out:

            def state(impl: Any) -> int:
                with gc_paused():
                    text = encode(impl.observe())
                out.write(record(STATE, text))
                return schedule(len(text))

            impl = impl_factory(config)
            due = state(impl)
            since = 0
            for op in ops():
                out.write(record(OBSERVED, encode(impl.apply(op))))
                since += 1
                due -= 1
                if due <= 0:
                    due, since = state(impl), 0
            if since:
                state(impl)
    finally:
        os._exit(0)
