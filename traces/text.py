"""Words for messages: counts (`1 entry`, `2 entries`, never "entry(ies)"), and the user's
text escaped to one line (`printable`) and cut short (`cut`)."""

from __future__ import annotations

MAX_VALUE_CHARS = 200  # a value quoted in a one-line message or a result row: at most this


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


def cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """`text`, or its first `limit` characters and "..." when it is longer: a value
    quoted in a message (a multi-megabyte entry) or a result row stays short."""
    return text if len(text) <= limit else text[:limit] + "..."


def visible(text: str) -> str:
    """`text` as `printable` has it but for its line breaks and tabs, kept: for a page
    that shows the user's text in blocks of lines (the HTML report), where a bidirectional
    override would turn the rest of its line around and a control character vanish."""
    if text.isprintable():
        return text
    return "\n".join(
        "\t".join(printable(part) for part in line.split("\t")) for line in text.split("\n")
    )
