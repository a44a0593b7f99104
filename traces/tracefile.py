"""Trace files as JSON Lines (SPEC §12): read with full validation, write canonically.

Line 1 is `{"config": {...}}`; every further non-blank line is one operation of §3.
Every problem is reported as `FILE:LINE: field: what is wrong` (`TraceError`), and a
trace is validated whole before any of it runs.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.files import read_text, write_text_atomically
from traces.ops import Op, OpError, op_to_json, parse_op
from wanconform.errors import ConfigError, TraceError


@dataclass(frozen=True, slots=True)
class Trace:
    """A configuration and the operations to run on it; `name` says where it came from."""

    config: Config
    ops: tuple[Op, ...]
    name: str = "<trace>"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"field {key!r} appears twice in one object")
        out[key] = value
    return out


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def decode_line(text: str) -> Any:
    """Strict JSON: no duplicate keys, no NaN/Infinity."""
    return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)


def parse_trace_lines(lines: Iterable[str], name: str) -> Trace:
    """Parse the lines of a JSON Lines trace; `name` is used in error messages."""
    config: Config | None = None
    ops: list[Op] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            raw = decode_line(line)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise TraceError(f"{where}: not valid JSON: {exc}") from None
        if config is None:
            if not isinstance(raw, dict) or set(raw) != {"config"}:
                raise TraceError(
                    f'{where}: the first line must be {{"config": {{...}}}} (SPEC §12)'
                )
            try:
                config = parse_config(raw["config"])
            except ConfigError as exc:
                path = str(exc) if str(exc).startswith("config") else f"config.{exc}"
                raise TraceError(f"{where}: {path}") from None
            continue
        try:
            ops.append(parse_op(raw, config))
        except OpError as exc:
            raise TraceError(f"{where}: {exc}") from None
    if config is None:
        raise TraceError(f'{name}:1: empty trace: the first line must be {{"config": {{...}}}}')
    return Trace(config=config, ops=tuple(ops), name=name)


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate a trace file; every problem is a TraceError naming file and line."""
    text = read_text(path, "a trace file")
    # Lines as a text file splits them (not str.splitlines, which also splits on U+2028).
    return parse_trace_lines(io.StringIO(text, newline=None), os.fspath(path))


def trace_lines(config: Config, ops: Sequence[Op]) -> list[str]:
    """The canonical JSON Lines text of a trace, one string per line (no newlines)."""
    lines = [canonical_json({"config": config.to_json()})]
    lines.extend(canonical_json(op_to_json(op)) for op in ops)
    return lines


def trace_text(config: Config, ops: Sequence[Op]) -> str:
    """The whole canonical JSON Lines file of a trace."""
    return "".join(line + "\n" for line in trace_lines(config, ops))


def write_trace(path: str | os.PathLike[str], config: Config, ops: Sequence[Op]) -> None:
    """Write a trace atomically: a reader never sees a half-written file."""
    write_text_atomically(path, trace_text(config, ops))


# Temporary minimal streaming surface (replaced by the streaming reader).
def where(name: str, line: int) -> str:
    """The one way to name an operation in messages: `t.jsonl:9`."""
    return f"{name}:{line}"


@dataclass(frozen=True, slots=True)
class TraceSource:
    name: str
    config: Config
    op_count: int
    _lines: tuple[int, ...]
    _ops: tuple[Op, ...]

    def ops(self) -> Iterator[tuple[int, Op]]:
        return zip(self._lines, self._ops, strict=True)


def open_trace(path: str | os.PathLike[str]) -> TraceSource:
    trace = read_trace(path)
    text = read_text(path, "a trace file")
    numbers = [n for n, line in enumerate(io.StringIO(text, newline=None), 1) if line.strip()]
    return TraceSource(trace.name, trace.config, len(trace.ops), tuple(numbers[1:]), trace.ops)
