"""Trace files as JSON Lines (SPEC §12): read with full validation, streamed; written canonically.

Line 1 is `{"config": {...}}`; every further non-blank line is one operation of §3.
Every problem is reported as `FILE:LINE: field: what is wrong` (`TraceError`), and a
trace is validated whole before any of it runs. An operation is named by its file line,
`where(name, line)` -> "t.jsonl:9", everywhere.

`open_trace` streams: one pass validates the whole file in bounded memory, and every
`TraceSource.ops()` reads it again, so no trace is ever held whole.

Two validators, one verdict. The fast one (msgspec, typed by `traces.ops.FIELD_KINDS` and
the configuration's sites and senders: strict types, 64-bit bounds, no unknown or missing
field) takes a line in any key order and spacing, as Python's `json.dumps` or a Java
logger writes it, when two more things hold that msgspec does not check: the line has no
backslash (so no escape, and no half of a surrogate pair), and, spaces aside, it is as long
as the canonical encoding of what was decoded (so no key written twice: msgspec would keep
the last). Every line it
does not take goes to the precise validator (`decode_line` + `parse_op`), which accepts
it or says what is wrong. So the fast path never accepts what the precise one rejects,
and builds the same operation (tests/test_tracefile.py checks this on random and mutated
lines in several encodings).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

import msgspec
import orjson

from traces.canonical import canonical_json
from traces.config import INT64_MAX, INT64_MIN, Config, JsonNumber, parse_config
from traces.errors import ConfigError, TraceError
from traces.files import check_rereadable, read_chunks
from traces.ops import (
    EVENT_LOG_FIELD_KINDS,
    EVENT_LOG_OPS,
    FIELD_KINDS,
    OMITTED_AT_ZERO,
    OP_TYPES,
    Op,
    OpError,
    Tick,
    op_to_json,
    parse_op,
)
from traces.outputs import write_text_atomically

BOM = "\ufeff"  # accepted at the start of a file, as RFC 8259 §8.1 allows a parser to
JSON_SPACE = " \t\r\n"  # RFC 8259's whitespace; nothing else makes a line blank
CHUNK_SIZE = 1 << 18  # bytes read at a time
PARQUET_MAGIC = b"PAR1"  # a Parquet file's first bytes


def where(name: str, line: int) -> str:
    """The one way to name an operation (or any line) of a trace: "t.jsonl:9"."""
    return f"{name}:{line}"


@dataclass(frozen=True, slots=True)
class Trace:
    """A configuration and the operations to run on it; `name` says where it came from."""

    config: Config
    ops: tuple[Op, ...]
    name: str = "<trace>"


@dataclass(frozen=True, slots=True)
class TraceSource:
    """A validated trace file, read again on every `ops()`: memory does not grow with it."""

    name: str  # the path as given, used in messages ("t.jsonl")
    config: Config
    op_count: int  # number of operations
    path: str  # the path made absolute when the trace was validated, read again here (a
    # user's engine that changed the current directory since does not make it another file)

    def ops(self) -> Iterator[tuple[int, Op]]:
        """(file line number, operation) for every operation, read from the file again."""
        reader = Reader(self.name)
        count = 0
        for number, op in reader.operations(file_lines(self.path)):
            if count == 0 and reader.config != self.config:
                break
            count += 1
            yield number, op
        if count != self.op_count or reader.config != self.config:
            raise TraceError(f"{self.name}: the file changed since it was read")


PROGRESS_EVERY = 65_536
"""`open_trace` reports its progress after every this many operations."""


def open_trace(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> TraceSource:
    """Validate a whole trace file in one streaming pass; raise TraceError at its first problem.

    `progress(operations_so_far)` is called every `PROGRESS_EVERY` operations. The run
    reads the file again (`TraceSource.ops`), so a pipe is refused by name (its second
    reading would find nothing), as `validate` refuses one."""
    name = os.fspath(path)
    check_rereadable(name, "a trace")
    reader = Reader(name)
    count = 0
    for _ in reader.operations(file_lines(name)):
        count += 1
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count)
    assert reader.config is not None  # operations() raises on a trace without one
    return TraceSource(name=name, config=reader.config, op_count=count, path=os.path.abspath(name))


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate a whole trace file into memory (small traces, tests)."""
    name = os.fspath(path)
    reader = Reader(name)
    ops = tuple(op for _, op in reader.operations(file_lines(name)))
    assert reader.config is not None
    return Trace(config=reader.config, ops=ops, name=name)


def parse_trace_lines(lines: Iterable[str], name: str) -> Trace:
    """Parse the lines of a JSON Lines trace; `name` is used in error messages."""
    reader = Reader(name)
    ops = tuple(op for _, op in reader.operations(lines))
    assert reader.config is not None
    return Trace(config=reader.config, ops=ops, name=name)


def file_lines(name: str) -> Iterator[bytes]:
    """The lines of a file without their b"\\n", read in chunks (bounded by the longest line)."""
    pieces: list[bytes] = []  # of the line not yet ended (joined once: a long line is linear)
    for chunk in read_chunks(name, "a trace file", size=CHUNK_SIZE):
        end = chunk.rfind(b"\n")
        if end < 0:
            pieces.append(chunk)
            continue
        pieces.append(chunk[:end])
        lines = b"".join(pieces).split(b"\n")
        pieces = [chunk[end + 1 :]]
        yield from lines
    if tail := b"".join(pieces):
        yield tail


def numbered_lines(path: str, offset: int, first: int) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line without b"\\n") from `offset`, which starts line
    `first`."""
    number, position = first, offset
    pending = b""
    with open(path, "rb") as file:
        file.seek(offset)
        while chunk := file.read(CHUNK_SIZE):
            data = pending + chunk
            start = 0
            while (end := data.find(b"\n", start)) >= 0:
                yield number, position, data[start:end]
                position += end - start + 1
                number += 1
                start = end + 1
            pending = data[start:]
    if pending:
        yield number, position, pending


# --- the precise validator -------------------------------------------------------------


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is a ValueError (`json.loads`'s
    `object_pairs_hook`: Python's `json` would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"field {key!r} appears twice in one object")
        out[key] = value
    return out


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


NUMBERS_KEPT = [0]
"""How many numbers `decode_line` kept as text (`JsonNumber`) so far: a reader that must
find them in a decoded value looks only when this grew."""


def _number(text: str) -> JsonNumber:
    NUMBERS_KEPT[0] += 1
    return JsonNumber(text)


def _parse_int(text: str) -> int | JsonNumber:
    # No 64-bit integer has more than 20 characters; Python refuses over 4,300 digits.
    return int(text) if len(text) <= 20 else _number(text)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (or key) of a decoded value that is not Unicode text."""
    if isinstance(value, str):
        return None if value.isascii() or not _SURROGATE.search(value) else value
    items = [*value, *value.values()] if isinstance(value, dict) else value
    for item in items if isinstance(value, (dict, list)) else ():
        found = _lone_surrogate(item)
        if found is not None:
            return found
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_line(text: str) -> Any:
    """Strict JSON: no duplicate keys, no NaN/Infinity, no string holding half of a UTF-16
    surrogate pair (`"\\ud800"`: not a character, so not printable or writable as UTF-8;
    RFC 8259 §8.2); a number that is not a short integer is kept as its text
    (`JsonNumber`), so validation can say exactly what it is.

    A compact line (as orjson and this project's writers write them) is decoded by orjson,
    about three times as fast, and taken when orjson writes the value back as the very
    same text without a `.`, `e+` or `e-` anywhere: so no key appeared twice (orjson
    keeps one: the text would be shorter), nothing was NaN or half a surrogate pair
    (orjson refuses both) and no number was a float (orjson writes every float with one
    of those) or an integer beyond 64 bits (orjson reads it as a float). Any other line,
    or one that fails there, is decoded by Python's `json` with the checks that say
    exactly what is wrong (`decode_exactly`)."""
    data = text.encode("utf-8", "surrogatepass")  # orjson refuses a lone surrogate's bytes
    compact = b'": ' not in data  # else most likely spaced as `json.dumps` does: not worth it
    if compact and b"." not in data and b"e+" not in data and b"e-" not in data:
        try:
            value = orjson.loads(data)
            if orjson.dumps(value) == data:
                return value
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            pass  # (orjson writes no more than 255 levels deep: read it again, as it reads)
    return decode_exactly(text)


def decode_exactly(text: str) -> Any:
    """`decode_line` by Python's `json` alone, every check its own hook."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=no_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_number,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None
    problem = surrogate_problem(text, value)
    if problem:
        raise ValueError(problem)
    return value


def json_problem(exc: json.JSONDecodeError) -> str:
    """What Python's `json` found wrong, placed in its line: "not valid JSON: MSG at
    column N" (or "at the end of the line"); the caller names the file and the line
    (`exc.lineno`, 1 for a single line)."""
    if exc.msg.startswith("Unexpected UTF-8 BOM"):
        return "not valid JSON: a byte order mark (U+FEFF) is allowed only at the start of the file"
    end = exc.doc.find("\n", exc.pos)
    at_end = not exc.doc[exc.pos : None if end < 0 else end].strip(JSON_SPACE)
    place = "the end of the line" if at_end else f"column {exc.colno}"
    at = "" if exc.msg.endswith(" at") else " at"  # "... string starting at"
    return f"not valid JSON: {exc.msg}{at} {place}"


def surrogate_problem(text: str, value: Any) -> str:
    """What is wrong with JSON `text` decoded as `value` if one of its strings holds half
    of a UTF-16 surrogate pair (an escape such as `"\\ud800"`), else ""."""
    if _SURROGATE_ESCAPE.search(text) and (found := _lone_surrogate(value)) is not None:
        code = ord(_SURROGATE.findall(found)[0])
        return f"\\u{code:04x} is half of a UTF-16 surrogate pair, not a character"
    return ""


class Reader:
    """One pass over a trace's lines: the configuration, then each operation, validated."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.config: Config | None = None
        self.ticks = 0  # the running sum of the ticks' ms: 64-bit too (SPEC §3)

    def operations(self, lines: Iterable[bytes | str]) -> Iterator[tuple[int, Op]]:
        numbered = enumerate(lines, start=1)
        for number, line in numbered:
            self.precise(number, line)
            if self.config is not None:
                break
        else:
            raise TraceError(
                f'{where(self.name, 1)}: empty trace: the first line must be {{"config": {{...}}}}'
            )
        fast = fast_path(self.config)
        for number, line in numbered:
            op = fast(line)
            if op is None:
                op = self.precise(number, line)
                if op is None:
                    continue
            if type(op) is Tick:
                self.add_tick(number, op.ms)
            yield number, op

    def add_tick(self, number: int, ms: int) -> None:
        self.ticks += ms
        if self.ticks > INT64_MAX:
            raise TraceError(
                f"{where(self.name, number)}: ms: the ticks add up to {self.ticks}, "
                "past the signed 64-bit range (SPEC §3)"
            )

    def precise(self, number: int, line: bytes | str) -> Op | None:
        """Validate one line (config or operation), saying exactly what is wrong; None for a
        blank line or the configuration (then in `self.config`)."""
        decoded = self.decode(number, line)
        if decoded is None:
            return None
        here, raw = decoded
        if self.config is None:
            self.config = self._config(here, raw)
            return None
        return self.operation(here, raw)

    def operation(self, here: str, raw: Any) -> Op:
        """One decoded operation object, validated against the configuration."""
        assert self.config is not None
        try:
            return parse_op(raw, self.config)
        except OpError as exc:
            raise TraceError(f"{here}: {exc}") from None

    def decode(self, number: int, line: bytes | str) -> tuple[str, Any] | None:
        """A line's place ("t.jsonl:9") and its strict JSON; None for a blank line."""
        here = where(self.name, number)
        if number == 1 and isinstance(line, bytes) and line.startswith(PARQUET_MAGIC):
            raise TraceError(
                f"{here}: a Parquet file, not JSON Lines (`wanconform convert SET --out DIR` "
                "writes the traces of the trace set SET it belongs to as JSON Lines)"
            )
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TraceError(
                    f"{here}: not UTF-8 text: byte 0x{line[exc.start]:02x} at column "
                    f"{exc.start + 1} ({exc.reason})"
                ) from None
        else:
            text = line
        if number == 1:
            text = text.removeprefix(BOM)
        if not text.strip(JSON_SPACE):
            return None
        try:
            raw = decode_line(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{here}: {json_problem(exc)}") from None
        except ValueError as exc:
            raise TraceError(f"{here}: not valid JSON: {exc}") from None
        return here, raw

    @staticmethod
    def _config(here: str, raw: Any) -> Config:
        if isinstance(raw, dict) and "sites" in raw and "config" not in raw:
            raise TraceError(
                f"{here}: this is a configuration, not a trace: a trace's first line is "
                '{"config": {...}} followed by operations (SPEC §12)'
            )
        if not isinstance(raw, dict) or set(raw) != {"config"}:
            raise TraceError(f'{here}: the first line must be {{"config": {{...}}}} (SPEC §12)')
        try:
            return parse_config(raw["config"])
        except ConfigError as exc:
            path = str(exc) if str(exc).startswith("config") else f"config.{exc}"
            raise TraceError(f"{here}: {path}") from None


# --- the fast validator ----------------------------------------------------------------

_INT64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
_VALUE = dict[str, Union[_INT64, str, bool, None]]  # noqa: UP007 (a runtime type for msgspec)
_EVENT_IDS = tuple[Annotated[str, msgspec.Meta(pattern=r"^[0-9]+:[0-9]+\Z")], ...]
_ENCODER = msgspec.json.Encoder(order="sorted")
_JSON_SPACE = b" \t\r\n"


def fast_path(config: Config) -> Callable[[bytes | str], Op | None]:
    """The fast validator of a configuration's operation lines: the Op of a line that the
    precise validator would accept as that very Op, or None when it cannot tell (then the
    precise validator decides and explains)."""
    decoder, build = _fast_decoder(config.sites, tuple(s.id for s in config.senders), False)
    decode = decoder.decode
    op_of = op_builder(config, build)
    encode = _ENCODER.encode

    def fast(line: bytes | str) -> Op | None:
        if type(line) is not bytes:
            try:
                line = line.encode()  # type: ignore[union-attr]
            except UnicodeEncodeError:
                return None  # half of a surrogate pair: the precise validator says so
        try:
            struct = decode(line)
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
            return None  # the precise validator says what is wrong
        canonical = encode(struct)
        if canonical != line and (
            b"\\" in line  # an escape: the precise validator reads it
            # Without escapes, every string, number and literal of the line is written as in
            # the canonical form or longer (-0), so a line longer than that form, spaces
            # aside, has a key written twice (msgspec keeps the last).
            # (msgspec escapes tabs and line breaks: its only space is " ", in strings)
            or len(line.translate(None, _JSON_SPACE)) != len(canonical) - canonical.count(b" ")
        ):
            return None
        return op_of(struct)

    return fast


def fast_object_path(config: Config, event_log: bool = False) -> Callable[[Any], Op | None]:
    """The fast validator of decoded operation objects (strict JSON from `decode_line`, a
    log line's other fields taken out), a trace's or (`event_log`) an event log's
    (`traces.ops.EVENT_LOG_FIELD_KINDS`): the Op that `parse_op` would make of it, or None
    when it cannot tell (then `parse_op` decides and explains). msgspec's strict conversion
    checks what its decoder checks on a line, and a decoded object has no key twice and no
    escape left to check."""
    _, build = _fast_decoder(config.sites, tuple(s.id for s in config.senders), event_log)
    structs = {struct.__struct_config__.tag: struct for struct in build}
    op_of = op_builder(config, build)
    convert = msgspec.convert

    def fast(raw: Any) -> Op | None:
        # One Struct, not their Union: msgspec converts to a Union many times slower
        name = raw.get("op") if type(raw) is dict else None
        struct_type = structs.get(name) if type(name) is str else None
        if struct_type is None:
            return None  # `parse_op` says what is wrong
        try:
            struct = convert(raw, struct_type, strict=True)
        except (msgspec.MsgspecError, RecursionError):
            return None
        return op_of(struct)

    return fast


def op_builder(config: Config, build: dict[Any, tuple[Any, bool]]) -> Callable[[Any], Op | None]:
    """The Op of a fast decoder's Struct (see `_fast_decoder`; one may have more fields
    after the Op's), or None for a dispatcher index the sender does not have (§16.2: the
    precise path says so)."""
    plain = {
        struct: op_type for struct, (op_type, has_optional) in build.items() if not has_optional
    }
    optional = {
        struct: (op_type, tuple(f.default for f in dataclass_fields(op_type)))
        for struct, (op_type, has_optional) in build.items()
        if has_optional
    }
    dispatched = {op_type for op_type, _ in build.values() if "dispatcher" in op_type.__slots__}
    astuple = msgspec.structs.astuple
    unset = msgspec.UNSET
    dispatchers = {s.id: s.dispatcher_threads for s in config.senders}
    wider = {  # the Structs with more fields than their Op: how many are the Op's
        struct: len(op_type.__slots__)
        for struct, (op_type, _) in build.items()
        if len(struct.__struct_fields__) > len(op_type.__slots__)
    }

    def op_of(struct: Any) -> Op | None:
        values = astuple(struct)
        if wider and (width := wider.get(type(struct))) is not None:
            values = values[:width]
        op_type = plain.get(type(struct))
        if op_type is not None:
            op: Op = op_type(*values)
            if op_type in dispatched and op.dispatcher >= dispatchers[op.sender]:  # type: ignore[union-attr]
                return None
            return op
        op_type, defaults = optional[type(struct)]  # an absent optional field: the default
        assert op_type not in dispatched  # a dispatcher's operations have no other option
        if unset in values:
            values = tuple(d if v is unset else v for v, d in zip(values, defaults, strict=True))
        op = op_type(*values)
        return op

    return op_of


@lru_cache(maxsize=16)
def _fast_decoder(
    sites: tuple[int, ...], senders: tuple[str, ...], event_log: bool
) -> tuple[Any, dict[Any, tuple[Any, bool]]]:
    """A msgspec decoder of the operations valid in a configuration (a trace's, or
    `event_log`'s), and for each of its Structs the Op type (fields in the Op's order, so
    `Op(*astuple(struct))`) and whether it has optional fields (UNSET when absent, left to
    the Op's default)."""
    build: dict[Any, tuple[Any, bool]] = {}
    for name, (op_type, struct_fields, unset) in op_struct_fields(
        sites, senders, event_log
    ).items():
        struct = msgspec.defstruct(
            f"Fast{op_type.__name__}",
            struct_fields,
            tag_field="op",
            tag=name,
            forbid_unknown_fields=True,
            omit_defaults=True,
        )
        build[struct] = (op_type, unset)
    return msgspec.json.Decoder(Union[tuple(build)]), build  # noqa: UP007


def op_struct_fields(
    sites: tuple[int, ...], senders: tuple[str, ...], event_log: bool
) -> dict[str, tuple[type[Op], list[Any], bool]]:
    """Per operation valid in a configuration (a trace's, or `event_log`'s): its type, its
    fields as msgspec's `defstruct` takes them (strict types, 64-bit bounds; in the Op's
    order), and whether it has optional fields other than counts (UNSET when absent)."""
    kinds: dict[str, Any] = {
        "site": Literal[sites],
        "sender": Literal[senders] if senders else None,
        "key": str,
        "name": Annotated[str, msgspec.Meta(min_length=1)],
        "positive": Annotated[int, msgspec.Meta(gt=0, le=INT64_MAX)],
        "count?": Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)],
        "bool?": bool,
        "value": _VALUE,
        "entries": dict[str, _VALUE],
        "event_ids?": _EVENT_IDS,
    }
    out: dict[str, tuple[type[Op], list[Any], bool]] = {}
    for name, fields in (EVENT_LOG_FIELD_KINDS if event_log else FIELD_KINDS).items():
        if kinds["sender"] is None and "sender" in fields.values():
            continue  # no senders: such an operation is an error the precise path explains
        op_type = OP_TYPES.get(name) or EVENT_LOG_OPS[name]
        # v2.0's counts (`thread`, `dispatcher`) default to 0 in the Struct itself and are
        # left out of its encoding at 0 (as a trace line leaves them out), so an operation
        # with them is as quick as one without; other optional fields are UNSET when absent
        struct_fields = [
            (field, kinds[kind], 0)
            if kind == "count?"
            else (field, Union[kinds[kind], msgspec.UnsetType], msgspec.UNSET)  # noqa: UP007
            if kind.endswith("?")
            else (field, kinds[kind])
            for field, kind in fields.items()
        ]
        assert [f[0] for f in struct_fields] == list(op_type.__dataclass_fields__)
        unset = any(kind.endswith("?") and kind != "count?" for kind in fields.values())
        out[name] = (op_type, struct_fields, unset)
    return out


# --- writing ---------------------------------------------------------------------------

_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(cls.__dataclass_fields__) for cls in OP_TYPES.values()
}


def op_line(op: Op) -> str:
    """`canonical_json(op_to_json(op))`, an operation's trace line, made faster: msgspec's
    sorted-key encoding is the same text whenever it is printable ASCII without a backslash
    (json.dumps escapes non-ASCII, DEL and control characters its own way: R4's
    `ensure_ascii`); any other line is made the reference way. tests/test_profiles.py
    checks that both agree on every profile's traces."""
    out: dict[str, Any] = {"op": op.op}
    for name in _FIELD_NAMES[type(op)]:
        value = getattr(op, name)
        if value is not None and not (value == 0 and name in OMITTED_AT_ZERO):
            out[name] = value  # an optional field left out as `op_to_json` does
    try:
        data = _ENCODER.encode(out)
    except (TypeError, OverflowError, msgspec.EncodeError):  # a Mapping that is no dict, ...
        return canonical_json(op_to_json(op))
    if data.isascii() and b"\\" not in data and b"\x7f" not in data:
        return data.decode("ascii")
    return canonical_json(op_to_json(op))


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
