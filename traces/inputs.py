"""Reading a user's input file: every failure is one line naming the file (exit 2)."""

from __future__ import annotations

import os

from wanconform.errors import TraceError, WanconformError


def read_bytes(
    path: str | os.PathLike[str], expected: str, error: type[WanconformError] = TraceError
) -> bytes:
    """The bytes of `path`; `expected` names what it should be ("a trace file")."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not {expected}") from None
    except PermissionError:
        raise error(f"{name}: permission denied") from None
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror}") from None


def read_text(
    path: str | os.PathLike[str], expected: str, error: type[WanconformError] = TraceError
) -> str:
    """The UTF-8 text of `path`."""
    data = read_bytes(path, expected, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{os.fspath(path)}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
