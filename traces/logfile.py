"""Logs of a system under test (docs/LOG.md, docs/log.schema.json): what `validate` reads.

A log is a trace (SPEC §12) whose operation lines also say what the system observed:

    {"config": {...}}                                   line 1, as in a trace
    {"op": "put", ..., "observed": [{...}, ...]}         per operation: SPEC §10's observations
    {"op": "tick", "ms": 5, "observed": [], "state": {...}}   optionally the observable state

`open_log` validates a whole log in one streaming pass (the operation exactly as in a
trace, with the trace's messages; `observed` a list of observation objects of SPEC §10's
kinds; `state` an object with the observable state's top-level fields). `LogSource.engine`
is an engine (`traces.engine.Engine`) made of the log: it answers each operation with
what the log says the system observed, and its observable state where the log has one,
so the model can be run against it in lockstep (`conformance.running.run`, P1) like any impl.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Union

import msgspec

from traces.config import Config, JsonNumber, int64_error, json_kind, show
from traces.errors import TraceError
from traces.observations import FIELDS, KINDS, OPTIONAL_FIELDS, Observation
from traces.ops import Op, Tick
from traces.tracefile import (
    NUMBERS_KEPT,
    PROGRESS_EVERY,
    Reader,
    fast_object_path,
    file_lines,
    numbered_lines,
    where,
)

STATE_FIELDS = ("senders", "sites", "time")
"""The top-level fields of an observable state (SPEC §10)."""


@dataclass(slots=True)
class LogEntry:
    """One operation of a log and what the system observed after it."""

    line: int
    op: Op
    observed: list[Observation]
    state: dict[str, Any] | None  # the observable state after it, when logged


class _LogReader(Reader):
    numbers_seen = 0  # `NUMBERS_KEPT` before the line being read was decoded
    event_log = False  # whose operations: a trace's, or an event log's (`traces.eventlog`)
    _fast: Callable[[Any], Op | None] | None = None  # `fast_object_path`, once configured

    def operation(self, here: str, raw: Any) -> Op:
        """An operation object: the fast validator's Op, else the precise validator's
        (`Reader.operation`), which says what is wrong."""
        if self._fast is None:
            assert self.config is not None
            self._fast = fast_object_path(self.config, self.event_log)
        op = self._fast(raw)
        return op if op is not None else self.precise_operation(here, raw)

    def precise_operation(self, here: str, raw: Any) -> Op:
        return super().operation(here, raw)

    def decode(self, number: int, line: bytes | str) -> tuple[str, Any] | None:
        self.numbers_seen = NUMBERS_KEPT[0]
        return super().decode(number, line)

    def entries(self, lines: Iterator[bytes]) -> Iterator[LogEntry]:
        for number, line in enumerate(lines, start=1):
            decoded = self.decode(number, line)
            if decoded is None:
                continue
            here, raw = decoded
            if self.config is None:
                self.config = self._config(here, raw)
                continue
            yield self.entry(number, here, raw)
        if self.config is None:
            raise TraceError(
                f'{where(self.name, 1)}: empty log: the first line must be {{"config": {{...}}}}'
            )

    def entry(self, number: int, here: str, raw: Any) -> LogEntry:
        if not isinstance(raw, dict):
            raise TraceError(f"{here}: a log line must be a JSON object, got {json_kind(raw)}")
        operation = dict(raw)
        if "observed" not in operation:
            raise TraceError(
                f"{here}: observed: missing: a log line is an operation and the list of "
                "what the system observed after it (docs/LOG.md)"
            )
        observed = operation.pop("observed")
        logged_state = "state" in operation  # ("state": null is not a state: the schema's)
        state = operation.pop("state", None)
        op = self.operation(here, operation)
        if type(op) is Tick:
            self.add_tick(number, op.ms)
        if not isinstance(observed, list):
            raise TraceError(f"{here}: observed: must be a list, got {json_kind(observed)}")
        for index, observation in enumerate(observed):
            if not isinstance(observation, dict):
                raise TraceError(
                    f"{here}: observed[{index}]: must be an object, got {json_kind(observation)}"
                )
            kind = observation.get("kind")
            if kind not in KINDS:
                raise TraceError(
                    f"{here}: observed[{index}]: kind: must be one of {', '.join(KINDS)} "
                    "(SPEC §10), got " + (show(kind) if isinstance(kind, str) else json_kind(kind))
                )
            if not _plainly_well_formed(kind, observation):
                check_fields(f"{here}: observed[{index}]", kind, observation)
        for field, value in (("observed", observed), ("state", state)):
            if NUMBERS_KEPT[0] == self.numbers_seen:
                break  # none in this line (`decode` saw the count)
            if (found := _number_not_int(value, field)) is not None:
                raise TraceError(
                    f"{here}: {found[0]}: must be an integer, a string, a boolean or null "
                    f"(SPEC §10), got {json_kind(found[1])}"
                )
        if logged_state:
            check_state(here, state)
        return LogEntry(number, op, observed, state)


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, JsonNumber) and v.is_integer)
    ),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "object or null": lambda v: v is None or isinstance(v, dict),
}


_TYPE_NAMES = {
    "integer": "an integer",
    "string": "a string",
    "array": "a list",
    "object": "an object",
    "object or null": "an object or null",
}


_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
    "object or null": (dict, type(None)),
}
_SHAPES: dict[str, tuple[frozenset[str], dict[str, tuple[type, ...]]]] = {
    kind: (
        frozenset(required),
        {
            "kind": (str,),
            **{
                name: _EXACT_TYPES[json_type]
                for name, json_type in {**required, **OPTIONAL_FIELDS.get(kind, {})}.items()
            },
        },
    )
    for kind, required in FIELDS.items()
}
"""Per kind: the fields an observation must have, and the exact Python types each field's
value has in the common case (what `check_fields` accepts, less a few rare forms)."""


def _plainly_well_formed(kind: str, observation: dict[str, Any]) -> bool:
    """Does `observation` have every field of its kind, no other, each of the exact type
    a decoder makes for it? (A quick test, a field at a time by type: `check_fields`
    accepts everything this accepts, and decides the rest.)"""
    required, types = _SHAPES[kind]
    if not observation.keys() >= required:
        return False
    for name, value in observation.items():  # noqa: SIM110 (a loop: no generator's cost)
        if type(value) not in types.get(name, ()):
            return False
    return True


@cache
def observation_structs() -> Any:
    """SPEC §10's observations as msgspec types: a Struct per kind (tagged by `kind`), each
    field of the JSON type `traces.observations.FIELDS` gives it, the optional ones
    (`OPTIONAL_FIELDS`) UNSET when absent, no other; their union. What it accepts from a
    strict JSON line without a fraction or an exponent, `check_fields` accepts too (fast
    event log lines, `traces.eventlog`)."""
    types = {name: Union[exact] for name, exact in _EXACT_TYPES.items()}  # noqa: UP007
    structs = [
        msgspec.defstruct(
            f"Observed_{kind}",
            [
                *((name, types[json_type]) for name, json_type in required.items()),
                *(
                    (name, Union[types[json_type], msgspec.UnsetType], msgspec.UNSET)  # noqa: UP007
                    for name, json_type in OPTIONAL_FIELDS.get(kind, {}).items()
                ),
            ],
            tag_field="kind",
            tag=kind,
            forbid_unknown_fields=True,
        )
        for kind, required in FIELDS.items()
    ]
    return Union[tuple(structs)]  # noqa: UP007


def check_fields(at: str, kind: str, observation: dict[str, Any]) -> None:
    """An observation's fields as `traces.observations.FIELDS` lists them: each one
    present, of its JSON type, and no other (a field the model does not make would be a
    disagreement on every line; a missing one is a bad line, not a disagreement)."""
    required = FIELDS[kind]
    optional = OPTIONAL_FIELDS.get(kind, {})
    for name in required:
        if name not in observation:
            raise TraceError(
                f"{at}: {kind}.{name}: missing (SPEC §10: {kind} has "
                f"{', '.join(['kind', *required])}; traces/observations.py)"
            )
    for name, value in observation.items():
        if name == "kind":
            continue
        json_type = required.get(name) or optional.get(name)
        if json_type is None:
            allowed = ", ".join(["kind", *required, *optional])
            raise TraceError(f"{at}: {kind}.{name}: unknown field (SPEC §10: {kind} has {allowed})")
        if not _JSON_TYPES[json_type](value):
            raise TraceError(
                f"{at}: {kind}.{name}: must be {_TYPE_NAMES[json_type]}, got {json_kind(value)}"
            )


def check_state(here: str, state: Any) -> None:
    """A logged state's shape, as docs/log.schema.json's `state` says: its values are
    compared with the model's whole, so anything inside them is a disagreement, not an
    error."""
    if not isinstance(state, dict) or sorted(state) != sorted(STATE_FIELDS):
        raise TraceError(
            f"{here}: state: must be the observable state of SPEC §10, an object with "
            f"exactly the fields {', '.join(STATE_FIELDS)}"
        )
    time = state["time"]
    if problem := int64_error(time):
        raise TraceError(f"{here}: state.time: {problem}")
    if not isinstance(time, int) or isinstance(time, bool):
        raise TraceError(f"{here}: state.time: must be an integer (ms), got {json_kind(time)}")
    for field in ("sites", "senders"):
        if not isinstance(state[field], dict):
            raise TraceError(
                f"{here}: state.{field}: must be an object, got {json_kind(state[field])}"
            )


def _number_not_int(value: Any, path: str) -> tuple[str, JsonNumber] | None:
    """The place and value of the first number in `value` that is not a short integer
    (a fraction, an exponent, or too long: SPEC §10 has none), or None."""
    if isinstance(value, JsonNumber):
        return path, value
    if isinstance(value, dict):
        items: Any = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for place, item in items:
        if isinstance(item, (dict, list, JsonNumber)):
            found = _number_not_int(item, place)
            if found is not None:
                return found
    return None


@dataclass(frozen=True, slots=True)
class LogSource:
    """A validated log file, read again on every `entries()`: memory does not grow."""

    name: str
    config: Config
    op_count: int
    states: int  # how many lines log the observable state

    def entries(self) -> Iterator[LogEntry]:
        reader = _LogReader(self.name)
        count = 0
        for entry in reader.entries(file_lines(self.name)):
            count += 1
            yield entry
        if count != self.op_count or reader.config != self.config:
            raise TraceError(f"{self.name}: the file changed since it was read")

    def entries_from(self, offset: int, first: int) -> Iterator[tuple[int, LogEntry]]:
        """(byte offset, entry) of the log from byte `offset`, the start of line `first`
        (a segment of a validated log, `conformance.spark.segments`)."""
        reader = _LogReader(self.name)
        reader.config = self.config
        for number, position, line in numbered_lines(self.name, offset, first):
            decoded = None if number == 1 else reader.decode(number, line)
            if decoded is not None:
                yield position, reader.entry(number, *decoded)

    def ops(self) -> Iterator[tuple[int, Op]]:
        """(file line, operation) for every operation, as `TraceSource.ops`."""
        return ((entry.line, entry.op) for entry in self.entries())

    def engine(self, config: Config) -> LoggedEngine:
        """An engine that plays the system's part from the log (an `EngineFactory`)."""
        return LoggedEngine(config, self.entries())


class LoggedEngine:
    """The system under test as its log tells it: `apply(op)` returns the observations
    logged for the next operation (which must be `op`), `observe()` the state logged
    with it; `state_logged()` says whether there is one (`conformance.running.lockstep` then
    compares states exactly there and nowhere else)."""

    def __init__(self, config: Config, entries: Iterator[LogEntry]) -> None:
        self.config = config
        self._entries = entries
        self._state: dict[str, Any] | None = None

    def apply(self, op: Op) -> list[Observation]:
        entry = next(self._entries)
        assert entry.op == op, "the run and the log went out of step"
        self._state = entry.state
        return [dict(observation) for observation in entry.observed]

    def observe(self) -> dict[str, Any]:
        if self._state is None:
            raise RuntimeError("the log has no state for this operation")
        return self._state

    def state_logged(self) -> bool:
        return self._state is not None


def open_log(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> LogSource:
    """Validate a whole log in one streaming pass; TraceError at its first problem."""
    name = os.fspath(path)
    reader = _LogReader(name)
    count = states = 0
    for entry in reader.entries(file_lines(name)):
        count += 1
        states += entry.state is not None
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count)
    assert reader.config is not None
    return LogSource(name, reader.config, count, states)


def is_log(path: str | os.PathLike[str]) -> bool:
    """Does this (valid) trace-or-log file's first operation line carry `observed`? Not
    asked of what is not a regular file (a pipe: this reading would take its lines from
    the one that follows, which refuses it by name)."""
    if not os.path.isfile(path):
        return False
    reader = Reader(os.fspath(path))
    for number, line in enumerate(file_lines(os.fspath(path)), start=1):
        decoded = reader.decode(number, line)
        if decoded is None:
            continue
        if number > 1 or not (isinstance(decoded[1], dict) and "config" in decoded[1]):
            return isinstance(decoded[1], dict) and "observed" in decoded[1]
    return False
