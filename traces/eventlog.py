"""Event logs of a running system (docs/LOG.md, "Event logs"): what `validate DIR` reads.

One JSON Lines file per process of the system:

    {"log": "events", "version": 1, "process": "site-1", "config": {...}}     line 1
    {"t": 1000, "op": "put", "site": 1, ..., "observed": [...]}                 then one line
    {"t": 1004, "op": "flush", "sender": "ny", "dispatcher": 0, "observed": [...]}  per step
    {"t": 1009, "op": "deliver", "sender": "ny", "batch_id": 1, "observed": [...]}

A line is a log line (`traces.logfile`: an operation, what the system observed, maybe its
state) with `t`, the time of the step in ms on a clock the processes share, and, on a
`deliver` or `deliver_ack`, the `batch_id` it received or acknowledged. Its operations are
a trace's less `tick` and `settle`, plus `flush` and `timeout` (`traces.ops.EVENT_LOG_OPS`):
the time-triggered steps, which the log resolves (`model.driven`).

`open_event_log` validates the headers; `EventLogSource.steps` then reads every file in one
streaming pass, validating each line as it goes, and merges them: each process's lines in
its own order, a `deliver` after the `flush` that sent its batch, a `deliver_ack` after
that batch's `deliver` (and a `drop` or `drop_ack` likewise), timestamps for the rest.
The lines of one instant are taken in the order `arrange` prefers where causality allows
(the run's is an order the model agrees with, `conformance.running.events`; by default
process by process, in file name order). Taking a line never stops another from being
next, so whether a merge exists does not depend on that order: a log no merge can
explain is one TraceError naming the two lines. The run is the merged operations with a
`tick` before each instant past the model's clock: a command prints its result once the
run has read every line (or calls `EventLogSource.validate` first, if it prints as it
goes).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Union

import msgspec
import orjson

from traces.config import INT64_MAX, Config, int64_error, json_kind, show
from traces.errors import TraceError
from traces.files import check_rereadable
from traces.logfile import LogEntry, _LogReader, observation_structs
from traces.ops import (
    EVENT_LOG_FIELD_KINDS,
    NETWORK_OPS,
    Deliver,
    DeliverAck,
    Drop,
    DropAck,
    Flush,
    Op,
    OpError,
    Tick,
    parse_op,
)
from traces.tracefile import PROGRESS_EVERY, file_lines, op_builder, op_struct_fields, where

FORM = "events"
VERSION = 1
HEADER_FIELDS = ("config", "log", "process", "version")

CAUSAL_OPS = frozenset([*NETWORK_OPS, Flush])
"""The operations the merge orders by causality (`_merge`: ready, take)."""
Lane = tuple[str, int]
"""(sender id, dispatcher index)."""


@dataclass(slots=True)
class EventLine:
    """One line of a process's event log."""

    where: str  # "site-1.jsonl:9"
    t: int
    at: int  # the finer time, when the log has one (docs/LOG.md); else -1
    entry: LogEntry
    batch_id: int  # a deliver's or deliver_ack's batch; a flush's `sent` batch; else 0


class _EventReader(_LogReader):
    """One process's file: its header, then its lines, each validated."""

    event_log = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.process = ""
        self.last_t = 0
        self.last_at = -1
        self.has_at: bool | None = None  # whether the file's lines carry `at`
        self.first_step = ""  # where its first step line is (which decided `has_at`)

    def lines(self) -> Iterator[EventLine]:
        numbered = enumerate(file_lines(self.name), start=1)
        for number, line in numbered:
            decoded = self.decode(number, line)
            if decoded is not None:
                self.config = self.header(*decoded)
                break
        else:
            raise TraceError(
                f"{where(self.name, 1)}: empty event log: the first line must be "
                '{"log": "events", "version": 1, "process": ..., "config": {...}} (docs/LOG.md)'
            )
        fast = _fast_lines(self.config)
        for number, line in numbered:
            if (event := self.fast(fast, number, line)) is not None:
                yield event
                continue
            decoded = self.decode(number, line)
            if decoded is not None:
                yield self.event(number, *decoded)

    def header(self, here: str, raw: Any) -> Config:
        if not isinstance(raw, dict) or raw.get("log") != FORM:
            raise TraceError(
                f'{here}: the first line of an event log must be {{"log": "events", '
                '"version": 1, "process": ..., "config": {...}} (docs/LOG.md)'
            )
        if sorted(raw) != list(HEADER_FIELDS):
            missing = sorted(set(HEADER_FIELDS) - set(raw))
            problem = f"{missing[0]}: missing" if missing else (
                f"{sorted(set(raw) - set(HEADER_FIELDS))[0]}: unknown field"
            )  # fmt: skip
            raise TraceError(f"{here}: {problem} (the header has {', '.join(HEADER_FIELDS)})")
        if raw["version"] != VERSION or isinstance(raw["version"], bool):
            raise TraceError(
                f"{here}: version: this wanconform reads event logs of version {VERSION}, "
                f"got {show(raw['version'])}"
            )
        process = raw["process"]
        if not isinstance(process, str) or not process:
            raise TraceError(
                f"{here}: process: must be a non-empty string, got {json_kind(process)}"
            )
        self.process = process
        return self._config(here, {"config": raw["config"]})

    def precise_operation(self, here: str, raw: Any) -> Op:
        assert self.config is not None
        try:
            return parse_op(raw, self.config, EVENT_LOG_FIELD_KINDS)
        except OpError as exc:
            hint = ""
            if exc.field == "op" and raw.get("op") in ("tick", "settle"):
                hint = (
                    ": an event log has no tick (each line's t is its time) and no settle"
                    " (docs/LOG.md)"
                )
            raise TraceError(f"{here}: {exc}{hint}") from None

    def event(self, number: int, here: str, raw: Any) -> EventLine:
        if not isinstance(raw, dict):
            raise TraceError(f"{here}: a log line must be a JSON object, got {json_kind(raw)}")
        fields = dict(raw)
        t = fields.pop("t", None)
        if t is None:
            raise TraceError(f"{here}: t: missing (the time of the step, in ms; docs/LOG.md)")
        self.last_t = _clock_reading(here, "t", t, self.last_t)
        at = self.finer(here, fields.pop("at", None))
        batch_id = fields.pop("batch_id", None)
        for name in [name for name in fields if name.startswith("_")]:
            del fields[name]  # the process's own (docs/LOG.md)
        entry = self.entry(number, here, fields)
        network = type(entry.op) in NETWORK_OPS
        if network and batch_id is None:
            raise TraceError(
                f"{here}: batch_id: missing (a {entry.op.op} names the batch whose message it took)"
            )
        if not network and batch_id is not None:
            raise TraceError(
                f"{here}: batch_id: only a deliver, deliver_ack, drop or drop_ack has one"
            )
        if batch_id is not None and (problem := int64_error(batch_id)):
            raise TraceError(f"{here}: batch_id: {problem}")
        if batch_id is not None and (
            not isinstance(batch_id, int) or isinstance(batch_id, bool) or batch_id < 1
        ):
            raise TraceError(f"{here}: batch_id: must be an integer >= 1, got {_shown(batch_id)}")
        if type(entry.op) is Flush:
            sent = [o["batch_id"] for o in entry.observed if o["kind"] == "sent"]
            batch_id = sent[0] if sent else 0
        return EventLine(here, t, at, entry, batch_id or 0)

    def fast(self, lines: _FastLines, number: int, line: bytes) -> EventLine | None:
        """`event` of a line, quicker: the same EventLine, or None when the precise path
        must decide (which then accepts the line or says what is wrong; see `_FastLines`)."""
        if b"." in line or b"e+" in line or b"e-" in line:  # a fraction or an exponent
            return None  # (orjson writes 1.5, 1e+30, 1e-7 back as they were), or a name
        try:
            raw = orjson.loads(line)
            if orjson.dumps(raw) != line:  # a key twice, a lone surrogate, spaces, ...
                return None
            struct = lines.decode(line)
        except (
            orjson.JSONDecodeError,
            orjson.JSONEncodeError,  # (it writes no more than 255 levels deep)
            msgspec.MsgspecError,
            RecursionError,
        ):
            return None
        allowed = lines.fields[type(struct)]
        if (
            "state" in raw  # (a rare line)
            or (
                not allowed.issuperset(raw)
                and any(name not in allowed and name[:1] != "_" for name in raw)
            )
        ):
            return None
        t, at, batch_id = struct.t, struct.at, struct.batch_id
        if (
            t < self.last_t
            or (self.has_at is not None and (at is not UNSET) is not self.has_at)
            or (at is not UNSET and at < self.last_at)
        ):
            return None
        op = lines.op_of(struct)
        if op is None:
            return None
        network = type(op) in NETWORK_OPS
        if network is (batch_id is UNSET):
            return None
        here = where(self.name, number)
        if self.has_at is None:
            self.has_at, self.first_step = at is not UNSET, here
        self.last_t = t
        if at is not UNSET:
            self.last_at = at
        observed = raw["observed"]
        if type(op) is Flush:
            sent = [o["batch_id"] for o in observed if o["kind"] == "sent"]
            batch_id = sent[0] if sent else 0
        entry = LogEntry(number, op, observed, None)
        return EventLine(here, t, -1 if at is UNSET else at, entry, batch_id or 0)

    def finer(self, here: str, at: Any) -> int:
        """A line's `at`: on every line of the file or on none, an integer that never
        runs back (on the same clock as `t`, finer); -1 when the file has none."""
        if self.has_at is None:
            self.has_at, self.first_step = at is not None, here
        if (at is not None) != self.has_at:
            raise TraceError(
                f"{here}: at: "
                + ("missing: the file's first step line has one" if self.has_at else
                   "the file's first step line has none: give every line one, or none")
            )  # fmt: skip
        if at is None:
            return -1
        self.last_at = _clock_reading(here, "at", at, self.last_at)
        return self.last_at


@dataclass(frozen=True, slots=True)
class _FastLines:
    """The fast validator of a configuration's event log lines (`_EventReader.fast`): a
    msgspec Struct per operation, its fields (strict types, 64-bit bounds: SPEC §3) and
    the line's (`t`, `at`, `batch_id`, and `observed`, each observation typed by its kind
    as `traces.logfile.observation_structs` says), other fields ignored; Python checks
    the rest. The line is also decoded by orjson, taken only if orjson writes it back as
    the very same bytes (so no key appeared twice, nothing was half a surrogate pair),
    for the dicts the model's observations are compared with. Anything else, or a line
    that breaks a rule across lines (time running back, `at` on some lines only), goes to
    the precise path, which accepts it or says what is wrong: the fast one never accepts
    what that rejects, and makes the same EventLine (tests/test_event_log_reader.py)."""

    decode: Callable[[bytes], Any]
    fields: dict[Any, frozenset[str]]  # per Struct, every field a line of it may have
    op_of: Callable[[Any], Op | None]


UNSET = msgspec.UNSET
_CLOCK = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
_LINE_FIELDS = [
    ("t", _CLOCK),
    ("observed", list[observation_structs()]),  # type: ignore[misc]
    ("at", Union[_CLOCK, msgspec.UnsetType], msgspec.UNSET),  # noqa: UP007
    (
        "batch_id",
        Union[Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)], msgspec.UnsetType],  # noqa: UP007
        msgspec.UNSET,
    ),
]


@lru_cache(maxsize=16)
def _fast_lines(config: Config) -> _FastLines:
    build: dict[Any, tuple[Any, bool]] = {}
    fields: dict[Any, frozenset[str]] = {}
    senders = tuple(s.id for s in config.senders)
    for name, (op_type, struct_fields, unset) in op_struct_fields(
        config.sites, senders, event_log=True
    ).items():
        struct = msgspec.defstruct(
            f"Line{op_type.__name__}",
            struct_fields + _LINE_FIELDS,
            tag_field="op",
            tag=name,
            kw_only=True,  # (the Op's fields first, for `op_builder`)
        )
        build[struct] = (op_type, unset)
        fields[struct] = frozenset(["op", *struct.__struct_fields__])
    decoder = msgspec.json.Decoder(Union[tuple(build)])  # noqa: UP007
    return _FastLines(decoder.decode, fields, op_builder(config, build))


def _shown(value: Any) -> str:
    """A value an error message quotes: an integer as itself (`-1`), else its JSON type."""
    return (
        str(value) if isinstance(value, int) and not isinstance(value, bool) else json_kind(value)
    )


def _clock_reading(here: str, name: str, value: Any, last: int) -> int:
    """A line's `t` or `at`: a 64-bit integer >= 0, not before the file's previous one."""
    if problem := int64_error(value):
        raise TraceError(f"{here}: {name}: {problem}")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TraceError(f"{here}: {name}: must be an integer >= 0, got {_shown(value)}")
    if value < last:
        raise TraceError(
            f"{here}: {name}: {value} is before the previous line's {last}: a process "
            "logs its steps in the order it took them, on a clock that does not run back"
        )
    return value


def _lane(op: Any) -> Lane:
    return (op.sender, op.dispatcher)


class _Batches:
    """The batch ids one dispatcher sent (or had received) so far, as sorted runs of
    consecutive ids (`firsts[i]`..`lasts[i]`): its ids are 1, 2, ... (SPEC R15, R29), so
    its sent ones are one run and its received ones one run per batch never delivered."""

    __slots__ = ("firsts", "lasts")

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.lasts: list[int] = []

    def __contains__(self, batch_id: int) -> bool:
        i = bisect_right(self.firsts, batch_id) - 1
        return i >= 0 and batch_id <= self.lasts[i]

    def add(self, batch_id: int) -> None:
        i = bisect_right(self.firsts, batch_id) - 1  # the run that starts at or before it
        if i >= 0 and batch_id <= self.lasts[i]:
            return
        after = i >= 0 and self.lasts[i] == batch_id - 1  # it extends run i
        before = i + 1 < len(self.firsts) and self.firsts[i + 1] == batch_id + 1
        if after and before:  # it joins runs i and i + 1
            self.lasts[i] = self.lasts.pop(i + 1)
            del self.firsts[i + 1]
        elif after:
            self.lasts[i] = batch_id
        elif before:
            self.firsts[i + 1] = batch_id
        else:
            self.firsts.insert(i + 1, batch_id)
            self.lasts.insert(i + 1, batch_id)


_NONE = _Batches()  # (never added to)

Arrange = Callable[[list[list[EventLine]]], list[EventLine]]
"""The order to try the lines of one instant in (a `t`, and its `at` when the log has it),
given each process's lines at it (in its own order): a preference, kept where causality
allows."""


def _in_process_order(block: list[list[EventLine]]) -> list[EventLine]:
    return [line for lines in block for line in lines]


def _merge(
    streams: list[Iterator[EventLine]], arrange: Arrange
) -> Iterator[tuple[str, LogEntry, int]]:
    """(where, entry, batch id): the processes' lines in one order (see the module's docstring),
    each instant's after the tick that brings the clock to it (yielded before they
    are arranged, which may look at the state the tick made; where: the first line at
    that time); memory: one instant's lines and the batches each dispatcher sent and
    had received (`_Batches`)."""
    heads: list[EventLine | None] = [next(stream, None) for stream in streams]
    sent: dict[Lane, _Batches] = {}
    received: dict[Lane, _Batches] = {}
    clock = 0

    def ready(line: EventLine) -> bool:
        op = line.entry.op
        kind = type(op)
        if kind is Deliver or kind is Drop:
            return line.batch_id in sent.get(_lane(op), _NONE)
        if kind is DeliverAck or kind is DropAck:
            return line.batch_id in received.get(_lane(op), _NONE)
        return True

    def take(line: EventLine) -> None:
        op = line.entry.op
        if type(op) is Flush and line.batch_id:
            sent.setdefault(_lane(op), _Batches()).add(line.batch_id)
        elif type(op) is Deliver:
            received.setdefault(_lane(op), _Batches()).add(line.batch_id)

    while True:
        t = at = -1  # the next instant: the earliest (t, at) among the heads
        for head in heads:
            if head is not None and (t < 0 or head.t < t or (head.t == t and head.at < at)):
                t, at = head.t, head.at
        if t < 0:
            return
        block: list[list[EventLine]] = []
        sequences = 0  # how many processes have lines at it
        single: list[EventLine] = []  # the lines of the last of them
        single_index = -1  # (its process)
        for index, head in enumerate(heads):
            lines: list[EventLine] = []
            if head is not None and head.t == t and head.at == at:
                sequences += 1
                single, single_index = lines, index
                stream = streams[index]
                while head is not None and head.t == t and head.at == at:
                    lines.append(head)
                    head = next(stream, None)
                heads[index] = head
            block.append(lines)
        if t > clock:
            where_first = next(lines[0] for lines in block if lines).where
            yield where_first, LogEntry(0, Tick(t - clock), [], None), 0
            clock = t
        if sequences == 1:  # one process's lines: their own order is the only one
            for line in single:
                if type(line.entry.op) in CAUSAL_OPS:
                    if not ready(line):
                        raise _Unexplained(line, _others(heads, single_index))
                    take(line)
                yield line.where, line.entry, line.batch_id
            continue
        order = arrange(block)
        cursors = [0] * len(block)
        process = {id(line): index for index, lines in enumerate(block) for line in lines}
        for line in order:  # as arranged while causality allows (it mostly does)
            if not ready(line):
                break
            cursors[process[id(line)]] += 1
            take(line)
            yield line.where, line.entry, line.batch_id
        left = sum(len(lines) - at for lines, at in zip(block, cursors, strict=True))
        rank = {id(line): number for number, line in enumerate(order)} if left else {}
        for _ in range(left):
            nexts = [
                (rank[id(lines[at])], index)
                for index, (lines, at) in enumerate(zip(block, cursors, strict=True))
                if at < len(lines)
            ]
            chosen = next((i for _, i in sorted(nexts) if ready(block[i][cursors[i]])), None)
            if chosen is None:
                stuck = _stuck(block, cursors)
                pending = [block[i][cursors[i]] for _, i in sorted(nexts, key=lambda n: n[1])]
                blocked = block[stuck][cursors[stuck]]
                others = [line for line in pending if line is not blocked]
                raise _Unexplained(blocked, others + _others(heads, stuck))
            line = block[chosen][cursors[chosen]]
            cursors[chosen] += 1
            take(line)
            yield line.where, line.entry, line.batch_id


def _stuck(block: list[list[EventLine]], cursors: list[int]) -> int:
    """The process whose next line of the instant no merge can take, when none can be
    taken: from the first process with lines left, while the line its next line needs is
    in the instant behind another process's next line, that process (so the line reported
    needs one the instant does not hold, or one behind itself: not one that a blocked
    line of another process holds back)."""
    left = [index for index, lines in enumerate(block) if cursors[index] < len(lines)]
    index, seen = left[0], set()
    while index not in seen:
        seen.add(index)
        blocked = block[index][cursors[index]]
        holder = next(
            (i for i in left if any(_provides(line, blocked) for line in block[i][cursors[i] :])),
            None,
        )
        if holder is None:
            return index
        index = holder
    return index


def _provides(line: EventLine, blocked: EventLine) -> bool:
    """Whether `line` is the one `blocked` needs: the flush that sent its batch (for a
    deliver or drop), or the deliver that received it (for an ack or its drop)."""
    op, needs = line.entry.op, blocked.entry.op
    needed = Flush if type(needs) is Deliver or type(needs) is Drop else Deliver
    return type(op) is needed and _lane(op) == _lane(needs) and line.batch_id == blocked.batch_id


def _others(heads: list[EventLine | None], process: int) -> list[EventLine]:
    """The next line of every process but `process` (the one whose line is blocked)."""
    return [line for index, line in enumerate(heads) if line is not None and index != process]


class _Unexplained(TraceError):
    """A log no merge can explain (`_merge`): `blocked`, a line that no merge can put after
    what it needs; `others`, the next line of every other process (or its next instant's);
    `cause`, the line it needs, when a later line of some file is that (`_cause`)."""

    def __init__(
        self, blocked: EventLine, others: list[EventLine], cause: EventLine | None = None
    ) -> None:
        super().__init__(_unexplained(blocked, others, cause))
        self.blocked, self.others = blocked, others


def _unexplained(blocked: EventLine, others: list[EventLine], cause: EventLine | None) -> str:
    op = blocked.entry.op
    sender, dispatcher = _lane(op)
    what = "sent" if type(op) in (Deliver, Drop) else "received"
    others = sorted(others, key=lambda line: line.t)
    nxt = (
        f"the line that {what} it is {cause.where} at t={cause.t}"
        if cause is not None
        else f"the next line of any other process is {others[0].where} at t={others[0].t}"
        if others
        else "no other process logs anything after it"
    )
    return (
        f"{blocked.where}: t={blocked.t}: {op.op} of batch {blocked.batch_id} of {sender} "
        f"dispatcher {dispatcher}, but no line before it {what} that batch (a batch is "
        f"received after it is sent, its ack after it is received): {nxt}"
    )


def _cause(files: tuple[str, ...], blocked: EventLine) -> EventLine | None:
    """The earliest line of `files`, not before `blocked`, that sent the batch `blocked`
    took (a flush), or received it (a deliver, for an ack): read again, after the merge
    failed (each file up to its first bad line, if it has one)."""
    found: list[EventLine] = []
    for path in files:
        try:
            for line in _EventReader(path).lines():
                if _provides(line, blocked) and (line.t, line.at) >= (
                    blocked.t, blocked.at  # (not one merged)
                ):  # fmt: skip
                    found.append(line)
                    break
        except TraceError:
            pass  # (the merge had not read that far: the line is not the error to report)
    return min(found, key=lambda line: (line.t, line.at), default=None)


def _one_clock(readers: list[_EventReader]) -> None:
    """TraceError if some of the files read so far have `at` and others do not."""
    finer = {bool(r.has_at): r.first_step for r in readers if r.has_at is not None}
    if len(finer) > 1:
        raise TraceError(
            f"{finer[True]}: at: this file's lines have one, those of {finer[False]} and on "
            "do not (give every process's lines `at`, or none)"
        )


class EventLogSource:
    """One run's event logs (several files), their headers validated: read, validated
    and merged again on every `steps()`, so memory does not grow with its length (but for
    one run of ids per batch a dispatcher sent and never had received: `_Batches`)."""

    def __init__(self, name: str, files: tuple[str, ...], config: Config) -> None:
        self.name = name  # the directory, or the files joined by "+"
        self.files = files
        self.config = config
        self.op_count: int | None = None  # the run's operations, ticks included, once read
        self.ticks = 0  # the ticks the merge adds, one before each instant past the clock

    def steps(self, arrange: Arrange = _in_process_order) -> Iterator[tuple[str, LogEntry, int]]:
        """(where, entry, batch id) of every operation of the run: the merged lines, each
        after the tick that brings the clock to its `t` (a tick is where its line is), each
        line validated as it is read (the batch id: `EventLine.batch_id`, 0 for a tick);
        TraceError at the first problem, which may be found after the last line
        (`op_count` is set then)."""
        readers = [_EventReader(path) for path in self.files]
        count = lines = 0
        try:
            for here, entry, batch in _merge([reader.lines() for reader in readers], arrange):
                count += 1
                lines += entry.line != 0  # not a tick
                yield here, entry, batch
        except _Unexplained as exc:
            # lines with `at` and lines without, merged, can look like a batch received
            # before it was sent: the mix is the error to report (a file whose own lines
            # mix them is its own line's error)
            _one_clock(readers)
            cause = _cause(self.files, exc.blocked)
            if cause is None:
                raise
            raise _Unexplained(exc.blocked, exc.others, cause) from None
        _one_clock(readers)
        self.op_count, self.ticks = count, count - lines

    def validate(self, progress: Callable[[int], None] | None = None) -> None:
        """Read and merge every line once (before a run that prints as it goes);
        `progress(operations so far)` now and then."""
        for count, _ in enumerate(self.steps(), start=1):
            if progress is not None and count % PROGRESS_EVERY == 0:
                progress(count)


def event_log_files(paths: list[str]) -> list[str] | None:
    """The files of an event log among `validate`'s arguments: a directory's `*.jsonl` (as
    a shell matches it: not a hidden `.x.jsonl`), or files whose first line is an event
    log's header; None when they are not one."""
    if len(paths) == 1 and os.path.isdir(paths[0]):
        matched = [p for p in Path(paths[0]).glob("*.jsonl") if not p.name.startswith(".")]
        for link in sorted(matched):
            if link.is_symlink() and not link.exists():
                raise TraceError(f"{link}: a broken symbolic link (its target does not exist)")
        files = sorted(str(p) for p in matched if p.is_file())
        if not files:
            raise TraceError(f"{paths[0]}: no *.jsonl file in this directory (docs/LOG.md)")
        _check_whole(Path(paths[0]))
        return files
    headed = [_has_header(path) for path in paths]
    if not any(headed):
        return None
    seen: set[str] = set()
    for path in paths:  # (else: "process: 'site-1' is also the process of" itself)
        if os.path.realpath(path) in seen:
            raise TraceError(f"{path}: given twice (one run's event logs, each once)")
        seen.add(os.path.realpath(path))
    if not all(headed):
        plain = paths[headed.index(False)]
        raise TraceError(
            f"{plain}: not an event log, given with event logs: validate one run's event "
            "logs together, and other logs on their own"
        )
    return sorted(paths)


def _check_whole(folder: Path) -> None:
    """A directory wanconform wrote (`live`) lists its files (`CONTENTS`): a log it lists
    that is gone would be a process whose steps the others' lines point at, reported as
    a divergence or a merge failure far from the cause. One it had not finished (killed)
    lacks what it writes at the end: refused too."""
    from traces.outputs import CONTENTS, unfinished

    if unfinished(folder):  # a killed `live`: the nemesis's steps come at its end
        raise TraceError(
            f"{folder}: unfinished: the directory a wanconform command was building when it "
            "was killed (or still builds), not a whole run: its logs lack what the run writes "
            "at its end (live's nemesis.jsonl); run it again"
        )
    try:
        listed = orjson.loads((folder / CONTENTS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    if not isinstance(listed, dict):
        return
    for name in sorted(listed):
        if "/" not in name and name.endswith(".jsonl") and not (folder / name).is_file():
            raise TraceError(
                f"{folder / name}: missing: the run wrote it ({CONTENTS} lists it); "
                "validate a run's event logs whole"
            )


def _has_header(path: str) -> bool:
    if os.path.isdir(path):
        raise TraceError(f"{path}: a directory: give it alone (one run's event logs)")
    check_rereadable(path, "a log")
    reader = _EventReader(path)
    for number, line in enumerate(file_lines(path), start=1):
        decoded = reader.decode(number, line)
        if decoded is not None:
            return isinstance(decoded[1], dict) and decoded[1].get("log") == FORM
    return False


def _header(path: str) -> _EventReader:
    """A reader of `path` that has read its header (and nothing more)."""
    reader = _EventReader(path)
    for number, line in enumerate(file_lines(path), start=1):
        decoded = reader.decode(number, line)
        if decoded is not None:
            reader.config = reader.header(*decoded)
            return reader
    raise TraceError(
        f"{where(path, 1)}: empty event log: the first line must be "
        '{"log": "events", "version": 1, "process": ..., "config": {...}} (docs/LOG.md)'
    )


def open_event_log(files: list[str], name: str) -> EventLogSource:
    """Validate the headers (one configuration in all, one process each): TraceError at
    the first problem. The lines are validated as they are read (`EventLogSource`)."""
    processes: dict[str, str] = {}
    config: Config | None = None
    for path in files:
        reader = _header(path)
        if config is None:
            config, first = reader.config, path
        elif reader.config != config:
            raise TraceError(
                f"{where(path, 1)}: config: not the configuration of {where(first, 1)} "
                "(the processes of one run share one)"
            )
        if reader.process in processes:
            raise TraceError(
                f"{where(path, 1)}: process: {show(reader.process)} is also the process of "
                f"{processes[reader.process]}"
            )
        processes[reader.process] = path
    assert config is not None
    return EventLogSource(name, tuple(files), config)
