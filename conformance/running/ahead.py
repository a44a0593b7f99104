"""The impl's half of the lockstep in a helper process on another core (`Lockstep(ahead=...)`).

On one core a lockstep pays for the model, the impl and the comparisons one after the
other. With a second core the impl runs in a helper process forked from this one: it
reads the operations itself, applies them to its own impl and after each one writes a
record, the text of its observations; where the lockstep's schedule compares states
(the same schedule, see `Lockstep`), one more record, the digest of its observable
state. This process steps only the model and compares each record with the model's
observations or state, encoded alike. A step's observations are encoded by
`observations_text` (orjson's text, keys in the order the engine wrote them: bool, int
and float told apart), a state by `sorted_json` (key order ignored), whose digest
stands for it: equal records mean equal observations or states (two different states
agree with a chance of 2^-128: `record`). Two engines that write an observation's keys
in different orders make different texts of equal observations: that is a record that
differs, and below the one-process comparison decides.

The helper decides nothing. Whatever is not an equal record where one is due (another
record, the impl raising, the helper gone, a run that stops before the trace's end) and
whatever needs the impl itself (its state for a failure's record) brings the impl into
this process, replayed from the start to that operation, and the lockstep goes on as if
it had run here all along: the result is the one-process lockstep's, every difference
found and described by the same code. The helper runs at most a pipe's worth of records
(about 2,000 operations of the steady workload) ahead, and is stopped when the lockstep
no longer needs it.
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

import orjson

from traces.config import Config
from traces.engine import EngineFactory, gc_paused
from traces.observations import Observation
from traces.ops import Op

AHEAD_OPERATIONS = 20_000
"""The fewest operations a run needs for a helper to pay (its start: a fork, its own
reading of the trace; a few milliseconds), a guide for callers."""
OBSERVED, STATE = b"o", b"s"
"""Record kinds: a step's observations (their text), an observable state (its digest)."""
DIGEST = 16
_STEP = struct.Struct("<cQ")  # a step's record: kind, the text's length (the text follows)
PIPE_BYTES = 1 << 20
"""The pipe's capacity asked for (Linux allows 1 MiB unprivileged): the fewer times the
two processes wait for each other, the better (64 KiB, the default, cost 0.5 s in 300,000
operations)."""


def record(kind: bytes, text: bytes) -> bytes:
    """A record: its kind, then what stands for `text`. A state's: its 128-bit BLAKE2b
    digest (a state is large and compared seldom). A step's observations: the text's
    length, then the text (a few hundred bytes: sending and comparing them costs less
    than hashing them)."""
    if kind == STATE:
        return STATE + hashlib.blake2b(text, digest_size=DIGEST).digest()
    return _STEP.pack(kind, len(text)) + text


Encode = Callable[[Any], bytes]


def observations_text(observations: list[Observation], encode: Encode) -> bytes:
    """A step's observations as their record holds them: orjson's text, keys in the
    order the engine wrote them (sorting them costs a third more), bool, int and float
    told apart; else (a value orjson cannot encode) `encode`'s. Equal texts mean equal
    observations; equal observations with keys in another order make another text, and
    the one-process comparison then decides."""
    try:
        return orjson.dumps(observations)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return encode(observations)


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
        lockstep's operations from its first), encodes observations with
        `observations_text` and states with `encode`, and after a state of `n` bytes
        compares again `schedule(n)` operations later, as the lockstep does. Its first
        record is the initial state's."""
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
        self._encode = encode
        self._stop = weakref.finalize(self, _stop, pid, self._records)

    def next_is(self, kind: bytes, text: bytes) -> bool:
        """Is the helper's next record the `record` of `kind` and `text`? (No when the
        helper has ended: the impl raised, or it was stopped. A record that is not that
        one may have been read only in part: the records are not read again.)"""
        expected = record(kind, text)
        return self._records.read(len(expected)) == expected

    def next_step_is(self, observations: list[Observation]) -> bool:
        """`next_is(OBSERVED, ...)` for a step's observations, `record`'s step form written
        out here: it comes at every operation, where two more calls cost 1% of the
        model's time."""
        text = observations_text(observations, self._encode)
        expected = _STEP.pack(OBSERVED, len(text)) + text
        return self._records.read(len(expected)) == expected

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
                out.write(record(OBSERVED, observations_text(impl.apply(op), encode)))
                since += 1
                due -= 1
                if due <= 0:
                    due, since = state(impl), 0
            if since:
                state(impl)
    finally:
        os._exit(0)
