"""A durable queue store (SPEC §16.5, R36/R37; docs/QUEUE_STORE.md): the queue of each
dispatcher of a persistent sender (`enable_persistence`), one file per (sender,
dispatcher), so that the queue survives `restart_sender`.

Each file is an append-only log of frames (impl/framing.py: magic b"WQUE", length,
CRC-32, payload), one payload per frame, canonical JSON (sorted keys, no spaces, UTF-8):

    {"add":[SLOT,RECORD]}       an event appended to the queue, at a new slot
    {"remove":[SLOT,...]}       events that left the queue (acknowledged, conflated, lost)
    {"update":[SLOT,FIELDS]}    fields of a live record changed, merged into it
    {"clear":true}              every record discarded
    {"next":SLOT}               the next slot (last frame of a compacted file)

A slot is the store's number for a record: increasing in append order, never reused
within the file's life (a compacted file ends with the next slot), the same after a
reopen. Records are opaque JSON objects (strict JSON, as traces are: no NaN, no half of
a surrogate pair; a tuple reads back as a list).

Every operation writes its frames to the OS at once (one `os.write` per call), so a
SIGKILL loses nothing an operation returned from. With fsync "batch", `sync()` makes
them durable against a power loss too (the engine calls it once per dispatcher before a
batch is sent and after an ack's removals); with "none" nothing is fsynced.

Opening a file replays it: the live records are the adds not removed or cleared since,
in append order, with their updates merged. A torn tail (a frame cut short at the end,
or a last frame whose checksum fails: a crash or power loss mid-write) is cut with one
notice; anything else wrong (a wrong magic, an earlier checksum, a payload that is not
one of the five, a slot not live) is a StoreError naming the file and the byte offset.
When the dead bytes are more than half of a file above `compact_above` bytes, the live
records are rewritten (their slots kept) to a temporary file, fsynced, renamed over the
file and the directory fsynced.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from impl import framing
from impl.framing import HEADER
from impl.framing import StoreError as StoreError
from traces.outputs import QUEUE_SUFFIX

MAGIC = b"WQUE"
SUFFIX = QUEUE_SUFFIX
FSYNC_CHOICES = ("batch", "none")
COMPACT_ABOVE = 1 << 20
"""A file is compacted only above this size (bytes), when more than half of it is dead."""

_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.decode
_KINDS = ("add", "clear", "next", "remove", "update")


def queue_file(sender: str, dispatcher: int) -> str:
    """A dispatcher's file: the sender's id escaped (as dead-letter files are), a dot, the
    dispatcher's index (an escaped id has no dot), `.queue`."""
    return f"{framing.escape_name(sender)}.{dispatcher}{SUFFIX}"


def _add_frame(slot: int, record: dict[str, Any]) -> bytes:
    return framing.frame(MAGIC, b'{"add":[%d,%s]}' % (slot, _encode(record)))


def _is_slot(value: Any) -> bool:
    return type(value) is int and value >= 0


def replay(path: Path) -> tuple[dict[int, dict[str, Any]], int, int, int]:
    """A file's live records (slot -> record, in append order, updates merged), its next
    slot, the offset where its whole frames end and its size (more when the tail is
    torn). StoreError naming the file and the frame's offset on damage."""
    live: dict[int, dict[str, Any]] = {}
    next_slot = 1

    def apply(offset: int, payload: bytes) -> None:
        nonlocal next_slot
        try:
            decoded = _decode(payload)
        except (msgspec.DecodeError, RecursionError):
            raise StoreError(f"{path}: byte {offset}: damaged frame (not JSON)") from None
        if not isinstance(decoded, dict) or len(decoded) != 1 or next(iter(decoded)) not in _KINDS:
            raise StoreError(
                f"{path}: byte {offset}: damaged frame (not an add, remove, update, clear or next)"
            )
        ((kind, body),) = decoded.items()
        problem = _apply(live, next_slot, kind, body)
        if isinstance(problem, str):
            raise StoreError(f"{path}: byte {offset}: damaged frame ({problem})")
        next_slot = problem

    _, end, size = framing.scan_frames(path, MAGIC, "a queue frame", apply)
    return live, next_slot, end, size


def _apply(live: dict[int, dict[str, Any]], next_slot: int, kind: str, body: Any) -> int | str:
    """One frame applied to the live records: the next slot, or what is wrong with it."""
    if kind == "add":
        if not (isinstance(body, list) and len(body) == 2 and _is_slot(body[0])):
            return "an add that is not [SLOT, RECORD]"
        if not isinstance(body[1], dict):
            return "an add whose record is not an object"
        if body[0] < next_slot:
            return f"an add at slot {body[0]}, not above the last (next {next_slot})"
        live[body[0]] = body[1]
        return int(body[0]) + 1
    if kind == "remove":
        if not isinstance(body, list) or not all(_is_slot(slot) for slot in body):
            return "a remove that is not a list of slots"
        for slot in body:
            if live.pop(slot, None) is None:
                return f"a remove of slot {slot}, not live"
        return next_slot
    if kind == "update":
        if not (isinstance(body, list) and len(body) == 2 and isinstance(body[1], dict)):
            return "an update that is not [SLOT, FIELDS]"
        if not _is_slot(body[0]) or body[0] not in live:
            return f"an update of slot {body[0]}, not live"
        live[body[0]].update(body[1])
        return next_slot
    if kind == "clear":
        if body is not True:
            return "a clear that is not true"
        live.clear()
        return next_slot
    if not _is_slot(body) or body < next_slot:
        return f"a next slot {body} below the last (next {next_slot})"
    return int(body)


class QueueLog:
    """One dispatcher's queue: an append-only log of frames, one file per (sender,
    dispatcher). Its operations raise ValueError on a slot that is not live."""

    def __init__(
        self,
        path: Path,
        notice: Callable[[str], None],
        fsync: str,
        compact_above: int = COMPACT_ABOVE,
        buffered: bool = False,
    ) -> None:
        if fsync not in FSYNC_CHOICES:
            raise ValueError(f"fsync: one of {', '.join(FSYNC_CHOICES)}, got {fsync!r}")
        self.path = path
        # `buffered`: frames wait in memory until `flush()` (the engine flushes at the end
        # of every operation: one write per operation, and a SIGKILL loses nothing an
        # operation returned from); otherwise each call writes its frames at once.
        self.buffered = buffered
        self._pending: list[bytes] = []
        self.durable = fsync == "batch"
        self.compact_above = compact_above
        framing.remove_unfinished(path, notice)
        created = not path.exists()
        live, self._next, end, size = ({}, 1, 0, 0) if created else replay(path)
        framing.cut_torn_tail(path, end, size, notice, self.durable)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if created and self.durable:
            framing.fsync_directory(path.parent)
        self._live = {slot: _add_frame(slot, record) for slot, record in live.items()}
        self._live_bytes = sum(map(len, self._live.values()))
        self._size = end
        self._unsynced = False
        self._maybe_compact()

    def __len__(self) -> int:
        """The live records."""
        return len(self._live)

    def _write(self, data: bytes) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path}: the queue log is closed")
        if self.buffered:
            self._pending.append(data)
        else:
            framing.write_all(self._fd, data)
        self._size += len(data)
        self._unsynced = True

    def flush(self) -> None:
        """Write the frames a buffered log holds back (one write); nothing otherwise."""
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            framing.write_all(self._fd, data)

    def append(self, records: list[dict[str, Any]]) -> list[int]:
        """Append events in order (one write for all); their slots."""
        first = self._next
        frames = [_add_frame(first + i, record) for i, record in enumerate(records)]
        for record in records:
            if not isinstance(record, dict):
                raise TypeError(f"a queue record is a dict, got {type(record).__name__}")
        self._write(b"".join(frames))
        slots = list(range(first, first + len(frames)))
        self._live.update(zip(slots, frames, strict=True))
        self._live_bytes += sum(map(len, frames))
        self._next = first + len(frames)
        return slots

    def append_one(self, record: dict[str, Any]) -> int:
        """`append([record])[0]`, written out (the engine appends one event at a time)."""
        if type(record) is not dict:
            raise TypeError(f"a queue record is a dict, got {type(record).__name__}")
        slot = self._next
        data = _add_frame(slot, record)
        self._write(data)
        self._live[slot] = data
        self._live_bytes += len(data)
        self._next = slot + 1
        return slot

    def remove(self, slots: list[int]) -> None:
        """Events that left the queue (acknowledged, conflated, lost)."""
        if not slots:
            return
        self._check_live(slots)
        if len(set(slots)) != len(slots):
            raise ValueError(f"{self.path}: a slot removed twice in {slots}")
        self._write(framing.frame(MAGIC, _encode({"remove": slots})))
        for slot in slots:
            self._live_bytes -= len(self._live.pop(slot))
        self._maybe_compact()

    def update(self, slot: int, fields: dict[str, Any]) -> None:
        """Fields of a live record changed: merged into it."""
        self._check_live([slot])
        record = _decode(self._live[slot][HEADER:])["add"][1]
        record.update(fields)
        merged = _add_frame(slot, record)
        self._write(framing.frame(MAGIC, _encode({"update": [slot, fields]})))
        self._live_bytes += len(merged) - len(self._live[slot])
        self._live[slot] = merged
        self._maybe_compact()

    def clear(self) -> None:
        """Every record discarded (a lost queue, a clean start); slots are not reused."""
        self._write(framing.frame(MAGIC, b'{"clear":true}'))
        self._live.clear()
        self._live_bytes = 0
        self._maybe_compact()

    def sync(self) -> None:
        """With fsync "batch": fsync what was written since the last sync (nothing to do
        if nothing was). With "none": nothing."""
        self.flush()
        if self.durable and self._unsynced and self._fd >= 0:
            os.fsync(self._fd)
        self._unsynced = False

    def read_back(self) -> list[tuple[int, dict[str, Any]]]:
        """The live (slot, record) pairs as the file holds them now, in append order,
        updates merged (read from disk: what a restart would recover)."""
        self.flush()
        live, _, end, size = replay(self.path)
        if end != size:
            raise StoreError(f"{self.path}: byte {end}: torn while open")
        return list(live.items())

    def compact(self) -> None:
        """Rewrite the live records only (slots kept, the next slot last): a temporary
        file, fsync, rename, directory fsync."""
        if self._fd < 0:
            raise ValueError(f"{self.path}: the queue log is closed")
        self.flush()
        last = framing.frame(MAGIC, b'{"next":%d}' % self._next)
        framing.replace_atomically(self.path, [*self._live.values(), last], self.durable)
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._size = self._live_bytes + len(last)
        self._unsynced = False

    def _maybe_compact(self) -> None:
        if self._size > self.compact_above and 2 * self._live_bytes < self._size:
            self.compact()

    def _check_live(self, slots: list[int]) -> None:
        missing = [slot for slot in slots if slot not in self._live]
        if missing:
            raise ValueError(f"{self.path}: slot {missing[0]} is not live")

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1


def open_queue_store(
    folder: str | os.PathLike[str],
    queues: list[tuple[str, int]],
    notice: Callable[[str], None],
    fsync: str,
    *,
    compact_above: int = COMPACT_ABOVE,
    buffered: bool = False,
) -> dict[tuple[str, int], QueueLog]:
    """Each (sender id, dispatcher index)'s queue log in `folder` (created if missing),
    recovered (module docstring). fsync: "batch" or "none"."""
    if fsync not in FSYNC_CHOICES:
        raise ValueError(f"fsync: one of {', '.join(FSYNC_CHOICES)}, got {fsync!r}")
    path = Path(folder)
    if not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise StoreError(f"{path}: cannot create it: {exc.strerror}") from None
        if fsync == "batch":
            framing.fsync_directory(path.parent)
    framing.check_directory(path, "a queue store")
    logs: dict[tuple[str, int], QueueLog] = {}
    try:
        for sender, dispatcher in queues:
            if (sender, dispatcher) in logs:
                raise ValueError(f"queue ({sender!r}, {dispatcher}) named twice")
            file = path / queue_file(sender, dispatcher)
            logs[sender, dispatcher] = QueueLog(file, notice, fsync, compact_above, buffered)
    except BaseException:
        for log in logs.values():
            log.close()
        raise
    return logs
