"""A durable dead-letter store (R24, R26; docs/DLQ_STORE.md): one file per sender.

Each sender's file is an append-only log of frames. A frame is

    magic b"WDLQ" | length (4 bytes, big-endian) | CRC-32 of the payload (4 bytes) | payload

and its payload is canonical JSON: `{"add": RECORD}` (a dead letter, R24, written before
the batch's events leave the queue) or `{"remove": [EVENT_ID, ...]}` (records redelivered,
R26). Every append is flushed and `fsync`ed; a new file's directory is `fsync`ed too, so
a record the store has returned from `append` survives a crash or a power loss.

Opening a store reads every file back: the records are the adds not removed since, in
order. A frame cut short at the end of a file (a crash in the middle of an append) is a
torn tail: it is cut off (the file truncated to its last whole frame, once, with a
notice); so is a last frame whose checksum fails (its bytes did not all reach the disk
before a power loss). A frame followed by others whose checksum or payload is wrong, or
a file that does not start with the magic, is damage: an error naming the file and the
byte offset, never skipped. A leftover temporary file of a compaction cut short is
removed, with a notice. When a file holds more than twice as many frames as live records
(more than 2 when none is live), it is compacted: the live records are written to a
temporary file, `fsync`ed and renamed over the old one (atomic on POSIX), then the
directory is `fsync`ed.

Why a log rather than SQLite: records are only appended and removed in bulk, never
updated; a log has exactly one write per record and one fsync per batch, its recovery is
a dozen lines that the tests can drive byte by byte (torn tails, flipped bits), and its
format is documented in one page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from impl import framing
from impl.framing import HEADER as HEADER
from impl.framing import StoreError as StoreError
from impl.framing import fsync_directory
from traces.canonical import canonical_json
from traces.outputs import DLQ_SUFFIX

MAGIC = b"WDLQ"
SUFFIX = DLQ_SUFFIX


def sender_file(sender: str) -> str:
    """The file name of a sender's log: its id with anything but [A-Za-z0-9_-] escaped."""
    return framing.escape_name(sender) + SUFFIX


def frame(payload: dict[str, Any]) -> bytes:
    return framing.frame(MAGIC, canonical_json(payload).encode())


def read_frames(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """The payloads of a log's whole frames, the offset where they end, and the file's
    size (more than that offset when the tail is torn). StoreError on damage."""
    payloads: list[dict[str, Any]] = []

    def decode(offset: int, payload: bytes) -> None:
        try:
            decoded = json.loads(payload)
            if b"\\u" in payload:  # an escaped half of a surrogate pair is not text
                json.dumps(decoded, ensure_ascii=False).encode()
        except (ValueError, RecursionError):
            raise StoreError(f"{path}: byte {offset}: damaged frame (not JSON)") from None
        if (
            not isinstance(decoded, dict)
            or not (set(decoded) <= {"add", "remove"})
            or len(decoded) != 1
        ):
            raise StoreError(f"{path}: byte {offset}: damaged frame (not an add or a remove)")
        if (problem := _payload_problem(decoded)) is not None:
            raise StoreError(f"{path}: byte {offset}: damaged frame ({problem})")
        payloads.append(decoded)

    _, end, size = framing.scan_frames(path, MAGIC, "a dead-letter frame", decode)
    return payloads, end, size


RECORD_STRINGS = ("event_id", "sender", "key", "op", "exception")
RECORD_LISTS = ("version", "recipients")
"""The fields of a dead-letter record (SPEC §10), and `value` unless the sender is secure."""


def _payload_problem(payload: dict[str, Any]) -> str | None:
    """What is wrong with an add's record or a remove's event ids; None if nothing."""
    if "remove" in payload:
        ids = payload["remove"]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return "a remove that is not a list of event ids"
        return None
    record = payload["add"]
    if not isinstance(record, dict):
        return "an add whose record is not an object"
    for name in RECORD_STRINGS:
        if not isinstance(record.get(name), str):
            return f"an add whose record has no string {name}"
    for name in RECORD_LISTS:
        if not isinstance(record.get(name), list):
            return f"an add whose record has no list {name}"
    return None


def live_records(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of a log: its adds, less the removes that followed them, in order
    (linear). An event id can be live in two records: an event dead-lettered, then
    received again by a wiped site that forwards it (R21, R22) and failing again (R24
    appends each failure); a remove of the id takes every record of it (R26)."""
    records: dict[int, dict[str, Any]] = {}  # frame index -> its add, in file order
    frames: dict[str, list[int]] = {}  # event id -> its live adds' frame indexes
    for index, payload in enumerate(payloads):
        if "add" in payload:
            record = payload["add"]
            record.setdefault("thread", 0)  # a store written before SPEC v2.0 (R29)
            records[index] = record
            frames.setdefault(record["event_id"], []).append(index)
        else:
            for event_id in payload["remove"]:
                for gone in frames.pop(event_id, ()):
                    del records[gone]
    return list(records.values())


class SenderLog:
    """One sender's log, open for appends."""

    def __init__(self, path: Path, notice: Callable[[str], None], durable: bool = True) -> None:
        self.path = path
        self.durable = durable
        framing.remove_unfinished(path, notice)
        created = not path.exists()
        payloads, end, size = ([], 0, 0) if created else read_frames(path)
        framing.cut_torn_tail(path, end, size, notice, durable)
        self.records = live_records(payloads)
        self.frames = len(payloads)
        self._file = path.open("ab")
        if created and durable:
            fsync_directory(path.parent)

    def _write(self, payload: dict[str, Any]) -> None:
        self._file.write(frame(payload))
        self._file.flush()
        if self.durable:
            os.fsync(self._file.fileno())
        self.frames += 1

    def append(self, record: dict[str, Any]) -> None:
        self._write({"add": record})
        self.records.append(record)

    def remove(self, event_ids: list[str]) -> None:
        self._write({"remove": event_ids})
        self.records = live_records([{"add": r} for r in self.records] + [{"remove": event_ids}])
        if self.frames > 2 * max(1, len(self.records)):
            self.compact()

    def compact(self) -> None:
        """Rewrite the live records only: a temporary file, fsync, rename, fsync dir."""
        self._file.close()
        chunks = (frame({"add": record}) for record in self.records)
        framing.replace_atomically(self.path, chunks, self.durable)
        self.frames = len(self.records)
        self._file = self.path.open("ab")

    def read_back(self) -> list[dict[str, Any]]:
        """The records as the file holds them now (what the lockstep compares)."""
        payloads, end, size = read_frames(self.path)
        if end != size:
            raise StoreError(f"{self.path}: byte {end}: torn while open")
        return live_records(payloads)

    def close(self) -> None:
        self._file.close()


def check_directory(folder: str | os.PathLike[str], write: bool = True) -> Path:
    """A store directory that exists and is a writable directory (readable, if not
    `write`), or StoreError."""
    return framing.check_directory(folder, "a dead-letter store", write)


def open_store(
    folder: str | os.PathLike[str],
    senders: list[str],
    notice: Callable[[str], None],
    durable: bool = True,
) -> dict[str, SenderLog]:
    """Every sender's log in `folder` (created as needed), recovered (module docstring)."""
    path = check_directory(folder)
    return {sender: SenderLog(path / sender_file(sender), notice, durable) for sender in senders}


def read_store(
    folder: str | os.PathLike[str], notice: Callable[[str], None] = lambda line: None
) -> dict[str, list[dict[str, Any]]]:
    """Every sender's records in a store, read only (the inspector): sender file -> records.
    A torn tail is left as it is (and not read), with a `notice`; damage is a StoreError.
    A store on a read-only disk, or not the user's to write, is read all the same."""
    path = check_directory(folder, write=False)
    files = sorted(p for p in path.iterdir() if p.suffix == SUFFIX)
    others = [
        p.name
        for p in path.iterdir()
        if p.suffix != SUFFIX and not p.name.endswith(framing.TEMPORARY)
    ]
    if not files and others:
        raise StoreError(f"{path}: not a dead-letter store (no *{SUFFIX} files; found {others[0]})")
    held = {}
    for file in files:
        payloads, end, size = read_frames(file)
        if end < size:
            notice(
                f"{file}: a torn tail of {size - end} bytes at byte {end} (a crash mid-write) "
                "was not read; the store was not changed (the next run that opens it cuts it)"
            )
        held[file.name] = live_records(payloads)
    return held


# -- the crash writer of `wanconform bench --dlq-crash` (conformance/bench.py) -----------


def crash_record(number: int) -> dict[str, Any]:
    """The record the crash writer writes as number `number` (deterministic, so that a
    reader can tell an intact record from a torn one)."""
    return {
        "event_id": f"1:{number}",
        "sender": "ny",
        "key": f"k{number % 97}",
        "op": "create",
        "exception": "E",
        "version": [1, number, 1],
        "value": {"v": number, "pad": "x" * (number % 50)},
        "recipients": [1, 2],
        "thread": 0,
    }


def crash_writer(folder: str, start: int) -> None:
    """Append records `start`, `start + 1`, ... to sender ny's log in `folder` until
    killed, removing an earlier one now and then; print `add ID` / `remove ID` only once
    the store has made it durable (that is what the bench holds the store to). Run as
    `python -m conformance.running.dlq_writer FOLDER START`."""
    log = SenderLog(Path(folder) / sender_file("ny"), lambda line: None)
    print("ready", flush=True)
    live = [str(record["event_id"]) for record in log.records]
    number = start
    while True:
        log.append(crash_record(number))
        live.append(f"1:{number}")
        print(f"add 1:{number}", flush=True)
        if number % 3 == 0 and len(live) > 1:
            gone = live.pop((number * 7919) % (len(live) - 1))
            log.remove([gone])
            print(f"remove {gone}", flush=True)
        number += 1
