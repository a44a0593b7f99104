"""The example traces of traces/examples/: the key facts of each, derived by hand.

Each test names the example it replays; the comments give the arithmetic (sizes per
R4, tags per R9, times per R15/R20). These are facts, not snapshots of the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from expected import Obs, acked, applied, enqueued, entry, sender_stats, sent, site_stats

from conformance.properties.checker import PropertyChecker
from model import Engine as ModelEngine
from traces.tracefile import read_trace
from wanconform.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"

EXAMPLE_NAMES = sorted(path.stem for path in EXAMPLES.glob("*.jsonl"))


def test_every_example_is_small_and_listed_in_the_readme() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert len(EXAMPLE_NAMES) == 29
    for name in EXAMPLE_NAMES:
        lines = (EXAMPLES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert set(json.loads(lines[0])) == {"config"}
        assert 4 <= len(lines) - 1 <= 40, name  # Example R29 (SPEC §16.3) has 4
        assert f"{name}.jsonl" in readme, name


def test_batching_by_size(run_example: Any) -> None:
    r = run_example("batching_by_size")  # batch_size 3; puts a..g, each '{"n":i}' = 7 bytes
    assert r.steps[2][-1] == sent("ny", 1, ["1:1", "1:2", "1:3"], 21)
    # the ack frees the sender; d, e, f make a full batch at once, g waits
    assert r.steps[8] == [
        acked("ny", 1, ["1:1", "1:2", "1:3"]),
        sent("ny", 2, ["1:4", "1:5", "1:6"], 21),
    ]
    assert r.steps[10] == [acked("ny", 2, ["1:4", "1:5", "1:6"])]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == ["1:7"]  # 1 < 3 and age 0 < 1000: not yet
    assert ny["dispatchers"][0]["in_flight"] is None
    assert ny["stats"] == sender_stats(batches_sent=2, events_sent=6, bytes_full=42)
    site1, site2 = r.state["sites"]["1"]["entries"], r.state["sites"]["2"]["entries"]
    assert sorted(site2) == ["a", "b", "c", "d", "e", "f"]
    assert site2 == {key: site1[key] for key in "abcdef"}
    assert r.state["time"] == 0


def test_batching_by_time(run_example: Any) -> None:
    r = run_example("batching_by_time")  # batch_time_interval_ms 500
    assert r.steps[3] == []  # now 499: 499 - 0 < 500
    assert r.steps[4] == [sent("ny", 1, ["1:1", "1:2"], 14)]  # now 500: 500 - 0 >= 500
    assert r.steps[9] == []  # now 1099: 1099 - 600 = 499
    assert r.steps[10] == [sent("ny", 2, ["1:3"], 7)]  # now 1100: 500
    assert r.state["time"] == 1100
    assert r.state["sites"]["2"]["entries"] == {
        "a": entry({"n": 1}, [1, 0, 1]),
        "b": entry({"n": 2}, [1, 200, 1]),
        "c": entry({"n": 3}, [1, 600, 1]),
    }
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=2, events_sent=3, bytes_full=21
    )


def test_failed_event_dropped(run_example: Any) -> None:
    r = run_example("failed_event_dropped")
    assert r.steps[4] == [
        applied(2, "ny", "1:1", "a", "ok"),
        applied(2, "ny", "1:2", "b", "failed", exception="IOException"),
        applied(2, "ny", "1:3", "c", "ok"),
    ]
    assert r.steps[5] == [
        acked("ny", 1, ["1:1", "1:2", "1:3"]),
        {
            "kind": "dropped",
            "sender": "ny",
            "dispatcher": 0,
            "event": "1:2",
            "exception": "IOException",
        },
    ]
    assert sorted(r.state["sites"]["1"]["entries"]) == ["a", "b", "c"]
    assert sorted(r.state["sites"]["2"]["entries"]) == ["a", "c"]  # b is lost
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=2, failures=1)
    ny = r.state["senders"]["ny"]
    assert ny["stats"] == sender_stats(
        batches_sent=1, events_sent=3, bytes_full=21, events_dropped=1
    )
    assert ny["dlq"] == []
    assert ny["dispatchers"][0]["queue"] == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("failed_event_dead_lettered", {"value": {"n": 2}}),
        ("failed_event_dead_lettered_secure", {}),  # dlq_secure: no value (P7)
    ],
)
def test_failed_event_dead_lettered(run_example: Any, name: str, value: Obs) -> None:
    r = run_example(name)
    assert r.steps[5] == [
        acked("ny", 1, ["1:1", "1:2", "1:3"]),
        {
            "kind": "dlq",
            "sender": "ny",
            "dispatcher": 0,
            "event": "1:2",
            "exception": "IOException",
        },
    ]
    ny = r.state["senders"]["ny"]
    assert ny["dlq"] == [
        {"event_id": "1:2", "sender": "ny", "key": "b", "op": "create",
         "exception": "IOException", "version": [1, 0, 1], **value,
         "recipients": [1, 2], "thread": 0},  # R11: {origin 1} and ny's remote 2 (v1.2)
    ]  # fmt: skip
    assert ny["stats"] == sender_stats(batches_sent=1, events_sent=3, bytes_full=21, dlq_records=1)
    assert sorted(r.state["sites"]["2"]["entries"]) == ["a", "c"]


def test_receiver_retries(run_example: Any) -> None:
    r = run_example("receiver_retries")  # retry_attempts 2: 3 attempts per event
    # a: 2 failing attempts, the 3rd succeeds (retries 2); b: 3 of its 3 fail (retries 2)
    assert r.steps[4] == [
        applied(2, "ny", "1:1", "a", "ok"),
        applied(2, "ny", "1:2", "b", "failed", exception="LowMemoryException"),
    ]
    assert r.steps[5][0] == acked("ny", 1, ["1:1", "1:2"])
    # b rewritten at now 0 over b@1 [1,0,1]: R9 0 <= 0 -> ts 1: [2,1,1]; its failure is
    # used up, so it applies
    assert r.steps[8] == [applied(2, "ny", "1:3", "b", "ok"), applied(2, "ny", "1:4", "c", "ok")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=3, failures=1, retries=4)
    assert r.state["sites"]["2"]["entries"] == {
        "a": entry({"n": 1}, [1, 0, 1]),
        "b": entry({"n": 3}, [2, 1, 1]),
        "c": entry({"n": 4}, [1, 0, 1]),
    }
    assert r.state["time"] == 0  # wait_time_between_retry_attempts_ms takes no model time
    assert r.state["senders"]["ny"]["stats"]["events_dropped"] == 1


def test_lost_ack_resend(run_example: Any) -> None:
    r = run_example("lost_ack_resend")  # ack_timeout 2000, retry_interval 500
    assert r.steps[5] == []  # now 1000 < 0 + 2000
    assert r.steps[6] == [
        {
            "kind": "timeout",
            "sender": "ny",
            "dispatcher": 0,
            "batch_id": 1,
            "events": ["1:1", "1:2", "1:3"],
        }
    ]
    assert r.steps[7] == [sent("ny", 2, ["1:1", "1:2", "1:3"], 21, 0, 3)]  # at 2000 + 500
    assert r.steps[8] == [
        applied(2, "ny", "1:1", "a", "duplicate"),
        applied(2, "ny", "1:2", "b", "duplicate"),
        applied(2, "ny", "1:3", "c", "duplicate"),
    ]
    ny = r.state["senders"]["ny"]
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=6, events_resent=3, bytes_full=42, batches_timed_out=1
    )
    assert ny["dispatchers"][0]["queue"] == [] and ny["dispatchers"][0]["in_flight"] is None
    assert ny["dispatchers"][0]["next_retry_at"] == 2500
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=3, duplicates=3)
    assert r.state["sites"]["1"]["entries"] == r.state["sites"]["2"]["entries"]
    assert len(r.state["sites"]["2"]["entries"]) == 3
    assert r.state["time"] == 2500


def test_site_down_and_back(run_example: Any) -> None:
    r = run_example("site_down_and_back")  # ack_timeout 1000, retry_interval 500
    assert r.steps[2] == [{"kind": "skipped", "op": "put"}]  # site 2 is down
    assert r.steps[4] == [
        {"kind": "timeout", "sender": "ny", "dispatcher": 0, "batch_id": 1, "events": ["1:1"]}
    ]
    # now 1500 >= next_retry_at 1500, remote still down
    assert r.steps[5] == [
        {"kind": "connection_failed", "sender": "ny", "dispatcher": 0, "remote": 2}
    ]
    assert r.steps[6] == []  # site_up at 1500 < next_retry_at 2000
    assert r.steps[7] == [sent("ny", 2, ["1:1"], 7, 0, 1)]
    assert r.steps[8] == [
        applied(2, "ny", "1:1", "a", "ok"),  # batch 1 was lost: first arrival
        acked("ny", 2, ["1:1"]),
        sent("ny", 3, ["1:2"], 7),
        applied(2, "ny", "1:2", "b", "ok"),
        acked("ny", 3, ["1:2"]),
    ]
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=3, events_sent=3, events_resent=1, bytes_full=21,
        batches_timed_out=1, connection_failures=1,
    )  # fmt: skip
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=2)
    assert r.state["sites"]["2"]["seq"] == 0
    assert r.state["sites"]["1"]["entries"] == r.state["sites"]["2"]["entries"]
    assert r.state["time"] == 2000


def test_delta_and_full_fallback_after_wipe(run_example: Any) -> None:
    r = run_example("delta_and_full_fallback_after_wipe")
    # '{"name":"widget","qty":1}' = 25 bytes; a delta '{"qty":2}' = 9 bytes
    assert r.steps[0][-1] == sent("ny", 1, ["1:1"], 25)
    assert r.steps[3][-1] == sent("ny", 2, ["1:2"], 0, 9)
    assert r.steps[4] == [applied(2, "ny", "1:2", "k", "ok", value={"name": "widget", "qty": 2})]
    assert r.steps[8][-1] == sent("ny", 3, ["1:3"], 0, 9)
    assert r.steps[9] == [applied(2, "ny", "1:3", "k", "invalid_delta")]  # wiped: no base
    assert r.steps[10] == [
        acked("ny", 3, []),
        {"kind": "invalid_delta", "sender": "ny", "dispatcher": 0, "event": "1:3"},
        sent("ny", 4, ["1:3"], 25),  # '{"name":"widget","qty":3}' = 25
    ]
    assert r.steps[11] == [applied(2, "ny", "1:3", "k", "ok")]
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=4, events_sent=4, bytes_full=50, bytes_delta=18, invalid_deltas=1
    )
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=3, invalid_deltas=1)
    # R9, all at now 0: [1,0,1], then each delta bumps ts by 1: [2,1,1], [3,2,1]
    expected = {"k": entry({"name": "widget", "qty": 3}, [3, 2, 1])}
    assert r.state["sites"]["1"]["entries"] == expected
    assert r.state["sites"]["2"]["entries"] == expected
    # R21: the wiped site 2 never issued a tag, so its floor stays 0
    assert [r.state["sites"][s]["timestamp_floor"] for s in ("1", "2")] == [0, 0]


def test_concurrent_writes_two_sites(run_example: Any) -> None:
    r = run_example("concurrent_writes_two_sites")
    # k: [1,0,1] vs [1,0,2]: equal timestamps, higher dsid (2) wins everywhere
    assert r.steps[2] == [
        applied(1, "ldn", "2:1", "k", "ok"),
        applied(2, "ny", "1:1", "k", "conflict"),
        acked("ldn", 1, ["2:1"]),
        acked("ny", 1, ["1:1"]),
    ]
    # j: [1,5,2] written at 5, [1,6,1] at 6: the later timestamp wins everywhere
    assert r.steps[7] == [
        applied(1, "ldn", "2:2", "j", "conflict"),
        applied(2, "ny", "1:2", "j", "ok"),
        acked("ldn", 2, ["2:2"]),
        acked("ny", 2, ["1:2"]),
    ]
    expected = {
        "k": entry({"by": "ldn"}, [1, 0, 2]),
        "j": entry({"by": "ny"}, [1, 6, 1]),
    }
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == expected
        assert r.state["sites"][site]["stats"] == site_stats(applied=1, conflicts=1)
    assert r.state["time"] == 6


def test_forwarding_ring(run_example: Any) -> None:
    r = run_example("forwarding_ring")  # 1 -> 2 -> 3 -> 1
    forwarded = [o for o in r.observations if o["kind"] == "forwarded"]
    # each event is forwarded once, by the second site on its way; never back to its origin
    assert forwarded == [
        {"kind": "forwarded", "site": 2, "sender": "r23", "dispatcher": 0, "event": "1:1"},
        {"kind": "forwarded", "site": 3, "sender": "r31", "dispatcher": 0, "event": "2:1"},
        {"kind": "forwarded", "site": 1, "sender": "r12", "dispatcher": 0, "event": "3:1"},
        {"kind": "forwarded", "site": 2, "sender": "r23", "dispatcher": 0, "event": "1:2"},
    ]
    events_sent = {s: r.state["senders"][s]["stats"]["events_sent"] for s in ("r12", "r23", "r31")}
    assert events_sent == {"r12": 3, "r23": 3, "r31": 2}
    # settle never ticks here (batch_size 1): k1's rewrite at now 0 over [1,0,1] takes
    # ts 0 + 1 (R9)
    expected = {
        "k1": entry({"from": 1, "round": 2}, [2, 1, 1]),
        "k2": entry({"from": 2}, [1, 0, 2]),
        "k3": entry({"from": 3}, [1, 0, 3]),
    }
    applied_counts = {"1": 2, "2": 3, "3": 3}
    for site in ("1", "2", "3"):
        assert r.state["sites"][site]["entries"] == expected
        assert r.state["sites"][site]["stats"] == site_stats(applied=applied_counts[site])
    assert r.state["time"] == 0


def test_forwarding_mesh(run_example: Any) -> None:
    r = run_example("forwarding_mesh")  # every site ships to every other
    assert [o for o in r.observations if o["kind"] == "forwarded"] == []
    events_sent = {s: v["stats"]["events_sent"] for s, v in r.state["senders"].items()}
    assert events_sent == {"s12": 1, "s13": 1, "s21": 2, "s23": 2, "s31": 1, "s32": 1}
    # site 2 rewrites k1 at now 0 over [1,0,1] from dsid 1: ts 0 + 1 -> [2,1,2]
    expected = {
        "k1": entry({"from": 2}, [2, 1, 2]),
        "k2": entry({"from": 2}, [1, 0, 2]),
        "k3": entry({"from": 3}, [1, 0, 3]),
    }
    applied_counts = {"1": 3, "2": 2, "3": 3}
    for site in ("1", "2", "3"):
        assert r.state["sites"][site]["entries"] == expected
        assert r.state["sites"][site]["stats"] == site_stats(applied=applied_counts[site])


def test_unsupported_diamond(run_example: Any) -> None:
    r = run_example("unsupported_diamond")  # 1->2, 1->3, 2->4, 3->4
    at_4 = [
        (o["sender"], o["event"], o["status"])
        for o in r.observations
        if o["kind"] == "applied" and o["site"] == 4
    ]
    assert at_4 == [
        ("s2to4", "2:1", "ok"),
        ("s3to4", "3:1", "ok"),
        ("s2to4", "1:1", "ok"),
        ("s3to4", "1:1", "duplicate"),  # 1:1 reached 4 along two paths
    ]
    assert r.state["sites"]["4"]["stats"] == site_stats(applied=3, duplicates=1)
    assert sorted(r.state["sites"]["4"]["entries"]) == ["k", "m", "n", "z"]
    for sender in ("s2to4", "s3to4"):
        assert r.state["senders"][sender]["stats"] == sender_stats(
            batches_sent=2, events_sent=2, bytes_full=14
        )


def test_wiped_origin_tags_stay_unique(run_example: Any) -> None:
    r = run_example("wiped_origin_tags_stay_unique")  # delta on, batch_size 1, all at now 0
    # 1:1 [1,0,1] reaches site 2; the wipe of site 1 sets its floor to 1 + 0 = 1 (R21);
    # the new create has no entry: ts = max(now 0, floor 1) = 1 (R9), not v1's [1,0,1] again
    assert r.steps[4] == [
        enqueued(1, "1:2", "k", "create", [1, 1, 1], {"b": 2}, ["ny"]),
        sent("ny", 2, ["1:2"], 7),
    ]
    # at 2, same dsid: (1, 1) > (0, 1) -> ok over the stale {"a":1} (v1: equal tags, conflict)
    assert r.steps[5] == [applied(2, "ny", "1:2", "k", "ok"), acked("ny", 2, ["1:2"])]
    # the delta: 0 <= 1 -> [2,2,1], base [1,1,1] = k@2's tag, so site 2 builds the origin's
    # value (v1 built {"a":1,"c":3} on the reissued base: the P6 failure of SPEC §14)
    assert r.steps[6] == [
        enqueued(1, "1:3", "k", "update", [2, 2, 1], {"b": 2, "c": 3}, ["ny"]),
        sent("ny", 3, ["1:3"], 0, 7),  # '{"c":3}'
    ]
    assert r.steps[7] == [
        applied(2, "ny", "1:3", "k", "ok", value={"b": 2, "c": 3}),
        acked("ny", 3, ["1:3"]),
    ]
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"b": 2, "c": 3}, [2, 2, 1])}
    assert [r.state["sites"][site]["timestamp_floor"] for site in ("1", "2")] == [1, 0]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=3)
    # P6 (SPEC §11) held, and through a wipe: the checker saw a value built from a delta
    trace = read_trace(EXAMPLES / "wiped_origin_tags_stay_unique.jsonl")
    engine, checker = ModelEngine(trace.config), PropertyChecker(trace.config)
    for op in trace.ops:
        assert checker.after_step(op, engine.apply(op), engine.observe) == []
    verdicts = {verdict.property: verdict.status for verdict in checker.verdicts()}
    assert verdicts["P6"] == "held"


def test_p8_fails_where_batch_conflation_holds_back_an_event_whose_batch_times_out(
    run_example: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # SPEC §16.7 says P8 holds for a serial sender with one dispatcher; R32 and R33 as
    # written break it (README, "Where the spec contradicts itself"). batch_size 4,
    # conflation on, ack timeout 10,000, retry 5,000 (defaults).
    r = run_example("p8_batch_conflation_reorders")
    conflated = {"kind": "conflated", "sender": "ny", "dispatcher": 0, "where": "batch",
                 "event": "1:2", "by": "1:3"}  # fmt: skip
    # 16,000: batch 1 [1:1, 1:2] timed out; R33 keeps 1:2 back, 1:3 (newer) ships; 1:1
    # is a possible duplicate (R20); bytes: {"v":1} 7 + {"v":3} 7 + a destroy 0
    assert r.steps[7] == [conflated, sent("ny", 2, ["1:1", "1:3", "1:4"], 14, 0, 1)]
    assert r.steps[8][:3] == [
        applied(2, "ny", "1:1", "k", "ok"),
        applied(2, "ny", "1:3", "k", "ok"),
        applied(2, "ny", "1:4", "k", "ok"),
    ]
    # after batch 2 times out (its ack lost), 1:6 (an update: 1:5 made k live again)
    # conflates 1:3, the latest indexed update still queued and no longer in flight (R32)
    assert r.steps[12][1:] == [{**conflated, "where": "queue", "event": "1:3", "by": "1:6"}]
    # batch 3 is the queue's first 4: 1:2's only later update, 1:6, is not in it (R33:
    # nothing to conflate), so 1:2 ships; 1:1, 1:2, 1:4 were in a timed-out batch
    assert r.steps[13] == [sent("ny", 3, ["1:1", "1:2", "1:4", "1:5"], 21, 0, 3)]
    # site 2 processes 1:2 for the first time after 1:3 and 1:4, appended after it
    assert r.steps[14][:4] == [
        applied(2, "ny", "1:1", "k", "duplicate"),
        applied(2, "ny", "1:2", "k", "conflict"),
        applied(2, "ny", "1:4", "k", "duplicate"),
        applied(2, "ny", "1:5", "k", "ok"),
    ]
    path = str(EXAMPLES / "p8_batch_conflation_reorders.jsonl")
    assert main(["replay", path, "--engine", "both", "--check-properties"]) == 1
    out = capsys.readouterr().out
    assert "P1: held" in out  # both engines do it: the rules, not an engine
    assert "P8: sender ny: event 1:2 (key 'k') processed at site 2 after 1:4" in out
    assert "P5:" in out and "P5: FAILED" not in out  # the values still converge (R16.3)


def test_make_run_replays_lost_ack_resend(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "lost_ack_resend.jsonl")
    assert main(["replay", path, "--engine", "model"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "lost_ack_resend.jsonl" in out


def test_replay_json_prints_the_final_state(
    capsys: pytest.CaptureFixture[str], run_example: Any
) -> None:
    names = ["lost_ack_resend", "forwarding_ring"]
    paths = [str(EXAMPLES / f"{name}.jsonl") for name in names]
    assert main(["replay", *paths, "--engine", "model", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 2
    for line, name, path in zip(lines, names, paths, strict=True):
        document = json.loads(line)
        assert document["trace"] == path
        assert document["state"] == run_example(name).state
        assert document["divergence"] is None and "properties" not in document
        assert line == json.dumps(document, sort_keys=True, separators=(",", ":"))
