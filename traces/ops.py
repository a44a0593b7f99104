"""The operation vocabulary of SPEC §3, as one closed union of frozen records.

`parse_op` turns one decoded JSON object into an operation, or raises `OpError` naming the
field and what is wrong; `TraceError` (with file and line) is added by the trace reader.
A malformed operation is an error in the trace. An operation that is merely *not enabled*
(a `deliver` with nothing in the network) is well formed: engines skip it (SPEC §3).
Values are `Mapping`s: engines never mutate them (mypy holds them to it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from traces.config import Config, int64_error, json_kind, show
from traces.errors import WanconformError

EVENT_ID = re.compile(r"[0-9]+:[0-9]+")
"""R3: an event id, "origin:seq" (ASCII digits)."""
Scalar = int | str | bool | None
Value = Mapping[str, Scalar]


class OpError(WanconformError):
    """A malformed operation; `field` names the offending field (or '' for the whole)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Put:
    site: int
    key: str
    value: Value
    thread: int = 0  # v2.0 (R27): the client thread, read only by order_policy "thread"
    op = "put"


@dataclass(frozen=True, slots=True)
class Delta:
    site: int
    key: str
    changes: Value
    thread: int = 0
    op = "delta"


@dataclass(frozen=True, slots=True)
class Destroy:
    site: int
    key: str
    thread: int = 0
    op = "destroy"


@dataclass(frozen=True, slots=True)
class PutAll:
    site: int
    entries: Mapping[str, Value]
    thread: int = 0
    op = "putall"


@dataclass(frozen=True, slots=True)
class Tick:
    ms: int
    op = "tick"


@dataclass(frozen=True, slots=True)
class Deliver:
    sender: str
    dispatcher: int = 0  # v2.0 (R29): which of the sender's dispatchers
    op = "deliver"


@dataclass(frozen=True, slots=True)
class DeliverAck:
    sender: str
    dispatcher: int = 0  # v2.0 (R29): which of the sender's dispatchers
    op = "deliver_ack"


@dataclass(frozen=True, slots=True)
class Drop:
    sender: str
    dispatcher: int = 0  # v2.0 (R29): which of the sender's dispatchers
    op = "drop"


@dataclass(frozen=True, slots=True)
class DropAck:
    sender: str
    dispatcher: int = 0  # v2.0 (R29): which of the sender's dispatchers
    op = "drop_ack"


@dataclass(frozen=True, slots=True)
class SiteDown:
    site: int
    op = "site_down"


@dataclass(frozen=True, slots=True)
class SiteUp:
    site: int
    wipe: bool = False
    op = "site_up"


@dataclass(frozen=True, slots=True)
class Fail:
    site: int
    key: str
    exception: str
    times: int
    op = "fail"


@dataclass(frozen=True, slots=True)
class Settle:
    op = "settle"


@dataclass(frozen=True, slots=True)
class Redeliver:
    """R26: dead-letter records of `sender` back to its queue (all, or those of `events`)."""

    sender: str
    events: tuple[str, ...] | None = None
    op = "redeliver"


@dataclass(frozen=True, slots=True)
class RestartSender:
    """R36: the members hosting the sender's queues crash and restart."""

    sender: str
    op = "restart_sender"


@dataclass(frozen=True, slots=True)
class StopSender:
    """R37: the sender stops (its in-flight batches abandoned; a serial non-persistent
    one loses its queue); while stopped, nothing is queued on it."""

    sender: str
    op = "stop_sender"


@dataclass(frozen=True, slots=True)
class StartSender:
    """R37: a stopped sender starts again, with its queues discarded if `clean_queues`."""

    sender: str
    clean_queues: bool = False
    op = "start_sender"


@dataclass(frozen=True, slots=True)
class PauseSender:
    """R37: the sender stops flushing; events keep being queued."""

    sender: str
    op = "pause_sender"


@dataclass(frozen=True, slots=True)
class ResumeSender:
    """R37: a paused sender flushes again."""

    sender: str
    op = "resume_sender"


@dataclass(frozen=True, slots=True)
class Flush:
    """An event log's flush (docs/LOG.md): R15 fired for this dispatcher now. Only in an
    event log, where the time-triggered steps are choices the log resolves (a trace's
    flushes follow every operation, §3)."""

    sender: str
    dispatcher: int = 0
    op = "flush"


@dataclass(frozen=True, slots=True)
class Timeout:
    """An event log's timeout (docs/LOG.md): R20 fired for this dispatcher now. Only in
    an event log (a trace's timeouts follow every `tick`, §3)."""

    sender: str
    dispatcher: int = 0
    op = "timeout"


Op = (
    Put
    | Delta
    | Destroy
    | PutAll
    | Tick
    | Deliver
    | DeliverAck
    | Drop
    | DropAck
    | SiteDown
    | SiteUp
    | Fail
    | Settle
    | Redeliver
    | RestartSender
    | StopSender
    | StartSender
    | PauseSender
    | ResumeSender
    | Flush
    | Timeout
)

OP_TYPES: dict[str, type[Op]] = {
    cls.op: cls
    for cls in (
        Put,
        Delta,
        Destroy,
        PutAll,
        Tick,
        Deliver,
        DeliverAck,
        Drop,
        DropAck,
        SiteDown,
        SiteUp,
        Fail,
        Settle,
        Redeliver,
        RestartSender,
        StopSender,
        StartSender,
        PauseSender,
        ResumeSender,
    )
}
OP_NAMES: tuple[str, ...] = tuple(OP_TYPES)
NETWORK_OPS = frozenset([Deliver, DeliverAck, Drop, DropAck])
"""The operations that take a message from the network (§3): in an event log each names
its batch (`batch_id`). `type(op) in NETWORK_OPS`."""


OMITTED_AT_ZERO = frozenset({"thread", "dispatcher", "clean_queues"})
"""v2.0's optional fields, left out of a trace line at their default (0, or false for
`clean_queues`): a v1.2 operation is written as the same text as before."""


def op_to_json(op: Op) -> dict[str, Any]:
    """The trace line of an operation: `{"op": name, ...fields}`, all fields explicit
    except an absent `events` (R26: every record), a `thread` or `dispatcher` of 0 and a
    false `clean_queues`."""
    out: dict[str, Any] = {"op": op.op}
    for name in op.__dataclass_fields__:
        value = getattr(op, name)
        if value is None or (value == 0 and name in OMITTED_AT_ZERO):
            continue  # an optional field left out (R26's `events`: every record)
        if isinstance(value, Mapping):
            value = {k: dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


# Field kinds: what each field of each operation must hold (also read by the trace reader's
# fast decoder, `traces.tracefile`, which builds its typed schema from this table).
FIELD_KINDS: dict[str, dict[str, str]] = {
    "put": {"site": "site", "key": "key", "value": "value", "thread": "count?"},
    "delta": {"site": "site", "key": "key", "changes": "value", "thread": "count?"},
    "destroy": {"site": "site", "key": "key", "thread": "count?"},
    "putall": {"site": "site", "entries": "entries", "thread": "count?"},
    "tick": {"ms": "positive"},
    "deliver": {"sender": "sender", "dispatcher": "count?"},
    "deliver_ack": {"sender": "sender", "dispatcher": "count?"},
    "drop": {"sender": "sender", "dispatcher": "count?"},
    "drop_ack": {"sender": "sender", "dispatcher": "count?"},
    "site_down": {"site": "site"},
    "site_up": {"site": "site", "wipe": "bool?"},
    "fail": {"site": "site", "key": "key", "exception": "name", "times": "positive"},
    "settle": {},
    "redeliver": {"sender": "sender", "events": "event_ids?"},
    "restart_sender": {"sender": "sender"},
    "stop_sender": {"sender": "sender"},
    "start_sender": {"sender": "sender", "clean_queues": "bool?"},
    "pause_sender": {"sender": "sender"},
    "resume_sender": {"sender": "sender"},
}

EVENT_LOG_OPS: dict[str, type[Op]] = {"flush": Flush, "timeout": Timeout}
"""The operations only an event log has (docs/LOG.md): the time-triggered steps."""
EVENT_LOG_FIELD_KINDS: dict[str, dict[str, str]] = {
    **{name: fields for name, fields in FIELD_KINDS.items() if name not in ("tick", "settle")},
    "flush": {"sender": "sender", "dispatcher": "count?"},
    "timeout": {"sender": "sender", "dispatcher": "count?"},
}
"""An event log's operations: a trace's but `tick` (time is each line's `t`) and `settle`
(the model's, not a system's), and the time-triggered steps."""


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, str))


def _value(raw: Any, field: str) -> Value:
    if not isinstance(raw, dict):
        raise OpError(field, f"must be an object of field -> scalar, got {json_kind(raw)}")
    for name, scalar in raw.items():
        if problem := int64_error(scalar):
            raise OpError(f"{field}.{name}", problem)
        if not _is_scalar(scalar):
            raise OpError(
                f"{field}.{name}",
                f"must be a scalar (integer, string, boolean or null), got {json_kind(scalar)}",
            )
    return dict(raw)


def _check(kind: str, raw: Any, field: str, config: Config) -> Any:
    if kind in ("site", "positive", "count?") and (problem := int64_error(raw)):
        raise OpError(field, problem)
    if kind == "site":
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise OpError(field, f"must be an integer site id, got {json_kind(raw)}")
        if raw not in config.sites:
            raise OpError(
                field, f"unknown site {show(raw)} (the config has sites {list(config.sites)})"
            )
        return raw
    if kind == "sender":
        if not isinstance(raw, str):
            raise OpError(field, f"must be a sender id string, got {json_kind(raw)}")
        known = [s.id for s in config.senders]
        if raw not in known:
            raise OpError(field, f"unknown sender {raw!r} (the config has {known})")
        return raw
    if kind == "key":
        if not isinstance(raw, str):
            raise OpError(field, f"must be a string key, got {json_kind(raw)}")
        return raw
    if kind == "name":
        if not isinstance(raw, str) or not raw:
            raise OpError(field, f"must be a non-empty exception name, got {json_kind(raw)}")
        return raw
    if kind == "positive":
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise OpError(field, f"must be an integer > 0, got {json_kind(raw)}")
        if raw <= 0:
            raise OpError(field, f"must be an integer > 0, got {raw}")
        return raw
    if kind == "count?":
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise OpError(field, f"must be an integer >= 0, got {json_kind(raw)}")
        if raw < 0:
            raise OpError(field, f"must be an integer >= 0, got {raw}")
        return raw
    if kind == "bool?":
        if not isinstance(raw, bool):
            raise OpError(field, f"must be true or false, got {json_kind(raw)}")
        return raw
    if kind == "event_ids?":
        if not isinstance(raw, list):
            raise OpError(field, f"must be a list of event ids, got {json_kind(raw)}")
        for index, item in enumerate(raw):
            if not isinstance(item, str) or not EVENT_ID.fullmatch(item):
                shown = show(item) if isinstance(item, str) else json_kind(item)
                raise OpError(f"{field}[{index}]", f'must be an event id "origin:seq", got {shown}')
        return tuple(raw)
    if kind == "value":
        return _value(raw, field)
    if kind == "entries":
        if not isinstance(raw, dict):
            raise OpError(field, f"must be an object of key -> value, got {json_kind(raw)}")
        return {key: _value(value, f"{field}.{key}") for key, value in raw.items()}
    raise AssertionError(kind)


def parse_op(raw: Any, config: Config, kinds: dict[str, dict[str, str]] = FIELD_KINDS) -> Op:
    """Validate one decoded operation object against SPEC §3 and the configuration
    (`kinds`: the operations allowed and their fields; an event log's are
    `EVENT_LOG_FIELD_KINDS`)."""
    if not isinstance(raw, dict):
        raise OpError("", f"an operation must be a JSON object, got {json_kind(raw)}")
    if "op" not in raw:
        raise OpError("op", "missing (one of " + ", ".join(kinds) + ")")
    name = raw["op"]
    if not isinstance(name, str):
        raise OpError("op", f"must be an operation's name, got {json_kind(name)}")
    if name not in kinds:
        raise OpError("op", f"unknown operation {name!r} (one of " + ", ".join(kinds) + ")")
    fields = kinds[name]
    unknown = sorted(set(raw) - set(fields) - {"op"})
    if unknown:
        allowed = ", ".join(fields) or "none"
        raise OpError(unknown[0], f"unknown field for {name!r} (fields: {allowed})")
    args: dict[str, Any] = {}
    for field, kind in fields.items():
        if field not in raw:
            if kind.endswith("?"):
                continue
            raise OpError(field, f"missing (required by {name!r})")
        args[field] = _check(kind, raw[field], field, config)
    if "dispatcher" in args:
        check_dispatcher(config, args["sender"], args["dispatcher"])
    return (OP_TYPES.get(name) or EVENT_LOG_OPS[name])(**args)


def check_dispatcher(config: Config, sender: str, dispatcher: int) -> None:
    """§16.2: a dispatcher index the sender does not have is a malformed operation."""
    count = config.sender(sender).dispatcher_threads
    if dispatcher >= count:
        valid = "0" if count == 1 else f"0..{count - 1}"
        raise OpError(
            "dispatcher",
            f"sender {sender!r} has no dispatcher {dispatcher}: it has "
            f"{count} dispatcher thread{'s' if count > 1 else ''} ({valid}) (R29)",
        )
