"""The event log reader's two paths (traces/eventlog.py, docs/LOG.md "Event logs"): the
fast one takes the compact lines a system writes; it never accepts a line the precise one
rejects, and makes the very EventLine the precise one makes; what it does not take, the
precise one accepts or names."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.generation.profiles import PROFILES, generate_trace
from conformance.running.events import event_log_of
from traces.config import Config, parse_config
from traces.errors import TraceError
from traces.eventlog import EventLine, _Batches, _EventReader, _fast_lines
from traces.ops import Flush, Put, Settle

CONFIG = parse_config(
    {
        "sites": [1, 2],
        "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 2}],
    }
)
ENQUEUED: dict[str, Any] = {
    "kind": "enqueued", "site": 1, "event": "1:1", "key": "a", "op": "create",
    "version": [1, 5, 1], "value": {"n": 1}, "senders": ["ny"],
    "routes": {"ny": {"dispatcher": 0, "bucket": None}},
}  # fmt: skip
PUT: dict[str, Any] = {
    "t": 5, "at": 7, "op": "put", "site": 1, "key": "a", "value": {"n": 1},
    "observed": [ENQUEUED],
}  # fmt: skip


def reader(
    config: Config, last_t: int = 0, last_at: int = -1, has_at: bool | None = None
) -> _EventReader:
    out = _EventReader("site-1.jsonl")
    out.config = config
    out.last_t, out.last_at, out.has_at = last_t, last_at, has_at
    return out


def precise(line: bytes, **state: Any) -> EventLine | str:
    """The precise path's verdict on a line (after a header with CONFIG): the EventLine,
    or its error."""
    r = reader(CONFIG, **state)
    try:
        decoded = r.decode(9, line)
        assert decoded is not None
        return r.event(9, *decoded)
    except TraceError as exc:
        return str(exc)


def fast(line: bytes, config: Config = CONFIG, **state: Any) -> EventLine | None:
    r = reader(config, **state)
    return r.fast(_fast_lines(config), 9, line)


def compact(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


def test_a_compact_line_is_taken_by_the_fast_path_as_the_precise_path_takes_it() -> None:
    line = compact(PUT)
    taken = fast(line)
    assert taken is not None
    assert taken == precise(line)
    assert (taken.where, taken.t, taken.at, taken.batch_id) == ("site-1.jsonl:9", 5, 7, 0)
    assert taken.entry.op == Put(site=1, key="a", value={"n": 1})
    assert taken.entry.observed == PUT["observed"]


def test_a_flush_line_s_batch_is_its_sent_batch_on_both_paths() -> None:
    sent = {
        "kind": "sent", "sender": "ny", "dispatcher": 0, "batch_id": 3, "events": ["1:1"],
        "bytes_full": 7, "bytes_delta": 0, "events_resent": 0,
    }  # fmt: skip
    line = compact({"t": 9, "op": "flush", "sender": "ny", "dispatcher": 0, "observed": [sent]})
    taken = fast(line)
    assert taken is not None and taken == precise(line)
    assert (taken.entry.op, taken.batch_id, taken.at) == (Flush("ny", 0), 3, -1)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (  # a key twice: msgspec would keep the last
            compact(PUT).replace(b'"value":{"n":1}', b'"value":{"n":1,"n":2}', 1),
            "site-1.jsonl:9: not valid JSON: field 'n' appears twice in one object",
        ),
        (  # a fraction where SPEC §10 has integers
            compact(PUT).replace(b"[1,5,1]", b"[1,5.0,1]"),
            "site-1.jsonl:9: observed[0].version[1]: must be an integer, a string, a boolean "
            "or null (SPEC §10), got a number with a fraction (5.0)",
        ),
        (  # an exponent without a fraction: orjson writes 1e+30 back as it was
            compact({**PUT, "observed": [{**ENQUEUED, "senders": [1e30]}]}),
            "site-1.jsonl:9: observed[0].senders[0]: must be an integer, a string, a boolean "
            "or null (SPEC §10), got a number with an exponent (1e+30)",
        ),
        (
            compact({**PUT, "observed": [{**ENQUEUED, "value": {"n": 1e-7}}]}),
            "site-1.jsonl:9: observed[0].value.n: must be an integer, a string, a boolean or "
            "null (SPEC §10), got a number with an exponent (1e-7)",
        ),
        (  # past Python's 4,300 digits: SPEC §10 has no such integer (was: "must be an
            # integer ..., got an integer")
            compact(PUT).replace(b"[1,5,1]", b"[1," + b"9" * 5000 + b",1]"),
            "site-1.jsonl:9: observed[0].version[1]: must be an integer, a string, a boolean "
            "or null (SPEC §10), got an integer with too many digits (99999...(5000 digits))",
        ),
        (
            compact({**PUT, "zz": 1}),
            "site-1.jsonl:9: zz: unknown field for 'put' (fields: site, key, value, thread)",
        ),
        (
            compact({**PUT, "batch_id": 1}),
            "site-1.jsonl:9: batch_id: only a deliver, deliver_ack, drop or drop_ack has one",
        ),
        (  # SPEC §3: every integer is a signed 64-bit one (was: the merge's error)
            compact({"t": 5, "op": "deliver", "sender": "ny", "batch_id": 2**63, "observed": []}),
            "site-1.jsonl:9: batch_id: 9223372036854775808 is outside the signed 64-bit range "
            "(SPEC §3)",
        ),
        (
            compact({**PUT, "t": -1}),
            "site-1.jsonl:9: t: must be an integer >= 0, got -1",
        ),
        (
            compact({"t": 5, "op": "deliver", "sender": "ny", "dispatcher": 1, "observed": []}),
            "site-1.jsonl:9: dispatcher: sender 'ny' has no dispatcher 1: it has 1 dispatcher "
            "thread (0) (R29)",
        ),
        (
            compact({**PUT, "observed": [{**ENQUEUED, "extra": 1}]}),
            "site-1.jsonl:9: observed[0]: enqueued.extra: unknown field (SPEC §10: enqueued "
            "has kind, site, event, key, op, version, value, senders, routes)",
        ),
    ],
)
def test_what_the_fast_path_does_not_take_the_precise_path_names(line: bytes, error: str) -> None:
    assert fast(line) is None
    assert precise(line) == error


def test_lines_the_fast_path_leaves_to_the_precise_one_are_still_read() -> None:
    spaced = json.dumps(PUT).encode()  # as Python's json.dumps writes: spaces
    dotted = compact({**PUT, "key": "a.b"})
    for line, key in ((spaced, "a"), (dotted, "a.b")):
        assert fast(line) is None
        verdict = precise(line)
        assert isinstance(verdict, EventLine)
        assert verdict.entry.op == Put(site=1, key=key, value={"n": 1})


def test_a_process_s_own_fields_are_left_out_on_both_paths() -> None:
    own = compact({**PUT, "_mine": [1, 2]})  # docs/LOG.md: a field of the process's own
    taken = fast(own)
    assert taken is not None and taken == precise(own) == fast(compact(PUT))


def test_the_clock_across_lines_is_the_precise_path_s_to_judge() -> None:
    line = compact(PUT)  # t 5, at 7
    assert fast(line, last_t=6) is None
    assert precise(line, last_t=6) == (
        "site-1.jsonl:9: t: 5 is before the previous line's 6: a process logs its steps in "
        "the order it took them, on a clock that does not run back"
    )
    assert fast(line, has_at=False) is None
    assert str(precise(line, has_at=False)).startswith(
        "site-1.jsonl:9: at: the file's first step line has none"
    )
    assert fast(line, last_at=8, has_at=True) is None
    assert fast(line, last_t=5, last_at=7, has_at=True) == precise(
        line, last_t=5, last_at=7, has_at=True
    )


def run_logs(profile: str, seed: int) -> tuple[Config, list[list[bytes]]]:
    """The compact lines (headers dropped) of a deterministic run's event logs, per
    process."""
    config, stream = generate_trace(seed, f"t{seed}", profile, 300)
    logs = event_log_of(config, [op for op in stream if type(op) is not Settle])
    return config, [[compact(line) for line in lines[1:]] for lines in logs.values()]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_line_of_a_run_reads_the_same_on_both_paths(profile: str) -> None:
    config, logs = run_logs(profile, 3)
    fast_lines = _fast_lines(config)
    taken = 0
    for lines in logs:
        quick, slow = reader(config), reader(config)
        for number, line in enumerate(lines, start=2):
            event = quick.fast(fast_lines, number, line)
            decoded = slow.decode(number, line)
            assert decoded is not None
            expected = slow.event(number, *decoded)
            if event is None:
                assert b"." in line  # the only lines of a run it leaves: a dotted name
                event = quick.event(number, *decoded)
            else:
                taken += 1
            assert event == expected
    assert taken > sum(map(len, logs)) // 2


RUNS = {
    profile: (config, [line for lines in logs for line in lines[:30]])
    for profile in ("faults", "parallel", "dlq")
    for config, logs in [run_logs(profile, 5)]
}
MUTATIONS = [
    b"{", b"}", b"[", b'"', b",", b":", b"0", b"9", b"-", b".5", b"e5", b"e+30", b"\\", b" ",
    b"\xff", b"\\ud800", b'"_x":1,', b'"zz":1,', b'"state":{},', b'"t":-1,', b'"at":3,',
    b'"batch_id":2,', b'"dispatcher":3,', b"99999999999999999999999", b"true", b"null",
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Config, bytes]:
    config, lines = RUNS[draw(st.sampled_from(sorted(RUNS)))]
    line = draw(st.sampled_from(lines[:60]))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(line)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        if kind == "insert":
            line = line[:at] + draw(st.sampled_from(MUTATIONS)) + line[at:]
        elif kind == "delete":
            line = line[:at] + line[at + 1 :]
        elif kind == "replace":
            line = line[:at] + draw(st.sampled_from(MUTATIONS)) + line[at + 1 :]
        else:
            end = line.find(b",", 1)
            line = b"{" + line[1:end] + b"," + line[1:]  # the first member written twice
    return config, line


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=mutated(),
    last_t=st.sampled_from([0, 3, 10**6]),
    last_at=st.sampled_from([-1, 0, 10**6]),
    has_at=st.sampled_from([None, True, False]),
)
def test_the_fast_path_never_accepts_what_the_precise_path_rejects(
    case: tuple[Config, bytes], last_t: int, last_at: int, has_at: bool | None
) -> None:
    config, line = case
    taken = reader(config, last_t, last_at, has_at).fast(_fast_lines(config), 9, line)
    if taken is not None:
        r = reader(config, last_t, last_at, has_at)
        decoded = r.decode(9, line)
        assert decoded is not None
        assert r.event(9, *decoded) == taken


def test_a_dispatcher_s_batches_are_every_id_added_in_any_order_as_runs() -> None:
    batches = _Batches()
    for batch_id in [1, 2, 5, 3, 7, 6]:  # 4 never added: two runs, 1-3 and 5-7
        batches.add(batch_id)
    assert [n for n in range(9) if n in batches] == [1, 2, 3, 5, 6, 7]
    assert (batches.firsts, batches.lasts) == ([1, 5], [3, 7])
    batches.add(4)  # joins them
    batches.add(2)  # already there
    assert (batches.firsts, batches.lasts) == ([1], [7])
