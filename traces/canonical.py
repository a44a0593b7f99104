"""Canonical JSON (SPEC §10) and sizes (R4).

R4 fixes the encoder as `json.dumps(x, sort_keys=True, separators=(",", ":"))`. Our
reading: `ensure_ascii` keeps its default (True), exactly as written, so a non-ASCII
character counts as its six-byte `\\uXXXX` escape; the UTF-8 encoding of that text is
then plain ASCII and its byte length equals its character count.
"""

from __future__ import annotations

import json
from typing import Any

_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
"""R4's encoder, built once (`json.dumps` with options builds a new one on every call)."""


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value: sorted keys, no spaces."""
    return _ENCODE(value)


def size(value: Any) -> int:
    """R4: byte length of the canonical JSON of a value or delta (a destroy is 0: pass None)."""
    if value is None:
        return 0
    return len(canonical_json(value))
