"""`campaign --compare-policies` (conformance/spark/policies.py): the same operations under
each failure policy, with figures derived by hand from the spec."""

from __future__ import annotations

from conformance.spark.policies import POLICIES, compare, policy_config, render_table
from traces.config import parse_config
from traces.ops import Deliver, DeliverAck, Fail, Op, Put

CONFIG = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2,
                                                    "batch_size": 2}]})  # fmt: skip
# k fails its one attempt at site 2 (retry_attempts 0, R16.2); j is applied. Batch 1 is
# [1:1 k, 1:2 j] (batch_size 2, R15): the queue's depth reaches 2.
OPS: list[Op] = [Fail(2, "k", "E", 1), Put(1, "k", {"v": 1}), Put(1, "j", {"v": 2}), Deliver("ny"),
       DeliverAck("ny")]  # fmt: skip


def test_each_policy_is_the_same_operations_on_another_configuration() -> None:
    assert [policy_config(CONFIG, p).sender("ny").failure_listener for p in POLICIES] == [
        None, None, "dlq", "dlq"
    ]  # fmt: skip
    assert [policy_config(CONFIG, p).receiver(2).retry_attempts for p in POLICIES] == [
        0, -1, 0, 0
    ]  # fmt: skip


def test_the_figures_of_each_policy_on_one_failed_event() -> None:
    figures = {f.policy: f.to_json() for f in compare([(CONFIG, OPS)])}
    # drop (R18): 1:1 lost; k is at site 1 only after the final settle.
    assert figures["drop"] | {"title": ""} == {
        "policy": "drop", "title": "", "traces": 1, "events_lost": 1, "keys_differing": 1,
        "largest_backlog": 2, "records_left": 0,
        "redelivery": {"requeued": 0, "superseded": 0, "unrecoverable": 0},
        "redelivery_conflicts": 0,
    }  # fmt: skip
    # block (R7 -1): the second attempt succeeds: nothing lost, both keys everywhere.
    assert (figures["block"]["events_lost"], figures["block"]["keys_differing"]) == (0, 0)
    # dead letters kept (R24): nothing lost, one record left, k still missing at 2.
    kept = figures["dlq-kept"]
    assert (kept["events_lost"], kept["records_left"], kept["keys_differing"]) == (0, 1, 1)
    # redelivered (R26): the entry is the record's own write: requeued, applied at 2 by
    # the final settle (the injected failure is used up): nothing differs or is left.
    again = figures["dlq-redelivered"]
    assert (again["records_left"], again["keys_differing"]) == (0, 0)
    assert again["redelivery"] == {"requeued": 1, "superseded": 0, "unrecoverable": 0}
    assert again["largest_backlog"] == 2  # the requeued event alone is a backlog of 1
    assert render_table(compare([(CONFIG, OPS)])).splitlines()[1].split()[-8:] == [
        "1", "1", "2", "0", "0", "0", "0", "0"
    ]  # fmt: skip
