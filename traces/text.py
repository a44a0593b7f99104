"""Words for counts in messages: `1 entry`, `2 entries` (never "entry(ies)")."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """A count and its noun, singular or plural: `plural(2, "entry", "entries")`."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"
