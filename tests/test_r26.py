"""SPEC v1.2: R26 redelivery from the dead-letter queue, records that keep `recipients`,
the three redelivery counters, and P2/P5 as v1.2 scopes them.

Every expected value is derived by hand from the spec (comments show the steps); tests
taking `run_each` pin the model and the impl to the same values. Unless said otherwise:
sites 1 and 2, sender ny 1 -> 2 with batch_size 1 and the dead-letter listener; site 2's
receiver makes one attempt (retry_attempts 0, R7), so `fail(2, k, E, 1)` fails one
delivery of k (R16.2). Tags are [entry_version, timestamp, dsid].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from expected import (
    Obs,
    acked,
    applied,
    dlq,
    entry,
    forwarded,
    sender_stats,
    sent,
    site_stats,
    skipped,
)

from conformance.running.run import run_trace
from traces.tracefile import parse_trace_lines, where
from wanconform.cli import main

NY = {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq"}
DLQ = {"sites": [1, 2], "senders": [NY]}
SECURE = {"sites": [1, 2], "senders": [NY | {"dlq_secure": True}]}


def op(name: str, **fields: Any) -> Obs:
    return {"op": name, **fields}


def put(site: int, key: str, value: dict[str, Any]) -> Obs:
    return op("put", site=site, key=key, value=value)


def fail(site: int, key: str, times: int = 1) -> Obs:
    return op("fail", site=site, key=key, exception="E", times=times)


DELIVER, ACK = op("deliver", sender="ny"), op("deliver_ack", sender="ny")


def redeliver(events: list[str] | None = None, sender: str = "ny") -> Obs:
    return op("redeliver", sender=sender) | ({} if events is None else {"events": events})


def redelivery(event: str, outcome: str, sender: str = "ny") -> Obs:
    return {"kind": "redelivery", "sender": sender, "event": event, "outcome": outcome}


# The first four operations of most scenarios: k written at site 1 fails at site 2 and
# is dead-lettered. put: 1:1 [1,0,1], batch 1 of size({"v":1}) = 7 bytes (R4, R15).
FAILED_K = [fail(2, "k"), put(1, "k", {"v": 1}), DELIVER, ACK]
RECORD_K = {"event_id": "1:1", "sender": "ny", "key": "k", "op": "create", "exception": "E",
            "version": [1, 0, 1], "value": {"v": 1}, "recipients": [1, 2], "thread": 0}  # fmt: skip


def test_r24_v12_a_record_keeps_the_events_recipients(run_each: Any) -> None:
    # R11: recipients = {origin 1} | {remote of every sender at 1} = {1, 2}.
    r = run_each(DLQ, FAILED_K)
    assert r.steps[3] == [acked("ny", 1, ["1:1"]), dlq("ny", "1:1", "E")]
    assert r.state["senders"]["ny"]["dlq"] == [RECORD_K]


def test_r26_1_superseded_the_key_123_case(run_each: Any) -> None:
    # The proposal's discussion: Key:123 -> 987 is in the DLQ, 456 was applied since.
    # A replay of 987 must not overwrite 456.
    r = run_each(
        DLQ,
        [
            fail(2, "k"),
            put(1, "k", {"v": 987}),  # 1:1 [1,0,1], 9 bytes
            DELIVER,  # failed
            ACK,  # dead-lettered
            put(1, "k", {"v": 456}),  # 1:2: now 0 <= ts 0 -> [2,1,1] (R9)
            DELIVER,  # ok: k@2 = 456
            ACK,
            redeliver(),  # c@1 = [2,1,1] newer than [1,0,1] (R16.3): superseded
            op("settle"),
        ],
    )
    assert r.steps[7] == [redelivery("1:1", "superseded")]  # nothing queued, nothing sent
    assert r.steps[8] == []
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"v": 456}, [2, 1, 1])}
    ny = r.state["senders"]["ny"]
    assert ny["dlq"] == [] and ny["dispatchers"][0]["queue"] == []
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=2, bytes_full=18, dlq_records=1, redelivery_superseded=1
    )


def test_r26_2_requeued_from_the_entry(run_each: Any) -> None:
    # c@1 is the record's own write ([1,0,1] == r.version): requeued with c's value,
    # possible_duplicate (R26), so the flush after the operation (§3, R15) sends it as
    # batch 2 counted in events_resent; site 2 applies it (its one failure is used up).
    r = run_each(DLQ, [*FAILED_K, redeliver(), DELIVER, ACK])
    assert r.steps[4] == [
        redelivery("1:1", "requeued"),
        sent("ny", 2, ["1:1"], bytes_full=7, events_resent=1),
    ]
    assert r.steps[5] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.steps[6] == [acked("ny", 2, ["1:1"])]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 1}, [1, 0, 1])}
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, failures=1)
    ny = r.state["senders"]["ny"]
    assert ny["dlq"] == []
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=2, events_resent=1, bytes_full=14, dlq_records=1,
        redelivered=1,
    )  # fmt: skip


WIPE_1 = [op("site_down", site=1), op("site_up", site=1, wipe=True)]


def test_r26_3_requeued_from_the_record_after_a_wipe(run_each: Any) -> None:
    # Site 1 wiped (R21): no entry for k there, the record (kept on disk) has the value:
    # requeued with r.value and r.version. The origin's entries stay empty.
    r = run_each(DLQ, [*FAILED_K, *WIPE_1, redeliver(), DELIVER])
    assert r.steps[6] == [
        redelivery("1:1", "requeued"),
        sent("ny", 2, ["1:1"], bytes_full=7, events_resent=1),
    ]
    assert r.steps[7] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 1}, [1, 0, 1])}
    assert r.state["sites"]["1"]["entries"] == {}


def test_r26_3_a_secure_record_of_a_create_is_unrecoverable(run_each: Any) -> None:
    # dlq_secure: the record has no value (R24, P7); after the wipe there is no entry to
    # take it from: unrecoverable, the record leaves the queue, nothing is queued.
    r = run_each(SECURE, [*FAILED_K, *WIPE_1, redeliver()])
    assert r.steps[6] == [redelivery("1:1", "unrecoverable")]
    ny = r.state["senders"]["ny"]
    assert ny["dlq"] == [] and ny["dispatchers"][0]["queue"] == []
    assert ny["stats"] == sender_stats(
        batches_sent=1, events_sent=1, bytes_full=7, dlq_records=1, redelivery_unrecoverable=1
    )


def test_r26_3_a_destroy_is_requeued_as_a_tombstone(run_each: Any) -> None:
    r = run_each(
        SECURE,
        [
            put(1, "k", {"v": 1}),  # 1:1 [1,0,1], batch 1
            DELIVER,  # ok: k@2 = {"v":1} [1,0,1]
            ACK,
            fail(2, "k"),
            op("destroy", site=1, key="k"),  # 1:2: now 0 <= 0 -> [2,1,1]; batch 2, 0 bytes
            DELIVER,  # failed
            ACK,  # dead-lettered: secure, a destroy (no value either way)
            *WIPE_1,
            redeliver(),  # no entry at 1: r.op is destroy -> a tombstone, tag [2,1,1]
            DELIVER,  # k@2 [1,0,1] vs [2,1,1]: same dsid, (1,2) > (0,1): applied
        ],
    )
    assert r.steps[6] == [acked("ny", 2, ["1:2"]), dlq("ny", "1:2", "E")]
    assert r.steps[9] == [redelivery("1:2", "requeued"), sent("ny", 3, ["1:2"], events_resent=1)]
    assert r.steps[10] == [applied(2, "ny", "1:2", "k", "ok")]
    assert r.state["sites"]["2"]["entries"] == {"k": entry(None, [2, 1, 1])}


def test_r26_a_redelivered_event_that_fails_again_is_a_new_record(run_each: Any) -> None:
    r = run_each(DLQ, [fail(2, "k", times=2), *FAILED_K[1:], redeliver(), DELIVER, ACK])
    assert r.steps[5] == [applied(2, "ny", "1:1", "k", "failed", exception="E")]
    assert r.steps[6] == [acked("ny", 2, ["1:1"]), dlq("ny", "1:1", "E")]
    ny = r.state["senders"]["ny"]
    assert ny["dlq"] == [RECORD_K]  # the same event, dead-lettered anew
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=2, events_resent=1, bytes_full=14, dlq_records=2,
        redelivered=1,
    )  # fmt: skip


def test_r26_a_redelivered_event_loses_a_conflict_at_the_receiver(run_each: Any) -> None:
    r = run_each(
        DLQ,
        [
            *FAILED_K,
            op("tick", ms=5),
            put(2, "k", {"v": 2}),  # 2:1 at site 2, no entry there: [1,5,2]
            redeliver(),  # requeued from the entry [1,0,1]
            DELIVER,  # [1,0,1] vs [1,5,2]: other dsid, ts 0 < 5: conflict (R16.3)
        ],
    )
    assert r.steps[6] == [
        redelivery("1:1", "requeued"),
        sent("ny", 2, ["1:1"], bytes_full=7, events_resent=1),
    ]
    assert r.steps[7] == [applied(2, "ny", "1:1", "k", "conflict")]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 2}, [1, 5, 2])}
    assert r.state["sites"]["2"]["stats"] == site_stats(conflicts=1, failures=1)


CHAIN = {
    "sites": [1, 2, 3],
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq"},
        {"id": "s2", "site": 2, "remote": 3, "batch_size": 1},
    ],
}
CHAIN_OPS = [
    *FAILED_K,  # the record keeps recipients [1, 2] (R11)
    redeliver(),
    DELIVER,  # applied at 2; R22: 3 is not among {1, 2}: forwarded on s2
    op("deliver", sender="s2"),
    ACK,
    op("deliver_ack", sender="s2"),
]


def test_r26_a_redelivered_event_is_forwarded_as_the_original_would_be(run_each: Any) -> None:
    r = run_each(CHAIN, CHAIN_OPS)
    assert r.state["senders"]["ny"]["dlq"] == []
    assert r.steps[5] == [
        applied(2, "ny", "1:1", "k", "ok"),
        forwarded(2, "s2", "1:1"),
        sent("s2", 1, ["1:1"], bytes_full=7),  # a new copy: not a possible duplicate
    ]
    assert r.steps[6] == [applied(3, "s2", "1:1", "k", "ok")]
    for site in ("2", "3"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"v": 1}, [1, 0, 1])}


def verdicts(config: Obs, ops: list[Obs]) -> dict[str, tuple[str, str]]:
    """P1-P8 and P12 of a run of both engines in lockstep, with the properties checked."""
    lines = [json.dumps({"config": config}), *map(json.dumps, ops)]
    trace = parse_trace_lines(lines, "t.jsonl")
    result = run_trace(
        "t.jsonl",
        trace.config,
        [(where("t.jsonl", i + 2), o) for i, o in enumerate(trace.ops)],
        engine="both",
        properties=True,
    )
    return {v.property: (v.status, v.reason) for v in result.verdicts}


def test_p4_the_redelivered_events_shipping_graph_stays_a_tree() -> None:
    # ny shipped 1:1 twice (batch 1, then the redelivery: one edge 1->2, R20's reading
    # of "once per sender"), s2 once (2->3): a tree rooted at 1. No site applied it twice.
    found = verdicts(CHAIN, CHAIN_OPS)
    assert found["P1"][0] == "held"
    assert found["P3"] == ("held", "")
    assert found["P4"] == ("held", "")


def test_r26_events_select_some_records_and_ignore_unknown_ids(run_each: Any) -> None:
    r = run_each(
        DLQ,
        [
            fail(2, "a"),
            fail(2, "b"),
            put(1, "a", {"v": 1}),  # 1:1, batch 1
            DELIVER,
            ACK,  # record 1:1
            put(1, "b", {"v": 2}),  # 1:2, batch 2
            DELIVER,
            ACK,  # record 1:2
            redeliver(["7:7"]),  # no selected record: not enabled (§3)
            redeliver(["1:2", "7:7"]),  # 1:2 only; 7:7 is ignored
        ],
    )
    assert r.steps[8] == [skipped("redeliver")]
    assert r.steps[9] == [
        redelivery("1:2", "requeued"),
        sent("ny", 3, ["1:2"], bytes_full=7, events_resent=1),
    ]
    assert [record["event_id"] for record in r.state["senders"]["ny"]["dlq"]] == ["1:1"]


def test_r26_is_not_enabled_while_the_senders_site_is_down(run_each: Any) -> None:
    r = run_each(DLQ, [*FAILED_K, op("site_down", site=1), redeliver()])
    assert r.steps[5] == [skipped("redeliver")]
    assert len(r.state["senders"]["ny"]["dlq"]) == 1


# -- P2 and P5 as v1.2 scopes them -------------------------------------------------------

TWO_WAY_DROP = {
    "sites": [1, 2],
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1},
        {"id": "ln", "site": 2, "remote": 1, "batch_size": 1},
    ],
}


def test_p5_v12_checks_the_keys_no_drop_concerns() -> None:
    # a is dropped (no listener, R18); b converges. v1.1: P5 not applicable after one
    # drop. v1.2: checked on b, which both sites hold alike.
    ops = [fail(2, "a"), put(1, "a", {"v": 1}), DELIVER, ACK, put(1, "b", {"v": 2}),
           op("settle")]  # fmt: skip
    found = verdicts(TWO_WAY_DROP, ops)
    assert found["P5"] == ("held", "")
    assert found["P2"] == ("held", "")  # 1:1 was stopped on the way (dropped), 1:2 applied


def test_p5_checked_on_no_key_is_not_applicable() -> None:
    ops = [fail(2, "a"), put(1, "a", {"v": 1}), DELIVER, ACK, op("settle")]
    status, reason = verdicts(TWO_WAY_DROP, ops)["P5"]
    assert status == "not applicable"
    assert "each was dropped, dead-lettered or written before a wipe" in reason


def test_p2_v12_checks_the_events_written_after_the_last_wipe() -> None:
    # v1.1: P2 not applicable after a wipe. v1.2: 1:2, written after it, is checked:
    # applied at 2 by the settle.
    ops = [put(1, "a", {"v": 1}), *WIPE_1, put(1, "b", {"v": 2}), op("settle")]
    found = verdicts(TWO_WAY_DROP, ops)
    assert found["P2"] == ("held", "on the events written after the last wipe")
    # P5: a was written before the wipe (left out); b is at both sites.
    assert found["P5"] == ("held", "")


def test_p5_v12_a_redelivered_record_no_longer_excludes_its_key() -> None:
    two_way = {"sites": [1, 2], "senders": [
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq"},
        {"id": "ln", "site": 2, "remote": 1, "batch_size": 1}]}  # fmt: skip
    ops = [*FAILED_K, op("settle")]
    assert verdicts(two_way, ops)["P5"][0] == "not applicable"  # k: a record in the queue
    ops = [*FAILED_K, redeliver(), op("settle")]
    assert verdicts(two_way, ops)["P5"] == ("held", "")  # k redelivered: both hold it


def test_r25_v12_settle_never_ticks_past_the_largest_64_bit_integer(run_each: Any) -> None:
    # ack_timeout_ms 2^62 (an import of Geode's "wait forever"), the clock at 2^62 + 1:
    # the batch's timeout is due at 2^62 + 1 + 2^62 > 2^63 - 1: settle stops there, with
    # the batch in flight (its remote down: no deliver), instead of overflowing.
    forever = 2**62
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1,
                                            "ack_timeout_ms": forever}]}  # fmt: skip
    r = run_each(
        config,
        [op("tick", ms=forever + 1), put(1, "k", {"v": 1}), op("site_down", site=2),
         op("settle")],
    )  # fmt: skip
    assert r.steps[3] == []
    assert r.state["time"] == forever + 1
    assert r.state["senders"]["ny"]["dispatchers"][0]["in_flight"] == {
        "batch_id": 1, "events": ["1:1"], "shipped": ["1:1"], "sent_at": forever + 1
    }  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sender": "xx"}, "sender: unknown sender 'xx'"),
        ({"sender": "ny", "events": "1:1"}, "events: must be a list of event ids, got a string"),
        ({"sender": "ny", "events": [1]},
         'events[0]: must be an event id "origin:seq", got an integer'),
        ({"sender": "ny", "events": ["1-1"]},
         'events[0]: must be an event id "origin:seq", got "1-1"'),
    ],
)  # fmt: skip
def test_r26_a_malformed_redeliver_is_an_error_in_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: Obs, message: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        json.dumps({"config": DLQ}) + "\n" + json.dumps(op("redeliver") | fields) + "\n"
    )
    assert main(["replay", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err == f"wanconform: error: {trace}:2: {message}" + err.split(message, 1)[1]
    assert err.count("\n") == 1


def test_r26_replay_steps_names_a_redeliver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Found by `make fuzz`: `replay --steps` raised TypeError on any redeliver operation.
    # By hand: fail(2, k, E, 1) fails the one attempt (R7, R16.2); the ack dead-letters 1:1
    # (R24); redeliver puts it back in ny's queue and, batch_size 1, ny sends it as batch 2
    # marked as a possible duplicate (R26; "{}" is 2 bytes, R4); the record is gone, so a
    # second redeliver of 1:1 is skipped (§3).
    path = tmp_path / "t.jsonl"
    lines = [{"config": DLQ}, op("fail", site=2, key="k", exception="E", times=1),
             op("put", site=1, key="k", value={}), op("deliver", sender="ny"),
             op("deliver_ack", sender="ny"), redeliver(), redeliver(["1:1"])]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["replay", str(path), "--steps"]) == 0
    steps = capsys.readouterr().out.splitlines()
    assert steps[4] == (
        f"{path}:6 redeliver ny → dead letter 1:1 redelivered: back in ny's queue (R26); ny "
        "sent batch 2 [1:1] (2 bytes full, 0 delta, 1 resent as possible duplicates)"
    )
    assert (
        steps[5]
        == f'{path}:7 redeliver ny ["1:1"] → skipped: no dead-letter record of ny among 1:1'
    )
