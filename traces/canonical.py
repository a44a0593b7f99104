"""Canonical JSON (SPEC §10) and sizes (R4).

R4 fixes the encoder as `json.dumps(x, sort_keys=True, separators=(",", ":"))`. Our
reading: `ensure_ascii` keeps its default (True), exactly as written, so a non-ASCII
character counts as its six-byte `\\uXXXX` escape; the UTF-8 encoding of that text is
then plain ASCII and its byte length equals its character count.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_MAKE_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # None without the C module


def _c_encoder(sort_keys: bool) -> Any:
    """The C encoder `JSONEncoder.encode` would build (the same arguments, without the
    check for cycles), built once: `json.dumps` with options builds a new JSONEncoder on
    every call, and `JSONEncoder.encode` a new C encoder. Same text."""
    if _MAKE_C_ENCODER is None:
        return None
    return _MAKE_C_ENCODER(
        None,  # no circular-reference markers: JSON data parsed from text has no cycles
        _ENCODER.default,
        json.encoder.encode_basestring_ascii,  # ensure_ascii=True, as json.dumps
        None,
        ":",
        ",",
        sort_keys,
        False,
        True,  # allow_nan, as json.dumps
    )


_C_ENCODE = _c_encoder(sort_keys=True)
_C_ENCODE_UNSORTED = _c_encoder(sort_keys=False)  # for sizes: key order changes no length


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value: sorted keys, no spaces."""
    if _C_ENCODE is None:
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


_MSGSPEC_ENCODE = msgspec.json.Encoder().encode


def size(value: Any) -> int:
    """R4: byte length of the canonical JSON of a value or delta (a destroy is 0: pass None).

    msgspec's compact encoding is the same text as `json.dumps`'s whenever it is printable
    ASCII without a backslash (`json.dumps` escapes every other character its own way,
    `ensure_ascii`), and four times as fast; any other value is sized the reference way.
    """
    if value is None:
        return 0
    try:
        data = _MSGSPEC_ENCODE(value)
    except (
        TypeError,
        ValueError,
        OverflowError,
        msgspec.EncodeError,
    ):  # ValueError: a lone surrogate
        data = b"\\"  # not what msgspec encodes: the reference way below
    if data.isascii() and b"\\" not in data and b"\x7f" not in data:
        return len(data)
    if _C_ENCODE_UNSORTED is None:
        return len(canonical_json(value))
    return len("".join(_C_ENCODE_UNSORTED(value, 0)))  # the same pairs in another order
