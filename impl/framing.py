"""The frame logs of the impl's durable stores: the dead-letter store (impl/dlq_store.py,
docs/DLQ_STORE.md) and the queue store (impl/queue_store.py, docs/QUEUE_STORE.md).

A store file is an append-only log of frames,

    magic (4 bytes) | length (4 bytes, big-endian) | CRC-32 of the payload (4 bytes) | payload

each store with its own magic and payloads. This module frames payloads, scans a file's
frames (a torn tail told apart from damage), cuts a torn tail, fsyncs a directory and
replaces a file atomically (a temporary file, fsync, rename, directory fsync).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from traces.errors import WanconformError

HEADER = 12  # magic, length, CRC-32
TEMPORARY = ".compacting"  # the suffix of a file being rewritten


class StoreError(WanconformError):
    """A store that cannot be used: missing, not a directory, unreadable or damaged."""


NAME_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def escape_name(name: str) -> str:
    """A sender id as a file name: anything but [A-Za-z0-9_-] escaped as %XX, a byte of its
    UTF-8 (so that two ids never share a name: `ord` as hex made U+20AC then A, "%20ACA",
    the name of " ACA"; and str.isalnum let "é" through unescaped)."""
    return "".join(
        c if c in NAME_SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in name
    )


def frame(magic: bytes, data: bytes) -> bytes:
    """One frame around a payload's bytes."""
    return magic + len(data).to_bytes(4, "big") + zlib.crc32(data).to_bytes(4, "big") + data


def scan_frames(
    path: Path, magic: bytes, what: str, each: Callable[[int, bytes], None] | None = None
) -> tuple[list[tuple[int, bytes]], int, int]:
    """The (offset, payload bytes) of a log's whole frames whose checksum holds, the
    offset where they end, and the file's size (more than that offset when the tail is
    torn: cut short, or a last frame whose checksum fails). StoreError, naming the file
    and the byte offset, on a wrong magic or an earlier frame's failed checksum; `what`
    names the store's frames ("a dead-letter frame"). `each(offset, payload)` is called
    on every whole frame as it is found (so the first damage in the file is reported)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
    frames: list[tuple[int, bytes]] = []
    offset = 0
    size = len(data)
    while offset < size:
        if size - offset < HEADER:
            break  # torn: a header cut short
        if data[offset : offset + 4] != magic:
            raise StoreError(f"{path}: byte {offset}: not {what} (damaged or not a store file)")
        end = offset + HEADER + int.from_bytes(data[offset + 4 : offset + 8], "big")
        if end > size:
            _not_followed(path, data, offset, magic, "length runs past the end of the file")
            break  # torn: a payload cut short
        payload = data[offset + HEADER : end]
        if zlib.crc32(payload) != int.from_bytes(data[offset + 8 : offset + 12], "big"):
            if end == size:
                _not_followed(path, data, offset, magic, "checksum mismatch")
                break  # torn: the last frame's bytes did not all reach the disk
            raise StoreError(f"{path}: byte {offset}: damaged frame (checksum mismatch)")
        if each is not None:
            each(offset, payload)
        frames.append((offset, payload))
        offset = end
    return frames, offset, size


def _not_followed(path: Path, data: bytes, start: int, magic: bytes, why: str) -> None:
    """A tail that looks torn at `start` is one only if no whole frame (its magic, a
    length within the file, a checksum that holds) begins after it: a crash mid-append
    tears the last frame alone. A damaged length in an earlier frame would otherwise
    pass for a tear, and the writer's recovery cut every frame after it. StoreError."""
    at = data.find(magic, start + 1)
    while at >= 0:
        end = at + HEADER + int.from_bytes(data[at + 4 : at + 8], "big")
        if end <= len(data):  # (so is its header: end is at least at + HEADER)
            checksum = int.from_bytes(data[at + 8 : at + 12], "big")
            if zlib.crc32(data[at + HEADER : end]) == checksum:
                raise StoreError(
                    f"{path}: byte {start}: damaged frame ({why}, but a whole frame follows "
                    f"at byte {at})"
                )
        at = data.find(magic, at + 1)


def cut_torn_tail(
    path: Path, end: int, size: int, notice: Callable[[str], None], durable: bool
) -> None:
    """Truncate a log to its last whole frame (`end`), with one notice, if its tail is torn."""
    if end >= size:
        return
    notice(f"{path}: cut a torn tail of {size - end} bytes at byte {end} (a crash mid-write)")
    with path.open("r+b") as handle:
        handle.truncate(end)
        if durable:
            os.fsync(handle.fileno())


def remove_unfinished(path: Path, notice: Callable[[str], None]) -> None:
    """Remove a leftover `path` + TEMPORARY, with one notice: a compaction cut short
    before its rename (replace_atomically), so `path` itself is whole."""
    leftover = path.with_name(path.name + TEMPORARY)
    if leftover.exists():
        leftover.unlink()
        notice(f"{leftover}: removed an unfinished compaction")


def fsync_directory(folder: Path) -> None:
    """Make a directory's entries (a new or renamed file's name) durable."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_all(descriptor: int, data: bytes) -> None:
    """os.write until every byte is with the OS (a regular file takes them in one call
    unless the disk is full or a signal interrupts it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def replace_atomically(path: Path, chunks: Iterable[bytes], durable: bool) -> None:
    """Write `chunks` to `path` + TEMPORARY, fsync it, rename it over `path` (atomic on
    POSIX) and fsync the directory: a crash leaves the old file or the new one, whole."""
    temporary = path.with_name(path.name + TEMPORARY)
    with temporary.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    if durable:
        fsync_directory(path.parent)


def check_directory(folder: str | os.PathLike[str], kind: str, write: bool = True) -> Path:
    """A store directory that exists and is a writable directory (readable, if not
    `write`: the inspector only reads), or StoreError."""
    path = Path(folder)
    if not path.exists():
        raise StoreError(f"{path}: no such directory ({kind} is a directory)")
    if not path.is_dir():
        raise StoreError(f"{path}: not a directory ({kind} is a directory)")
    if not os.access(path, os.R_OK | os.X_OK | (os.W_OK if write else 0)):
        raise StoreError(
            f"{path}: cannot read and write it" if write else f"{path}: cannot read it"
        )
    return path
