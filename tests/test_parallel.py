"""SPEC v2.0 part 1, rule by rule: R27 (configuration), R28 (bucket of a key), R29
(dispatchers and routing), R30 (per-dispatcher batching), R31 (parallel batch
formation), R35 (queue memory, accounting), R39 (settle over dispatchers), and the worked
examples of §16.3, on both engines. Every expectation is derived by hand from the spec;
the comments give the arithmetic (Java's String.hashCode, sizes per R4, times per R15)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from expected import (
    acked,
    applied,
    connection_failed,
    dispatcher,
    enqueued,
    entry,
    in_flight,
    route,
    sent,
    timeout,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import impl
import impl.state
import model
import model.routing
import traces.buckets
from conformance.running.run import run_trace
from conftest import Run, replay
from tools.planted_bugs import DispatcherForgetsItsTimer, RouteByKeyAndTime
from traces.config import parse_config
from traces.errors import ConfigError, TraceError
from traces.tracefile import parse_trace_lines, read_trace
from wanconform.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"
ENGINES = ("model", "impl")

# R28's hand values: h = 31*h + c over UTF-16 code units, signed 32-bit.
HASHES = {
    "a": 97,
    "b": 98,
    "d": 100,
    "e": 101,
    "k1": 3366,  # 31 * 107 + 49
    "Aa": 2112,  # 31 * 65 + 97
    "BB": 2112,  # 31 * 66 + 66: Java's famous collision
    "polygenelubricants": -2147483648,  # Integer.MIN_VALUE
    "": 0,
    "é": 233,  # one BMP code unit, U+00E9
    "😀": 1772899,  # U+1F600 = surrogates D83D DE00: 31 * 55357 + 56832
}


@pytest.mark.parametrize("java_hash", [traces.buckets.java_hash, impl.state.java_hash])
def test_r28_string_hashcode_over_utf16_code_units(java_hash: Any) -> None:
    assert {key: java_hash(key) for key in HASHES} == HASHES


LONE_SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())


def utf16_hash(key: str) -> int:
    """R28 as written: fold `31*h + unit` over the key's UTF-16 code units, then signed."""
    data = key.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) % 2**32
    return h - 2**32 if h >= 2**31 else h


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters() | LONE_SURROGATES, max_size=40))
def test_r28_hash_of_any_key_ascii_or_not(key: str) -> None:
    assert traces.buckets.java_hash(key) == impl.state.java_hash(key) == utf16_hash(key)


def test_r28_buckets_stay_right_when_the_model_forgets_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model.routing, "_BUCKETS", {})
    monkeypatch.setattr(model.routing, "_REMEMBERED", 3)  # forget after every third key
    keys = [f"k{n}" for n in range(20)] + ["Aa", "BB", "polygenelubricants", "é", "😀"]
    for _ in range(2):
        got = [model.routing.bucket(key, 113) for key in keys]
        assert got == [abs(utf16_hash(key)) % 113 for key in keys]
    assert len(model.routing._BUCKETS[113]) <= 3


def test_r28_bucket_is_the_absolute_java_remainder() -> None:
    config = parse_config(
        {"sites": [1, 2], "regions": {"1": {"type": "partition", "total_num_buckets": 4}}}
    )
    buckets = {k: model.routing.bucket_of(config, 1, k) for k in ("a", "b", "d", "e", "k1")}
    assert buckets == {"a": 1, "b": 2, "d": 0, "e": 1, "k1": 2}  # the spec's B = 4 values
    assert model.routing.bucket_of(config, 1, "Aa") == model.routing.bucket_of(config, 1, "BB") == 0
    assert model.routing.bucket_of(config, 2, "a") is None  # site 2 is replicated
    wide = parse_config({"sites": [1], "regions": {"1": {"type": "partition"}}})  # 113
    # -2147483648 % 113 == -8 in Java; |-8| = 8 (Math.abs never sees MIN_VALUE)
    assert model.routing.bucket_of(wide, 1, "polygenelubricants") == 8
    assert impl.state.bucket_of("polygenelubricants", 113) == 8


def two_sites(sender: dict[str, Any], regions: dict[str, Any] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "sites": [1, 2],
        "senders": [{"id": "ny", "site": 1, "remote": 2, **sender}],
    }
    if regions is not None:
        config["regions"] = regions
    return config


PARTITIONED_4 = {"1": {"type": "partition", "total_num_buckets": 4}}


def run_on(engine: str, config: dict[str, Any], ops: list[Any]) -> Run:
    lines = [json.dumps({"config": config})] + [json.dumps(op) for op in ops]
    return replay(parse_trace_lines(lines, "t.jsonl"), engine)


# --- R27: configuration ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            two_sites({"parallel": True}),
            "senders[0].parallel: a parallel sender needs a partitioned region at site 1; "
            "Geode: 'Parallel Gateway Sender ny can not be used with replicated region'",
        ),
        (
            two_sites({"parallel": True, "order_policy": "thread"}, PARTITIONED_4),
            "senders[0].order_policy: a parallel sender cannot use the thread policy; Geode: "
            "'Parallel Gateway Sender ny can not be created with OrderPolicy THREAD'",
        ),
        (two_sites({"dispatcher_threads": 0}), "senders[0].dispatcher_threads: must be >= 1"),
        (two_sites({"order_policy": "KEY"}), 'senders[0].order_policy: must be "key"'),
        (
            two_sites({}, {"1": {"type": "replicate", "total_num_buckets": 4}}),
            'regions.1.total_num_buckets: allowed only with "type": "partition"',
        ),
        (two_sites({}, {"3": {"type": "partition"}}), "regions.3: site 3 is not in 'sites'"),
        (
            two_sites({}, {"1": {"type": "partition", "total_num_buckets": 0}}),
            "regions.1.total_num_buckets: must be >= 1",
        ),
        (two_sites({}, {"1": {"type": "hash"}}), 'regions.1.type: must be "replicate" or'),
        (
            two_sites({"maximum_queue_memory_bytes": -1}),
            "senders[0].maximum_queue_memory_bytes: must be >= 0",
        ),
    ],
)
def test_r27_configuration_checks_name_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert str(caught.value).startswith(message)


def test_r27_defaults_keep_v12_meaning_and_round_trip() -> None:
    config = parse_config(two_sites({}))
    sender = config.senders[0]
    assert (sender.parallel, sender.dispatcher_threads, sender.order_policy) == (False, 1, "key")
    assert sender.maximum_queue_memory_bytes == 104_857_600
    assert config.region(1).type == "replicate"
    assert "regions" not in config.to_json() and "parallel" not in config.to_json()["senders"][0]
    partitioned = parse_config(
        two_sites({"parallel": True, "dispatcher_threads": 5}, {"1": {"type": "partition"}})
    )
    assert partitioned.region(1).total_num_buckets == 113  # GLOBAL_MAX_BUCKETS_DEFAULT
    assert parse_config(partitioned.to_json()) == partitioned


def test_r27_a_bad_configuration_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": two_sites({"parallel": True})}) + "\n")
    assert main(["replay", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "t.jsonl:1: config.senders[0].parallel: a parallel" in err


def test_s16_2_a_dispatcher_index_out_of_range_is_a_malformed_operation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = two_sites({"dispatcher_threads": 2})
    lines = [json.dumps({"config": config}), json.dumps({"op": "deliver", "sender": "ny"})]
    lines.append(json.dumps({"op": "drop", "sender": "ny", "dispatcher": 2}))
    with pytest.raises(TraceError, match=r"t.jsonl:3: dispatcher: sender 'ny' has no dispatcher 2"):
        parse_trace_lines(lines, "t.jsonl")
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"wanconform: error: {trace}:3: dispatcher: sender 'ny' has no dispatcher 2: it has 2 "
        "dispatcher threads (0..1) (R29)\n"
    )
    negative = [
        *lines[:2],
        json.dumps({"op": "put", "site": 1, "key": "k", "value": {}, "thread": -1}),
    ]
    with pytest.raises(TraceError, match=r"t.jsonl:3: thread: must be an integer >= 0, got -1"):
        parse_trace_lines(negative, "t.jsonl")


# --- the worked examples of §16.3, on both engines -------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r29_thread_policy_lets_a_later_write_win_first(engine: str) -> None:
    r = replay(read_trace(EXAMPLES / "order_policy_thread.jsonl"), engine)
    assert r.steps[0] == [
        enqueued(1, "1:1", "a", "create", [1, 0, 1], {"v": 1}, ["ny"], {"ny": route(0)}),
        sent("ny", 1, ["1:1"], 7),  # thread 0 -> |0 rem 2| = d0
    ]
    assert r.steps[1] == [  # R9: now 0 <= 0, so ts 1; thread 1 -> d1, which is free
        enqueued(1, "1:2", "a", "update", [2, 1, 1], {"v": 2}, ["ny"], {"ny": route(1)}),
        sent("ny", 1, ["1:2"], 7, dispatcher=1),
    ]
    assert r.steps[2] == [applied(2, "ny", "1:2", "a", "ok")]
    assert r.steps[3] == [applied(2, "ny", "1:1", "a", "conflict")]  # same dsid, (0,1) < (1,2)
    assert r.state["sites"]["2"]["entries"] == {"a": entry({"v": 2}, [2, 1, 1])}
    assert r.state["sites"]["2"]["stats"]["applied"] == 1
    assert r.state["sites"]["2"]["stats"]["conflicts"] == 1
    lanes = r.state["senders"]["ny"]["dispatchers"]
    assert [lane["network"] for lane in lanes] == [{"batch": False, "ack": True}] * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r29_key_policy_keeps_one_key_on_one_dispatcher(engine: str) -> None:
    r = replay(read_trace(EXAMPLES / "order_policy_key.jsonl"), engine)
    # |97 rem 2| = 1: both writes of "a" go to d1; the second waits (R13 per dispatcher)
    assert r.steps[0][1] == sent("ny", 1, ["1:1"], 7, dispatcher=1)
    assert r.steps[1] == [
        enqueued(1, "1:2", "a", "update", [2, 1, 1], {"v": 2}, ["ny"], {"ny": route(1)})
    ]
    assert r.steps[2] == [applied(2, "ny", "1:1", "a", "ok")]
    assert r.steps[3] == [{"kind": "skipped", "op": "deliver"}]  # d0 never had a batch
    assert r.steps[4] == [  # settle: ack, the flush it allows, deliver, ack
        acked("ny", 1, ["1:1"], dispatcher=1),
        sent("ny", 2, ["1:2"], 7, dispatcher=1),
        applied(2, "ny", "1:2", "a", "ok"),
        acked("ny", 2, ["1:2"], dispatcher=1),
    ]
    assert r.state["sites"]["2"]["entries"] == {"a": entry({"v": 2}, [2, 1, 1])}


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r29_partition_policy_routes_by_bucket(engine: str) -> None:
    r = replay(read_trace(EXAMPLES / "order_policy_partition.jsonl"), engine)
    # B = 3: "d" (100) is bucket 1, "e" (101) bucket 2. ny (partition): bucket mod 2;
    # ln (key): |hashCode| mod 2. So "d" goes to ny d1 but ln d0, as the example says.
    assert r.steps[0][0]["routes"] == {"ln": route(0, 1), "ny": route(1, 1)}
    assert r.steps[1][0]["routes"] == {"ln": route(1, 2), "ny": route(0, 2)}


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r31_a_dispatchers_keep_no_global_order(engine: str) -> None:
    r = replay(read_trace(EXAMPLES / "parallel_dispatchers_no_global_order.jsonl"), engine)
    assert r.steps[0] == [  # "a": bucket |97 rem 4| = 1, d = 1 mod 2 = 1
        enqueued(1, "1:1", "a", "create", [1, 0, 1], {"v": 1}, ["ny"], {"ny": route(1, 1)})
    ]
    assert r.steps[1][0]["routes"] == {"ny": route(0, 2)}  # "b": bucket 2, d0
    # "d": bucket 0, d0 (now 2 events): flush from cursor 0: bucket 0 -> 1:3, bucket 2 -> 1:2
    assert r.steps[2][1] == sent("ny", 1, ["1:3", "1:2"], 14)
    assert r.steps[3] == [applied(2, "ny", "1:3", "d", "ok"), applied(2, "ny", "1:2", "b", "ok")]
    assert r.steps[4] == [sent("ny", 1, ["1:1"], 7, dispatcher=1)]  # head waited 1000
    lanes = r.state["senders"]["ny"]["dispatchers"]
    assert lanes[0] == dispatcher(
        ["1:2", "1:3"], in_flight(1, ["1:3", "1:2"], 0), ack=True, cursor=0, memory_bytes=14
    )
    assert lanes[1] == dispatcher(
        ["1:1"], in_flight(1, ["1:1"], 1000), batch=True, cursor=3, memory_bytes=7
    )
    assert sorted(r.state["sites"]["2"]["entries"]) == ["b", "d"]  # "a" is still on its way


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r31_b_round_robin_and_resend(engine: str) -> None:
    r = replay(read_trace(EXAMPLES / "parallel_round_robin_and_resend.jsonl"), engine)
    # one dispatcher owns buckets 0..3; a, e -> bucket 1, b -> bucket 2. Cursor 0:
    # 0 empty, 1 -> 1:1, 2 -> 1:3, 3 empty, 0 empty, 1 -> 1:2; cursor then 2
    assert r.steps[2][1] == sent("ny", 1, ["1:1", "1:3", "1:2"], 21)
    assert r.steps[4] == [timeout("ny", 1, ["1:1", "1:3", "1:2"])]
    assert r.state["senders"]["ny"]["stats"]["batches_timed_out"] == 1
    assert r.steps[5] == [sent("ny", 2, ["1:1", "1:3", "1:2"], 21, events_resent=3)]
    assert r.state["senders"]["ny"]["dispatchers"] == [
        dispatcher(
            ["1:1", "1:2", "1:3"],
            in_flight(2, ["1:1", "1:3", "1:2"], 15000),
            next_retry_at=15000,
            batch=True,
            cursor=2,
            memory_bytes=21,
        )
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_r31_resend_holds_the_timed_out_batch_until_the_next_flush(engine: str) -> None:
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},
        {"op": "put", "site": 1, "key": "e", "value": {"v": 1}},
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},
        {"op": "drop", "sender": "ny"},
        {"op": "tick", "ms": 10000},  # timeout: resend [1:1, 1:3, 1:2], retry at 15000
    ]
    r = run_on(engine, two_sites({"parallel": True, "batch_size": 3}, PARTITIONED_4), ops)
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    assert lane["resend"] == ["1:1", "1:3", "1:2"] and lane["in_flight"] is None
    assert lane["next_retry_at"] == 15000 and lane["cursor"] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_r19_r31_an_invalid_delta_goes_first_in_the_next_parallel_batch(engine: str) -> None:
    # delta sender, parallel, one dispatcher, B = 4, batch_size 2. Site 2 is wiped after
    # the first batch, so the delta of "a" cannot apply there (R16.4) and stays (R19).
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"x": 1}},  # 1:1, bucket 1
        {"op": "put", "site": 1, "key": "b", "value": {"x": 1}},  # 1:2, bucket 2: batch 1
        {"op": "settle"},
        {"op": "site_down", "site": 2},
        {"op": "site_up", "site": 2, "wipe": True},
        {"op": "delta", "site": 1, "key": "a", "changes": {"x": 2}},  # 1:3, bucket 1
        {"op": "delta", "site": 1, "key": "b", "changes": {"x": 2}},  # 1:4: batch 2
        {"op": "deliver", "sender": "ny"},
        {"op": "put", "site": 1, "key": "d", "value": {"x": 1}},  # 1:5, bucket 0
        {"op": "deliver_ack", "sender": "ny"},
    ]
    config = two_sites({"parallel": True, "batch_size": 2, "delta": True}, PARTITIONED_4)
    r = run_on(engine, config, ops)
    # cursor after batch 1 (buckets 1, 2) is 3: batch 2 takes bucket 1 first (3, then
    # wrap to 0: empty, 1 -> 1:3), then bucket 2 -> 1:4
    assert r.steps[6][-1] == sent("ny", 2, ["1:3", "1:4"], bytes_delta=14)
    assert [o["status"] for o in r.steps[7]] == ["invalid_delta", "invalid_delta"]
    # the ack keeps both (R19), as the resend list, in batch order; then R31 flushes:
    # resend first (2 events = batch_size), so 1:5 waits
    assert r.steps[9][0] == acked("ny", 2, [])
    assert r.steps[9][-1] == sent("ny", 3, ["1:3", "1:4"], 14)  # full values now: 7 + 7
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    assert lane["queue"] == ["1:3", "1:4", "1:5"] and lane["resend"] == []


# --- R30: every dispatcher on its own ---------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_r30_a_timeout_of_one_dispatcher_delays_only_its_keys(engine: str) -> None:
    # key policy, 2 dispatchers: "a" (97) -> d1, "b" (98) -> d0; batch_size 1
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},  # d1 sends batch 1
        {"op": "drop", "sender": "ny", "dispatcher": 1},
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},  # d0 sends its batch 1
        {"op": "deliver", "sender": "ny", "dispatcher": 0},
        {"op": "deliver_ack", "sender": "ny", "dispatcher": 0},
        {"op": "tick", "ms": 100},  # d1: 100 >= 0 + ack_timeout_ms 100
    ]
    config = two_sites({"dispatcher_threads": 2, "batch_size": 1, "ack_timeout_ms": 100})
    r = run_on(engine, config, ops)
    assert r.steps[3] == [applied(2, "ny", "1:2", "b", "ok")]  # b overtakes a
    assert r.steps[4] == [acked("ny", 1, ["1:2"])]
    assert r.steps[5] == [timeout("ny", 1, ["1:1"], dispatcher=1)]  # only d1's was lost
    lanes = r.state["senders"]["ny"]["dispatchers"]
    assert lanes[1]["next_retry_at"] == 5100  # now 100 + retry_interval_ms 5000
    assert lanes[1]["queue"] == ["1:1"] and lanes[0]["queue"] == []
    assert r.state["sites"]["2"]["entries"] == {"b": entry({"v": 1}, [1, 0, 1])}


@pytest.mark.parametrize("engine", ENGINES)
def test_r30_each_dispatcher_fails_to_connect_and_counts(engine: str) -> None:
    ops = [
        {"op": "site_down", "site": 2},
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},  # d1
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},  # d0
    ]
    config = two_sites({"dispatcher_threads": 2, "batch_size": 1})
    r = run_on(engine, config, ops)
    assert r.steps[1][1:] == [connection_failed("ny", 2, dispatcher=1)]
    assert r.steps[2][1:] == [connection_failed("ny", 2, dispatcher=0)]
    assert r.state["senders"]["ny"]["stats"]["connection_failures"] == 2
    retry = [lane["next_retry_at"] for lane in r.state["senders"]["ny"]["dispatchers"]]
    assert retry == [5000, 5000]


@pytest.mark.parametrize("engine", ENGINES)
def test_r39_settle_delivers_by_sender_then_dispatcher(engine: str) -> None:
    # two senders of three dispatchers, key policy; each write goes to |h| mod 3:
    # "a" 97 -> 1, "b" 98 -> 2, "d" 100 -> 1 ... settle takes (ln, 0..2) then (ny, 0..2)
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "ny", "site": 1, "remote": 2, "dispatcher_threads": 3, "batch_size": 1},
            {"id": "ln", "site": 1, "remote": 3, "dispatcher_threads": 3, "batch_size": 1},
        ],
    }
    ops = [{"op": "put", "site": 1, "key": key, "value": {"v": 1}} for key in ("b", "a")]
    r = run_on(engine, config, [*ops, {"op": "settle"}])
    delivered = [(obs["site"], obs["event"]) for obs in r.steps[2] if obs["kind"] == "applied"]
    # ln's d1 ("a", 1:2) before ln's d2 ("b", 1:1); then ny's in the same dispatcher order
    assert delivered == [(3, "1:2"), (3, "1:1"), (2, "1:2"), (2, "1:1")]
    acks = [(obs["sender"], obs["dispatcher"]) for obs in r.steps[2] if obs["kind"] == "acked"]
    assert acks == [("ln", 1), ("ln", 2), ("ny", 1), ("ny", 2)]


# --- R35: queue memory (accounting only) ------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r35_overflow_changes_no_observation(engine: str) -> None:
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},  # 7 bytes: memory 7
        {"op": "put", "site": 1, "key": "b", "value": {"v": 10}},  # 8: memory 15; batch 1
        {"op": "put", "site": 1, "key": "c", "value": {"v": 1}},  # 15 + 7 > 20: on disk
        {"op": "deliver", "sender": "ny"},
        {"op": "deliver_ack", "sender": "ny"},  # 1:1, 1:2 leave: memory 0
        {"op": "put", "site": 1, "key": "d", "value": {"v": 1}},  # in memory; batch 2
    ]
    small = run_on(engine, two_sites({"batch_size": 2, "maximum_queue_memory_bytes": 20}), ops)
    large = run_on(engine, two_sites({"batch_size": 2}), ops)
    assert small.steps == large.steps  # P10: every observation identical
    assert small.steps[5][-1] == sent("ny", 2, ["1:3", "1:4"], 14)
    lane = small.state["senders"]["ny"]["dispatchers"][0]
    assert lane["on_disk"] == ["1:3"] and lane["memory_bytes"] == 7
    stats = small.state["senders"]["ny"]["stats"]
    assert (stats["entries_overflowed"], stats["bytes_overflowed"]) == (1, 7)
    default = large.state["senders"]["ny"]["dispatchers"][0]
    assert default["on_disk"] == [] and default["memory_bytes"] == 14


@pytest.mark.parametrize("engine", ENGINES)
def test_r35_each_dispatcher_has_its_share_of_the_limit(engine: str) -> None:
    # limit 20 over 2 dispatchers: 10 each; "a" -> d1 (7 bytes fits), "a" again: 14 > 10
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},
        {"op": "put", "site": 1, "key": "a", "value": {"v": 2}},
    ]
    config = two_sites({"dispatcher_threads": 2, "maximum_queue_memory_bytes": 20})
    r = run_on(engine, config, ops)
    lane = r.state["senders"]["ny"]["dispatchers"][1]
    assert lane["memory_bytes"] == 7 and lane["on_disk"] == ["1:2"]


# --- P8, P12 and P4 (§16.7), each against a planted bug --------------------------------


def check(engine: Any, config: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
    """The verdicts of P2-P12 on a run of `engine` alone (the properties of its own run)."""
    lines = [json.dumps({"config": config})] + [json.dumps(op) for op in ops]
    trace = parse_trace_lines(lines, "t.jsonl")
    result = run_trace(
        "t", trace.config, ((f"t.jsonl:{i + 2}", op) for i, op in enumerate(trace.ops)),
        engine="impl", impl=engine,
    )  # fmt: skip
    return {v.property: v for v in result.verdicts}


OVERTAKE: list[
    Any
] = [  # key policy, 2 dispatchers, batch_size 1: both writes of "a" on one dispatcher
    {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},  # 1:1: |97 rem 2| = d1, sent
    {"op": "tick", "ms": 1000},
    {"op": "put", "site": 1, "key": "a", "value": {"v": 2}},  # 1:2: d1 too, waits
    {"op": "deliver", "sender": "ny", "dispatcher": 0},
    {"op": "deliver", "sender": "ny", "dispatcher": 1},
    {"op": "settle"},
]
KEYED = two_sites({"dispatcher_threads": 2, "batch_size": 1})


def test_p8_holds_when_a_key_stays_on_its_dispatcher() -> None:
    verdicts = check(impl.Engine, KEYED, OVERTAKE)
    assert str(verdicts["P8"]) == "P8: held"


def test_p8_finds_a_key_routed_to_two_dispatchers() -> None:
    # RouteByKeyAndTime: 1:2 goes to (97 + 1) mod 2 = d0 and is processed before 1:1
    verdicts = check(RouteByKeyAndTime, KEYED, OVERTAKE)
    assert verdicts["P8"].status == "failed"
    (violation,) = verdicts["P8"].violations
    assert violation.where == "t.jsonl:6"
    assert violation.message == (
        "sender ny: event 1:1 (key 'a') processed at site 2 after 1:2, which was appended "
        "to ny after it"
    )


def test_p8_is_not_applicable_under_the_thread_policy() -> None:
    config = two_sites({"dispatcher_threads": 2, "batch_size": 1, "order_policy": "thread"})
    ops: list[Any] = [{**op, "thread": 1} if i == 2 else op for i, op in enumerate(OVERTAKE)]
    verdicts = check(impl.Engine, config, ops)
    assert verdicts["P8"].status == "not applicable"
    assert verdicts["P8"].reason == (
        "order_policy thread: ny has 2 dispatchers and per-key order is not kept across "
        "them (Example R29)"
    )


LOST_ON_D1: list[Any] = [
    {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},  # 1:1: |98 rem 2| = d0
    {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},  # 1:2: d1
    {"op": "drop", "sender": "ny", "dispatcher": 1},
    {"op": "settle"},
]


def test_p12_holds_when_every_dispatcher_keeps_its_timer() -> None:
    verdicts = check(impl.Engine, KEYED, LOST_ON_D1)
    assert str(verdicts["P12"]) == "P12: held"
    assert str(verdicts["P2"]) == "P2: held"


def test_p12_finds_a_dispatcher_that_forgets_its_timer() -> None:
    verdicts = check(DispatcherForgetsItsTimer, KEYED, LOST_ON_D1)
    assert verdicts["P12"].status == "failed"
    (violation,) = verdicts["P12"].violations
    assert violation.where == "t.jsonl:5"
    assert violation.message == (
        "after settle, sender ny dispatcher 1 still has 1 queued event (1:2), batch 1 in flight"
    )


def test_p12_is_not_applicable_past_the_end_of_time() -> None:
    # R25: a batch whose ack timeout lies past 2^63-1 stays in flight after settle
    config = two_sites({"batch_size": 1, "ack_timeout_ms": 2**63 - 1})
    ops = [LOST_ON_D1[0], {"op": "tick", "ms": 5}, {"op": "drop", "sender": "ny"}, {"op": "settle"}]
    verdicts = check(impl.Engine, config, ops)
    assert verdicts["P12"].status == "not applicable"
    assert verdicts["P12"].reason == (
        "after the settle at t.jsonl:5, sender ny dispatcher 0 is next due past 2^63-1 (R25)"
    )


def test_p2_p5_p12_hold_where_checked_and_name_the_settle_that_stopped_short() -> None:
    # Geode's "wait forever" imports as 2^62 ms (docs/COMMANDS.md). The first lost batch
    # (sent at 0) times out at 2^62, within 2^63-1: the first settle resends it and ends
    # quiescent, so P2, P5 and P12 are checked there and hold. The second (sent at 2^62 +
    # 5) would time out past 2^63-1: settle stops with it in flight (R25), and no property
    # of quiescence applies at that settle (P12 by its text; P2 and P5, a reading; P5 does
    # not apply to this one-way topology at all).
    config = two_sites({"batch_size": 1, "ack_timeout_ms": 2**62})
    lost = [{"op": "tick", "ms": 5}, {"op": "drop", "sender": "ny"}, {"op": "settle"}]
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}}, *lost,
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}}, *lost,
    ]  # fmt: skip
    note = (
        "not checked at a settle (after the settle at t.jsonl:9, sender ny dispatcher 0 is "
        "next due past 2^63-1 (R25))"
    )
    for engine in (impl.Engine, model.Engine):
        verdicts = check(engine, config, ops)
        for name in ("P2", "P12"):
            assert (verdicts[name].status, verdicts[name].reason) == ("held", note), name


def test_p4_edges_are_senders_whatever_their_dispatchers() -> None:
    # A parallel sender resends on one dispatcher what it shipped before: one edge 1 -> 2.
    config = two_sites({"parallel": True, "dispatcher_threads": 2, "batch_size": 1,
                        "ack_timeout_ms": 10}, PARTITIONED_4)  # fmt: skip
    ops = [
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},
        {"op": "deliver", "sender": "ny", "dispatcher": 1},
        {"op": "drop_ack", "sender": "ny", "dispatcher": 1},
        {"op": "settle"},
    ]
    verdicts = check(impl.Engine, config, ops)
    assert str(verdicts["P4"]) == "P4: held" and str(verdicts["P3"]) == "P3: held"
