"""Reading a user's input files and writing outputs whole or not at all.

Every failure is one line naming the file (the command line exits 2).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write a whole file or nothing: a temporary file in the same folder, then rename."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise WanconformError(f"{os.fspath(path)}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        umask = os.umask(0)  # mkstemp makes the file 0600; give it the usual mode
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WanconformError(f"{os.fspath(path)}: cannot write: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
