"""Reading a user's input files (outputs: `traces.outputs`).

Every failure is one line naming the file (the command line exits 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from traces.errors import TraceError, WanconformError


def _cannot_read(
    exc: OSError, name: str, expected: str, error: type[WanconformError]
) -> WanconformError:
    if not name:  # (open("") is "no such file": the message would name nothing)
        return error(f"an empty path; give the name of {expected}")
    if isinstance(exc, FileNotFoundError):
        return error(f"{name}: no such file")
    if isinstance(exc, IsADirectoryError):
        return error(f"{name}: is a directory, not {expected}")
    if isinstance(exc, PermissionError):
        return error(f"{name}: permission denied")
    return error(f"{name}: cannot read: {exc.strerror}")


def read_chunks(
    path: str | os.PathLike[str],
    expected: str,
    error: type[WanconformError] = TraceError,
    size: int = 1 << 20,
) -> Iterator[bytes]:
    """The bytes of `path` in pieces of at most `size`, for reading files of any length in
    bounded memory; `expected` names what the file should be ("a trace file")."""
    name = os.fspath(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below; errors mapped while reading)
    except OSError as exc:
        raise _cannot_read(exc, name, expected, error) from None
    with handle:
        while True:
            try:
                chunk = handle.read(size)
            except OSError as exc:
                raise _cannot_read(exc, name, expected, error) from None
            if not chunk:
                return
            yield chunk


def read_bytes(
    path: str | os.PathLike[str], expected: str, error: type[WanconformError] = TraceError
) -> bytes:
    """The bytes of `path`; `expected` names what it should be ("a trace file")."""
    return b"".join(read_chunks(path, expected, error))


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


def check_rereadable(name: str, what: str) -> None:
    """A file read more than once (validated, then run) must be a regular file: a pipe's
    second reading finds nothing, so one is refused by name. `what`: "a trace", "a log"."""
    if os.path.exists(name) and not (os.path.isfile(name) or os.path.isdir(name)):
        raise TraceError(
            f"{name}: not a regular file (a pipe?): {what} is read more than once; give a file"
        )
