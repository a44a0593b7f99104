"""SPEC v2.0 part 2, rule by rule: R32 (queue conflation), R33 (batch conflation), R34
(conflation and deltas), R35 (overflow), R36 (restart_sender), R37 (stop, start, pause,
resume; not queued), R38 (alerts), R21 in v2.0 (a wiped manual-start sender), the worked
examples of §16.4-16.5 on both engines, and the properties P9, P10, P11 and the amended
P2 and P5 against planted bugs. Every expectation is derived by hand from the spec; the
comments give the arithmetic (sizes per R4, times per R15/R20)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from expected import (
    acked,
    applied,
    dispatcher,
    dlq,
    in_flight,
    invalid_delta,
    sender_stats,
    sent,
    timeout,
)

from conformance.generation.profiles import generate_trace
from conformance.running.run import run_trace as run_checked
from conformance.spark.check import LocalTrace, check_local
from conftest import Run, replay, run_trace
from tools.planted_bugs import (
    ConflateInFlight,
    MergeCreatesAndDestroys,
    OverflowDelaysFlush,
    RestartForgetsPossibleDuplicate,
    StoppedSenderQueues,
)
from traces.tracefile import parse_trace_lines, read_trace

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"
ENGINES = ("model", "impl")


def example(name: str, engine: str) -> Run:
    return replay(read_trace(EXAMPLES / f"{name}.jsonl"), engine)


def two_sites(**sender: Any) -> dict[str, Any]:
    return {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, **sender}]}


def put(key: str, v: int, site: int = 1) -> dict[str, Any]:
    return {"op": "put", "site": site, "key": key, "value": {"v": v}}


def conflated(event: str, by: str, where: str, sender: str = "ny", d: int = 0) -> dict[str, Any]:
    return {"kind": "conflated", "sender": sender, "dispatcher": d, "event": event, "by": by,
            "where": where}  # fmt: skip


def lost(event: str, reason: str, sender: str = "ny", d: int = 0) -> dict[str, Any]:
    return {"kind": "queue_lost", "sender": sender, "dispatcher": d, "event": event,
            "reason": reason}  # fmt: skip


def lifecycle(action: str, sender: str = "ny", **extra: Any) -> dict[str, Any]:
    return {"kind": "lifecycle", "sender": sender, "action": action, **extra}


# -- the worked examples (traces/examples) --------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r32_queue_conflation_at_enqueue(engine: str) -> None:
    r = example("conflation_in_queue", engine)
    # 1:2 is an indexed update still queued, not in flight, and 1:3's tag [3,2,1] is newer
    # than [2,1,1]: it leaves when 1:3 is appended; creates (1:1, 1:5) and the destroy
    # (1:4) never conflate.
    assert r.steps[2][1:] == [conflated("1:2", "1:3", "queue")]
    assert all(obs["kind"] != "conflated" for step in r.steps[3:] for obs in step)
    # {"v":1} is 7 bytes, {"v":3} 7, the destroy 0, {"v":5} 7: 21 bytes
    assert r.steps[5] == [sent("ny", 1, ["1:1", "1:3", "1:4", "1:5"], 21)]
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=1, events_sent=4, bytes_full=21, events_conflated_in_queue=1
    )
    k = {"value": {"v": 5}, "version": [5, 4, 1]}
    assert r.state["sites"]["1"]["entries"] == r.state["sites"]["2"]["entries"] == {"k": k}


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r33_in_flight_then_batch_conflation_on_resend(engine: str) -> None:
    r = example("conflation_in_batch_after_timeout", engine)
    assert r.steps[2] == [sent("ny", 1, ["1:1", "1:2"], 14)]  # tick 1000: the head's age
    assert r.steps[3][1:] == []  # 1:3 arrives while 1:2 is in flight: not conflated (R32)
    assert r.steps[4] == [timeout("ny", 1, ["1:1", "1:2"])]  # 11000 >= 1000 + 10000
    # tick to 16000 = 11000 + 5000: batch 2 takes [1:1, 1:2, 1:3] (3 <= batch_size
    # before conflation) and keeps 1:2 back; 1:1 (a possible duplicate) ships again
    assert r.steps[5] == [
        conflated("1:2", "1:3", "batch"),
        sent("ny", 2, ["1:1", "1:3"], 14, events_resent=1),
    ]
    # batch 1 was never delivered: 1:1 applies now for the first time
    assert r.steps[6] == [applied(2, "ny", "1:1", "k", "ok"), applied(2, "ny", "1:3", "k", "ok")]
    assert r.steps[7] == [acked("ny", 2, ["1:1", "1:2", "1:3"])]  # every member leaves
    stats = r.state["senders"]["ny"]["stats"]
    assert (stats["bytes_full"], stats["events_resent"]) == (28, 1)
    assert stats["events_conflated_from_batches"] == 1
    assert r.state["sites"]["2"]["entries"]["k"] == {"value": {"v": 3}, "version": [3, 1000, 1]}


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r33_in_flight_state_lists_members_and_shipped(engine: str) -> None:
    ops = [put("k", 1), put("k", 2), {"op": "tick", "ms": 1000}, put("k", 3),
           {"op": "tick", "ms": 10000}, {"op": "tick", "ms": 5000}]  # fmt: skip
    config = two_sites(batch_size=3, batch_time_interval_ms=1000, ack_timeout_ms=10000,
                       retry_interval_ms=5000, enable_batch_conflation=True)  # fmt: skip
    r = run_trace(config, ops, engine)
    assert r.state["senders"]["ny"]["dispatchers"] == [
        dispatcher(
            ["1:1", "1:2", "1:3"],
            in_flight(2, ["1:1", "1:2", "1:3"], 16000, shipped=["1:1", "1:3"]),
            next_retry_at=16000,
            batch=True,
            memory_bytes=21,
        )
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r34_a_delta_that_loses_its_base_ships_full(engine: str) -> None:
    r = example("conflation_delta_to_full", engine)
    assert r.steps[2][1:] == [conflated("1:2", "1:3", "queue")]
    # {"a":1,"b":1} is 13 bytes, 1:3's full value {"a":2,"b":2} 13: 26, no delta bytes
    assert r.steps[3] == [sent("ny", 1, ["1:1", "1:3"], 26)]
    assert r.steps[4] == [applied(2, "ny", "1:1", "k", "ok"), applied(2, "ny", "1:3", "k", "ok")]
    stats = r.state["senders"]["ny"]["stats"]
    assert (stats["conflation_full_values"], stats["bytes_delta"]) == (1, 0)
    assert r.state["sites"]["2"]["entries"]["k"] == {
        "value": {"a": 2, "b": 2},
        "version": [3, 2, 1],
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_r34_a_delta_on_a_surviving_base_keeps_shipping_as_a_delta(engine: str) -> None:
    # 1:2 is a delta on 1:1 (a create, never conflated): nothing conflates, so it ships
    # its 7 delta bytes ({"a":2}); 1:1 ships 13 full bytes.
    ops = [
        {"op": "put", "site": 1, "key": "k", "value": {"a": 1, "b": 1}},
        {"op": "delta", "site": 1, "key": "k", "changes": {"a": 2}},
        {"op": "tick", "ms": 1000},
    ]
    r = run_trace(two_sites(batch_size=10, delta=True, enable_batch_conflation=True), ops, engine)
    assert r.steps[2] == [sent("ny", 1, ["1:1", "1:2"], 13, bytes_delta=7)]


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r35_overflowed_event_stays_on_disk(engine: str) -> None:
    r = example("queue_overflow", engine)
    default = replay(read_trace(EXAMPLES / "queue_overflow.jsonl"), engine)
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    # 7 + 8 = 15 <= 20 in memory; 15 + 7 > 20: 1:3 on disk; after the ack 0 + 7 for 1:4
    assert (lane["on_disk"], lane["memory_bytes"]) == (["1:3"], 7)
    stats = r.state["senders"]["ny"]["stats"]
    assert (stats["entries_overflowed"], stats["bytes_overflowed"]) == (1, 7)
    assert r.steps[5][1] == sent("ny", 2, ["1:3", "1:4"], 14)
    assert r.steps == default.steps  # overflow changes no observation (P10)


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r36_a_restart_without_persistence_loses_the_queue(engine: str) -> None:
    r = example("restart_not_persistent", engine)
    assert r.steps[4] == [
        lifecycle("restart", kept=0),
        lost("1:1", "restart"),
        lost("1:2", "restart"),
        lost("1:3", "restart"),
    ]
    assert r.steps[5] == [{"kind": "skipped", "op": "deliver"}]  # the network is empty
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"] == [dispatcher()]
    assert ny["stats"]["events_lost_on_restart"] == 3
    assert sorted(r.state["sites"]["2"]["entries"]) == ["a", "b"]  # never c


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r36_b_a_persistent_queue_survives_a_restart(engine: str) -> None:
    r = example("restart_persistent", engine)
    # the batch in flight [1:1, 1:2] goes again as possible duplicates after the restart
    assert r.steps[4] == [
        lifecycle("restart", kept=3),
        sent("ny", 2, ["1:1", "1:2"], 14, events_resent=2),
    ]
    assert r.steps[5] == [
        applied(2, "ny", "1:1", "a", "duplicate"),
        applied(2, "ny", "1:2", "b", "duplicate"),
    ]
    assert sorted(r.state["sites"]["2"]["entries"]) == ["a", "b", "c"]
    assert r.state["senders"]["ny"]["stats"]["events_resent"] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_r36_restart_keeps_recovered_events_out_of_the_index(engine: str) -> None:
    # persistent and conflating: after the restart 1:1 and 1:2 are recovered (not indexed,
    # R32), so the update 1:3 conflates nothing and 1:2 stays queued.
    ops = [put("k", 1), put("k", 2), {"op": "restart_sender", "sender": "ny"}, put("k", 3)]
    config = two_sites(batch_size=10, enable_persistence=True, enable_batch_conflation=True)
    r = run_trace(config, ops, engine)
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    assert lane["queue"] == ["1:1", "1:2", "1:3"]
    assert lane["recovered"] == ["1:1", "1:2"]
    assert r.steps[3][1:] == []  # no conflated


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r37_serial_stop_loses_the_queue_and_queues_nothing(engine: str) -> None:
    r = example("stop_serial_loses_queue", engine)
    assert r.steps[1] == [lifecycle("stop"), lost("1:1", "stop")]
    write = r.steps[2]
    assert write[0]["senders"] == [] and write[0]["routes"] == {}
    assert write[1:] == [
        {"kind": "not_queued", "sender": "ny", "event": "1:2", "reason": "stopped"}
    ]
    assert r.steps[3] == [lifecycle("start")]
    assert sorted(r.state["sites"]["2"]["entries"]) == ["c"]
    stats = r.state["senders"]["ny"]["stats"]
    assert (stats["events_lost_on_restart"], stats["events_not_queued_stopped"]) == (1, 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_example_r37_parallel_stop_keeps_the_queue(engine: str) -> None:
    r = example("stop_parallel_keeps_queue", engine)
    assert r.steps[1] == [lifecycle("stop")]
    assert sorted(r.state["sites"]["2"]["entries"]) == ["a", "c"]


@pytest.mark.parametrize("engine", ENGINES)
def test_r37_stop_abandons_the_batch_in_flight_without_a_timeout(engine: str) -> None:
    # batch 1 [1:1] in flight at stop (persistent serial: kept, recovered); start sends it
    # again at once as a possible duplicate; no batches_timed_out, next_retry_at kept (0)
    ops = [put("a", 1), {"op": "stop_sender", "sender": "ny"},
           {"op": "start_sender", "sender": "ny"}]  # fmt: skip
    r = run_trace(two_sites(batch_size=1, enable_persistence=True), ops, engine)
    assert r.steps[1] == [lifecycle("stop")]
    assert r.steps[2] == [lifecycle("start"), sent("ny", 2, ["1:1"], 7, events_resent=1)]
    stats = r.state["senders"]["ny"]["stats"]
    assert stats["batches_timed_out"] == 0
    assert r.state["senders"]["ny"]["dispatchers"][0]["recovered"] == ["1:1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_r37_clean_start_discards_the_queue(engine: str) -> None:
    stop: dict[str, Any] = {"op": "stop_sender", "sender": "ny"}
    ops = [stop, {"op": "start_sender", "sender": "ny", "clean_queues": True}]
    parallel = {"regions": {"1": {"type": "partition", "total_num_buckets": 4}}}
    config = {**two_sites(batch_size=10, parallel=True), **parallel}
    r = run_trace(config, [put("a", 1), *ops], engine)
    assert r.steps[2] == [lifecycle("start"), lost("1:1", "clean_queues")]
    assert r.state["senders"]["ny"]["stats"]["events_discarded_clean_start"] == 1
    assert r.state["senders"]["ny"]["dispatchers"][0]["queue"] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_r37_pause_queues_without_flushing_and_settle_keeps_the_queue(engine: str) -> None:
    ops = [{"op": "pause_sender", "sender": "ny"}, put("a", 1), {"op": "settle"},
           {"op": "resume_sender", "sender": "ny"}]  # fmt: skip
    r = run_trace(two_sites(batch_size=1), ops, engine)
    assert r.steps[0] == [lifecycle("pause")]
    assert len(r.steps[1]) == 1  # queued, not sent
    assert r.steps[2] == []  # R39: a paused sender has no due time
    assert r.steps[3] == [lifecycle("resume"), sent("ny", 1, ["1:1"], 7)]


@pytest.mark.parametrize("engine", ENGINES)
def test_r37_manual_start_and_r21_wipe_restores_it(engine: str) -> None:
    ops = [put("a", 1), {"op": "start_sender", "sender": "ny"}, put("b", 1),
           {"op": "site_down", "site": 1}, {"op": "site_up", "site": 1, "wipe": True}]  # fmt: skip
    r = run_trace(two_sites(batch_size=10, manual_start=True), ops, engine)
    assert r.steps[0][1:] == [{"kind": "not_queued", "sender": "ny", "event": "1:1",
                               "reason": "stopped"}]  # fmt: skip
    assert r.state["senders"]["ny"]["running"] is False  # a brand-new system: as configured


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("wait", "alerts"), [(200, 1), (100, 0)])
def test_example_r38_alert_only_past_the_threshold(engine: str, wait: int, alerts: int) -> None:
    # enqueued at 0, removed at 400 + wait: 0 + 500 < 600 alerts; 0 + 500 < 500 does not
    ops = [put("a", 1), {"op": "tick", "ms": 400}, {"op": "deliver", "sender": "ny"},
           {"op": "tick", "ms": wait}, {"op": "deliver_ack", "sender": "ny"}]  # fmt: skip
    r = run_trace(two_sites(batch_size=1, alert_threshold_ms=500), ops, engine)
    expected = [acked("ny", 1, ["1:1"])]
    if alerts:
        expected.append({"kind": "alert", "sender": "ny", "dispatcher": 0, "event": "1:1",
                         "queued_ms": 600})  # fmt: skip
    assert r.steps[4] == expected
    assert r.state["senders"]["ny"]["stats"]["events_exceeding_alert_threshold"] == alerts
    assert example("alert_threshold", engine).steps[4] == expected if alerts else True


def alert(event: str, queued_ms: int, sender: str = "ny", d: int = 0) -> dict[str, Any]:
    return {"kind": "alert", "sender": sender, "dispatcher": d, "event": event,
            "queued_ms": queued_ms}  # fmt: skip


PARTITION_B4 = {"regions": {"1": {"type": "partition", "total_num_buckets": 4}}}


@pytest.mark.parametrize("engine", ENGINES)
def test_r38_alerts_for_conflated_members_and_failed_events_not_invalid_deltas(
    engine: str,
) -> None:
    # Batch conflation as Example R33, then one more step: the ack at 16000 removes all
    # three members (1:2 conflated in batch, never shipped): 1:1 and 1:2 were enqueued at 0
    # (queued 16000 > 500), 1:3 at 1000 (queued 15000), alerts in batch order.
    ops = [put("k", 1), put("k", 2), {"op": "tick", "ms": 1000}, put("k", 3),
           {"op": "tick", "ms": 10000}, {"op": "tick", "ms": 5000},
           {"op": "deliver", "sender": "ny"}, {"op": "deliver_ack", "sender": "ny"}]  # fmt: skip
    config = two_sites(batch_size=3, enable_batch_conflation=True, alert_threshold_ms=500)
    r = run_trace(config, ops, engine)
    assert r.steps[7] == [acked("ny", 2, ["1:1", "1:2", "1:3"]), alert("1:1", 16000),
                          alert("1:2", 16000), alert("1:3", 15000)]  # fmt: skip
    assert r.state["senders"]["ny"]["stats"]["events_exceeding_alert_threshold"] == 3

    # A failed event leaves the queue (alerts, after R18's dlq); an invalid_delta stays
    # (no alert) and alerts only when its full-value resend is acked. Site 2 is wiped, so
    # the delta 1:2 (base [1,0,1]) finds no entry; 1:3 fails once. Batch 2 goes at 2000
    # (both enqueued at 1000); batch 3 [1:2] is acked at 2001: queued 1001.
    ops = [{"op": "put", "site": 1, "key": "k", "value": {"a": 1}}, {"op": "tick", "ms": 1000},
           {"op": "deliver", "sender": "ny"}, {"op": "deliver_ack", "sender": "ny"},
           {"op": "site_down", "site": 2}, {"op": "site_up", "site": 2, "wipe": True},
           {"op": "delta", "site": 1, "key": "k", "changes": {"a": 2}},
           {"op": "put", "site": 1, "key": "j", "value": {"x": 1}},
           {"op": "fail", "site": 2, "key": "j", "exception": "E", "times": 1},
           {"op": "tick", "ms": 1000}, {"op": "deliver", "sender": "ny"},
           {"op": "deliver_ack", "sender": "ny"}, {"op": "deliver", "sender": "ny"},
           {"op": "tick", "ms": 1}, {"op": "deliver_ack", "sender": "ny"}]  # fmt: skip
    config = two_sites(delta=True, failure_listener="dlq", alert_threshold_ms=500)
    r = run_trace(config, ops, engine)
    assert r.steps[3] == [acked("ny", 1, ["1:1"]), alert("1:1", 1000)]
    assert r.steps[9] == [sent("ny", 2, ["1:2", "1:3"], 7, bytes_delta=7)]
    assert r.steps[11] == [acked("ny", 2, ["1:3"]), invalid_delta("ny", "1:2"),
                           dlq("ny", "1:3", "E"), alert("1:3", 1000),
                           sent("ny", 3, ["1:2"], 7)]  # fmt: skip
    assert r.steps[14] == [acked("ny", 3, ["1:2"]), alert("1:2", 1001)]
    assert r.state["senders"]["ny"]["stats"]["events_exceeding_alert_threshold"] == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_r32_r35_the_new_update_is_placed_before_the_conflated_one_frees_memory(
    engine: str,
) -> None:
    # L = 14. 1:1 (7) and 1:2 (7) fill it; 1:3 is placed first: 14 + 7 > 14 -> on disk;
    # then 1:2 leaves (memory 7); 1:4 (7) fits: memory 14. 1:3 never faults back in.
    ops = [put("k", 1), put("k", 2), put("k", 3), put("j", 3)]
    config = two_sites(batch_size=10, enable_batch_conflation=True, maximum_queue_memory_bytes=14)
    r = run_trace(config, ops, engine)
    assert r.steps[2][1:] == [conflated("1:2", "1:3", "queue")]
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    assert (lane["queue"], lane["on_disk"], lane["memory_bytes"]) == (
        ["1:1", "1:3", "1:4"], ["1:3"], 14)  # fmt: skip
    stats = r.state["senders"]["ny"]["stats"]
    assert (stats["entries_overflowed"], stats["bytes_overflowed"]) == (1, 7)


@pytest.mark.parametrize("engine", ENGINES)
def test_r32_a_conflated_event_leaves_the_parallel_resend_list(engine: str) -> None:
    # B = 4, "a" -> bucket 1. Batch 1 [1:1, 1:2] is dropped and times out at 10000:
    # resend [1:1, 1:2]. 1:3 (update [3,10000,1]) conflates 1:2, which is no longer in
    # flight: it leaves queue and resend. Batch 2 at 15000 = resend [1:1] + bucket 1's
    # oldest event not in the batch, 1:3; only 1:1 is a possible duplicate.
    ops = [put("a", 1), put("a", 2), {"op": "drop", "sender": "ny"}, {"op": "tick", "ms": 10000},
           put("a", 3), {"op": "tick", "ms": 5000}]  # fmt: skip
    config = {**two_sites(batch_size=2, parallel=True, enable_batch_conflation=True),
              **PARTITION_B4}  # fmt: skip
    r = run_trace(config, ops, engine)
    assert r.steps[4][1:] == [conflated("1:2", "1:3", "queue")]
    assert r.steps[5] == [sent("ny", 2, ["1:1", "1:3"], 14, events_resent=1)]
    lane = r.state["senders"]["ny"]["dispatchers"][0]
    assert (lane["queue"], lane["resend"], lane["cursor"]) == (["1:1", "1:3"], [], 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_r34_a_delta_that_loses_its_base_in_the_batch_ships_full(engine: str) -> None:
    # R33 path: 1:2 (delta, base [1,0,1]) is in flight when 1:3 (delta {"a":3}, base
    # [2,1,1] = 1:2's tag) is appended, so R32 spares it; after the timeout batch 2
    # [1:1, 1:2, 1:3] conflates 1:2 by 1:3 and 1:3 goes full: 7 + 7 bytes full, 0 delta.
    ops: list[dict[str, Any]] = [
           {"op": "put", "site": 1, "key": "k", "value": {"a": 1}},
           {"op": "delta", "site": 1, "key": "k", "changes": {"a": 2}},
           {"op": "tick", "ms": 1000},
           {"op": "delta", "site": 1, "key": "k", "changes": {"a": 3}},
           {"op": "tick", "ms": 10000}, {"op": "tick", "ms": 5000},
           {"op": "deliver", "sender": "ny"}]  # fmt: skip
    r = run_trace(two_sites(batch_size=10, delta=True, enable_batch_conflation=True), ops, engine)
    assert r.steps[2] == [sent("ny", 1, ["1:1", "1:2"], 7, bytes_delta=7)]
    assert r.steps[5] == [conflated("1:2", "1:3", "batch"),
                          sent("ny", 2, ["1:1", "1:3"], 14, events_resent=1)]  # fmt: skip
    assert r.steps[6] == [applied(2, "ny", "1:1", "k", "ok"), applied(2, "ny", "1:3", "k", "ok")]
    assert r.state["senders"]["ny"]["stats"]["conflation_full_values"] == 1
    assert r.state["sites"]["2"]["entries"]["k"] == {"value": {"a": 3}, "version": [3, 1000, 1]}


@pytest.mark.parametrize("engine", ENGINES)
def test_r36_parallel_persistent_restart_resets_cursor_and_forgets_the_batch_order(
    engine: str,
) -> None:
    # B = 4, N = 1: a, e -> bucket 1, b -> 2, d -> 0. Batch 1 from cursor 0 is
    # [1:1, 1:3, 1:2] (cursor 2); 1:4 queued. restart: resend [] and cursor 0, so batch 2
    # rotates from bucket 0: [1:4, 1:1, 1:3] (1:1, 1:3 possible duplicates), cursor 3.
    ops = [put("a", 1), put("e", 1), put("b", 1), put("d", 1),
           {"op": "restart_sender", "sender": "ny"}, {"op": "deliver", "sender": "ny"},
           {"op": "deliver_ack", "sender": "ny"}, {"op": "settle"}]  # fmt: skip
    config = {**two_sites(batch_size=3, parallel=True, enable_persistence=True), **PARTITION_B4}
    r = run_trace(config, ops, engine)
    assert r.steps[2][1:] == [sent("ny", 1, ["1:1", "1:3", "1:2"], 21)]
    assert r.steps[4] == [lifecycle("restart", kept=4),
                          sent("ny", 2, ["1:4", "1:1", "1:3"], 21, events_resent=2)]  # fmt: skip
    # settle: 1:2 (head enqueued at 0) goes at 1000 from cursor 3: 3, 0 empty, 1 -> 1:2
    assert r.steps[7][0] == sent("ny", 3, ["1:2"], 7, events_resent=1)
    assert r.state["senders"]["ny"]["dispatchers"][0]["cursor"] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_r37_a_paused_sender_still_times_out_and_resume_waits_for_the_retry(
    engine: str,
) -> None:
    # batch 1 [1:1] at 0; paused: 1:2 queued, the batch times out at 10000
    # (next_retry_at 15000) and nothing flushes; settle while paused does nothing (R39);
    # resume does not reset next_retry_at, so settle ticks to 15000 before batch 2.
    ops = [put("a", 1), {"op": "pause_sender", "sender": "ny"}, put("b", 1),
           {"op": "tick", "ms": 10000}, {"op": "settle"},
           {"op": "resume_sender", "sender": "ny"}, {"op": "settle"}]  # fmt: skip
    r = run_trace(two_sites(batch_size=1), ops, engine)
    assert r.steps[3] == [timeout("ny", 1, ["1:1"])]
    assert r.steps[4] == []
    assert r.steps[5] == [lifecycle("resume")]
    assert r.steps[6] == [
        sent("ny", 2, ["1:1"], 7, events_resent=1), applied(2, "ny", "1:1", "a", "ok"),
        acked("ny", 2, ["1:1"]), sent("ny", 3, ["1:2"], 7), applied(2, "ny", "1:2", "b", "ok"),
        acked("ny", 3, ["1:2"]),
    ]  # fmt: skip
    assert r.state["time"] == 15000


# -- properties against planted bugs ---------------------------------------------------


def verdict(result: Any, name: str) -> Any:
    return next(v for v in result.verdicts if v.property == name)


def lifecycle_traces(count: int, ops: int) -> list[tuple[Any, list[Any]]]:
    traces = []
    for index in range(count):
        config, stream = generate_trace(3, f"lifecycle-{index}", "lifecycle", ops)
        traces.append((config, list(stream)))
    return traces


@pytest.mark.parametrize(
    ("bug", "prop"),
    [
        (MergeCreatesAndDestroys, "P9"),
        (ConflateInFlight, "P9"),
        (RestartForgetsPossibleDuplicate, "P11"),
        (StoppedSenderQueues, "P2"),
        (OverflowDelaysFlush, "P10"),
    ],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_each_lifecycle_bug_fails_its_property_and_the_real_impl_does_not(
    bug: Any, prop: str
) -> None:
    failed = 0
    for index, (config, ops) in enumerate(lifecycle_traces(12, 150)):
        steps = [(f"op {n}", op) for n, op in enumerate(ops, start=1)]
        buggy = run_checked(f"t{index}", config, steps, engine="impl", impl=bug)
        clean = run_checked(f"t{index}", config, steps, engine="impl")
        assert all(v.status != "failed" for v in clean.verdicts), index
        failed += verdict(buggy, prop).status == "failed"
    assert failed >= 2


def checked(config: dict[str, Any], ops: list[dict[str, Any]], bug: Any) -> Any:
    """A run of the trace through `bug` alone, with the properties checked."""
    lines = [json.dumps({"config": config}), *map(json.dumps, ops)]
    trace = parse_trace_lines(lines, "t.jsonl")
    steps = [(f"op {n}", op) for n, op in enumerate(trace.ops, start=1)]
    return run_checked("t", trace.config, steps, engine="impl", impl=bug)


class LosesTheTail(RestartForgetsPossibleDuplicate):
    """R36 gone wrong: a persistent queue reads back only its first event."""

    def _recovered(self, sender: Any, dispatcher: Any, events: list[Any]) -> list[Any]:
        return events[:1]


def test_p11_names_what_a_restart_lost() -> None:
    ops = [put("a", 1), put("b", 1), {"op": "restart_sender", "sender": "ny"}]
    result = checked(two_sites(batch_size=10, enable_persistence=True), ops, LosesTheTail)
    p11 = verdict(result, "P11")
    assert p11.status == "failed"
    assert p11.violations[0].message == "after restarting sender ny: lost 1:2"


def test_p9_names_a_conflated_create() -> None:
    # batch [1:1 create, 1:2 destroy] of one key: the bug keeps the create back
    ops = [put("k", 1), {"op": "destroy", "site": 1, "key": "k"}, {"op": "tick", "ms": 1000}]
    config = two_sites(batch_size=10, enable_batch_conflation=True)
    p9 = verdict(checked(config, ops, MergeCreatesAndDestroys), "P9")
    assert p9.status == "failed"
    assert p9.violations[0].message == (
        "sender ny conflated 1:1 by 1:2: 1:1 is a create, and only updates conflate"
    )
    assert verdict(checked(config, ops, None), "P9").reason == "no event was conflated"


def test_p2_names_an_event_a_stopped_sender_queued() -> None:
    ops = [{"op": "stop_sender", "sender": "ny"}, put("a", 1)]
    p2 = verdict(checked(two_sites(), ops, StoppedSenderQueues), "P2")
    assert p2.status == "failed"
    assert p2.violations[0].message == (
        "event 1:1 queued by sender ny, which is stopped (R37: it is not queued)"
    )


def test_p10_compares_a_second_run_with_the_default_memory() -> None:
    # 20 bytes: 1:3 goes on disk; the bug's batch leaves it out
    ops = [put("a", 1), put("b", 10), put("c", 1), {"op": "deliver", "sender": "ny"},
           {"op": "deliver_ack", "sender": "ny"}, put("d", 1)]  # fmt: skip
    config = two_sites(batch_size=2, maximum_queue_memory_bytes=20)
    assert verdict(checked(config, ops, None), "P10").status == "held"
    p10 = verdict(checked(config, ops, OverflowDelaysFlush), "P10")
    assert p10.status == "failed" and p10.violations[0].where == "op 6"
    default = verdict(checked(two_sites(batch_size=2), ops, None), "P10")
    assert default.status == "not applicable"
    assert default.reason.startswith("no sender limits its queue memory below the default")


def test_p2_and_p5_do_not_apply_while_a_paused_sender_holds_events() -> None:
    ops = [{"op": "pause_sender", "sender": "ny"}, put("a", 1), {"op": "settle"}]
    result = checked(
        {
            **two_sites(),
            "senders": [{"id": "ny", "site": 1, "remote": 2}, {"id": "ln", "site": 2, "remote": 1}],
        },
        ops,
        None,
    )
    reason = "after the settle at op 3, sender ny is paused with events queued"
    assert (verdict(result, "P2").status, verdict(result, "P2").reason) == (
        "not applicable",
        reason,
    )
    assert (verdict(result, "P5").status, verdict(result, "P5").reason) == (
        "not applicable",
        reason,
    )


def test_p2_reports_what_a_restart_lost_as_exempt() -> None:
    result = checked(two_sites(batch_size=2), [put("a", 1), {"op": "restart_sender",
                     "sender": "ny"}, {"op": "settle"}], None)  # fmt: skip
    p2 = verdict(result, "P2")
    assert (p2.status, p2.reason) == ("held", "exempt, lost on restart: 1:1")


@pytest.mark.parametrize(
    "bug",
    [MergeCreatesAndDestroys, ConflateInFlight, RestartForgetsPossibleDuplicate,
     StoppedSenderQueues, OverflowDelaysFlush],
    ids=lambda bug: bug.__name__,
)  # fmt: skip
def test_a_100_trace_campaign_finds_each_lifecycle_bug_as_one_group(bug: Any) -> None:
    traces = [
        LocalTrace(f"lifecycle-{i:06d}", config, list(enumerate(ops, start=2)), "lifecycle")
        for i, (config, ops) in enumerate(lifecycle_traces(100, 200))
    ]
    rows, examples, notes = check_local(traces, f"tools.planted_bugs:{bug.__name__}")
    groups = {row["failures"][0] for row in rows if row["failures"]}
    assert len(groups) == 1, groups
    (example,) = examples.values()
    assert len(example.kept_lines) <= 8 and not notes


def test_the_paused_sender_named_is_the_first_by_id_whatever_the_states_order() -> None:
    # Two paused senders hold events: the reason names the first in sorted id order (R11),
    # whatever order the state lists them in (the model's persistent map follows the
    # hash seed), so a check, its segments and a replay say the same.
    from impl import Engine

    class ReversedSenders(Engine):
        def observe(self) -> dict[str, Any]:
            return reverse(super().observe())

        def observe_keys(self, keys: Any) -> dict[str, Any]:
            return reverse(super().observe_keys(keys))

    def reverse(state: dict[str, Any]) -> dict[str, Any]:
        state["senders"] = dict(reversed(state["senders"].items()))
        return state

    ops = [{"op": "pause_sender", "sender": "ny"}, {"op": "pause_sender", "sender": "ln"},
           put("a", 1), {"op": "put", "site": 2, "key": "b", "value": {"v": 2}},
           {"op": "settle"}]  # fmt: skip
    senders = [{"id": "ny", "site": 1, "remote": 2}, {"id": "ln", "site": 2, "remote": 1}]
    for engine in (None, ReversedSenders):
        result = checked({**two_sites(), "senders": senders}, ops, engine)
        assert verdict(result, "P2").reason == (
            "after the settle at op 5, sender ln is paused with events queued"
        )
