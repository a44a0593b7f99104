"""The live sites' wire protocol: frames of a 4-byte big-endian length and JSON (UTF-8).

A sender writes `{"type": "batch", "sender", "batch_id", "events": [...]}` on its
connection; the receiver answers each with `{"type": "ack", "batch_id", "statuses"}`
(R17). The proxy between them (`conformance.live.run`) reads and writes the same frames.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

MAX_FRAME = 64 * 1024 * 1024


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame's message, or None at the end of the stream."""
    raw = await read_raw(reader)
    return None if raw is None else json.loads(raw)


async def read_raw(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's bytes (without its length), or None at the end of the stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return None
    (length,) = struct.unpack(">I", head)
    if length > MAX_FRAME:
        raise OSError(f"a frame of {length} bytes: not a wanconform live peer")
    return await reader.readexactly(length)


async def write_raw(writer: asyncio.StreamWriter, raw: bytes) -> None:
    writer.write(struct.pack(">I", len(raw)) + raw)
    await writer.drain()


async def write_frame(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    await write_raw(writer, json.dumps(message).encode())
