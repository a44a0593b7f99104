"""Worked scenarios for every rule R1..R25 of SPEC.md, with results derived by hand.

Every expected value below was computed from the spec's rules, not copied from the
model: the comments show the arithmetic (sizes per R4, tags per R9, times per R5/R15).
Tests taking `run_each` run twice, through model.Engine and impl.Engine, against the same
hand-derived values; `run` replays through the model only (tests/conftest.py). Tags follow
SPEC v1.1: R9 bumps `ts` to `c.timestamp + 1` whenever `now <= c.timestamp` (whatever
c's dsid), and never below the site's R21 `timestamp_floor`.
Notation in comments: `k@2` is key k at site 2; tags are [entry_version, timestamp, dsid].
Readings where the spec is silent follow the brief given to the model (see the module
docstring of model/): a skipped op changes nothing; only `ok` enters the applied memory;
batch ids never reset; site stat `failures` counts events whose status is `failed`.
"""

from __future__ import annotations

from typing import Any

import pytest
from expected import (
    Obs,
    acked,
    applied,
    connection_failed,
    dispatcher,
    dlq,
    dropped,
    enqueued,
    entry,
    forwarded,
    in_flight,
    invalid_delta,
    network,
    sender_state,
    sender_stats,
    sent,
    site_stats,
    skipped,
    timeout,
)

from traces.canonical import size
from traces.config import ReceiverConfig, SenderConfig, parse_config
from traces.errors import ConfigError, TraceError

# --- operations (SPEC §3) --------------------------------------------------------------


def put(site: int, key: str, value: dict[str, Any]) -> Obs:
    return {"op": "put", "site": site, "key": key, "value": value}


def delta(site: int, key: str, changes: dict[str, Any]) -> Obs:
    return {"op": "delta", "site": site, "key": key, "changes": changes}


def destroy(site: int, key: str) -> Obs:
    return {"op": "destroy", "site": site, "key": key}


def putall(site: int, entries: dict[str, dict[str, Any]]) -> Obs:
    return {"op": "putall", "site": site, "entries": entries}


def tick(ms: int) -> Obs:
    return {"op": "tick", "ms": ms}


def deliver(sender: str) -> Obs:
    return {"op": "deliver", "sender": sender}


def deliver_ack(sender: str) -> Obs:
    return {"op": "deliver_ack", "sender": sender}


def drop(sender: str) -> Obs:
    return {"op": "drop", "sender": sender}


def drop_ack(sender: str) -> Obs:
    return {"op": "drop_ack", "sender": sender}


def site_down(site: int) -> Obs:
    return {"op": "site_down", "site": site}


def site_up(site: int, wipe: bool = False) -> Obs:
    return {"op": "site_up", "site": site, "wipe": wipe}


def fail(site: int, key: str, exception: str, times: int) -> Obs:
    return {"op": "fail", "site": site, "key": key, "exception": exception, "times": times}


SETTLE: Obs = {"op": "settle"}

# --- configurations ----------------------------------------------------------------------


def one_way(**sender: Any) -> Obs:
    """Sites 1 and 2, one sender `ny` from 1 to 2 with the given overrides."""
    return {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, **sender}]}


NO_SENDERS: Obs = {"sites": [1, 2]}

# Both directions, batch_size 1 so every write ships at once.
TWO_WAY: Obs = {
    "sites": [1, 2],
    "senders": [
        {"id": "ldn", "site": 2, "remote": 1, "batch_size": 1},
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1},
    ],
}

# Only site 2 -> site 1.
INTO_1: Obs = {"sites": [1, 2], "senders": [{"id": "ldn", "site": 2, "remote": 1, "batch_size": 1}]}


# ========================================================================================
# §1 Domain
# ========================================================================================


def test_R01_site_down_gates_client_writes_and_site_ops(run_each: Any) -> None:
    r = run_each(
        NO_SENDERS,
        [
            put(1, "k", {"v": 1}),  # 0: 1:1 while up
            site_down(1),  # 1
            put(1, "k", {"v": 2}),  # 2: site down -> skipped
            delta(1, "k", {"v": 3}),  # 3
            destroy(1, "k"),  # 4
            putall(1, {"m": {"v": 4}}),  # 5
            site_down(1),  # 6: already down -> skipped
            site_up(1),  # 7
            site_up(1),  # 8: already up -> skipped
            put(1, "k", {"v": 5}),  # 9: next seq is 2 (skipped ops took none)
        ],
    )
    assert r.steps[1] == []
    assert r.steps[2] == [skipped("put")]
    assert r.steps[3] == [skipped("delta")]
    assert r.steps[4] == [skipped("destroy")]
    assert r.steps[5] == [skipped("putall")]
    assert r.steps[6] == [skipped("site_down")]
    assert r.steps[7] == []
    assert r.steps[8] == [skipped("site_up")]
    # R9: k was [1,0,1], now 0 <= 0 -> ts 0 + 1 = 1: [2,1,1]
    assert r.steps[9] == [enqueued(1, "1:2", "k", "update", [2, 1, 1], {"v": 5}, [])]
    assert r.state["sites"]["1"] == {
        "up": True,
        "seq": 2,
        "timestamp_floor": 0,  # R21: no wipe
        "entries": {"k": entry({"v": 5}, [2, 1, 1])},
        "stats": site_stats(),
    }


def test_R01_down_site_neither_flushes_nor_receives(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=2),
        [
            put(1, "a", {"v": 1}),  # 0: queue 1 < 2, age 0 < 1000: no flush
            site_down(1),  # 1
            tick(1000),  # 2: now 1000, age 1000 >= 1000 but site 1 is down: no flush
            site_up(1),  # 3: flush after site_up: sent at now 1000
            site_down(2),  # 4: removes the batch message to 2
            deliver("ny"),  # 5: nothing in the network -> skipped
        ],
    )
    assert r.steps[2] == []
    assert r.steps[3] == [sent("ny", 1, ["1:1"], 7)]  # size({"v":1}) = len('{"v":1}') = 7
    assert r.steps[5] == [skipped("deliver")]
    assert r.state["sites"]["1"]["up"] is True
    assert r.state["sites"]["2"] == {
        "up": False,
        "seq": 0,
        "timestamp_floor": 0,
        "entries": {},
        "stats": site_stats(),
    }
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1"], 1000)
    assert ny["dispatchers"][0]["network"] == network(False, False)


def test_R02_tombstones_kept_with_value_null(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=1),
        [
            put(1, "k", {"f": 1}),  # 0: 1:1 [1,0,1]
            deliver("ny"),  # 1
            deliver_ack("ny"),  # 2
            destroy(1, "k"),  # 3: 1:2, now 0 <= 0 -> [2,1,1]; ships 0 bytes (R4)
            deliver("ny"),  # 4
            deliver_ack("ny"),  # 5
            destroy(1, "k"),  # 6: tombstone is not live -> skipped
            delta(1, "k", {"f": 2}),  # 7: skipped
            put(1, "k", {"f": 3}),  # 8: the tombstone counts for R9: ev 2+1 = 3, 0 <= 1 -> ts 2;
            # op create (not live)
        ],
    )
    assert r.steps[3] == [
        enqueued(1, "1:2", "k", "destroy", [2, 1, 1], None, ["ny"]),
        sent("ny", 2, ["1:2"], 0),
    ]
    assert r.steps[4] == [applied(2, "ny", "1:2", "k", "ok")]
    assert r.steps[6] == [skipped("destroy")]
    assert r.steps[7] == [skipped("delta")]
    assert r.steps[8] == [
        enqueued(1, "1:3", "k", "create", [3, 2, 1], {"f": 3}, ["ny"]),
        sent("ny", 3, ["1:3"], 7),
    ]
    assert r.state["sites"]["2"]["entries"] == {"k": entry(None, [2, 1, 1])}
    assert r.state["sites"]["1"]["entries"] == {"k": entry({"f": 3}, [3, 2, 1])}
    # bytes: 7 (put) + 0 (destroy) + 7 (put)
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=3, events_sent=3, bytes_full=14
    )


def test_R03_sequence_numbers_putall_sorted_and_never_reused_after_wipe(run_each: Any) -> None:
    r = run_each(
        NO_SENDERS,
        [
            putall(1, {"b": {"v": 2}, "a": {"v": 1}}),  # 0: a -> 1:1, b -> 1:2 (sorted keys)
            put(2, "a", {"v": 3}),  # 1: site 2 numbers on its own: 2:1
            site_down(1),  # 2
            site_up(1, wipe=True),  # 3: R21 floor = 1 + largest issued ts 0 = 1
            put(1, "c", {"v": 4}),  # 4: 1:3, not 1:1; R9 ts = max(now 0, floor 1) = 1
        ],
    )
    assert r.steps[0] == [
        enqueued(1, "1:1", "a", "create", [1, 0, 1], {"v": 1}, []),
        enqueued(1, "1:2", "b", "create", [1, 0, 1], {"v": 2}, []),
    ]
    assert r.steps[1] == [enqueued(2, "2:1", "a", "create", [1, 0, 2], {"v": 3}, [])]
    assert r.steps[4] == [enqueued(1, "1:3", "c", "create", [1, 1, 1], {"v": 4}, [])]
    assert r.state["sites"]["1"]["seq"] == 3
    assert r.state["sites"]["1"]["entries"] == {"c": entry({"v": 4}, [1, 1, 1])}
    assert r.state["sites"]["2"]["seq"] == 1


def test_R04_sizes_are_canonical_json_bytes(run_each: Any) -> None:
    assert size({"f": 1}) == len('{"f":1}') == 7
    assert size(None) == 0
    r = run_each(
        one_way(batch_size=4, delta=True),
        [
            put(1, "k", {"name": "x", "n": 10}),  # '{"n":10,"name":"x"}' = 19 (keys sorted)
            delta(1, "k", {"n": 11}),  # delta '{"n":11}' = 8; R9: 0 <= 0 -> [2,1,1]
            destroy(1, "k"),  # 0
            put(1, "u", {"s": "é"}),  # '{"s":"\u00e9"}' = 1+3+1+8+1 = 14 (ensure_ascii)
        ],
    )
    assert r.steps[1] == [
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"n": 11, "name": "x"}, ["ny"])
    ]
    # full: 19 + 0 + 14 = 33; delta: 8
    assert r.steps[3][-1] == sent("ny", 1, ["1:1", "1:2", "1:3", "1:4"], 33, 8)


def test_R05_time_advances_only_by_tick(run: Any) -> None:
    r = run(
        NO_SENDERS,
        [put(1, "a", {"v": 1}), tick(5), tick(7), put(1, "b", {"v": 2}), SETTLE],
    )
    assert r.steps[0][0]["version"] == [1, 0, 1]
    assert r.steps[1] == [] and r.steps[2] == []
    assert r.steps[3][0]["version"] == [1, 12, 1]  # 0 + 5 + 7
    assert r.steps[4] == []  # nothing to settle: no tick
    assert r.state["time"] == 12


# ========================================================================================
# §2 Configuration
# ========================================================================================


def test_R06_omitted_fields_take_the_defaults() -> None:
    config = parse_config({"sites": [2, 1], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
    assert config.sites == (1, 2)
    assert config.senders == (
        SenderConfig(
            id="ny", site=1, remote=2, batch_size=100, batch_time_interval_ms=1000,
            ack_timeout_ms=10000, retry_interval_ms=5000, delta=False,
            failure_listener=None, dlq_secure=False,
        ),
    )  # fmt: skip
    # a site with no `receivers` entry gets the defaults
    assert config.receivers == (
        ReceiverConfig(site=1, retry_attempts=0, wait_time_between_retry_attempts_ms=0),
        ReceiverConfig(site=2, retry_attempts=0, wait_time_between_retry_attempts_ms=0),
    )


@pytest.mark.parametrize(
    ("senders", "message"),
    [
        (
            [{"id": "ny", "site": 1, "remote": 1}],
            "senders[0].remote: a sender cannot ship to its own site 1 (R6)",
        ),
        (
            [{"id": "ny", "site": 1, "remote": 2}, {"id": "ny2", "site": 1, "remote": 2}],
            "senders[1]: site 1 already has sender 'ny' to site 2 (R6: at most one per pair)",
        ),
        (
            [{"id": "ny", "site": 1, "remote": 2}, {"id": "ny", "site": 2, "remote": 1}],
            "senders[1].id: sender id 'ny' is used twice (R6)",
        ),
        ([{"id": "ny", "site": 1, "remote": 3}], "senders[0].remote: site 3 is not in 'sites'"),
        ([{"id": "ny", "site": 4, "remote": 2}], "senders[0].site: site 4 is not in 'sites'"),
    ],
)
def test_R06_sender_rules_rejected_naming_the_field(senders: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"sites": [1, 2], "senders": senders})
    assert str(info.value) == message


def test_R06_invalid_config_is_rejected_before_anything_runs(run: Any) -> None:
    with pytest.raises(TraceError) as info:
        run({"sites": [1, 2], "senders": [{"id": "ny", "site": 2, "remote": 2}]}, [put(1, "k", {})])
    assert str(info.value) == (
        "test.jsonl:1: config.senders[0].remote: a sender cannot ship to its own site 2 (R6)"
    )


def test_R07_failure_listener_and_retry_attempts_validated() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(one_way(failure_listener="log"))
    assert str(info.value) == 'senders[0].failure_listener: must be null or "dlq" (R7), got "log"'
    with pytest.raises(ConfigError) as info:
        parse_config({"sites": [1, 2], "receivers": [{"site": 2, "retry_attempts": -2}]})
    assert str(info.value) == "receivers[0].retry_attempts: must be >= -1, got -2"
    config = parse_config(
        {
            "sites": [1, 2],
            "receivers": [{"site": 2, "retry_attempts": -1}],
            **one_way(failure_listener="dlq"),
        }
    )
    assert config.receiver(2).retry_attempts == -1
    assert config.sender("ny").failure_listener == "dlq"


def test_R07_null_listener_drops_and_dlq_listener_records(run: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
            {"id": "b", "site": 1, "remote": 3, "batch_size": 1, "failure_listener": "dlq"},
        ],
    }
    r = run(config, [fail(2, "k", "E", 1), fail(3, "k", "E", 1), put(1, "k", {"v": 1}), SETTLE])
    assert r.steps[3] == [
        applied(2, "a", "1:1", "k", "failed", exception="E"),
        applied(3, "b", "1:1", "k", "failed", exception="E"),
        acked("a", 1, ["1:1"]),
        dropped("a", "1:1", "E"),
        acked("b", 1, ["1:1"]),
        dlq("b", "1:1", "E"),
    ]
    assert r.state["senders"]["a"]["stats"]["events_dropped"] == 1
    assert r.state["senders"]["a"]["dlq"] == []
    assert r.state["senders"]["b"]["stats"]["events_dropped"] == 0
    assert r.state["senders"]["b"]["stats"]["dlq_records"] == 1


def test_R08_delta_false_always_ships_full_values(run: Any) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(one_way(delta=1))
    assert str(info.value) == "senders[0].delta: must be true or false, got an integer"
    r = run(
        one_way(batch_size=2),  # delta defaults to false
        [put(1, "k", {"f": 1, "s": "a"}), delta(1, "k", {"f": 2})],
    )
    # '{"f":1,"s":"a"}' = 15; the delta ships its full value '{"f":2,"s":"a"}' = 15
    assert r.steps[1][-1] == sent("ny", 1, ["1:1", "1:2"], 30, 0)


# ========================================================================================
# §4 Client operations
# ========================================================================================


def test_R09_local_version_first_write_uses_now(run_each: Any) -> None:
    r = run_each(NO_SENDERS, [tick(7), put(1, "k", {"v": 1})])
    assert r.steps[1] == [enqueued(1, "1:1", "k", "create", [1, 7, 1], {"v": 1}, [])]


def test_R09_local_version_other_dsid_bumps_timestamp(run_each: Any) -> None:
    r = run_each(
        TWO_WAY,
        [
            tick(10),  # 0
            put(2, "k", {"v": 1}),  # 1: 2:1 [1,10,2]
            deliver("ldn"),  # 2: k@1 = [1,10,2]
            put(1, "k", {"v": 2}),  # 3: now 10 <= 10 -> ts 10+1 = 11: [2,11,1]
            deliver("ny"),  # 4: k@2 [1,10,2] vs [2,11,1]: 11 > 10 -> ok
            put(2, "k", {"v": 3}),  # 5: now 10 <= 11 -> ts 11+1 = 12: [3,12,2]
        ],
    )
    assert r.steps[2] == [applied(1, "ldn", "2:1", "k", "ok")]  # ny.remote 2 = origin: no forward
    assert r.steps[3] == [
        enqueued(1, "1:1", "k", "update", [2, 11, 1], {"v": 2}, ["ny"]),
        sent("ny", 1, ["1:1"], 7),
    ]
    assert r.steps[4] == [applied(2, "ny", "1:1", "k", "ok")]
    # ldn still has batch 1 in flight: no send
    assert r.steps[5] == [enqueued(2, "2:2", "k", "update", [3, 12, 2], {"v": 3}, ["ldn"])]


def test_R09_local_version_other_dsid_uses_now_when_later(run_each: Any) -> None:
    r = run_each(
        INTO_1,
        [
            put(2, "k", {"v": 1}),  # [1,0,2]
            deliver("ldn"),
            tick(5),
            put(1, "k", {"v": 2}),  # now 5 > 0 -> ts now 5: [2,5,1]
        ],
    )
    assert r.steps[3] == [enqueued(1, "1:1", "k", "update", [2, 5, 1], {"v": 2}, [])]


def test_R09_local_version_bumps_timestamp_until_the_clock_passes_it(run_each: Any) -> None:
    # v1.1 (§14): `ts = c.timestamp + 1` whenever now <= c.timestamp, whatever c's dsid;
    # v1 kept ts for the same dsid (here [3,1,1], [4,2,1], ...).
    r = run_each(
        INTO_1,
        [
            put(2, "k", {"v": 1}),  # 0: [1,0,2]
            deliver("ldn"),  # 1: k@1 = [1,0,2]
            put(1, "k", {"v": 2}),  # 2: other dsid, now 0 <= 0 -> ts 0+1: [2,1,1]
            put(1, "k", {"v": 3}),  # 3: same dsid, now 0 <= 1 -> ts 1+1: [3,2,1]
            tick(2),  # 4: now 2
            put(1, "k", {"v": 4}),  # 5: now 2 <= 2 -> ts 2+1: [4,3,1]
            destroy(1, "k"),  # 6: 2 <= 3 -> [5,4,1]
            put(1, "k", {"v": 5}),  # 7: the tombstone counts: 2 <= 4 -> [6,5,1], create
            tick(4),  # 8: now 6
            put(1, "k", {"v": 6}),  # 9: now 6 > 5 -> ts now: [7,6,1]
        ],
    )
    steps = (2, 3, 5, 6, 7, 9)
    versions = [r.steps[i][0]["version"] for i in steps]
    assert versions == [[2, 1, 1], [3, 2, 1], [4, 3, 1], [5, 4, 1], [6, 5, 1], [7, 6, 1]]
    assert [r.steps[i][0]["op"] for i in steps] == [
        "update", "update", "update", "destroy", "create", "update",
    ]  # fmt: skip
    assert r.state["sites"]["1"]["entries"] == {"k": entry({"v": 6}, [7, 6, 1])}


def test_R09_second_write_in_same_ms_bumps_timestamp(run_each: Any) -> None:
    r = run_each(
        NO_SENDERS,
        [
            tick(7),  # 0: now 7
            put(1, "k", {"v": 1}),  # 1: no entry -> ts now: [1,7,1]
            put(1, "k", {"v": 2}),  # 2: same dsid, same ms: 7 <= 7 -> ts 7+1: [2,8,1]
            delta(1, "k", {"w": 3}),  # 3: 7 <= 8 -> [3,9,1]
            put(1, "j", {"v": 1}),  # 4: another key has its own entry: none -> [1,7,1]
            tick(1),  # 5: now 8
            put(1, "k", {"v": 4}),  # 6: the clock has not caught up: 8 <= 9 -> [4,10,1]
            tick(5),  # 7: now 13
            put(1, "k", {"v": 5}),  # 8: 13 > 10 -> ts now: [5,13,1]
        ],
    )
    assert r.steps[1] == [enqueued(1, "1:1", "k", "create", [1, 7, 1], {"v": 1}, [])]
    assert r.steps[2] == [enqueued(1, "1:2", "k", "update", [2, 8, 1], {"v": 2}, [])]
    assert r.steps[3] == [enqueued(1, "1:3", "k", "update", [3, 9, 1], {"v": 2, "w": 3}, [])]
    assert r.steps[4] == [enqueued(1, "1:4", "j", "create", [1, 7, 1], {"v": 1}, [])]
    assert r.steps[6] == [enqueued(1, "1:5", "k", "update", [4, 10, 1], {"v": 4}, [])]
    assert r.steps[8] == [enqueued(1, "1:6", "k", "update", [5, 13, 1], {"v": 5}, [])]
    assert r.state["sites"]["1"]["entries"] == {
        "j": entry({"v": 1}, [1, 7, 1]),
        "k": entry({"v": 5}, [5, 13, 1]),
    }
    assert r.state["sites"]["1"]["timestamp_floor"] == 0  # only a wipe moves it (R21)


def test_R09_same_ms_write_beats_concurrent_remote_write(run_each: Any) -> None:
    """SPEC §14: a second write in the same millisecond beats a concurrent remote write.

    v1 gave site 1's second write [2,5,1]: at site 2 it tied with [1,5,2] on ts 5 and
    lost to the higher dsid, so both sites ended with site 2's value."""
    r = run_each(
        TWO_WAY,
        [
            tick(5),  # 0: now 5
            put(1, "k", {"v": 1}),  # 1: 1:1 [1,5,1]; ny sends batch 1 = [1:1]
            put(1, "k", {"v": 2}),  # 2: 1:2, 5 <= 5 -> [2,6,1]; ny has a batch in flight
            put(2, "k", {"v": 9}),  # 3: 2:1 [1,5,2] (k unknown at 2); ldn sends batch 1
            SETTLE,  # 4
        ],
    )
    assert r.steps[1] == [
        enqueued(1, "1:1", "k", "create", [1, 5, 1], {"v": 1}, ["ny"]),
        sent("ny", 1, ["1:1"], 7),
    ]
    assert r.steps[2] == [enqueued(1, "1:2", "k", "update", [2, 6, 1], {"v": 2}, ["ny"])]
    assert r.steps[3] == [
        enqueued(2, "2:1", "k", "create", [1, 5, 2], {"v": 9}, ["ldn"]),
        sent("ldn", 1, ["2:1"], 7),
    ]
    # R25: batches first, lowest id first ("ldn" < "ny"), then acks; R16.3 per arrival:
    #   2:1 at 1: [1,5,2] vs [2,6,1]: 5 < 6 -> conflict (not forwarded, R22)
    #   1:1 at 2: [1,5,1] vs [1,5,2]: equal ts, dsid 1 < 2 -> conflict
    #   ny's ack frees it: batch 2 = [1:2], 7 bytes
    #   1:2 at 2: [2,6,1] vs [1,5,2]: 6 > 5 -> ok; ldn.remote 1 is the origin: no forward
    assert r.steps[4] == [
        applied(1, "ldn", "2:1", "k", "conflict"),
        applied(2, "ny", "1:1", "k", "conflict"),
        acked("ldn", 1, ["2:1"]),
        acked("ny", 1, ["1:1"]),
        sent("ny", 2, ["1:2"], 7),
        applied(2, "ny", "1:2", "k", "ok"),
        acked("ny", 2, ["1:2"]),
    ]
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"v": 2}, [2, 6, 1])}
    assert r.state["sites"]["1"]["stats"] == site_stats(conflicts=1)
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, conflicts=1)
    assert r.state["time"] == 5


def test_R09_floor_makes_tags_unique_across_a_wipe(run_each: Any) -> None:
    """The v1 P6 failure (SPEC §14): wiped, site 1 reissued [1,0,1] for another value, so
    site 2's stale [1,0,1] entry passed R16.4 as the base of the next delta and built
    {"a":1,"c":3}, a value site 1 never had. With the floor the new tags are later."""
    r = run_each(
        one_way(batch_size=1, delta=True),
        [
            put(1, "k", {"a": 1}),  # 0: 1:1 [1,0,1]; batch 1, '{"a":1}' = 7
            deliver("ny"),  # 1: k@2 = {"a":1} [1,0,1]
            deliver_ack("ny"),  # 2
            site_down(1),  # 3
            site_up(1, wipe=True),  # 4: R21 floor = 1 + 0 = 1
            fail(2, "k", "E", 1),  # 5: the next write of k does not reach site 2
            put(1, "k", {"b": 2}),  # 6: 1:2 create, ts max(now 0, floor 1) = 1: [1,1,1]
            deliver("ny"),  # 7: failed; site 2 keeps the stale {"a":1} [1,0,1]
            deliver_ack("ny"),  # 8: dropped (no listener)
            delta(1, "k", {"c": 3}),  # 9: 1:3, 0 <= 1 -> [2,2,1], base [1,1,1], '{"c":3}' = 7
            deliver("ny"),  # 10: (2,2) > (0,1) wins; base [1,1,1] != [1,0,1] -> invalid_delta
            deliver_ack("ny"),  # 11: R19: kept, resent full '{"b":2,"c":3}' = 13
            deliver("ny"),  # 12: ok with the origin's value
            deliver_ack("ny"),  # 13
        ],
    )
    assert r.steps[6] == [
        enqueued(1, "1:2", "k", "create", [1, 1, 1], {"b": 2}, ["ny"]),
        sent("ny", 2, ["1:2"], 7),
    ]
    assert r.steps[7] == [applied(2, "ny", "1:2", "k", "failed", exception="E")]
    assert r.steps[8] == [acked("ny", 2, ["1:2"]), dropped("ny", "1:2", "E")]
    assert r.steps[9] == [
        enqueued(1, "1:3", "k", "update", [2, 2, 1], {"b": 2, "c": 3}, ["ny"]),
        sent("ny", 3, ["1:3"], 0, 7),
    ]
    assert r.steps[10] == [applied(2, "ny", "1:3", "k", "invalid_delta")]
    assert r.steps[11] == [
        acked("ny", 3, []),
        invalid_delta("ny", "1:3"),
        sent("ny", 4, ["1:3"], 13),
    ]
    assert r.steps[12] == [applied(2, "ny", "1:3", "k", "ok")]  # full value: no "value"
    assert r.steps[13] == [acked("ny", 4, ["1:3"])]
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"b": 2, "c": 3}, [2, 2, 1])}
    assert r.state["sites"]["1"]["timestamp_floor"] == 1
    assert r.state["sites"]["2"]["timestamp_floor"] == 0
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=2, failures=1, invalid_deltas=1)
    # full 7 + 7 + 13 = 27; delta 7
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=4, events_sent=4, bytes_full=27, bytes_delta=7,
        events_dropped=1, invalid_deltas=1,
    )  # fmt: skip


def test_R10_create_update_delta_destroy_putall(run_each: Any) -> None:
    r = run_each(
        NO_SENDERS,
        [
            # all at now 0: R9 bumps each later write of a key to the entry's ts + 1
            put(1, "k", {"f": 1}),  # [1,0,1]
            put(1, "k", {"f": 2}),  # [2,1,1]
            delta(1, "k", {"g": True}),  # field assignment: {"f":2,"g":true}; [3,2,1]
            destroy(1, "k"),  # [4,3,1]
            putall(1, {"m": {"f": 6}, "k": {"f": 5}}),  # k is a tombstone -> create [5,4,1]
            putall(1, {"m": {"f": 7}}),  # m [1,0,1] -> [2,1,1]
            putall(1, {}),  # entries empty -> not enabled
        ],
    )
    assert r.observations == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"f": 1}, []),
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"f": 2}, []),
        enqueued(1, "1:3", "k", "update", [3, 2, 1], {"f": 2, "g": True}, []),
        enqueued(1, "1:4", "k", "destroy", [4, 3, 1], None, []),
        enqueued(1, "1:5", "k", "create", [5, 4, 1], {"f": 5}, []),
        enqueued(1, "1:6", "m", "create", [1, 0, 1], {"f": 6}, []),
        enqueued(1, "1:7", "m", "update", [2, 1, 1], {"f": 7}, []),
        skipped("putall"),
    ]
    assert r.state["sites"]["1"]["entries"] == {
        "k": entry({"f": 5}, [5, 4, 1]),
        "m": entry({"f": 7}, [2, 1, 1]),
    }
    assert r.state["sites"]["1"]["seq"] == 7


def test_R10_delta_event_builds_merged_value_at_receiver(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=1, delta=True),
        [
            put(1, "k", {"f": 1, "s": "a"}),  # '{"f":1,"s":"a"}' = 15
            deliver("ny"),
            deliver_ack("ny"),
            delta(1, "k", {"f": 2}),  # delta '{"f":2}' = 7, base [1,0,1]; 0 <= 0 -> [2,1,1]
            deliver("ny"),
        ],
    )
    assert r.steps[0][-1] == sent("ny", 1, ["1:1"], 15)
    assert r.steps[3] == [
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"f": 2, "s": "a"}, ["ny"]),
        sent("ny", 2, ["1:2"], 0, 7),
    ]
    assert r.steps[4] == [applied(2, "ny", "1:2", "k", "ok", value={"f": 2, "s": "a"})]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"f": 2, "s": "a"}, [2, 1, 1])}


def test_R11_enqueue_to_every_sender_with_recipients(run: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
            {"id": "b", "site": 1, "remote": 3, "batch_size": 1},
            {"id": "c", "site": 2, "remote": 3, "batch_size": 1},
        ],
    }
    r = run(
        config,
        [
            put(1, "k", {"v": 1}),  # recipients {1} + {2, 3} = {1, 2, 3}
            deliver("a"),  # at 2: c.remote 3 is in the recipients -> not forwarded
            put(3, "m", {"v": 2}),  # site 3 has no senders
        ],
    )
    assert r.steps[0] == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"v": 1}, ["a", "b"]),
        sent("a", 1, ["1:1"], 7),
        sent("b", 1, ["1:1"], 7),
    ]
    assert r.steps[1] == [applied(2, "a", "1:1", "k", "ok")]
    assert r.steps[2] == [enqueued(3, "3:1", "m", "create", [1, 0, 3], {"v": 2}, [])]
    assert r.state["senders"]["a"]["dispatchers"][0]["queue"] == ["1:1"]
    assert r.state["senders"]["b"]["dispatchers"][0]["queue"] == ["1:1"]
    assert r.state["senders"]["c"]["dispatchers"][0]["queue"] == []


def test_R11_enqueued_at_is_the_write_time(run: Any) -> None:
    r = run(
        one_way(batch_time_interval_ms=10),
        [tick(5), put(1, "k", {"v": 1}), tick(9), tick(1)],  # written at 5, due at 15
    )
    assert r.steps[2] == []  # 14 - 5 = 9 < 10
    assert r.steps[3] == [sent("ny", 1, ["1:1"], 7)]  # 15 - 5 = 10 >= 10


# ========================================================================================
# §5 Sender
# ========================================================================================


def test_R12_peek_does_not_remove(run: Any) -> None:
    r = run(
        one_way(batch_size=2),
        [
            put(1, "a", {"v": 1}),
            put(1, "b", {"v": 2}),  # batch 1 = [1:1, 1:2], 7 + 7 = 14 bytes
            put(1, "c", {"v": 3}),
            deliver("ny"),
            deliver_ack("ny"),  # removes 1:1, 1:2; 1:3 alone: 1 < 2 and age 0 < 1000
        ],
    )
    assert r.steps[1][-1] == sent("ny", 1, ["1:1", "1:2"], 14)
    assert r.steps[4] == [acked("ny", 1, ["1:1", "1:2"])]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == ["1:3"]
    assert ny["dispatchers"][0]["in_flight"] is None


def test_R12_queue_keeps_sent_events_until_ack(run: Any) -> None:
    r = run(one_way(batch_size=2), [put(1, "a", {"v": 1}), put(1, "b", {"v": 2}), deliver("ny")])
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == ["1:1", "1:2"]
    assert ny["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1", "1:2"], 0)
    assert ny["dispatchers"][0]["network"] == network(False, True)


def test_R13_one_batch_in_flight(run: Any) -> None:
    r = run(
        one_way(batch_size=1),
        [
            put(1, "a", {"v": 1}),  # 0: batch 1
            put(1, "b", {"v": 2}),  # 1: batch 1 in flight: no send
            deliver("ny"),  # 2
            put(1, "c", {"v": 3}),  # 3: still in flight until the ack
            deliver_ack("ny"),  # 4: acked, then flush sends batch 2 = [1:2]
        ],
    )
    assert r.steps[1] == [enqueued(1, "1:2", "b", "create", [1, 0, 1], {"v": 2}, ["ny"])]
    assert r.steps[3] == [enqueued(1, "1:3", "c", "create", [1, 0, 1], {"v": 3}, ["ny"])]
    assert r.steps[4] == [acked("ny", 1, ["1:1"]), sent("ny", 2, ["1:2"], 7)]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == ["1:2", "1:3"]
    assert ny["dispatchers"][0]["in_flight"] == in_flight(2, ["1:2"], 0)
    assert ny["dispatchers"][0]["network"] == network(True, False)


@pytest.mark.parametrize(
    ("delta_on", "bytes_full", "bytes_delta", "delta_value"),
    [
        # full 17 (put) + 17 (putall) = 34; delta '{"f":2}' = 7
        (True, 34, 7, {"value": {"f": 2, "s": "abc"}}),
        # full 17 + 17 (the delta's full value '{"f":2,"s":"abc"}') + 17 = 51
        (False, 51, 0, {}),
    ],
)
def test_R14_payload_delta_or_full_bytes(
    run: Any, delta_on: bool, bytes_full: int, bytes_delta: int, delta_value: Obs
) -> None:
    r = run(
        one_way(batch_size=3, delta=delta_on),
        [
            put(1, "k", {"f": 1, "s": "abc"}),  # '{"f":1,"s":"abc"}' = 17
            delta(1, "k", {"f": 2}),
            putall(1, {"k": {"f": 3, "s": "abc"}}),  # putall never ships a delta
            deliver("ny"),
        ],
    )
    assert r.steps[2][-1] == sent("ny", 1, ["1:1", "1:2", "1:3"], bytes_full, bytes_delta)
    assert r.steps[3] == [
        applied(2, "ny", "1:1", "k", "ok"),
        applied(2, "ny", "1:2", "k", "ok", **delta_value),
        applied(2, "ny", "1:3", "k", "ok"),
    ]
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=1, events_sent=3, bytes_full=bytes_full, bytes_delta=bytes_delta
    )


def test_R15_flush_by_batch_size(run: Any) -> None:
    r = run(one_way(batch_size=2), [put(1, "a", {"v": 1}), put(1, "b", {"v": 2})])
    assert r.steps[0] == [enqueued(1, "1:1", "a", "create", [1, 0, 1], {"v": 1}, ["ny"])]
    assert r.steps[1][-1] == sent("ny", 1, ["1:1", "1:2"], 14)


def test_R15_flush_by_time_exact_boundary(run: Any) -> None:
    r = run(
        one_way(),  # batch_size 100, batch_time_interval_ms 1000
        [tick(10), put(1, "a", {"v": 1}), tick(999), tick(1)],
    )
    assert r.steps[2] == []  # 1009 - 10 = 999 < 1000
    assert r.steps[3] == [sent("ny", 1, ["1:1"], 7)]  # 1010 - 10 = 1000 >= 1000
    assert r.state["senders"]["ny"]["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1"], 1010)


def test_R15_connection_failure_when_remote_down(run: Any) -> None:
    r = run(
        one_way(batch_size=2, retry_interval_ms=100),
        [
            site_down(2),  # 0
            put(1, "a", {"v": 1}),  # 1: 1 < 2, no flush
            put(1, "b", {"v": 2}),  # 2: 2 >= 2, remote down: failure, next_retry_at 0+100
            put(1, "c", {"v": 3}),  # 3: now 0 < 100: no flush
            tick(100),  # 4: now 100 >= 100: failure again, next_retry_at 200
            site_up(2),  # 5: 100 < 200: no flush
            tick(100),  # 6: now 200: sends the first min(2, 3) = 2 events
            deliver("ny"),  # 7
            deliver_ack("ny"),  # 8: [1:3] left: 1 < 2 and 200 - 0 < 1000
            tick(800),  # 9: 1000 - 0 >= 1000: batch 2
        ],
    )
    assert r.steps[2] == [
        enqueued(1, "1:2", "b", "create", [1, 0, 1], {"v": 2}, ["ny"]),
        connection_failed("ny", 2),
    ]
    assert r.steps[3] == [enqueued(1, "1:3", "c", "create", [1, 0, 1], {"v": 3}, ["ny"])]
    assert r.steps[4] == [connection_failed("ny", 2)]
    assert r.steps[5] == []
    assert r.steps[6] == [sent("ny", 1, ["1:1", "1:2"], 14)]
    assert r.steps[8] == [acked("ny", 1, ["1:1", "1:2"])]
    assert r.steps[9] == [sent("ny", 2, ["1:3"], 7)]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["next_retry_at"] == 200
    assert ny["dispatchers"][0]["in_flight"] == in_flight(2, ["1:3"], 1000)
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=3, bytes_full=21, connection_failures=2
    )


def test_R15_connection_retried_after_every_enabled_op_only(run: Any) -> None:
    r = run(
        one_way(batch_size=1, retry_interval_ms=0),  # next_retry_at = now after a failure
        [
            site_down(2),
            put(1, "a", {"v": 1}),  # failure 1
            deliver("ny"),  # skipped: no flush, no failure
            fail(2, "z", "E", 1),  # enabled: flush again -> failure 2
        ],
    )
    assert r.steps[1][-1] == connection_failed("ny", 2)
    assert r.steps[2] == [skipped("deliver")]
    assert r.steps[3] == [connection_failed("ny", 2)]
    assert r.state["senders"]["ny"]["stats"] == sender_stats(connection_failures=2)
    assert r.state["senders"]["ny"]["dispatchers"][0]["next_retry_at"] == 0


# ========================================================================================
# §6 Receiver
# ========================================================================================


def test_R16_ok_applies_the_full_value(run_each: Any) -> None:
    r = run_each(one_way(batch_size=1), [put(1, "k", {"v": 1}), deliver("ny")])
    assert r.steps[1] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.state["sites"]["2"] == {
        "up": True,
        "seq": 0,
        "timestamp_floor": 0,
        "entries": {"k": entry({"v": 1}, [1, 0, 1])},
        "stats": site_stats(applied=1),
    }


def test_R16_failed_event_does_not_stop_the_batch(run: Any) -> None:
    r = run(
        one_way(batch_size=3),
        [
            fail(2, "b", "IOException", 1),
            put(1, "a", {"v": 1}),
            put(1, "b", {"v": 2}),
            put(1, "c", {"v": 3}),  # batch 1: 3 * 7 = 21 bytes
            deliver("ny"),
            deliver_ack("ny"),
        ],
    )
    assert r.steps[0] == []
    assert r.steps[3][-1] == sent("ny", 1, ["1:1", "1:2", "1:3"], 21)
    assert r.steps[4] == [
        applied(2, "ny", "1:1", "a", "ok"),
        applied(2, "ny", "1:2", "b", "failed", exception="IOException"),
        applied(2, "ny", "1:3", "c", "ok"),
    ]
    assert r.steps[5] == [
        acked("ny", 1, ["1:1", "1:2", "1:3"]),
        dropped("ny", "1:2", "IOException"),
    ]
    assert r.state["sites"]["2"]["entries"] == {
        "a": entry({"v": 1}, [1, 0, 1]),
        "c": entry({"v": 3}, [1, 0, 1]),
    }
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=2, failures=1)
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=1, events_sent=3, bytes_full=21, events_dropped=1
    )


def test_R16_retry_attempts_0_one_attempt_per_event(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=1),  # site 2 gets the default receiver: retry_attempts 0
        [
            fail(2, "k", "E", 2),
            put(1, "k", {"v": 1}),  # 1:1
            deliver("ny"),  # 1 attempt, consumes 1 (1 left) -> failed
            deliver_ack("ny"),
            put(1, "k", {"v": 2}),  # 1:2, now 0 <= 0 -> [2,1,1]
            deliver("ny"),  # consumes the last -> failed
            deliver_ack("ny"),
            put(1, "k", {"v": 3}),  # 1:3, now 0 <= 1 -> [3,2,1]
            deliver("ny"),  # no attempts left -> ok
        ],
    )
    assert r.steps[2] == [applied(2, "ny", "1:1", "k", "failed", exception="E")]
    assert r.steps[5] == [applied(2, "ny", "1:2", "k", "failed", exception="E")]
    assert r.steps[8] == [applied(2, "ny", "1:3", "k", "ok")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, failures=2, retries=0)
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 3}, [3, 2, 1])}
    assert r.state["senders"]["ny"]["stats"]["events_dropped"] == 2


def test_R16_retry_attempts_2_retries_inside_one_deliver(run_each: Any) -> None:
    config = {**one_way(batch_size=1), "receivers": [{"site": 2, "retry_attempts": 2}]}
    r = run_each(
        config,
        [
            fail(2, "k", "E", 5),
            put(1, "k", {"v": 1}),
            deliver("ny"),  # 1 + 2 = 3 attempts, all fail (5 -> 2 left); retries += 2
            deliver_ack("ny"),
            put(1, "k", {"v": 2}),  # now 0 <= 0 -> [2,1,1]
            deliver("ny"),  # attempts 1, 2 fail (2 -> 0), attempt 3 succeeds; retries += 2
        ],
    )
    assert r.steps[2] == [applied(2, "ny", "1:1", "k", "failed", exception="E")]
    assert r.steps[3] == [acked("ny", 1, ["1:1"]), dropped("ny", "1:1", "E")]
    assert r.steps[5] == [applied(2, "ny", "1:2", "k", "ok")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, failures=1, retries=4)
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 2}, [2, 1, 1])}


def test_R16_retry_attempts_minus_1_retries_until_success(run: Any) -> None:
    config = {**one_way(batch_size=1), "receivers": [{"site": 2, "retry_attempts": -1}]}
    r = run(config, [fail(2, "k", "E", 4), put(1, "k", {"v": 1}), deliver("ny")])
    # 4 failing attempts, the 5th succeeds: retries = 5 - 1 = 4
    assert r.steps[2] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, retries=4)


def test_R16_duplicate_is_decided_before_failure(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=0),
        [
            put(1, "k", {"v": 1}),  # 0: batch 1 at 0
            deliver("ny"),  # 1: ok; ack in the network
            fail(2, "k", "E", 1),  # 2
            tick(100),  # 3: 100 >= 0 + 100: timeout; next_retry_at 100; resend as batch 2
            deliver("ny"),  # 4: duplicate, the fail is not consumed
            deliver_ack("ny"),  # 5
            put(1, "k", {"v": 2}),  # 6: 1:2 [2,100,1], batch 3
            deliver("ny"),  # 7: the fail is still there -> failed
        ],
    )
    assert r.steps[3] == [
        timeout("ny", 1, ["1:1"]),
        sent("ny", 2, ["1:1"], 7, 0, events_resent=1),
    ]
    assert r.steps[4] == [applied(2, "ny", "1:1", "k", "duplicate")]
    assert r.steps[5] == [acked("ny", 2, ["1:1"])]
    assert r.steps[6][0]["version"] == [2, 100, 1]
    assert r.steps[7] == [applied(2, "ny", "1:2", "k", "failed", exception="E")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, duplicates=1, failures=1)


def test_R16_failure_is_decided_before_conflict(run: Any) -> None:
    r = run(
        one_way(batch_size=1),
        [
            put(1, "k", {"v": 1}),  # 0: 1:1 [1,0,1], batch 1
            put(1, "m", {"v": 1}),  # 1: 1:2 [1,0,1], queued
            tick(5),  # 2
            put(2, "k", {"v": 2}),  # 3: k@2 [1,5,2]
            put(2, "m", {"v": 2}),  # 4: m@2 [1,5,2]
            fail(2, "k", "E", 1),  # 5
            deliver("ny"),  # 6: would lose (0 < 5) but the failure comes first
            deliver_ack("ny"),  # 7: dropped; batch 2 = [1:2] at now 5
            deliver("ny"),  # 8: m: 0 < 5 -> conflict
        ],
    )
    assert r.steps[3] == [enqueued(2, "2:1", "k", "create", [1, 5, 2], {"v": 2}, [])]
    assert r.steps[6] == [applied(2, "ny", "1:1", "k", "failed", exception="E")]
    assert r.steps[7] == [
        acked("ny", 1, ["1:1"]),
        dropped("ny", "1:1", "E"),
        sent("ny", 2, ["1:2"], 7),
    ]
    assert r.steps[8] == [applied(2, "ny", "1:2", "m", "conflict")]
    assert r.state["sites"]["2"]["stats"] == site_stats(failures=1, conflicts=1)
    assert r.state["sites"]["2"]["entries"] == {
        "k": entry({"v": 2}, [1, 5, 2]),
        "m": entry({"v": 2}, [1, 5, 2]),
    }


def test_R16_conflict_is_decided_before_delta_base(run: Any) -> None:
    r = run(
        one_way(batch_size=1, delta=True),
        [
            put(1, "k", {"f": 1}),  # 0: [1,0,1]
            deliver("ny"),  # 1: k@2 [1,0,1]
            deliver_ack("ny"),  # 2
            tick(5),  # 3
            put(2, "k", {"f": 9}),  # 4: now 5 > 0 -> ts now: [2,5,2]
            delta(1, "k", {"f": 2}),  # 5: [2,5,1], base [1,0,1]
            deliver("ny"),  # 6: ts 5 = 5 and dsid 1 < 2 -> conflict (base would mismatch too)
        ],
    )
    assert r.steps[4][0]["version"] == [2, 5, 2]
    assert r.steps[5] == [
        enqueued(1, "1:2", "k", "update", [2, 5, 1], {"f": 2}, ["ny"]),
        sent("ny", 2, ["1:2"], 0, 7),
    ]
    assert r.steps[6] == [applied(2, "ny", "1:2", "k", "conflict")]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"f": 9}, [2, 5, 2])}
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, conflicts=1)


def test_R16_conflict_different_dsid_breaks_ties_by_dsid(run: Any) -> None:
    r = run(
        TWO_WAY,
        [
            put(1, "k", {"v": 1}),  # 0: [1,0,1]
            put(2, "k", {"v": 2}),  # 1: [1,0,2]
            deliver("ldn"),  # 2: at 1: equal ts, 2 > 1 -> ok
            deliver("ny"),  # 3: at 2: equal ts, 1 < 2 -> conflict
        ],
    )
    assert r.steps[2] == [applied(1, "ldn", "2:1", "k", "ok")]
    assert r.steps[3] == [applied(2, "ny", "1:1", "k", "conflict")]
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"v": 2}, [1, 0, 2])}
    assert r.state["sites"]["1"]["stats"] == site_stats(applied=1)
    assert r.state["sites"]["2"]["stats"] == site_stats(conflicts=1)


def test_R16_conflict_same_dsid_timestamp_decides_before_entry_version(run_each: Any) -> None:
    # R16.3, same dsid: apply iff (t.timestamp, t.entry_version) > (c.timestamp,
    # c.entry_version). A wiped origin restarts entry versions at 1 but, by R21's floor,
    # issues a later timestamp: [1,3,1] beats [3,2,1] ((3,1) > (2,3)), although 1 < 3.
    r = run_each(
        one_way(batch_size=1),
        [
            put(1, "k", {"n": 1}),  # 0: 1:1 [1,0,1]; batch 1
            put(1, "k", {"n": 2}),  # 1: 1:2, 0 <= 0 -> [2,1,1]
            put(1, "k", {"n": 3}),  # 2: 1:3, 0 <= 1 -> [3,2,1]
            SETTLE,  # 3: batches 1..3 applied: k@2 = {"n":3} [3,2,1]
            site_down(1),  # 4
            site_up(1, wipe=True),  # 5: floor = 1 + 2 = 3
            put(1, "k", {"n": 4}),  # 6: 1:4 create, max(now 0, floor 3) -> [1,3,1]; batch 4
            deliver("ny"),  # 7: (3,1) > (2,3) -> ok
            deliver_ack("ny"),  # 8
        ],
    )
    assert r.steps[6] == [
        enqueued(1, "1:4", "k", "create", [1, 3, 1], {"n": 4}, ["ny"]),
        sent("ny", 4, ["1:4"], 7),
    ]
    assert r.steps[7] == [applied(2, "ny", "1:4", "k", "ok")]
    assert r.steps[8] == [acked("ny", 4, ["1:4"])]
    for site in ("1", "2"):
        assert r.state["sites"][site]["entries"] == {"k": entry({"n": 4}, [1, 3, 1])}
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=4)


def test_R16_conflict_same_dsid_older_tag_arriving_late_loses(run_each: Any) -> None:
    # R16.3 compares (timestamp, entry_version) for one dsid. v1.1's R9 gives one site's
    # writes to a key strictly increasing timestamps (and R21's floor keeps that across a
    # wipe), so the timestamps decide here: v1's tie on ts 0 ((0,2) < (0,3)) is gone
    # (SPEC §13: two different tags of one dsid never share a timestamp).
    r = run_each(
        one_way(batch_size=2, delta=True),
        [
            put(1, "k", {"f": 1}),  # 0: 1:1 [1,0,1]
            put(1, "j", {"f": 0}),  # 1: 1:2 [1,0,1]; batch 1 = [1:1, 1:2]
            deliver("ny"),  # 2
            deliver_ack("ny"),  # 3
            site_down(2),  # 4
            site_up(2, wipe=True),  # 5: site 2 never issued a tag: its floor stays 0
            delta(1, "k", {"f": 2}),  # 6: 1:3, 0 <= 0 -> [2,1,1], delta '{"f":2}' = 7
            put(1, "k", {"f": 3}),  # 7: 1:4, 0 <= 1 -> [3,2,1]; batch 2 = [1:3, 1:4]: 7 + 7
            deliver("ny"),  # 8: 1:3 no entry -> invalid_delta; 1:4 no entry -> ok
            deliver_ack("ny"),  # 9: 1:3 kept; 1 < 2 and age 0 < 1000: no flush
            tick(1000),  # 10: age 1000: batch 3 = [1:3] as full '{"f":2}' = 7
            deliver("ny"),  # 11: same dsid, (1, 2) < (2, 3) -> conflict
            deliver_ack("ny"),  # 12
        ],
    )
    assert r.steps[7][-1] == sent("ny", 2, ["1:3", "1:4"], 7, 7)
    assert r.steps[8] == [
        applied(2, "ny", "1:3", "k", "invalid_delta"),
        applied(2, "ny", "1:4", "k", "ok"),
    ]
    assert r.steps[9] == [acked("ny", 2, ["1:4"]), invalid_delta("ny", "1:3")]
    assert r.steps[10] == [sent("ny", 3, ["1:3"], 7)]
    assert r.steps[11] == [applied(2, "ny", "1:3", "k", "conflict")]
    assert r.steps[12] == [acked("ny", 3, ["1:3"])]
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"f": 3}, [3, 2, 1])}
    assert r.state["sites"]["2"]["timestamp_floor"] == 0
    # applied: 2 before the wipe (counters kept) + 1:4
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=3, conflicts=1, invalid_deltas=1)


def test_R17_ack_message_in_the_network(run: Any) -> None:
    r = run(
        one_way(batch_size=1),
        [
            put(1, "k", {"v": 1}),  # 0
            deliver_ack("ny"),  # 1: no ack yet -> skipped
            deliver("ny"),  # 2: batch -> ack
            deliver("ny"),  # 3: no batch -> skipped
            drop_ack("ny"),  # 4
            drop_ack("ny"),  # 5: skipped
            drop("ny"),  # 6: skipped
        ],
    )
    assert r.steps[1] == [skipped("deliver_ack")]
    assert r.steps[3] == [skipped("deliver")]
    assert r.steps[4] == []
    assert r.steps[5] == [skipped("drop_ack")]
    assert r.steps[6] == [skipped("drop")]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["network"] == network(False, False)
    assert ny["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1"], 0)  # only R20 clears it now
    assert ny["dispatchers"][0]["queue"] == ["1:1"]


def test_R17_network_holds_the_ack_after_deliver(run: Any) -> None:
    r = run(one_way(batch_size=1), [put(1, "k", {"v": 1}), deliver("ny")])
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["network"] == network(False, True)
    assert ny["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1"], 0)


# ========================================================================================
# §7 Sender: acknowledgements and failures
# ========================================================================================


def test_R18_ack_removes_per_status(run: Any) -> None:
    """One batch holding all five statuses: duplicate, ok, conflict, failed, invalid_delta."""
    r = run(
        one_way(
            batch_size=10,
            batch_time_interval_ms=0,
            ack_timeout_ms=100,
            retry_interval_ms=0,
            delta=True,
        ),
        [
            put(1, "a", {"v": 1}),  # 0: 1:1 a [1,0,1]; interval 0: batch 1 = [1:1]
            deliver("ny"),  # 1: a@2 [1,0,1] ok
            put(1, "b", {"v": 2}),  # 2: 1:2
            put(2, "c", {"v": 9}),  # 3: c@2 [1,0,2]
            put(1, "c", {"v": 3}),  # 4: 1:3 c [1,0,1]
            fail(2, "d", "IOException", 1),  # 5
            put(1, "d", {"v": 4}),  # 6: 1:4
            put(2, "a", {"v": 5}),  # 7: a@2 [1,0,1], now 0 <= 0 -> [2,1,2]
            tick(5),  # 8
            delta(1, "a", {"w": 6}),  # 9: 1:5 a [2,5,1], base [1,0,1], value {"v":1,"w":6}
            tick(95),  # 10: 100 >= 0+100: timeout; resend everything as batch 2
            deliver("ny"),  # 11
            deliver_ack("ny"),  # 12
            deliver("ny"),  # 13
            deliver_ack("ny"),  # 14
        ],
    )
    assert r.steps[7] == [enqueued(2, "2:2", "a", "update", [2, 1, 2], {"v": 5}, [])]
    # full: 4 * 7 = 28; delta '{"w":6}' = 7; only 1:1 is a possible duplicate
    assert r.steps[10] == [
        timeout("ny", 1, ["1:1"]),
        sent("ny", 2, ["1:1", "1:2", "1:3", "1:4", "1:5"], 28, 7, events_resent=1),
    ]
    assert r.steps[11] == [
        applied(2, "ny", "1:1", "a", "duplicate"),
        applied(2, "ny", "1:2", "b", "ok"),
        applied(2, "ny", "1:3", "c", "conflict"),  # equal ts 0, dsid 1 < 2
        applied(2, "ny", "1:4", "d", "failed", exception="IOException"),
        applied(2, "ny", "1:5", "a", "invalid_delta"),  # 5 > 1 wins, base [1,0,1] != [2,1,2]
    ]
    # 1:5 stays, converted to full: '{"v":1,"w":6}' = 13, sent at once (interval 0)
    assert r.steps[12] == [
        acked("ny", 2, ["1:1", "1:2", "1:3", "1:4"]),
        dropped("ny", "1:4", "IOException"),
        invalid_delta("ny", "1:5"),
        sent("ny", 3, ["1:5"], 13),
    ]
    assert r.steps[13] == [applied(2, "ny", "1:5", "a", "ok")]  # full value: no "value" field
    assert r.steps[14] == [acked("ny", 3, ["1:5"])]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == []
    assert ny["dispatchers"][0]["in_flight"] is None
    assert ny["dispatchers"][0]["next_retry_at"] == 100
    # events 1 + 5 + 1 = 7; full 7 + 28 + 13 = 48
    assert ny["stats"] == sender_stats(
        batches_sent=3, events_sent=7, events_resent=1, bytes_full=48, bytes_delta=7,
        batches_timed_out=1, events_dropped=1, invalid_deltas=1,
    )  # fmt: skip
    assert r.state["sites"]["2"]["stats"] == site_stats(
        applied=3, duplicates=1, conflicts=1, failures=1, invalid_deltas=1
    )
    assert r.state["sites"]["2"]["entries"] == {
        "a": entry({"v": 1, "w": 6}, [2, 5, 1]),
        "b": entry({"v": 2}, [1, 0, 1]),
        "c": entry({"v": 9}, [1, 0, 2]),
    }


def test_R19_invalid_delta_requeued_at_head_and_resent_full(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=3, delta=True),
        [
            put(1, "k", {"f": 1}),  # 0: 1:1
            put(1, "n", {"f": 1}),  # 1: 1:2
            put(1, "m", {"f": 1}),  # 2: 1:3; batch 1 = 21 bytes
            deliver("ny"),  # 3
            deliver_ack("ny"),  # 4
            site_down(2),  # 5
            site_up(2, wipe=True),  # 6: site 2 forgets k, n, m
            # R9, now 0: each rewrite of k, m, n (all [1,0,1]) takes ts 0 + 1 -> [2,1,1]
            delta(1, "k", {"g": 2}),  # 7: 1:4, delta '{"g":2}' = 7
            put(1, "m", {"f": 2}),  # 8: 1:5, full 7
            delta(1, "n", {"g": 3}),  # 9: 1:6, delta 7; batch 2
            put(1, "q", {"f": 4}),  # 10: 1:7 [1,0,1] (a new key), queued
            deliver("ny"),  # 11
            deliver_ack("ny"),  # 12
            deliver("ny"),  # 13
            deliver_ack("ny"),  # 14
        ],
    )
    assert r.steps[9][-1] == sent("ny", 2, ["1:4", "1:5", "1:6"], 7, 14)
    assert r.steps[11] == [
        applied(2, "ny", "1:4", "k", "invalid_delta"),  # no live entry for the delta
        applied(2, "ny", "1:5", "m", "ok"),
        applied(2, "ny", "1:6", "n", "invalid_delta"),
    ]
    # queue becomes [1:4, 1:6, 1:7]: 3 >= 3 -> batch 3, full '{"f":1,"g":2}' = 13, 13, '{"f":4}' 7
    assert r.steps[12] == [
        acked("ny", 2, ["1:5"]),
        invalid_delta("ny", "1:4"),
        invalid_delta("ny", "1:6"),
        sent("ny", 3, ["1:4", "1:6", "1:7"], 33),
    ]
    assert r.steps[13] == [
        applied(2, "ny", "1:4", "k", "ok"),
        applied(2, "ny", "1:6", "n", "ok"),
        applied(2, "ny", "1:7", "q", "ok"),
    ]
    assert r.state["sites"]["2"]["entries"] == {
        "k": entry({"f": 1, "g": 2}, [2, 1, 1]),
        "m": entry({"f": 2}, [2, 1, 1]),
        "n": entry({"f": 1, "g": 3}, [2, 1, 1]),
        "q": entry({"f": 4}, [1, 0, 1]),
    }
    # events 3 + 3 + 3; full 21 + 7 + 33 = 61; delta 14
    assert r.state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=3, events_sent=9, bytes_full=61, bytes_delta=14, invalid_deltas=2
    )
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=7, invalid_deltas=2)


def test_R20_timeout_marks_possible_duplicates_and_waits_retry_interval(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=50),
        [
            put(1, "k", {"v": 1}),  # 0: batch 1 at 0
            drop("ny"),  # 1: the batch is lost
            tick(99),  # 2: 99 < 100
            tick(1),  # 3: timeout; next_retry_at 100 + 50 = 150
            tick(49),  # 4: 149 < 150
            tick(1),  # 5: resend as batch 2 with events_resent 1
            deliver("ny"),  # 6: first arrival -> ok
            deliver_ack("ny"),  # 7
        ],
    )
    assert r.steps[1] == []
    assert r.steps[2] == []
    assert r.steps[3] == [timeout("ny", 1, ["1:1"])]
    assert r.steps[4] == []
    assert r.steps[5] == [sent("ny", 2, ["1:1"], 7, 0, events_resent=1)]
    assert r.steps[6] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.steps[7] == [acked("ny", 2, ["1:1"])]
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["next_retry_at"] == 150
    assert ny["stats"] == sender_stats(
        batches_sent=2, events_sent=2, events_resent=1, bytes_full=14, batches_timed_out=1
    )


def test_R20_one_ticks_timeouts_go_in_sorted_sender_id_order(run_each: Any) -> None:
    # Reading (README, DESIGN.md): §3 orders only the flushes; a tick's timeouts too go
    # sender by sender in sorted id order, whatever the configuration's order. Site 1's
    # write 1:1 ships at once on both senders (batch_size 1); both batches are lost; at
    # 100 both time out: "a" (1 -> 3) before "b" (1 -> 2); the resends wait for 150.
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "b", "site": 1, "remote": 2, "batch_size": 1, "ack_timeout_ms": 100,
             "retry_interval_ms": 50},
            {"id": "a", "site": 1, "remote": 3, "batch_size": 1, "ack_timeout_ms": 100,
             "retry_interval_ms": 50},
        ],
    }  # fmt: skip
    r = run_each(config, [put(1, "k", {"v": 1}), drop("b"), drop("a"), tick(100)])
    assert r.steps[3] == [timeout("a", 1, ["1:1"]), timeout("b", 1, ["1:1"])]


def test_R20_timeout_state_between_timeout_and_resend(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=50),
        [put(1, "k", {"v": 1}), deliver("ny"), tick(100)],
    )
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["queue"] == ["1:1"]
    assert ny["dispatchers"][0]["in_flight"] is None
    assert ny["dispatchers"][0]["network"] == network(
        False, False
    )  # the undelivered ack is gone too
    assert ny["dispatchers"][0]["next_retry_at"] == 150


def test_R21_site_down_removes_messages_and_sender_waits_until_up(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=0),
        [
            put(1, "k", {"v": 1}),  # 0: batch 1 at 0
            deliver("ny"),  # 1: ack in the network
            site_down(1),  # 2: removes the ack to 1
            tick(200),  # 3: sender's site down: no timeout
            site_up(1),  # 4: no timeout outside tick, batch 1 still in flight
            tick(1),  # 5: 201 >= 100: timeout; next_retry_at 201; resend
            deliver("ny"),  # 6: duplicate
            deliver_ack("ny"),  # 7
        ],
    )
    assert r.steps[2] == []
    assert r.steps[3] == []
    assert r.steps[4] == []
    assert r.steps[5] == [timeout("ny", 1, ["1:1"]), sent("ny", 2, ["1:1"], 7, 0, 1)]
    assert r.steps[6] == [applied(2, "ny", "1:1", "k", "duplicate")]
    assert r.steps[7] == [acked("ny", 2, ["1:1"])]
    assert r.state["time"] == 201
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=1, duplicates=1)


def test_R21_site_down_removes_the_batch_to_it(run: Any) -> None:
    r = run(one_way(batch_size=1), [put(1, "k", {"v": 1}), site_down(2)])
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["network"] == network(False, False)
    assert ny["dispatchers"][0]["in_flight"] == in_flight(1, ["1:1"], 0)


def test_R21_wipe_forgets_applied_events(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=0),
        [
            put(1, "k", {"v": 1}),
            deliver("ny"),  # ok at 2
            site_down(2),
            site_up(2, wipe=True),  # applied memory empty
            tick(100),  # timeout + resend
            deliver("ny"),  # ok again, not duplicate
        ],
    )
    assert r.steps[4] == [timeout("ny", 1, ["1:1"]), sent("ny", 2, ["1:1"], 7, 0, 1)]
    assert r.steps[5] == [applied(2, "ny", "1:1", "k", "ok")]
    assert r.state["sites"]["2"]["stats"] == site_stats(applied=2)


def test_R21_wipe_keeps_stats_dlq_seq_batch_ids_and_failures(run_each: Any) -> None:
    r = run_each(
        one_way(batch_size=1, failure_listener="dlq"),
        [
            fail(2, "k", "E", 2),  # 0
            put(1, "j", {"v": 1}),  # 1: 1:1 [1,0,1], batch 1
            deliver("ny"),  # 2: ok
            deliver_ack("ny"),  # 3
            put(1, "k", {"v": 2}),  # 4: 1:2 [1,0,1], batch 2
            deliver("ny"),  # 5: failed (1 left)
            deliver_ack("ny"),  # 6: dead-lettered
            put(1, "k", {"v": 3}),  # 7: 1:3, now 0 <= 0 -> [2,1,1], batch 3
            put(1, "m", {"v": 4}),  # 8: 1:4 [1,0,1] queued
            site_down(1),  # 9: batch 3's message removed
            site_up(1, wipe=True),  # 10: entries, queue, in_flight gone; floor 1 + 1 = 2
            site_down(2),  # 11
            site_up(2, wipe=True),  # 12: site 2 never issued a tag: floor stays 0
            put(1, "k", {"v": 5}),  # 13: no entry at 1 any more: 1:5, max(0, 2) -> [1,2,1]
            deliver("ny"),  # 14: the fail is still in force: failed (0 left)
            deliver_ack("ny"),  # 15
        ],
    )
    assert r.steps[10] == []
    assert r.steps[13] == [
        enqueued(1, "1:5", "k", "create", [1, 2, 1], {"v": 5}, ["ny"]),
        sent("ny", 4, ["1:5"], 7),
    ]
    assert r.steps[14] == [applied(2, "ny", "1:5", "k", "failed", exception="E")]
    assert r.steps[15] == [acked("ny", 4, ["1:5"]), dlq("ny", "1:5", "E")]
    assert r.state["sites"]["1"] == {
        "up": True,
        "seq": 5,
        "timestamp_floor": 2,
        "entries": {"k": entry({"v": 5}, [1, 2, 1])},
        "stats": site_stats(),
    }
    assert r.state["sites"]["2"] == {
        "up": True,
        "seq": 0,
        "timestamp_floor": 0,
        "entries": {},
        "stats": site_stats(applied=1, failures=2),
    }
    assert r.state["senders"]["ny"] == sender_state(
        [dispatcher()],  # R21 (v2.0): every dispatcher as new, its batch ids kept
        sender_stats(batches_sent=4, events_sent=4, bytes_full=28, dlq_records=2),
        [
            {"event_id": "1:2", "sender": "ny", "key": "k", "op": "create", "exception": "E",
             "version": [1, 0, 1], "value": {"v": 2}, "recipients": [1, 2], "thread": 0},
            {"event_id": "1:5", "sender": "ny", "key": "k", "op": "create", "exception": "E",
             "version": [1, 2, 1], "value": {"v": 5}, "recipients": [1, 2], "thread": 0},
        ],
    )  # fmt: skip


def test_R21_timestamp_floor_after_wipe(run_each: Any) -> None:
    ops = [
        tick(3),  # 0: now 3
        put(1, "a", {"v": 1}),  # 1: 1:1 [1,3,1]
        put(1, "a", {"v": 2}),  # 2: 1:2, 3 <= 3 -> bumped: [2,4,1]
        put(1, "b", {"v": 1}),  # 3: 1:3 [1,3,1]
        site_down(1),  # 4
        site_up(1, wipe=True),  # 5: floor = 1 + largest issued 4 = 5 (not now + 1 = 4)
        site_down(2),  # 6
        site_up(2, wipe=True),  # 7: site 2 never issued a tag: floor stays 0
    ]
    first = run_each(NO_SENDERS, ops)
    assert first.state["sites"]["1"] == {
        "up": True,
        "seq": 3,
        "timestamp_floor": 5,
        "entries": {},
        "stats": site_stats(),
    }
    assert first.state["sites"]["2"]["timestamp_floor"] == 0
    ops += [
        put(1, "a", {"v": 3}),  # 8: 1:4, no entry: max(now 3, floor 5) = 5: [1,5,1]
        put(1, "a", {"v": 4}),  # 9: 1:5, 3 <= 5 -> [2,6,1]
        site_down(1),  # 10
        site_up(1, wipe=True),  # 11: floor = 1 + 6 = 7
        site_down(1),  # 12
        site_up(1, wipe=True),  # 13: no tag since: the floor survives, 7
        tick(10),  # 14: now 13
        put(1, "c", {"v": 5}),  # 15: 1:6, max(13, 7) = 13: [1,13,1]
    ]
    r = run_each(NO_SENDERS, ops)
    assert [r.steps[i][0]["version"] for i in (1, 2, 3, 8, 9, 15)] == [
        [1, 3, 1], [2, 4, 1], [1, 3, 1], [1, 5, 1], [2, 6, 1], [1, 13, 1],
    ]  # fmt: skip
    assert r.steps[5] == [] and r.steps[13] == []
    assert r.state["sites"]["1"] == {
        "up": True,
        "seq": 6,
        "timestamp_floor": 7,
        "entries": {"c": entry({"v": 5}, [1, 13, 1])},
        "stats": site_stats(),
    }
    assert r.state["sites"]["2"] == {
        "up": True,
        "seq": 0,
        "timestamp_floor": 0,
        "entries": {},
        "stats": site_stats(),
    }


def test_R21_floor_counts_the_tags_the_site_issued_not_the_ones_it_received(
    run_each: Any,
) -> None:
    # R21: the floor is 1 + the largest timestamp of a tag the wiped site *issued* (R9);
    # tags it only received from another site do not raise it, but a local write bumped
    # past a received tag (R9: ts = c.timestamp + 1) is issued by the site and does.
    ops = [
        put(2, "k", {"v": 1}),  # 0: 2:1 [1,0,2]; batch 1
        put(2, "k", {"v": 2}),  # 1: 2:2 [2,1,2]
        put(2, "k", {"v": 3}),  # 2: 2:3 [3,2,2]
        deliver("ldn"),  # 3
        deliver_ack("ldn"),  # 4: batch 2 [2:2]
        deliver("ldn"),  # 5
        deliver_ack("ldn"),  # 6: batch 3 [2:3]
        deliver("ldn"),  # 7: k@1 = [3,2,2]
        deliver_ack("ldn"),  # 8
        put(1, "j", {"v": 0}),  # 9: 1:1 [1,0,1], the only tag site 1 issued
        site_down(1),  # 10
        site_up(1, wipe=True),  # 11: floor = 1 + 0 = 1 (the received ts 2 does not count)
    ]
    first = run_each(INTO_1, ops)
    assert first.state["sites"]["1"]["timestamp_floor"] == 1
    assert first.state["sites"]["1"]["entries"] == {}
    ops += [
        put(2, "k", {"v": 4}),  # 12: 2:4 [4,3,2]; batch 4
        deliver("ldn"),  # 13: k@1 (wiped: no entry) = [4,3,2]
        deliver_ack("ldn"),  # 14
        put(1, "k", {"v": 5}),  # 15: 1:2, now 0 <= 3: ts 4 -> [5,4,1] (>= floor 1)
        site_down(1),  # 16
        site_up(1, wipe=True),  # 17: floor = 1 + 4 = 5
        put(1, "k", {"v": 6}),  # 18: 1:3, no entry: max(now 0, floor 5) = 5 -> [1,5,1]
    ]
    r = run_each(INTO_1, ops)
    assert [r.steps[i][0]["version"] for i in (9, 15, 18)] == [[1, 0, 1], [5, 4, 1], [1, 5, 1]]
    assert r.state["sites"]["1"] == {
        "up": True,
        "seq": 3,
        "timestamp_floor": 5,
        "entries": {"k": entry({"v": 6}, [1, 5, 1])},
        "stats": site_stats(applied=4),  # counters survive the wipes
    }
    assert r.state["sites"]["2"]["timestamp_floor"] == 0
    assert r.state["sites"]["2"]["entries"] == {"k": entry({"v": 4}, [4, 3, 2])}


def test_R21_wipe_resets_next_retry_at(run: Any) -> None:
    r = run(
        one_way(batch_size=1, retry_interval_ms=700),
        [site_down(2), put(1, "k", {"v": 1}), site_down(1), site_up(1, wipe=True)],
    )
    assert r.steps[1][-1] == connection_failed("ny", 2)  # next_retry_at 700
    ny = r.state["senders"]["ny"]
    assert ny["dispatchers"][0]["next_retry_at"] == 0
    assert ny["dispatchers"][0]["queue"] == []
    assert ny["stats"] == sender_stats(connection_failures=1)


# ========================================================================================
# §8 Multi-site forwarding and dead letters
# ========================================================================================

RING = {
    "sites": [1, 2, 3],
    "senders": [
        {"id": "a", "site": 1, "remote": 2, "batch_size": 2},
        {"id": "b", "site": 2, "remote": 3, "batch_size": 1},
        {"id": "c", "site": 3, "remote": 1, "batch_size": 1},
    ],
}


def test_R22_forwarding_in_a_ring(run: Any) -> None:
    r = run(
        RING,
        [
            put(1, "x", {"v": 1}),  # 0: 1:1 recipients {1, 2}
            put(1, "y", {"v": 2}),  # 1: 1:2; batch a1 = [1:1, 1:2]
            deliver("a"),  # 2: each applied is followed by its forwarded; b ships 1 event
            deliver("b"),  # 3: at 3, c.remote 1 is the origin: not forwarded
            deliver_ack("b"),  # 4: b ships 1:2
            deliver("b"),  # 5
            deliver_ack("b"),  # 6
            deliver_ack("a"),  # 7
            put(2, "z", {"v": 3}),  # 8: 2:1, recipients {2, 3}
            deliver("b"),  # 9: at 3, c.remote 1 not in {2, 3}: forwarded
            deliver("c"),  # 10: at 1, a.remote 2 is the origin: not forwarded
        ],
    )
    assert r.steps[1][-1] == sent("a", 1, ["1:1", "1:2"], 14)
    assert r.steps[2] == [
        applied(2, "a", "1:1", "x", "ok"),
        forwarded(2, "b", "1:1"),
        applied(2, "a", "1:2", "y", "ok"),
        forwarded(2, "b", "1:2"),
        sent("b", 1, ["1:1"], 7),
    ]
    assert r.steps[3] == [applied(3, "b", "1:1", "x", "ok")]
    assert r.steps[4] == [acked("b", 1, ["1:1"]), sent("b", 2, ["1:2"], 7)]
    assert r.steps[5] == [applied(3, "b", "1:2", "y", "ok")]
    assert r.steps[7] == [acked("a", 1, ["1:1", "1:2"])]
    assert r.steps[8] == [
        enqueued(2, "2:1", "z", "create", [1, 0, 2], {"v": 3}, ["b"]),
        sent("b", 3, ["2:1"], 7),
    ]
    assert r.steps[9] == [
        applied(3, "b", "2:1", "z", "ok"),
        forwarded(3, "c", "2:1"),
        sent("c", 1, ["2:1"], 7),
    ]
    assert r.steps[10] == [applied(1, "c", "2:1", "z", "ok")]
    expected = {
        "x": entry({"v": 1}, [1, 0, 1]),
        "y": entry({"v": 2}, [1, 0, 1]),
        "z": entry({"v": 3}, [1, 0, 2]),
    }
    for site in ("1", "2", "3"):
        assert r.state["sites"][site]["entries"] == expected
    assert r.state["senders"]["a"]["dispatchers"][0]["queue"] == []
    assert r.state["senders"]["c"]["dispatchers"][0]["queue"] == ["2:1"]


def test_R22_forwarded_delta_ships_per_the_forwarding_senders_setting(run_each: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 2, "batch_size": 1, "delta": True},
            {"id": "b", "site": 2, "remote": 3, "batch_size": 1},  # delta false
        ],
    }
    r = run_each(
        config,
        [
            put(1, "k", {"f": 1, "s": "x"}),  # '{"f":1,"s":"x"}' = 15
            SETTLE,
            delta(1, "k", {"f": 2}),  # 1:2, now 0 <= 0 -> [2,1,1], base [1,0,1]; a ships 7
            SETTLE,
        ],
    )
    built = {"f": 2, "s": "x"}
    assert r.steps[2][-1] == sent("a", 2, ["1:2"], 0, 7)
    assert r.steps[3] == [
        applied(2, "a", "1:2", "k", "ok", value=built),
        forwarded(2, "b", "1:2"),
        sent("b", 2, ["1:2"], 15, 0),  # b has delta false: the full value, 15 bytes
        applied(3, "b", "1:2", "k", "ok"),
        acked("a", 2, ["1:2"]),
        acked("b", 2, ["1:2"]),
    ]
    for site in ("1", "2", "3"):
        assert r.state["sites"][site]["entries"] == {"k": entry(built, [2, 1, 1])}


def test_R22_forwarded_event_keeps_its_r19_conversion(run: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "a", "site": 1, "remote": 2, "batch_size": 1, "delta": True},
            {"id": "b", "site": 2, "remote": 3, "batch_size": 1, "delta": True},
        ],
    }
    r = run(
        config,
        [
            put(1, "k", {"f": 1}),  # 0: 1:1
            SETTLE,  # 1: k at 1, 2, 3 = [1,0,1]
            site_down(2),  # 2
            site_up(2, wipe=True),  # 3
            delta(1, "k", {"f": 2}),  # 4: 1:2 [2,0,1], delta '{"f":2}' = 7
            SETTLE,  # 5
        ],
    )
    assert r.steps[5] == [
        applied(2, "a", "1:2", "k", "invalid_delta"),  # wiped: no base at 2
        acked("a", 2, []),
        invalid_delta("a", "1:2"),
        sent("a", 3, ["1:2"], 7),  # converted: full '{"f":2}' = 7
        applied(2, "a", "1:2", "k", "ok"),
        forwarded(2, "b", "1:2"),
        sent("b", 2, ["1:2"], 7, 0),  # still full although b has delta true (batch ids kept)
        applied(3, "b", "1:2", "k", "ok"),
        acked("a", 3, ["1:2"]),
        acked("b", 2, ["1:2"]),
    ]


MESH = {
    "sites": [1, 2, 3],
    "senders": [
        {"id": f"s{a}{b}", "site": a, "remote": b, "batch_size": 1}
        for a in (1, 2, 3)
        for b in (1, 2, 3)
        if a != b
    ],
}


def test_R22_mesh_suppresses_forwarding_by_recipients(run: Any) -> None:
    r = run(MESH, [put(1, "k", {"v": 1}), SETTLE])
    assert r.steps[0] == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"v": 1}, ["s12", "s13"]),
        sent("s12", 1, ["1:1"], 7),
        sent("s13", 1, ["1:1"], 7),
    ]
    # recipients {1, 2, 3}: at 2, s21 -> origin, s23 -> 3 in recipients; the same at 3
    assert r.steps[1] == [
        applied(2, "s12", "1:1", "k", "ok"),
        applied(3, "s13", "1:1", "k", "ok"),
        acked("s12", 1, ["1:1"]),
        acked("s13", 1, ["1:1"]),
    ]
    for sender in ("s21", "s23", "s31", "s32"):
        assert r.state["senders"][sender]["stats"] == sender_stats()


DIAMOND = {
    "sites": [1, 2, 3, 4],
    "senders": [
        {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
        {"id": "b", "site": 1, "remote": 3, "batch_size": 1},
        {"id": "c", "site": 2, "remote": 4, "batch_size": 1},
        {"id": "d", "site": 3, "remote": 4, "batch_size": 1},
    ],
}


def test_R23_diamond_delivers_twice_second_is_duplicate(run: Any) -> None:
    r = run(
        DIAMOND,
        [
            put(1, "k", {"v": 1}),  # recipients {1, 2, 3}
            deliver("a"),  # at 2: c.remote 4 not in recipients -> forwarded, {1, 2, 3, 4}
            deliver("b"),  # at 3: d.remote 4 not in {1, 2, 3} -> forwarded too
            deliver("c"),
            deliver("d"),
        ],
    )
    assert r.steps[1] == [
        applied(2, "a", "1:1", "k", "ok"),
        forwarded(2, "c", "1:1"),
        sent("c", 1, ["1:1"], 7),
    ]
    assert r.steps[2] == [
        applied(3, "b", "1:1", "k", "ok"),
        forwarded(3, "d", "1:1"),
        sent("d", 1, ["1:1"], 7),
    ]
    assert r.steps[3] == [applied(4, "c", "1:1", "k", "ok")]
    assert r.steps[4] == [applied(4, "d", "1:1", "k", "duplicate")]
    assert r.state["sites"]["4"]["stats"] == site_stats(applied=1, duplicates=1)


def test_R23_diamond_under_settle(run: Any) -> None:
    r = run(DIAMOND, [put(1, "k", {"v": 1}), SETTLE])
    assert r.steps[1] == [
        applied(2, "a", "1:1", "k", "ok"),
        forwarded(2, "c", "1:1"),
        sent("c", 1, ["1:1"], 7),
        applied(3, "b", "1:1", "k", "ok"),  # lowest deliverable id: b < c
        forwarded(3, "d", "1:1"),
        sent("d", 1, ["1:1"], 7),
        applied(4, "c", "1:1", "k", "ok"),
        applied(4, "d", "1:1", "k", "duplicate"),
        acked("a", 1, ["1:1"]),
        acked("b", 1, ["1:1"]),
        acked("c", 1, ["1:1"]),
        acked("d", 1, ["1:1"]),
    ]


def test_R24_dead_letter_records_with_and_without_values(run_each: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "failure_listener": "dlq"},
            {"id": "ldn", "site": 1, "remote": 3, "batch_size": 1, "failure_listener": "dlq",
             "dlq_secure": True},
        ],
    }  # fmt: skip
    cwe = "CacheWriterException"
    r = run_each(
        config,
        [
            fail(2, "k", cwe, 3),
            fail(3, "k", cwe, 3),
            put(1, "k", {"v": 1}),  # 2: 1:1 create [1,0,1]
            SETTLE,  # 3: no tick (batch_size 1, every ack at once): now stays 0
            put(1, "k", {"v": 2}),  # 4: 1:2 update, 0 <= 0 -> [2,1,1]
            SETTLE,  # 5
            destroy(1, "k"),  # 6: 1:3 destroy, 0 <= 1 -> [3,2,1]
            SETTLE,  # 7
        ],
    )
    assert r.steps[2] == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"v": 1}, ["ldn", "ny"]),
        sent("ldn", 1, ["1:1"], 7),
        sent("ny", 1, ["1:1"], 7),
    ]
    assert r.steps[3] == [
        applied(3, "ldn", "1:1", "k", "failed", exception=cwe),
        applied(2, "ny", "1:1", "k", "failed", exception=cwe),
        acked("ldn", 1, ["1:1"]),
        dlq("ldn", "1:1", cwe),
        acked("ny", 1, ["1:1"]),
        dlq("ny", "1:1", cwe),
    ]
    assert r.steps[7][:2] == [
        applied(3, "ldn", "1:3", "k", "failed", exception=cwe),
        applied(2, "ny", "1:3", "k", "failed", exception=cwe),
    ]
    records = [
        ("1:1", "create", [1, 0, 1], {"v": 1}),
        ("1:2", "update", [2, 1, 1], {"v": 2}),
        ("1:3", "destroy", [3, 2, 1], None),
    ]
    ny, ldn = r.state["senders"]["ny"], r.state["senders"]["ldn"]
    assert ny["dlq"] == [
        {"event_id": e, "sender": "ny", "key": "k", "op": op, "exception": cwe, "version": v,
         "value": value, "recipients": [1, 2, 3], "thread": 0}  # R11: origin 1, remotes 2, 3
        for e, op, v, value in records
    ]  # fmt: skip
    assert ldn["dlq"] == [  # dlq_secure: no "value" at all
        {"event_id": e, "sender": "ldn", "key": "k", "op": op, "exception": cwe, "version": v,
         "recipients": [1, 2, 3], "thread": 0}
        for e, op, v, _ in records
    ]  # fmt: skip
    for sender in (ny, ldn):  # bytes 7 + 7 + 0
        assert sender["stats"] == sender_stats(
            batches_sent=3, events_sent=3, bytes_full=14, dlq_records=3
        )
    for site in ("2", "3"):
        assert r.state["sites"][site]["stats"] == site_stats(failures=3)
        assert r.state["sites"][site]["entries"] == {}


# ========================================================================================
# §9 settle
# ========================================================================================


def test_R25_settle_ticks_to_the_batch_time_interval(run: Any) -> None:
    r = run(one_way(), [tick(250), put(1, "k", {"v": 1}), SETTLE])
    # due = max(next_retry_at 0, 250 + 1000) = 1250: tick 1000, then deliver, then ack
    assert r.steps[2] == [
        sent("ny", 1, ["1:1"], 7),
        applied(2, "ny", "1:1", "k", "ok"),
        acked("ny", 1, ["1:1"]),
    ]
    assert r.state["time"] == 1250


def test_R25_settle_ticks_to_ack_timeout_then_to_retry(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=300, retry_interval_ms=200),
        [put(1, "k", {"v": 1}), drop("ny"), SETTLE],
    )
    # in flight: due 0 + 300 -> tick 300, timeout, next_retry_at 500;
    # then due max(500, now 300 since 1 >= 1) = 500 -> tick 200, resend
    assert r.steps[2] == [
        timeout("ny", 1, ["1:1"]),
        sent("ny", 2, ["1:1"], 7, 0, events_resent=1),
        applied(2, "ny", "1:1", "k", "ok"),
        acked("ny", 2, ["1:1"]),
    ]
    assert r.state["time"] == 500


def test_R25_settle_ticks_at_least_one_ms(run: Any) -> None:
    r = run(
        one_way(batch_size=1, ack_timeout_ms=100, retry_interval_ms=0),
        [put(1, "k", {"v": 1}), deliver("ny"), site_down(1), tick(200), site_up(1), SETTLE],
    )
    # due 0 + 100 = 100 <= now 200 -> tick max(1, 100 - 200) = 1
    assert r.steps[5] == [
        timeout("ny", 1, ["1:1"]),
        sent("ny", 2, ["1:1"], 7, 0, events_resent=1),
        applied(2, "ny", "1:1", "k", "duplicate"),
        acked("ny", 2, ["1:1"]),
    ]
    assert r.state["time"] == 201


def test_R25_settle_delivers_batches_before_acks_in_string_id_order(run: Any) -> None:
    config = {
        "sites": [1, 2, 3],
        "senders": [
            {"id": "s9", "site": 1, "remote": 2, "batch_size": 1},
            {"id": "s10", "site": 1, "remote": 3, "batch_size": 1},
        ],
    }
    r = run(config, [put(1, "k", {"v": 1}), SETTLE])
    # string order: "s10" < "s9"
    assert r.steps[0] == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"v": 1}, ["s10", "s9"]),
        sent("s10", 1, ["1:1"], 7),
        sent("s9", 1, ["1:1"], 7),
    ]
    assert r.steps[1] == [
        applied(3, "s10", "1:1", "k", "ok"),
        applied(2, "s9", "1:1", "k", "ok"),
        acked("s10", 1, ["1:1"]),
        acked("s9", 1, ["1:1"]),
    ]


def test_R25_settle_leaves_down_sites_down(run: Any) -> None:
    r = run(one_way(batch_size=1), [site_down(2), put(1, "k", {"v": 1}), SETTLE])
    assert r.steps[1][-1] == connection_failed("ny", 2)
    assert r.steps[2] == []  # the only sender's remote is down: no due time, stop
    assert r.state["time"] == 0
    assert r.state["sites"]["2"]["up"] is False
    assert r.state["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:1"]
