"""The frame logs under the impl's durable stores (impl/framing.py; docs/DLQ_STORE.md,
docs/QUEUE_STORE.md): what a whole frame is, where a torn tail starts and where damage is,
byte by byte on hand-made files, and how a store's directory is checked."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any

import pytest

from impl.framing import HEADER, StoreError, check_directory, frame, scan_frames

MAGIC = b"WTST"


def test_a_frame_is_magic_length_checksum_and_payload_in_big_endian() -> None:
    payload = b"x" * 258  # a length and a checksum whose bytes differ in either order
    assert frame(MAGIC, payload) == (
        MAGIC + (258).to_bytes(4, "big") + zlib.crc32(payload).to_bytes(4, "big") + payload
    )
    assert frame(MAGIC, payload)[4:8] == b"\x00\x00\x01\x02"


def test_whole_frames_are_read_with_their_offsets_an_empty_payload_included(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log"
    first, empty, last = frame(MAGIC, b"one"), frame(MAGIC, b""), frame(MAGIC, b"three")
    path.write_bytes(first + empty + last)
    size = len(first + empty + last)
    assert scan_frames(path, MAGIC, "a test frame") == (
        [(0, b"one"), (len(first), b""), (len(first) + HEADER, b"three")],
        size,
        size,
    )
    path.write_bytes(first + empty)  # the empty frame last: exactly a header's bytes left
    assert scan_frames(path, MAGIC, "a test frame")[0] == [(0, b"one"), (len(first), b"")]


def test_a_frame_longer_than_16_mib_is_read_by_its_four_length_bytes(tmp_path: Path) -> None:
    path = tmp_path / "log"
    big = b"b" * ((1 << 24) + 3)  # its length's first byte is not zero
    path.write_bytes(frame(MAGIC, b"a") + frame(MAGIC, big))
    frames, end, size = scan_frames(path, MAGIC, "a test frame")
    assert [(offset, len(payload)) for offset, payload in frames] == [
        (0, 1),
        (HEADER + 1, len(big)),
    ]
    assert end == size
    # a damaged length before it: damage, named with the big frame's offset
    data = bytearray(path.read_bytes())
    data[4:8] = (1 << 30).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=f"a whole frame follows at byte {HEADER + 1}\\)"):
        scan_frames(path, MAGIC, "a test frame")


def test_a_torn_tail_whose_bytes_hold_the_magic_is_still_a_torn_tail(tmp_path: Path) -> None:
    """A crash tears the last frame alone, and its payload may hold the magic (a key
    written as `WTST...`): only a whole frame after it makes it damage."""
    path = tmp_path / "log"
    first = frame(MAGIC, b"one")
    torn = frame(MAGIC, b"key " + MAGIC + b"\x00\x00\x00\x09 and more")[:-3]
    path.write_bytes(first + torn)
    assert scan_frames(path, MAGIC, "a test frame") == (
        [(0, b"one")],
        len(first),
        len(first + torn),
    )


def test_damage_is_named_at_the_first_whole_frame_after_it(tmp_path: Path) -> None:
    """The magic after a damaged length may begin no whole frame (a frame whose checksum
    fails, the magic inside a payload): the search goes on to the next one, in order.
    A whole last frame, ending the file, counts too."""
    path = tmp_path / "log"
    damaged = bytearray(frame(MAGIC, b"first"))
    damaged[4:8] = (1 << 30).to_bytes(4, "big")
    failing = bytearray(frame(MAGIC, b"second"))
    failing[-1] ^= 1  # its checksum fails
    inside = frame(MAGIC, b"x" + MAGIC + b"\xff\xff\xff\xff")[:-1] + b"!"  # fails too
    whole = frame(MAGIC, b"last")
    tail = MAGIC + b"\x00\x00"  # and, after it, one more magic that begins nothing whole
    path.write_bytes(bytes(damaged) + bytes(failing) + inside + whole + tail)
    at = len(damaged) + len(failing) + len(inside)
    message = (
        f"{path}: byte 0: damaged frame (length runs past the end of the file, but a whole "
        f"frame follows at byte {at})"
    )
    with pytest.raises(StoreError, match=re.escape(message)):
        scan_frames(path, MAGIC, "a test frame")
    path.write_bytes(bytes(damaged) + whole)  # the only whole frame after it ends the file
    with pytest.raises(StoreError, match=f"a whole frame follows at byte {len(damaged)}\\)"):
        scan_frames(path, MAGIC, "a test frame")


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    folder.mkdir()  # a directory where the log should be
    with pytest.raises(StoreError, match=re.escape(f"{folder}: cannot read: Is a directory")):
        scan_frames(folder, MAGIC, "a test frame")


@pytest.mark.parametrize(
    ("write", "mode", "message"),
    [
        (True, os.R_OK | os.W_OK | os.X_OK, "cannot read and write it"),
        (False, os.R_OK | os.X_OK, "cannot read it"),  # the inspector only reads
    ],
)
def test_a_store_directory_is_checked_for_what_its_user_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: bool, mode: int, message: str
) -> None:
    # (as the root user every access is granted: os.access is asked, and told no)
    asked: list[tuple[Any, int]] = []

    def access(path: Any, wanted: int) -> bool:
        asked.append((path, wanted))
        return False

    monkeypatch.setattr(os, "access", access)
    with pytest.raises(StoreError, match=re.escape(f"{tmp_path}: {message}")):
        check_directory(tmp_path, "a test store", write)
    assert asked == [(tmp_path, mode)]
    asked.clear()
    with pytest.raises(StoreError, match="cannot read and write it"):
        check_directory(tmp_path, "a test store")  # writing, unless told otherwise
    assert asked == [(tmp_path, os.R_OK | os.W_OK | os.X_OK)]
