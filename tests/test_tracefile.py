"""The streaming trace reader (SPEC §12, §3): bounded memory, line numbers, round trips,
and the fast path's verdicts checked against the precise validator's."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces.tracefile
from traces.canonical import canonical_json
from traces.config import parse_config
from traces.errors import TraceError
from traces.ops import (
    EVENT_LOG_FIELD_KINDS,
    FIELD_KINDS,
    Deliver,
    DeliverAck,
    Flush,
    Op,
    Put,
    Settle,
    SiteUp,
    Tick,
    op_to_json,
    parse_op,
)
from traces.ops import OP_NAMES as ALL_OP_NAMES
from traces.tracefile import (
    Reader,
    fast_object_path,
    fast_path,
    open_trace,
    read_trace,
    trace_lines,
    trace_text,
    where,
    write_trace,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"
CONFIG = parse_config(
    {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 4}]}
)
CONFIG_LINE = canonical_json({"config": CONFIG.to_json()})


def test_where_names_file_and_line() -> None:
    assert where("t.jsonl", 9) == "t.jsonl:9"


def write_pattern_trace(path: Path, blocks: int) -> int:
    """A trace of `blocks` repetitions of 4 puts, a deliver, a deliver_ack and a tick over
    1,000 keys, written line by line; returns the number of operations."""
    with path.open("w", encoding="utf-8") as out:
        out.write(CONFIG_LINE + "\n")
        for block in range(blocks):
            out.write(
                "".join(
                    f'{{"key":"k{(block * 4 + i) % 1000:03d}","op":"put","site":1,'
                    f'"value":{{"n":{block}}}}}\n'
                    for i in range(4)
                )
                + '{"op":"deliver","sender":"ny"}\n'
                + '{"op":"deliver_ack","sender":"ny"}\n'
                + '{"ms":1,"op":"tick"}\n'
            )
    return blocks * 7


def test_a_million_operations_stream_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 7: reading a trace must not hold it. Held, these 1,000,006 operations would be
    # millions of live objects (an Op, its value dict, its strings); streamed, the reader
    # holds one chunk of lines. The live objects are counted (sys.getallocatedblocks) every
    # 100,000 lines of both passes, validation and iteration.
    path = tmp_path / "long.jsonl"
    count = write_pattern_trace(path, 142_858)
    assert count == 1_000_006
    growth: list[int] = []
    file_lines = traces.tracefile.file_lines

    def counted_lines(name: str) -> Iterator[bytes]:
        start = sys.getallocatedblocks()
        for number, line in enumerate(file_lines(name)):
            if number % 100_000 == 0:
                growth.append(sys.getallocatedblocks() - start)
            yield line

    monkeypatch.setattr(traces.tracefile, "file_lines", counted_lines)
    source = open_trace(path)
    seen = ticks = 0
    last: tuple[int, Op] = (0, Settle())
    for number, op in source.ops():
        seen += 1
        ticks += type(op) is Tick
        last = (number, op)
    assert source.op_count == count == seen
    assert ticks == 142_858
    assert last == (count + 1, Tick(1))  # line 1 is the configuration
    assert len(growth) == 2 * 11  # lines 0, 100,000, ..., 1,000,000 of each pass
    assert max(growth) < 20_000, growth


def test_ops_gives_file_line_numbers_and_can_be_read_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n" + CONFIG_LINE + "\n\n" + '{"ms":5,"op":"tick"}\r\n' + "  \n" + '{"op": "settle"}',
        encoding="utf-8",
    )  # a blank first line, CRLF, a blank line, and no newline at the end
    source = open_trace(path)
    assert (source.name, source.config, source.op_count) == (str(path), CONFIG, 2)
    expected = [(4, Tick(5)), (6, Settle())]
    assert list(source.ops()) == expected
    assert list(source.ops()) == expected


def test_lines_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    count = write_pattern_trace(path, 50)
    expected = list(open_trace(path).ops())
    monkeypatch.setattr("traces.tracefile.CHUNK_SIZE", 7)
    source = open_trace(path)
    assert source.op_count == count
    assert list(source.ops()) == expected
    assert read_trace(path).ops == tuple(op for _, op in expected)


def test_a_file_changed_after_validation_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(CONFIG_LINE + "\n" + '{"ms":5,"op":"tick"}\n' * 3, encoding="utf-8")
    source = open_trace(path)
    path.write_text(CONFIG_LINE + "\n" + '{"ms":5,"op":"tick"}\n' * 2, encoding="utf-8")
    with pytest.raises(TraceError) as info:
        list(source.ops())
    assert str(info.value) == f"{path}: the file changed since it was read"
    path.write_text(CONFIG_LINE + "\n" + '{"ms":0,"op":"tick"}\n', encoding="utf-8")
    with pytest.raises(TraceError) as info:
        list(source.ops())
    assert str(info.value) == f"{path}:2: ms: must be an integer > 0, got 0"


def canonical_by_hand(line: str) -> str:
    """An example line in canonical form, derived without the reader: every field explicit
    (`site_up`'s `wipe` defaults to false, SPEC §3), keys sorted, no spaces."""
    raw = json.loads(line)
    if raw.get("op") == "site_up":
        raw.setdefault("wipe", False)
    if "config" in raw:
        return canonical_json({"config": parse_config(raw["config"]).to_json()})
    return canonical_json(raw)


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_examples_round_trip_to_canonical_text(tmp_path: Path, example: Path) -> None:
    trace = read_trace(example)
    text = trace_text(trace.config, trace.ops)
    lines = example.read_text(encoding="utf-8").splitlines()
    assert text == "".join(canonical_by_hand(line) + "\n" for line in lines if line.strip())
    copy = tmp_path / "copy.jsonl"
    write_trace(copy, trace.config, trace.ops)
    assert copy.read_text(encoding="utf-8") == text
    source = open_trace(copy)
    assert tuple(op for _, op in source.ops()) == trace.ops
    # every canonical line is taken by the fast path, and it builds the same operation
    fast = fast_path(trace.config)
    for line, op in zip(trace_lines(trace.config, trace.ops)[1:], trace.ops, strict=True):
        assert fast(line.encode()) == op


def test_fast_path_takes_the_canonical_lines_of_every_operation() -> None:
    ops: list[Op] = [
        Put(1, "k", {"i": -(2**63), "j": 2**63 - 1, "s": "é\u2028", "b": True, "n": None}),
        Deliver("ny"),
        DeliverAck("ny"),
        SiteUp(2, wipe=True),
        SiteUp(2),
        Tick(2**63 - 1),
    ]
    fast = fast_path(CONFIG)
    for op in ops:
        line = json.dumps(op_to_json(op), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert fast(line.encode()) == op


# --- the fast path never accepts a line the precise validator rejects ------------------

INTS = st.sampled_from([0, 1, -1, 2, 3, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30])
SCALARS = st.one_of(
    INTS,
    st.sampled_from(["", "k", "é", "\u2028", "a\\b", 'q"', "\x00", "\ud800"]),
    st.booleans(),
    st.none(),
    st.sampled_from([1.5, 1e300, 2.0]),
)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2), max_leaves=3)
FIELD_NAMES = st.sampled_from(
    ["op", "site", "key", "value", "changes", "entries", "ms"]
) | st.sampled_from(["sender", "wipe", "exception", "times", "f", "g", ""])
OP_NAMES = st.sampled_from([*ALL_OP_NAMES, "explode"])
VALUES = st.dictionaries(st.sampled_from(["f", "g", "é", ""]), SCALARS | JSON_VALUES, max_size=3)
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "site": st.sampled_from([1, 2, 3, True]) | INTS,
    "sender": st.sampled_from(["ny", "tokyo", ""]),
    "key": st.sampled_from(["k", "", "é"]) | SCALARS,
    "value": VALUES | SCALARS,
    "changes": VALUES,
    "entries": st.dictionaries(st.sampled_from(["k", "j"]), VALUES | SCALARS, max_size=2),
    "ms": st.sampled_from([1, 5]) | INTS | SCALARS,
    "times": st.sampled_from([1, 2]) | INTS,
    "exception": st.sampled_from(["E", ""]) | SCALARS,
    "wipe": st.booleans() | SCALARS,
}
REQUIRED = {
    "put": ["site", "key", "value"],
    "delta": ["site", "key", "changes"],
    "destroy": ["site", "key"],
    "putall": ["site", "entries"],
    "tick": ["ms"],
    "site_down": ["site"],
    "site_up": ["site", "wipe"],
    "fail": ["site", "key", "exception", "times"],
    **{name: ["sender"] for name in ("deliver", "deliver_ack", "drop", "drop_ack")},
}


@st.composite
def op_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Operation objects, mostly well formed, some with a field too many or too few."""
    name = draw(OP_NAMES)
    obj: dict[str, Any] = {"op": name}
    for field in REQUIRED.get(name, []):
        if draw(st.integers(0, 19)) > 0:
            obj[field] = draw(FIELD_VALUES[field])
    if draw(st.integers(0, 9)) == 0:
        extra = draw(FIELD_NAMES)
        obj[extra] = draw(FIELD_VALUES.get(extra, SCALARS))
    return obj


def encodings(obj: dict[str, Any]) -> list[bytes]:
    compact = {"sort_keys": True, "separators": (",", ":")}
    backwards = dict(reversed(obj.items()))
    return [
        json.dumps(obj, **compact).encode(),  # type: ignore[arg-type]
        json.dumps(obj, ensure_ascii=False, **compact).encode("utf-8", "surrogatepass"),  # type: ignore[arg-type]
        json.dumps(obj).encode(),  # Python's default: spaces, the writer's key order
        json.dumps(backwards, ensure_ascii=False).encode("utf-8", "surrogatepass"),
        json.dumps(backwards, separators=(",", ":"), indent=None).encode(),
    ]


MUTATION_BYTES = [b"{", b"}", b"[", b'"', b",", b":", b"0", b"9", b"-", b"e", b".", b"\\", b" "]
MUTATION_BYTES += [b"\xff", b"\xc3", b"\xe2\x80\xa8", b"1e400", b"NaN", b'"op":"tick",']
MUTATION_BYTES += [b"\x00", b"\x7f", b"\t", b"\n", b"\xef\xbb\xbf", b'"k":1,', b'"k": 1, ']


@st.composite
def mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """The line with a few bytes inserted, deleted or replaced, or a key written twice."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        at = draw(st.integers(0, len(line)))
        if kind == "insert":
            line = line[:at] + draw(st.sampled_from(MUTATION_BYTES)) + line[at:]
        elif kind == "delete":
            line = line[:at] + line[at + 1 :]
        elif kind == "replace":
            line = line[:at] + draw(st.sampled_from(MUTATION_BYTES)) + line[at + 1 :]
        elif line.startswith(b"{") and b":" in line:
            end = line.find(b",", 1)
            first = line[1 : end if end > 0 else len(line) - 1]
            line = b"{" + first + b"," + line[1:]  # the first member written twice
    return line


def precise_verdict(line: bytes) -> Op | str:
    reader = Reader("t.jsonl")
    reader.config = CONFIG
    try:
        op = reader.precise(2, line)
    except TraceError as exc:
        return str(exc)
    assert op is not None
    return op


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_path_never_accepts_what_the_precise_validator_rejects(data: st.DataObject) -> None:
    obj = data.draw(op_objects())
    fast = fast_path(CONFIG)
    for line in encodings(obj):
        for candidate in (line, data.draw(mutated(line))):
            taken = fast(candidate)
            if taken is not None:
                assert precise_verdict(candidate) == taken, candidate


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), event_log=st.booleans())
def test_the_fast_object_path_never_accepts_what_parse_op_rejects(
    data: st.DataObject, event_log: bool
) -> None:
    # A log line's operation, decoded: `fast_object_path` (msgspec's strict conversion)
    # makes the Op `parse_op` makes, or leaves it to `parse_op`.
    obj = data.draw(op_objects())
    if event_log and data.draw(st.booleans()):
        obj["op"] = data.draw(st.sampled_from(["flush", "timeout"]))
    kinds = EVENT_LOG_FIELD_KINDS if event_log else FIELD_KINDS
    fast = fast_object_path(CONFIG, event_log)
    for line in encodings(obj):
        try:
            decoded = traces.tracefile.decode_line(line.decode("utf-8"))  # as `Reader.decode`
        except ValueError:
            continue
        taken = fast(decoded)
        if taken is not None:
            assert parse_op(decoded, CONFIG, kinds) == taken, line


def test_the_fast_object_path_takes_what_a_system_logs() -> None:
    fast = fast_object_path(CONFIG, event_log=True)
    assert fast({"op": "flush", "sender": "ny", "dispatcher": 0}) == Flush("ny", 0)
    assert fast({"op": "put", "site": 1, "key": "k", "value": {"n": 1}}) == Put(1, "k", {"n": 1})
    assert fast({"op": "tick", "ms": 5}) is None  # not an event log's: parse_op says so
    assert (
        fast({"op": "flush", "sender": "ny", "dispatcher": 1}) is None
    )  # batch_size 4, 1 dispatcher
    assert fast({"op": "put", "site": True, "key": "k", "value": {}}) is None
    assert fast({"op": ["put"], "site": 1, "key": "k", "value": {}}) is None  # unhashable
    assert fast(["op", "put"]) is None
    assert fast_object_path(CONFIG)({"op": "tick", "ms": 5}) == Tick(5)


def test_fast_and_precise_verdicts_on_chosen_lines() -> None:
    # Lines msgspec's typed decoding would take; the fast path must not.
    fast = fast_path(CONFIG)
    rejected = {
        b'{"ms":1,"ms":2,"op":"tick"}': "t.jsonl:2: not valid JSON: field 'ms' appears twice "
        "in one object",
        b'{"key":"k","op":"put","site":1,"value":{"a":1,"a":2}}': "t.jsonl:2: not valid JSON: "
        "field 'a' appears twice in one object",
        b'{"op": "tick", "op": "tick", "ms": 1}': "t.jsonl:2: not valid JSON: field 'op' "
        "appears twice in one object",
        b'{"op": "putall", "site": 1, "entries": {"k": {"f": 1, "f": 2}}}': "t.jsonl:2: not "
        "valid JSON: field 'f' appears twice in one object",
        b'{"op":"redeliver","sender":"ny","events":null}': "t.jsonl:2: events: must be a list "
        "of event ids, got null",
        b'{"op":"redeliver","sender":"ny","events":["1:2\\n"]}': "t.jsonl:2: events[0]: must "
        'be an event id "origin:seq", got "1:2\\n"',
    }
    for line, message in rejected.items():
        assert fast(line) is None, line
        assert precise_verdict(line) == message
    # Not canonical, yet the same operation either way: the fast path takes them.
    taken = {
        b'{"op": "tick", "ms": 1}': Tick(1),
        b'{"op":"site_up","site":2}': SiteUp(2),
        b'{"wipe": true, "site": 2, "op": "site_up"}': SiteUp(2, True),
        b'{"op": "put", "site": 1, "key": "\xc3\xa9", "value": {"f": "a:b", "g": null}}': Put(
            1, "\u00e9", {"f": "a:b", "g": None}
        ),
    }
    for line, op in taken.items():
        assert fast(line) == op, line
        assert precise_verdict(line) == op
    # An escape, or a number written longer than needed: only the precise path reads it.
    longer = b'{"op":"put","site":1,"key":"k","value":{"n":-0}}'
    assert fast(longer) is None
    assert precise_verdict(longer) == Put(1, "k", {"n": 0})
    escaped = b'{"key":"\\u00e9","op":"destroy","site":1}'
    assert fast(escaped) is None
    assert precise_verdict(escaped) == precise_verdict(
        '{"key":"\u00e9","op":"destroy","site":1}'.encode()
    )


def _outcome(decode: Any, text: str) -> Any:
    """What decoding `text` gives, every value tagged with its type (True is not 1, a
    `JsonNumber` not a float), or the error's type and message."""

    def tagged(value: Any) -> Any:
        if isinstance(value, dict):
            return ("dict", [(key, tagged(item)) for key, item in value.items()])
        if isinstance(value, list):
            return ("list", [tagged(item) for item in value])
        return (type(value).__name__, value)

    try:
        return tagged(decode(text))
    except ValueError as exc:
        return (type(exc).__name__, str(exc))


ANY_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('.e+-\\"\u2028')),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=ANY_JSON, data=st.data())
def test_decode_line_reads_every_line_as_python_json_with_its_checks(
    value: Any, data: st.DataObject
) -> None:
    """orjson's compact path (`decode_line`) gives what the exact decoder gives, value,
    types and errors alike, on compact and spaced lines, mutated or not."""
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for text in (compact, json.dumps(value), json.dumps(value, separators=(",", ":"))):
        line = text.encode("utf-8", "surrogatepass")
        for candidate in (line, data.draw(mutated(line))):
            try:
                decoded = candidate.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:  # not text: the reader says so before decoding
                continue
            assert _outcome(traces.tracefile.decode_line, decoded) == _outcome(
                traces.tracefile.decode_exactly, decoded
            ), candidate


def test_decode_line_on_chosen_lines() -> None:
    """Lines orjson reads otherwise than Python's `json` with the checks (SPEC §12):
    each as the exact decoder reads it."""
    decode = traces.tracefile.decode_line
    assert decode('{"a":1,"b":[true,null,"x"]}') == {"a": 1, "b": [True, None, "x"]}
    assert type(decode('{"a":1e+20}')["a"]).__name__ == "JsonNumber"  # a float, kept as text
    assert type(decode('{"a":1.5}')["a"]).__name__ == "JsonNumber"
    assert decode('{"a":99999999999999999999}') == {"a": 99999999999999999999}  # 20 digits
    assert type(decode('{"a":999999999999999999999}')["a"]).__name__ == "JsonNumber"
    assert decode('{"a":-9223372036854775809}') == {"a": -9223372036854775809}
    for text, message in {
        '{"a":1,"a":2}': "field 'a' appears twice in one object",
        '{"a":"\\ud800"}': "\\ud800 is half of a UTF-16 surrogate pair, not a character",
        '{"a":NaN}': "NaN is not valid JSON",
    }.items():
        with pytest.raises(ValueError, match="^" + message.replace("\\", "\\\\") + "$"):
            decode(text)
    # 300 levels: orjson reads them but writes at most 255 (was: TypeError, a traceback)
    deep = "[" * 300 + "]" * 300
    assert decode('{"a":' + deep + "}") == traces.tracefile.decode_exactly('{"a":' + deep + "}")
    with pytest.raises(ValueError, match=r"^nested too deeply$"):
        decode('{"a":' + "[" * 5000 + "]" * 5000 + "}")


@pytest.mark.parametrize("command", ["replay", "shrink", "report"])
def test_a_trace_from_a_pipe_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # validated in a first reading, it was empty in the run's second: "empty trace"
    import os

    from wanconform.cli import main

    pipe = tmp_path / "t.jsonl"
    os.mkfifo(pipe)  # (not opened: nothing blocks)
    out = ["-o", str(tmp_path / "out")] if command != "replay" else []
    assert main([command, str(pipe), *out]) == 2
    assert capsys.readouterr().err.endswith(
        f"{pipe}: not a regular file (a pipe?): a trace is read more than once; give a file\n"
    )
    assert not (tmp_path / "out").exists()
