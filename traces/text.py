"""Words for counts in messages: `1 entry`, `2 entries` (never "entry(ies)")."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """A count and its noun, singular or plural: `plural(2, "entry", "entries")`."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def printable(text: str) -> str:
    """`text` with every character a terminal would not show as itself (a line break, a
    carriage return, a control or bidirectional-override character) escaped as `\\r`,
    `\\x00`, `\\u202e`: a message quoting the user's bytes stays one visible line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
