"""Words for messages: counts (`1 entry`, `2 entries`, never "entry(ies)"), and the user's
text escaped to one line (`printable`) and cut short (`cut`), and a path quoted for a
command the user is to paste into a shell (`shell_word`)."""

from __future__ import annotations

import shlex

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


def shell_word(text: str) -> str:
    """`text` as one word of a command printed for the user to paste into a shell:
    `shlex.quote`'s (`'my traces'`), or, for a name `printable` would escape (a line break,
    a control character, a byte that is not UTF-8), bash's and zsh's `$'...'` with each
    such character as its bytes (`$'n\\x0al'`, `$'b\\xff'`): one visible line, which
    names the same file when pasted into bash or zsh (not a plain POSIX sh)."""
    if text.isprintable():
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(c) for c in text) + "'"


def _ansi_c(char: str) -> str:
    """One character inside `$'...'`: itself, `\\` or `\\'`, or its bytes (UTF-8; a
    surrogate-escaped byte as that byte) as `\\xNN` each."""
    if char in "\\'":
        return "\\" + char
    if char.isprintable():
        return char
    try:
        encoded = char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name's byte becomes
        encoded = char.encode("utf-8", "surrogatepass")
    return "".join(f"\\x{byte:02x}" for byte in encoded)


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
