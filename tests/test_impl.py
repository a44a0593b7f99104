"""Unit tests of `impl/` alone: small scenarios worked out by hand from SPEC.md.

Every expected observation list and state below was derived from the rules cited in the
test name, not by running an engine; `model/` is never imported (the conformance harness
compares the two engines, these tests pin the impl on its own).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from expected import acked, applied, enqueued, sent

import impl
import impl.engine
import impl.state
import model
from impl import Engine
from impl.applied import AppliedRanges
from impl.state import size
from tools.planted_bugs import (
    ForwardToKnownRecipients,
    HighWaterMark,
    LateBatchTime,
    ResendWithoutPossibleDuplicate,
)
from traces.canonical import canonical_json
from traces.canonical import size as canonical_size
from traces.config import Config, parse_config
from traces.observations import KINDS, Observation
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Op,
    Put,
    PutAll,
    Settle,
    SiteDown,
    SiteUp,
    Tick,
)

SITE_STATS_ZERO = {
    "applied": 0,
    "duplicates": 0,
    "conflicts": 0,
    "failures": 0,
    "retries": 0,
    "invalid_deltas": 0,
}
SENDER_STATS_ZERO = {
    "batches_sent": 0,
    "events_sent": 0,
    "events_resent": 0,
    "bytes_full": 0,
    "bytes_delta": 0,
    "batches_timed_out": 0,
    "connection_failures": 0,
    "events_dropped": 0,
    "invalid_deltas": 0,
    "dlq_records": 0,
    "redelivered": 0,  # R26 (v1.2)
    "redelivery_superseded": 0,
    "redelivery_unrecoverable": 0,
    "events_conflated_in_queue": 0,  # v2.0 (§16.6)
    "events_conflated_from_batches": 0,
    "conflation_full_values": 0,
    "events_lost_on_restart": 0,
    "events_not_queued_stopped": 0,
    "events_discarded_clean_start": 0,
    "events_exceeding_alert_threshold": 0,
    "entries_overflowed": 0,
    "bytes_overflowed": 0,
}


IDLE_DISPATCHER: dict[str, Any] = {
    "queue": [],
    "resend": [],
    "cursor": None,
    "in_flight": None,
    "next_retry_at": 0,
    "network": {"batch": False, "ack": False},
    "recovered": [],
    "on_disk": [],
    "memory_bytes": 0,
}
"""A serial dispatcher with nothing to do (§16.6)."""


def two_sites(**sender: Any) -> Config:
    """Sites 1 and 2, sender "ny" from 1 to 2 with the given options."""
    return parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, **sender}]}
    )


def site_stats(**changed: int) -> dict[str, int]:
    return {**SITE_STATS_ZERO, **changed}


def sender_stats(**changed: int) -> dict[str, int]:
    return {**SENDER_STATS_ZERO, **changed}


def run(engine: Engine, *ops: Op) -> list[Observation]:
    out: list[Observation] = []
    for op in ops:
        out.extend(engine.apply(op))
    return out


# ---------------------------------------------------------------------- observable state


def test_initial_state_has_the_exact_shape_of_spec_section_16_6() -> None:
    engine = Engine(two_sites())
    assert engine.observe() == {
        "time": 0,
        "sites": {
            "1": {
                "up": True,
                "seq": 0,
                "timestamp_floor": 0,
                "entries": {},
                "stats": SITE_STATS_ZERO,
            },
            "2": {
                "up": True,
                "seq": 0,
                "timestamp_floor": 0,
                "entries": {},
                "stats": SITE_STATS_ZERO,
            },
        },
        "senders": {
            "ny": {
                "running": True,
                "paused": False,
                "dispatchers": [IDLE_DISPATCHER],
                "stats": SENDER_STATS_ZERO,
                "dlq": [],
            }
        },
    }


def test_observe_returns_copies_that_do_not_alias_the_state() -> None:
    engine = Engine(two_sites())
    engine.apply(Put(1, "k", {"a": 1}))
    state = engine.observe()
    state["sites"]["1"]["entries"]["k"]["value"]["a"] = 99
    state["sites"]["1"]["stats"]["applied"] = 99
    state["senders"]["ny"]["dispatchers"][0]["queue"].clear()
    assert engine.observe()["sites"]["1"]["entries"]["k"]["value"] == {"a": 1}
    assert engine.observe()["sites"]["1"]["stats"]["applied"] == 0
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:1"]


def test_section10_observations_are_plain_json_whatever_mapping_an_operation_carries() -> None:
    # traces.ops takes any Mapping as a value; observations and state are JSON data (§10).
    engine = Engine(two_sites(batch_size=1, delta=True))
    out = run(
        engine,
        Put(1, "k", MappingProxyType({"a": 1})),
        Delta(1, "k", MappingProxyType({"b": 2})),
        PutAll(1, MappingProxyType({"j": MappingProxyType({"c": 3})})),
    )
    assert json.loads(json.dumps(out)) == out
    assert [o["value"] for o in out if o["kind"] == "enqueued"] == [
        {"a": 1},
        {"a": 1, "b": 2},
        {"c": 3},
    ]
    assert json.loads(json.dumps(engine.observe()))["sites"]["1"]["entries"]["j"] == {
        "value": {"c": 3},
        "version": [1, 0, 1],  # R9: a create at time 0
    }


def test_observe_copies_dead_letter_records_too() -> None:
    engine = Engine(two_sites(batch_size=1, failure_listener="dlq"))
    run(engine, Fail(2, "k", "Poison", 1), Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"))
    record = engine.observe()["senders"]["ny"]["dlq"][0]
    record["value"]["a"] = 99
    record["version"][0] = 99
    record["key"] = "other"
    assert engine.observe()["senders"]["ny"]["dlq"] == [
        {
            "event_id": "1:1",
            "sender": "ny",
            "key": "k",
            "op": "create",
            "exception": "Poison",
            "version": [1, 0, 1],  # R9: a create at time 0 by site 1
            "value": {"a": 1},
            "recipients": [1, 2],  # R11: origin 1 and ny's remote 2 (v1.2)
            "thread": 0,  # v2.0: the event's client thread
        }
    ]


# ---------------------------------------------------------------------- happy path


def test_r11_r15_r16_r18_one_batch_end_to_end() -> None:
    engine = Engine(two_sites(batch_size=2))
    assert engine.apply(Put(1, "a", {"x": 1})) == [
        enqueued(1, "1:1", "a", "create", [1, 0, 1], {"x": 1}, ["ny"])
    ]
    # The second event fills the batch: R15 flushes after the operation's own effect.
    # bytes_full = len('{"x":1}') + len('{"y":"z"}') = 7 + 9.
    assert engine.apply(Put(1, "b", {"y": "z"})) == [
        enqueued(1, "1:2", "b", "create", [1, 0, 1], {"y": "z"}, ["ny"]),
        sent("ny", 1, ["1:1", "1:2"], bytes_full=16),
    ]
    mid = engine.observe()
    assert mid["senders"]["ny"]["dispatchers"][0]["queue"] == [
        "1:1",
        "1:2",
    ]  # R12: peek does not remove
    assert mid["senders"]["ny"]["dispatchers"][0]["in_flight"] == {
        "batch_id": 1,
        "events": ["1:1", "1:2"],
        "shipped": ["1:1", "1:2"],
        "sent_at": 0,
    }
    assert mid["senders"]["ny"]["dispatchers"][0]["network"] == {"batch": True, "ack": False}
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:1", "a", "ok"),
        applied(2, "ny", "1:2", "b", "ok"),
    ]
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["network"] == {
        "batch": False,
        "ack": True,
    }
    assert engine.apply(DeliverAck("ny")) == [acked("ny", 1, ["1:1", "1:2"])]
    entries = {
        "a": {"value": {"x": 1}, "version": [1, 0, 1]},
        "b": {"value": {"y": "z"}, "version": [1, 0, 1]},
    }
    assert engine.observe() == {
        "time": 0,
        "sites": {
            "1": {
                "up": True,
                "seq": 2,
                "timestamp_floor": 0,
                "entries": entries,
                "stats": SITE_STATS_ZERO,
            },
            "2": {
                "up": True,
                "seq": 0,
                "timestamp_floor": 0,
                "entries": entries,
                "stats": site_stats(applied=2),
            },
        },
        "senders": {
            "ny": {
                "running": True,
                "paused": False,
                "dispatchers": [IDLE_DISPATCHER],
                "stats": sender_stats(batches_sent=1, events_sent=2, bytes_full=16),
                "dlq": [],
            }
        },
    }


def test_r15_batch_time_interval_is_inclusive() -> None:
    engine = Engine(two_sites(batch_time_interval_ms=1000))
    engine.apply(Put(1, "k", {}))
    assert engine.apply(Tick(999)) == []
    # now - enqueued_at == 1000 >= batch_time_interval_ms; '{}' is 2 bytes.
    assert engine.apply(Tick(1)) == [sent("ny", 1, ["1:1"], bytes_full=2)]
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["in_flight"]["sent_at"] == 1000


def test_r15_one_batch_in_flight_and_batch_size_prefix() -> None:
    engine = Engine(two_sites(batch_size=2))
    out = run(engine, *(Put(1, f"k{i}", {"i": i}) for i in range(5)))
    assert [o for o in out if o["kind"] == "sent"] == [sent("ny", 1, ["1:1", "1:2"], bytes_full=14)]
    run(engine, Deliver("ny"))
    # The ack removes the batch; the flush after it sends the next prefix at once.
    assert engine.apply(DeliverAck("ny")) == [
        acked("ny", 1, ["1:1", "1:2"]),
        sent("ny", 2, ["1:3", "1:4"], bytes_full=14),
    ]
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:3", "1:4", "1:5"]


# ---------------------------------------------------------------------- skipped ops


@pytest.mark.parametrize(
    "op",
    [
        Deliver("ny"),
        DeliverAck("ny"),
        Drop("ny"),
        DropAck("ny"),
        Delta(1, "missing", {"a": 1}),
        Destroy(1, "missing"),
        Delta(1, "gone", {"a": 1}),
        Destroy(1, "gone"),
        PutAll(1, {}),
        SiteUp(2),
    ],
)
def test_section3_not_enabled_operation_changes_nothing(op: Op) -> None:
    engine = Engine(two_sites())
    run(engine, Put(1, "gone", {"a": 0}), Destroy(1, "gone"))
    before = engine.observe()
    assert engine.apply(op) == [{"kind": "skipped", "op": op.op}]
    assert engine.observe() == before


def test_section3_writes_at_a_down_site_are_skipped() -> None:
    engine = Engine(two_sites())
    run(engine, Put(1, "k", {"a": 1}), SiteDown(1))
    before = engine.observe()
    for op in (Put(1, "k", {}), Delta(1, "k", {}), Destroy(1, "k"), PutAll(1, {"x": {}})):
        assert engine.apply(op) == [{"kind": "skipped", "op": op.op}]
    assert engine.apply(SiteDown(1)) == [{"kind": "skipped", "op": "site_down"}]
    assert engine.observe() == before


def test_section3_skipped_op_does_not_flush_but_enabled_one_does() -> None:
    # Remote down and retry_interval_ms 0: every flush of a due sender fails again.
    engine = Engine(two_sites(batch_size=1, retry_interval_ms=0))
    engine.apply(SiteDown(2))
    assert engine.apply(Put(1, "k", {"a": 1})) == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"a": 1}, ["ny"]),
        {"kind": "connection_failed", "sender": "ny", "dispatcher": 0, "remote": 2},
    ]
    assert engine.apply(Deliver("ny")) == [{"kind": "skipped", "op": "deliver"}]
    assert engine.apply(Fail(2, "x", "E", 1)) == [
        {"kind": "connection_failed", "sender": "ny", "dispatcher": 0, "remote": 2}
    ]
    assert engine.observe()["senders"]["ny"]["stats"] == sender_stats(connection_failures=2)


# ---------------------------------------------------------------------- client writes


def test_r9_r10_write_labels_and_tags() -> None:
    engine = Engine(parse_config({"sites": [1]}))  # no senders: events go nowhere
    assert run(
        engine,
        Put(1, "k", {"a": 1, "b": 2}),
        Tick(5),
        Delta(1, "k", {"b": 3}),
        Destroy(1, "k"),
        Put(1, "k", {"c": True}),
    ) == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"a": 1, "b": 2}, []),
        enqueued(1, "1:2", "k", "update", [2, 5, 1], {"a": 1, "b": 3}, []),  # now 5 > 0
        enqueued(1, "1:3", "k", "destroy", [3, 6, 1], None, []),  # 5 <= 5 -> 5 + 1
        enqueued(1, "1:4", "k", "create", [4, 7, 1], {"c": True}, []),  # over a tombstone
    ]
    assert engine.observe()["sites"]["1"]["seq"] == 4


def test_r9_timestamp_passes_the_entrys_whatever_its_dsid() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"v": 1}), Deliver("ny"), DeliverAck("ny"))
    # Site 2 holds [1, 0, 1]; a write there at now=0 from dsid 2 takes ts = 0 + 1 ...
    assert engine.apply(Put(2, "k", {"v": 2})) == [
        enqueued(2, "2:1", "k", "update", [2, 1, 2], {"v": 2}, [])
    ]
    # ... and the next one at site 2 (same dsid, now 0 <= ts 1) takes ts = 1 + 1 (v1.1).
    assert engine.apply(Put(2, "k", {"v": 3})) == [
        enqueued(2, "2:2", "k", "update", [3, 2, 2], {"v": 3}, [])
    ]
    assert engine.observe()["sites"]["2"]["seq"] == 2


def test_r3_putall_one_seq_per_entry_in_sorted_key_order_full_values_only() -> None:
    engine = Engine(two_sites(batch_size=10, delta=True))
    run(engine, Put(1, "b", {"v": 0}))
    out = engine.apply(PutAll(1, {"c": {"v": 3}, "a": {"v": 1}, "b": {"v": 2}}))
    assert out == [
        enqueued(1, "1:2", "a", "create", [1, 0, 1], {"v": 1}, ["ny"]),
        enqueued(1, "1:3", "b", "update", [2, 1, 1], {"v": 2}, ["ny"]),  # 0 <= 0 -> 0 + 1
        enqueued(1, "1:4", "c", "create", [1, 0, 1], {"v": 3}, ["ny"]),
    ]


def test_r11_every_sender_at_the_origin_gets_its_own_copy() -> None:
    config = parse_config(
        {
            "sites": [1, 2, 3],
            "senders": [
                {"id": "to3", "site": 1, "remote": 3, "batch_size": 1},
                {"id": "to2", "site": 1, "remote": 2, "batch_size": 1},
            ],
        }
    )
    engine = Engine(config)
    assert engine.apply(Put(1, "k", {"a": 1})) == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"a": 1}, ["to2", "to3"]),
        sent("to2", 1, ["1:1"], bytes_full=7),
        sent("to3", 1, ["1:1"], bytes_full=7),
    ]
    # A timeout on one sender marks only its own copy as a possible duplicate.
    run(engine, Drop("to2"), Deliver("to3"), DeliverAck("to3"), Tick(10_000))
    run(engine, Tick(5_000))
    assert engine.observe()["senders"]["to2"]["stats"]["events_resent"] == 1
    assert engine.observe()["senders"]["to3"]["stats"]["events_resent"] == 0


# ---------------------------------------------------------------------- R14 deltas, R19


def test_r14_r16_delta_shipped_and_applied_with_the_built_value() -> None:
    engine = Engine(two_sites(batch_size=1, delta=True))
    run(engine, Put(1, "k", {"a": 1, "b": "x"}), Deliver("ny"), DeliverAck("ny"))
    assert engine.apply(Delta(1, "k", {"a": 2})) == [  # R9: now 0 <= 0 -> ts 1
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"a": 2, "b": "x"}, ["ny"]),
        sent("ny", 2, ["1:2"], bytes_delta=7),  # '{"a":2}'
    ]
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:2", "k", "ok", value={"a": 2, "b": "x"})
    ]
    assert engine.observe()["sites"]["2"]["entries"]["k"] == {
        "value": {"a": 2, "b": "x"},
        "version": [2, 1, 1],
    }


def test_r21_floor_a_wiped_origin_issues_a_later_tag_and_the_next_delta_builds_its_value() -> None:
    # v1 reissued tag [1, 0, 1] after the wipe for another value: site 2 called it a
    # conflict, kept {"a": 1} and built {"a": 1, "c": 3} from the next delta (a P6
    # violation). v1.1 (R9, R21): the wipe sets site 1's floor to 1 + 0 = 1.
    engine = Engine(two_sites(batch_size=1, delta=True))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"))  # 1:1 [1,0,1]
    run(engine, SiteDown(1), SiteUp(1, wipe=True))
    assert engine.observe()["sites"]["1"]["timestamp_floor"] == 1
    assert engine.apply(Put(1, "k", {"b": 2})) == [  # no entry: ts max(now 0, floor 1)
        enqueued(1, "1:2", "k", "create", [1, 1, 1], {"b": 2}, ["ny"]),
        sent("ny", 2, ["1:2"], bytes_full=7),
    ]
    # Same dsid: (1, 1) > (0, 1) -> applied over the stale {"a": 1}.
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "ok")]
    run(engine, DeliverAck("ny"))
    assert engine.apply(Delta(1, "k", {"c": 3})) == [  # 0 <= 1 -> ts 2; base [1, 1, 1]
        enqueued(1, "1:3", "k", "update", [2, 2, 1], {"b": 2, "c": 3}, ["ny"]),
        sent("ny", 3, ["1:3"], bytes_delta=7),  # '{"c":3}'
    ]
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:3", "k", "ok", value={"b": 2, "c": 3})
    ]
    state = engine.observe()
    expected = {"value": {"b": 2, "c": 3}, "version": [2, 2, 1]}
    assert state["sites"]["1"]["entries"]["k"] == expected
    assert state["sites"]["2"]["entries"]["k"] == expected


def test_r16_4_delta_onto_a_tag_that_differs_only_in_its_timestamp_is_invalid() -> None:
    engine = Engine(two_sites(batch_size=1, delta=True))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"))  # site 2: [1, 0, 1]
    run(engine, SiteDown(1), SiteUp(1, wipe=True), Fail(2, "k", "E", 1))  # R21: floor 1
    # 1:2 [1, 1, 1] fails at site 2 (one attempt, R16.2) and is dropped (R18).
    run(engine, Put(1, "k", {"a": 2}), Deliver("ny"), DeliverAck("ny"))
    assert engine.observe()["sites"]["2"]["entries"]["k"] == {
        "value": {"a": 1},
        "version": [1, 0, 1],
    }
    assert engine.apply(Delta(1, "k", {"b": 1})) == [  # R9: 0 <= 1 -> ts 2
        enqueued(1, "1:3", "k", "update", [2, 2, 1], {"a": 2, "b": 1}, ["ny"]),
        sent("ny", 3, ["1:3"], bytes_delta=7),
    ]
    # R16.3: (2, 2) > (0, 1) wins; R16.4: base [1, 1, 1] is not [1, 0, 1] (same version
    # and dsid, another timestamp).
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:3", "k", "invalid_delta")]


def test_r16_4_delta_onto_a_tag_that_differs_only_in_its_dsid_is_invalid() -> None:
    config = parse_config(
        {
            "sites": [1, 2, 3],
            "senders": [
                {"id": "a", "site": 1, "remote": 2, "batch_size": 1, "delta": True},
                {"id": "c", "site": 3, "remote": 2, "batch_size": 1},
            ],
        }
    )
    engine = Engine(config)
    run(engine, Put(3, "k", {"x": 1}), Deliver("c"), DeliverAck("c"))  # site 2: [1, 0, 3]
    run(engine, Put(1, "k", {"a": 1}))  # 1:1 [1, 0, 1]
    # R16.3: equal timestamps, dsid 1 < 3 -> conflict; site 2 keeps [1, 0, 3].
    assert engine.apply(Deliver("a")) == [applied(2, "a", "1:1", "k", "conflict")]
    run(engine, DeliverAck("a"))
    assert engine.apply(Delta(1, "k", {"b": 1})) == [  # R9: 0 <= 0 -> ts 1
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"a": 1, "b": 1}, ["a"]),
        sent("a", 2, ["1:2"], bytes_delta=7),
    ]
    # R16.3: ts 1 > 0 wins; R16.4: base [1, 0, 1] is not [1, 0, 3] (another dsid).
    assert engine.apply(Deliver("a")) == [applied(2, "a", "1:2", "k", "invalid_delta")]


def test_r8_delta_events_ship_full_when_the_sender_has_delta_off() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"))
    assert engine.apply(Delta(1, "k", {})) == [  # empty changes: still an update; 0 <= 0
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"a": 1}, ["ny"]),
        sent("ny", 2, ["1:2"], bytes_full=7),
    ]
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "ok")]


def test_r19_invalid_delta_is_kept_converted_and_resent_full() -> None:
    engine = Engine(two_sites(batch_size=1, delta=True))
    assert run(engine, Fail(2, "k", "Boom", 1), Put(1, "k", {"a": 1})) == [
        enqueued(1, "1:1", "k", "create", [1, 0, 1], {"a": 1}, ["ny"]),
        sent("ny", 1, ["1:1"], bytes_full=7),
    ]
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "failed", exception="Boom")]
    assert engine.apply(DeliverAck("ny")) == [
        acked("ny", 1, ["1:1"]),
        {"kind": "dropped", "sender": "ny", "dispatcher": 0, "event": "1:1", "exception": "Boom"},
    ]
    assert engine.apply(Delta(1, "k", {"a": 2})) == [  # R9: now 0 <= 0 -> ts 1
        enqueued(1, "1:2", "k", "update", [2, 1, 1], {"a": 2}, ["ny"]),
        sent("ny", 2, ["1:2"], bytes_delta=7),
    ]
    # Site 2 has no entry: the conflict check passes, the delta base check fails.
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "invalid_delta")]
    assert engine.apply(DeliverAck("ny")) == [
        acked("ny", 2, []),
        {"kind": "invalid_delta", "sender": "ny", "dispatcher": 0, "event": "1:2"},
        sent("ny", 3, ["1:2"], bytes_full=7),  # converted: its full value this time
    ]
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "ok")]
    assert engine.apply(DeliverAck("ny")) == [acked("ny", 3, ["1:2"])]
    state = engine.observe()
    assert state["sites"]["2"]["entries"] == {"k": {"value": {"a": 2}, "version": [2, 1, 1]}}
    assert state["sites"]["2"]["stats"] == site_stats(applied=1, failures=1, invalid_deltas=1)
    assert state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=3,
        events_sent=3,
        bytes_full=14,
        bytes_delta=7,
        events_dropped=1,
        invalid_deltas=1,
    )


def test_r19_invalid_deltas_stay_at_the_queue_head_in_batch_order() -> None:
    engine = Engine(two_sites(batch_size=3, delta=True))
    run(engine, Fail(2, "a", "E", 1), Fail(2, "b", "E", 1))
    run(engine, Put(1, "a", {"v": 0}), Put(1, "b", {"v": 0}), Put(1, "x", {"v": 0}))
    run(engine, Deliver("ny"), DeliverAck("ny"))  # a and b never reach site 2
    run(engine, Delta(1, "a", {"v": 1}), Put(1, "z", {"v": 1}), Delta(1, "b", {"v": 1}))
    run(engine, Put(1, "q", {"v": 1}))  # 1:7 waits behind batch 2 (1:4, 1:5, 1:6)
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:4", "a", "invalid_delta"),
        applied(2, "ny", "1:5", "z", "ok"),
        applied(2, "ny", "1:6", "b", "invalid_delta"),
    ]
    assert engine.apply(DeliverAck("ny")) == [
        acked("ny", 2, ["1:5"]),
        {"kind": "invalid_delta", "sender": "ny", "dispatcher": 0, "event": "1:4"},
        {"kind": "invalid_delta", "sender": "ny", "dispatcher": 0, "event": "1:6"},
        sent("ny", 3, ["1:4", "1:6", "1:7"], bytes_full=21),
    ]
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:4", "1:6", "1:7"]


# ---------------------------------------------------------------------- R16 receiver


def test_r20_timeout_resend_is_a_possible_duplicate_and_r16_1_skips_it() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"a": 1}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "ok")]
    assert engine.apply(DropAck("ny")) == []
    assert engine.apply(Tick(9_999)) == []
    assert engine.apply(Tick(1)) == [
        {"kind": "timeout", "sender": "ny", "dispatcher": 0, "batch_id": 1, "events": ["1:1"]}
    ]
    state = engine.observe()["senders"]["ny"]
    assert state["dispatchers"][0]["in_flight"] is None
    assert state["dispatchers"][0]["next_retry_at"] == 15_000
    assert state["dispatchers"][0]["queue"] == ["1:1"]
    assert engine.apply(Tick(4_999)) == []
    assert engine.apply(Tick(1)) == [sent("ny", 2, ["1:1"], bytes_full=7, events_resent=1)]
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "duplicate")]
    assert engine.apply(DeliverAck("ny")) == [acked("ny", 2, ["1:1"])]
    state = engine.observe()
    assert state["sites"]["2"]["stats"] == site_stats(applied=1, duplicates=1)
    assert state["senders"]["ny"]["stats"] == sender_stats(
        batches_sent=2, events_sent=2, events_resent=1, bytes_full=14, batches_timed_out=1
    )


def test_r20_timeout_also_removes_a_pending_ack_and_needs_the_site_up() -> None:
    engine = Engine(two_sites(batch_size=1, ack_timeout_ms=100))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"))
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["network"] == {
        "batch": False,
        "ack": True,
    }
    run(engine, SiteDown(1))  # removes the ack message; in_flight stays
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["in_flight"] is not None
    assert engine.apply(Tick(100)) == []  # the sender's site is down: no timeout
    run(engine, SiteUp(1))
    assert engine.apply(Tick(1)) == [
        {"kind": "timeout", "sender": "ny", "dispatcher": 0, "batch_id": 1, "events": ["1:1"]}
    ]


def test_r16_2_retries_succeed_within_the_allowed_attempts() -> None:
    config = parse_config(
        {
            "sites": [1, 2],
            "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}],
            "receivers": [{"site": 2, "retry_attempts": 2}],
        }
    )
    engine = Engine(config)
    # 2 injected failures, 3 attempts: fail, fail, succeed -> ok with 2 retries.
    run(engine, Fail(2, "k", "E", 2), Put(1, "k", {"v": 1}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "ok")]
    run(engine, DeliverAck("ny"))
    # 4 more: fail x3 -> failed (2 retries), 1 left; the next event: fail, succeed.
    run(engine, Fail(2, "k", "E", 4), Put(1, "k", {"v": 2}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "failed", exception="E")]
    run(engine, DeliverAck("ny"), Put(1, "k", {"v": 3}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:3", "k", "ok")]
    assert engine.observe()["sites"]["2"]["stats"] == site_stats(
        applied=2, failures=1, retries=2 + 2 + 1
    )


def test_r16_2_retry_attempts_minus_one_retries_until_success() -> None:
    config = parse_config(
        {
            "sites": [1, 2],
            "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}],
            "receivers": [{"site": 2, "retry_attempts": -1}],
        }
    )
    engine = Engine(config)
    run(engine, Fail(2, "k", "E", 50), Put(1, "k", {"v": 1}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "ok")]
    assert engine.observe()["sites"]["2"]["stats"] == site_stats(applied=1, retries=50)


def test_r16_3_conflict_resolution_between_two_origins() -> None:
    config = parse_config(
        {
            "sites": [1, 2],
            "senders": [
                {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
                {"id": "b", "site": 2, "remote": 1, "batch_size": 1},
            ],
        }
    )
    engine = Engine(config)
    run(engine, Put(1, "k", {"v": 1}), Put(2, "k", {"v": 2}))  # [1,0,1] and [1,0,2]
    # Equal timestamps, different dsids: the higher dsid wins.
    assert engine.apply(Deliver("a")) == [applied(2, "a", "1:1", "k", "conflict")]
    assert engine.apply(Deliver("b")) == [applied(1, "b", "2:1", "k", "ok")]
    state = engine.observe()
    assert state["sites"]["1"]["entries"] == state["sites"]["2"]["entries"]
    assert state["sites"]["1"]["entries"]["k"] == {"value": {"v": 2}, "version": [1, 0, 2]}
    assert state["sites"]["2"]["stats"] == site_stats(conflicts=1)
    # R22: b's event is not offered back to site 2 (a.remote == 2 is in its recipients).
    assert state["senders"]["a"]["dispatchers"][0]["queue"] == ["1:1"]


def test_r16_3_same_dsid_older_tag_arriving_late_is_a_conflict() -> None:
    engine = Engine(two_sites(batch_size=2, delta=True))
    run(engine, Fail(2, "k", "E", 1), Put(1, "k", {"v": 0}), Put(1, "x", {"v": 0}))
    run(engine, Deliver("ny"), DeliverAck("ny"))  # k's create is dropped
    run(engine, Delta(1, "k", {"v": 1}), Put(1, "k", {"v": 2}))  # [2,1,1], [3,2,1] (R9)
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:3", "k", "invalid_delta"),
        applied(2, "ny", "1:4", "k", "ok"),
    ]
    run(engine, DeliverAck("ny"), Tick(1_000))  # 1:3 is re-sent alone, full
    # Same dsid: (timestamp, entry_version) = (1, 2) is not newer than (2, 3).
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:3", "k", "conflict")]
    assert engine.observe()["sites"]["2"]["entries"]["k"] == {
        "value": {"v": 2},
        "version": [3, 2, 1],
    }


def test_r16_1_exact_duplicate_check_applies_an_earlier_event_after_later_ones() -> None:
    # SPEC §13: R19 re-sends 1:2 after 1:3 was applied; a high-water mark would call it
    # a duplicate. The exact check applies it.
    engine = Engine(two_sites(batch_size=2, delta=True))
    run(engine, Put(1, "k", {"v": 0}), Put(1, "x", {"v": 0}), Deliver("ny"), DeliverAck("ny"))
    run(engine, Fail(2, "k", "E", 1))
    run(engine, Put(1, "k", {"v": 1}), Put(1, "y", {"v": 1}))  # 1:3 (fails), 1:4
    run(engine, Deliver("ny"), DeliverAck("ny"))  # 1:3 dropped, 1:4 ok
    run(engine, Delta(1, "k", {"v": 2}), Put(1, "z", {"v": 2}))  # 1:5 delta, 1:6
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:5", "k", "invalid_delta"),  # base [2,0,1] never arrived
        applied(2, "ny", "1:6", "z", "ok"),
    ]
    run(engine, DeliverAck("ny"), Put(1, "w", {"v": 3}))  # 1:5 kept at the head + 1:7
    assert engine.apply(Deliver("ny")) == [
        applied(2, "ny", "1:5", "k", "ok"),  # seq 5 < 6 already applied: not a duplicate
        applied(2, "ny", "1:7", "w", "ok"),
    ]


def test_r16_duplicates_are_decided_before_failures_and_consume_none() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DropAck("ny"), Fail(2, "k", "E", 1))
    run(engine, Tick(10_000), Tick(5_000))  # timeout, then resend
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "duplicate")]
    run(engine, DeliverAck("ny"), Put(1, "k", {"a": 2}))
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:2", "k", "failed", exception="E")]


# ---------------------------------------------------------------------- R24 dead letters


@pytest.mark.parametrize("secure", [False, True])
def test_r24_dead_letter_record_and_p7_secure_omits_the_value(secure: bool) -> None:
    engine = Engine(two_sites(batch_size=1, failure_listener="dlq", dlq_secure=secure))
    run(engine, Fail(2, "k", "Poison", 1), Put(1, "k", {"a": 1}), Deliver("ny"))
    assert engine.apply(DeliverAck("ny")) == [
        acked("ny", 1, ["1:1"]),
        {"kind": "dlq", "sender": "ny", "dispatcher": 0, "event": "1:1", "exception": "Poison"},
    ]
    record: dict[str, Any] = {
        "event_id": "1:1",
        "sender": "ny",
        "key": "k",
        "op": "create",
        "exception": "Poison",
        "version": [1, 0, 1],
        "recipients": [1, 2],  # R11: origin 1 and ny's remote 2 (v1.2)
        "thread": 0,  # v2.0: the event's client thread
    }
    if not secure:
        record["value"] = {"a": 1}
    state = engine.observe()["senders"]["ny"]
    assert state["dlq"] == [record]
    assert state["stats"] == sender_stats(
        batches_sent=1, events_sent=1, bytes_full=7, dlq_records=1
    )


def test_r24_dead_letter_of_a_destroy_has_a_null_value() -> None:
    engine = Engine(two_sites(batch_size=1, failure_listener="dlq"))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"), Fail(2, "k", "E", 1))
    run(engine, Destroy(1, "k"), Deliver("ny"), DeliverAck("ny"))
    assert engine.observe()["senders"]["ny"]["dlq"] == [
        {
            "event_id": "1:2",
            "sender": "ny",
            "key": "k",
            "op": "destroy",
            "exception": "E",
            "version": [2, 1, 1],  # R9: now 0 <= 0 -> ts 1
            "value": None,
            "recipients": [1, 2],
            "thread": 0,
        }
    ]


# ---------------------------------------------------------------------- R21 sites


def test_r21_remote_down_connection_fails_and_retries_after_the_interval() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, SiteDown(2))
    assert engine.apply(Put(1, "k", {"a": 1}))[1:] == [
        {"kind": "connection_failed", "sender": "ny", "dispatcher": 0, "remote": 2}
    ]
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["next_retry_at"] == 5_000
    assert engine.apply(SiteUp(2)) == []  # now 0 < next_retry_at
    assert engine.apply(Tick(5_000)) == [sent("ny", 1, ["1:1"], bytes_full=7)]


def test_r21_site_down_removes_messages_to_and_from_it() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"a": 1}))
    assert engine.apply(SiteDown(2)) == []
    sender = engine.observe()["senders"]["ny"]
    assert sender["dispatchers"][0]["network"] == {"batch": False, "ack": False}
    assert sender["dispatchers"][0]["in_flight"] == {
        "batch_id": 1,
        "events": ["1:1"],
        "shipped": ["1:1"],
        "sent_at": 0,
    }
    assert engine.apply(Deliver("ny")) == [{"kind": "skipped", "op": "deliver"}]


def test_r21_wipe_starts_a_new_system_but_keeps_counters_seq_and_batch_ids() -> None:
    engine = Engine(two_sites(batch_size=1, failure_listener="dlq"))
    run(engine, Fail(2, "k", "E", 1), Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"))
    # j: [1,0,1], then [2,1,1] (now 0 <= 0): the largest timestamp issued is 1
    run(engine, Put(1, "j", {"a": 1}), Deliver("ny"), DeliverAck("ny"), Put(1, "j", {"a": 2}))
    run(engine, SiteDown(1))
    assert engine.apply(SiteUp(1, wipe=True)) == []
    state = engine.observe()
    assert state["sites"]["1"] == {
        "up": True,
        "seq": 3,
        "timestamp_floor": 2,  # R21: 1 + 1
        "entries": {},
        "stats": SITE_STATS_ZERO,
    }
    assert state["senders"]["ny"] == {
        "running": True,
        "paused": False,
        "dispatchers": [IDLE_DISPATCHER],  # R21 (v2.0): as new; batch ids go on (R15)
        "stats": sender_stats(batches_sent=3, events_sent=3, bytes_full=21, dlq_records=1),
        "dlq": [
            {
                "event_id": "1:1",
                "sender": "ny",
                "key": "k",
                "op": "create",
                "exception": "E",
                "version": [1, 0, 1],
                "value": {"a": 1},
                "recipients": [1, 2],
                "thread": 0,
            }
        ],
    }
    assert engine.apply(Put(1, "k", {"b": 1})) == [  # ts max(now 0, floor 2) = 2
        enqueued(1, "1:4", "k", "create", [1, 2, 1], {"b": 1}, ["ny"]),
        sent("ny", 4, ["1:4"], bytes_full=7),
    ]


def test_r21_wipe_of_a_receiver_forgets_its_applied_memory() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"a": 1}), Deliver("ny"), DropAck("ny"))
    run(engine, SiteDown(2), SiteUp(2, wipe=True), Tick(10_000), Tick(5_000))
    # The resend of 1:1 is no duplicate at the brand-new site 2.
    assert engine.apply(Deliver("ny")) == [applied(2, "ny", "1:1", "k", "ok")]


# ---------------------------------------------------------------------- R22 forwarding


def test_r22_forwarding_skips_the_origin_and_known_recipients() -> None:
    config = parse_config(
        {
            "sites": [1, 2, 3],
            "senders": [
                {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
                {"id": "b", "site": 2, "remote": 3, "batch_size": 1},
                {"id": "c", "site": 2, "remote": 1, "batch_size": 1},
            ],
        }
    )
    engine = Engine(config)
    run(engine, Put(1, "k", {"v": 1}))
    assert engine.apply(Deliver("a")) == [
        applied(2, "a", "1:1", "k", "ok"),
        {"kind": "forwarded", "site": 2, "sender": "b", "dispatcher": 0, "event": "1:1"},
        sent("b", 1, ["1:1"], bytes_full=7),
    ]
    assert engine.observe()["senders"]["c"]["dispatchers"][0]["queue"] == []
    assert engine.apply(Deliver("b")) == [applied(3, "b", "1:1", "k", "ok")]


def test_r22_full_mesh_never_forwards() -> None:
    senders = [
        {"id": f"s{a}{b}", "site": a, "remote": b, "batch_size": 1}
        for a in (1, 2, 3)
        for b in (1, 2, 3)
        if a != b
    ]
    engine = Engine(parse_config({"sites": [1, 2, 3], "senders": senders}))
    out = run(engine, Put(1, "k", {"v": 1}), Settle())
    assert [o["kind"] for o in out].count("forwarded") == 0
    state = engine.observe()
    assert state["sites"]["2"]["entries"] == state["sites"]["3"]["entries"]


def test_r22_ring_forwards_until_the_origin() -> None:
    senders = [
        {"id": "r1", "site": 1, "remote": 2, "batch_size": 1},
        {"id": "r2", "site": 2, "remote": 3, "batch_size": 1},
        {"id": "r3", "site": 3, "remote": 1, "batch_size": 1},
    ]
    engine = Engine(parse_config({"sites": [1, 2, 3], "senders": senders}))
    out = run(engine, Put(1, "k", {"v": 1}), Settle())
    assert [o for o in out if o["kind"] == "forwarded"] == [
        {"kind": "forwarded", "site": 2, "sender": "r2", "dispatcher": 0, "event": "1:1"}
    ]
    # Site 3's sender r3 goes back to the origin: never offered (R22).
    assert engine.observe()["sites"]["3"]["entries"]["k"]["version"] == [1, 0, 1]


# ---------------------------------------------------------------------- R25 settle


def test_r25_settle_ticks_to_the_batch_time_then_delivers_and_acks() -> None:
    engine = Engine(two_sites())
    run(engine, Put(1, "k", {"v": 1}))
    assert engine.apply(Settle()) == [
        sent("ny", 1, ["1:1"], bytes_full=7),  # from the inner tick(1000)
        applied(2, "ny", "1:1", "k", "ok"),
        acked("ny", 1, ["1:1"]),
    ]
    assert engine.observe()["time"] == 1000
    assert engine.apply(Settle()) == []


def test_r25_settle_recovers_a_lost_batch_by_timeout() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, Put(1, "k", {"v": 1}), Drop("ny"))
    assert engine.apply(Settle()) == [
        {
            "kind": "timeout",
            "sender": "ny",
            "dispatcher": 0,
            "batch_id": 1,
            "events": ["1:1"],
        },  # t=10000
        sent("ny", 2, ["1:1"], bytes_full=7, events_resent=1),  # t=15000
        applied(2, "ny", "1:1", "k", "ok"),
        acked("ny", 2, ["1:1"]),
    ]
    assert engine.observe()["time"] == 15_000


def test_r25_settle_waits_for_the_retry_of_a_full_batch_not_the_batch_time() -> None:
    # R15: a queue holding batch_size events is due at once; R21: a failed connection
    # holds the sender back until next_retry_at (here 0 + 10). So settle ticks 10 ms,
    # not the batch time interval (1000 ms).
    engine = Engine(two_sites(batch_size=1, retry_interval_ms=10))
    run(engine, SiteDown(2), Put(1, "k", {"v": 1}), SiteUp(2))
    assert engine.apply(Settle()) == [
        sent("ny", 1, ["1:1"], bytes_full=7),  # from the inner tick(10)
        applied(2, "ny", "1:1", "k", "ok"),
        acked("ny", 1, ["1:1"]),
    ]
    assert engine.observe()["time"] == 10


def test_r25_settle_leaves_down_sites_down() -> None:
    engine = Engine(two_sites(batch_size=1))
    run(engine, SiteDown(2), Put(1, "k", {"v": 1}))
    assert engine.apply(Settle()) == []
    state = engine.observe()
    assert state["sites"]["2"]["up"] is False
    assert state["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:1"]


def test_r25_settle_is_followed_by_the_flush_of_every_enabled_operation() -> None:
    # Reading of §3 + R25: settle's effect is its loop, then the usual flush. It only
    # shows with the remote down and retry_interval_ms 0 (a due sender fails again).
    engine = Engine(two_sites(batch_size=1, retry_interval_ms=0))
    run(engine, SiteDown(2), Put(1, "k", {"v": 1}))
    assert engine.apply(Settle()) == [
        {"kind": "connection_failed", "sender": "ny", "dispatcher": 0, "remote": 2}
    ]


@pytest.mark.parametrize("engine_class", [Engine, model.Engine], ids=["impl", "model"])
def test_r25_settle_stops_after_its_operation_budget(
    monkeypatch: pytest.MonkeyPatch, engine_class: Any
) -> None:
    """The cap `--settle-cap 2` sets (issue 31, item 6), honoured alike by both engines."""
    monkeypatch.setenv("WANCONFORM_SETTLE_CAP", "2")
    engine = engine_class(two_sites(batch_size=1))
    run(engine, Put(1, "a", {"v": 1}), Put(1, "b", {"v": 1}), Put(1, "c", {"v": 1}))
    assert engine.apply(Settle()) == [
        applied(2, "ny", "1:1", "a", "ok"),  # inner operation 1: deliver
        acked("ny", 1, ["1:1"]),  # inner operation 2: deliver_ack, then its flush
        sent("ny", 2, ["1:2"], bytes_full=7),
    ]
    assert engine.settle_capped
    assert engine.observe()["senders"]["ny"]["dispatchers"][0]["queue"] == ["1:2", "1:3"]
    monkeypatch.delenv("WANCONFORM_SETTLE_CAP")
    assert engine_class(two_sites()).settle_cap == 1_000_000  # R25's, by default


def test_r25_settle_delivers_lowest_sender_id_first() -> None:
    config = parse_config(
        {
            "sites": [1, 2, 3],
            "senders": [
                {"id": "b", "site": 1, "remote": 2, "batch_size": 1},
                {"id": "a", "site": 1, "remote": 3, "batch_size": 1},
            ],
        }
    )
    engine = Engine(config)
    run(engine, Put(1, "k", {"v": 1}))
    out = engine.apply(Settle())
    assert [(o["kind"], o.get("sender")) for o in out] == [
        ("applied", "a"),
        ("applied", "b"),
        ("acked", "a"),
        ("acked", "b"),
    ]


# ---------------------------------------------------------------------- duplicate memory


def test_r16_1_applied_memory_stays_one_range_for_in_order_events() -> None:
    engine = Engine(two_sites(batch_size=100))
    for start in range(0, 10_000, 100):
        run(engine, *(Put(1, f"k{i % 50}", {"i": i}) for i in range(start, start + 100)))
        run(engine, Deliver("ny"), DeliverAck("ny"))
    site = engine._sites[2]
    assert site.stats["applied"] == 10_000
    assert site.applied[1].ranges() == [(1, 10_000)]


def test_r16_1_applied_memory_grows_only_with_gaps() -> None:
    engine = Engine(two_sites(batch_size=100))
    run(engine, Fail(2, "bad", "E", 3))
    for start in range(0, 1_000, 100):
        keys = ["bad" if i in (10, 500, 501) else f"k{i}" for i in range(start, start + 100)]
        ops = [Put(1, key, {"i": i}) for i, key in enumerate(keys, start)]
        run(engine, *ops, Deliver("ny"), DeliverAck("ny"))
    # Seqs 11, 501 and 502 failed: three ranges around two gaps.
    assert engine._sites[2].applied[1].ranges() == [(1, 10), (12, 500), (503, 1_000)]


def test_applied_ranges_agrees_with_a_plain_set() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ranges = AppliedRanges()
        plain: set[int] = set()
        for _ in range(rng.randrange(1, 60)):
            seq = rng.randrange(1, 40)
            ranges.add(seq)
            plain.add(seq)
            assert all((n in ranges) == (n in plain) for n in range(0, 42))
        pairs = ranges.ranges()
        assert all(b + 1 < c for (_, b), (c, _) in pairwise(pairs))
        assert ranges.highest() == max(plain)


# ---------------------------------------------------------------------- sizes (R4)


def test_r4_fast_size_equals_canonical_size() -> None:
    rng = random.Random(3)
    scalars: list[Any] = [None, True, False, 0, -17, 2**70, "", "x", 'q"\\', "é☃\n", "\U0001f600"]
    assert size(None) == 0 == canonical_size(None)
    for _ in range(500):
        value = {
            rng.choice(["a", "bb", "ç", 'k"', "\t"]) + str(i): rng.choice(scalars)
            for i in range(rng.randrange(0, 12))
        }
        assert size(value) == canonical_size(value) == len(canonical_json(value).encode())


# ---------------------------------------------------------------------- planted-bug hooks


def test_hooks_high_water_mark_misses_the_r19_resend() -> None:
    ops: list[Op] = [
        Put(1, "k", {"v": 0}),
        Put(1, "x", {"v": 0}),
        Deliver("ny"),
        DeliverAck("ny"),
        Fail(2, "k", "E", 1),
        Put(1, "k", {"v": 1}),
        Put(1, "y", {"v": 1}),
        Deliver("ny"),
        DeliverAck("ny"),
        Delta(1, "k", {"v": 2}),
        Put(1, "z", {"v": 2}),
        Deliver("ny"),
        DeliverAck("ny"),
        Put(1, "w", {"v": 3}),
    ]
    config = two_sites(batch_size=2, delta=True)
    good, bad = Engine(config), HighWaterMark(config)
    run(good, *ops)
    run(bad, *ops)
    assert good.apply(Deliver("ny"))[0]["status"] == "ok"
    assert bad.apply(Deliver("ny"))[0]["status"] == "duplicate"


def test_hooks_each_planted_bug_changes_an_observation() -> None:
    resend: list[Op] = [Put(1, "k", {"v": 1}), Drop("ny"), Tick(10_000), Tick(5_000)]
    config = two_sites(batch_size=1)
    assert run(Engine(config), *resend) != run(ResendWithoutPossibleDuplicate(config), *resend)

    late: list[Op] = [Put(1, "k", {"v": 1}), Tick(1_000)]
    assert run(Engine(two_sites()), *late) != run(LateBatchTime(two_sites()), *late)

    ring = parse_config(
        {
            "sites": [1, 2, 3],
            "senders": [
                {"id": "a", "site": 1, "remote": 2, "batch_size": 1},
                {"id": "b", "site": 1, "remote": 3, "batch_size": 1},
                {"id": "c", "site": 2, "remote": 3, "batch_size": 1},
            ],
        }
    )
    fan: list[Op] = [Put(1, "k", {"v": 1}), Deliver("a")]
    assert run(Engine(ring), *fan) != run(ForwardToKnownRecipients(ring), *fan)


def test_observations_use_only_the_contract_kinds() -> None:
    engine = Engine(two_sites(batch_size=2, delta=True, failure_listener="dlq"))
    out = run(
        engine,
        Put(1, "a", {"v": 1}),
        Fail(2, "b", "E", 1),
        Put(1, "b", {"v": 1}),
        Drop("ny"),
        Tick(10_000),
        Settle(),
        SiteDown(2),
        Delta(1, "a", {"v": 2}),
        Tick(1_000),
        SiteUp(2),
        Settle(),
    )
    assert {o["kind"] for o in out} <= set(KINDS)
    for observation in out:
        canonical_json(observation)  # plain JSON data


# ---------------------------------------------------------------------- compiled or not


def _compiled_in_subprocess(build_dir: Path, **env: str) -> bool:
    """`impl.COMPILED` in a fresh interpreter that looks for the build in `build_dir`."""
    environment = {**os.environ, "WANCONFORM_IMPL_BUILD_DIR": str(build_dir)}
    environment.pop("WANCONFORM_PURE_IMPL", None)
    environment["PYTHONPATH"] = os.pathsep.join(  # tests/ too: `expected` lives there
        [str(Path(__file__).resolve().parent), environment.get("PYTHONPATH", "")]
    )
    environment.update(env)
    check = (
        "import impl; from traces.ops import Put; from tests.test_impl import two_sites; "
        "impl.Engine(two_sites()).apply(Put(1, 'k', {'v': 1})); print(impl.COMPILED)"
    )
    result = subprocess.run(
        [sys.executable, "-c", check],
        env=environment,
        cwd=impl.ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip() == "True"


def _fake_build(build_dir: Path, digest: str) -> None:
    """A build whose manifest says `digest` and whose extension modules are broken."""
    package = build_dir / "lib" / "impl"
    package.mkdir(parents=True)
    suffix = impl.interpreter()["ext_suffix"]
    for name in impl.COMPILED_MODULES:
        (package / f"{name}{suffix}").write_bytes(b"not a shared library")
    manifest = {"digest": digest, "interpreter": impl.interpreter()}
    (build_dir / "manifest.json").write_text(json.dumps(manifest))


def test_a_build_is_used_only_while_it_matches_the_sources(tmp_path: Path) -> None:
    current, stale = tmp_path / "current", tmp_path / "stale"
    _fake_build(current, impl.source_digest())
    _fake_build(stale, "0" * 64)
    assert impl.current_build(current) == current / "lib" / "impl"
    assert impl.current_build(stale) is None  # edited sources: never the old extensions
    assert impl.current_build(tmp_path / "missing") is None
    # The matching build does not load (its extensions are broken): silently Python.
    assert _compiled_in_subprocess(current) is False
    assert _compiled_in_subprocess(stale) is False


def test_the_real_build_is_used_unless_pure_python_is_forced() -> None:
    if impl.current_build(impl.BUILD_DIR) is None:
        pytest.skip("no current build (python -m tools.build_compiled)")
    assert _compiled_in_subprocess(impl.BUILD_DIR) is True
    assert _compiled_in_subprocess(impl.BUILD_DIR, WANCONFORM_PURE_IMPL="1") is False


def test_r4_field_by_field_size_equals_the_encoders() -> None:
    # Compiled, sizes are counted field by field; interpreted, by the JSON encoder.
    rng = random.Random(4)
    scalars: list[Any] = [None, True, False, 0, -17, 10**18, 2**70, "", "x", 'q"\\', "é☃\n"]
    scalars += ["\U0001f600", "\x7f\x00\t", 1.5]
    for _ in range(500):
        value = {
            rng.choice(["a", "bb", "ç", 'k"', "\t", "\ud800"]) + str(i): rng.choice(scalars)
            for i in range(rng.randrange(0, 12))
        }
        assert impl.state._value_size(value) == canonical_size(value)
        assert impl.state._encoded_size(value) == canonical_size(value)
