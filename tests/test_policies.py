"""`campaign --compare-policies` (conformance/spark/policies.py): the same operations under
each failure policy, with figures derived by hand from the spec."""

from __future__ import annotations

from pathlib import Path

from conformance.spark.policies import (
    POLICIES,
    Comparison,
    compare,
    compare_all,
    policy_config,
    render_settings,
    render_table,
)
from traces.config import Config, parse_config
from traces.ops import Deliver, DeliverAck, Fail, Op, Put, SiteDown, SiteUp
from traces.tracefile import read_trace

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
        "keys_differing_after_wipe": 0, "largest_backlog": 2, "records_left": 0,
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
    assert render_table(compare([(CONFIG, OPS)])).splitlines()[1].split()[-9:] == [
        "1", "1", "0", "2", "0", "0", "0", "0", "0"
    ]  # fmt: skip


def test_keys_that_differ_after_a_wipe_are_told_apart() -> None:
    """Issue 31, item 10: site 2 applies j, is wiped (R21), and j is never sent again: j
    differs at the end under every policy, "after a wipe"; k, lost by `drop`, does not
    count there in the trace without a wipe."""
    wipe: list[Op] = [Put(1, "j", {"v": 2}), Put(1, "i", {"v": 3}), Deliver("ny"),
                      DeliverAck("ny"), SiteDown(2), SiteUp(2, wipe=True)]  # fmt: skip
    figures = {f.policy: f for f in compare([(CONFIG, OPS), (CONFIG, wipe)])}
    assert [(f.keys_differing, f.keys_differing_after_wipe) for f in figures.values()] == [
        (3, 2), (2, 2), (3, 2), (2, 2)
    ]  # fmt: skip


# -- conflation and persistence, on and off (SPEC v2.0 part 2), on the model -----------------

EXAMPLES = Path(__file__).parent.parent / "traces" / "examples"


def example(name: str) -> tuple[Config, list[Op]]:
    trace = read_trace(EXAMPLES / f"{name}.jsonl")
    return trace.config, list(trace.ops)


def test_conflation_on_and_off_of_example_r32() -> None:
    """Example R32 (conflation_in_queue), then the final settle: on, 1:2 is conflated by
    1:3 at enqueue and batch 1 ships 1:1, 1:3 (7 bytes each), 1:4 (a destroy, 0) and 1:5
    (7): 21 bytes; off, 1:2's 7 bytes too. Both end with "k" = {"v":5} at both sites."""
    comparison = compare_all([example("conflation_in_queue")], policies=False)
    on, off = (f.to_json() for f in comparison.settings["conflation"])
    assert on == {
        "setting": "conflation", "enabled": True, "title": "batch conflation on", "traces": 1,
        "keys_differing": 0, "keys_differing_after_wipe": 0, "bytes_shipped": 21,
        "events_conflated": 1,
        "events_conflated_in_queue": 1, "events_conflated_from_batches": 0,
    }  # fmt: skip
    assert (off["bytes_shipped"], off["events_conflated"], off["keys_differing"]) == (28, 0, 0)
    assert comparison.to_json()["policies"] == []


def test_persistence_on_and_off_under_a_restart() -> None:
    """Example R36 (restart_not_persistent's operations, the setting forced on every
    sender), with Example R33's trace, which has no restart. Off: the restart loses 1:1,
    1:2 and 1:3 (queue_lost, reason restart; events_lost_on_restart 3) and c never
    reaches site 2 (1 key differs). On: nothing lost, batch 2 re-sends 1:1 and 1:2
    (events_resent 2), the final settle brings c: nothing differs. R33's trace re-sends
    1:1 (its timeout) either way."""
    traces = [example("restart_not_persistent"), example("conflation_in_batch_after_timeout")]
    comparison = compare_all(traces, policies=False)
    on, off = (f.to_json() for f in comparison.settings["persistence"])
    assert off == {
        "setting": "persistence", "enabled": False, "title": "queue persistence off",
        "traces": 2, "keys_differing": 1, "keys_differing_after_wipe": 0,
        "traces_with_restarts": 1, "events_lost": 3,
        "lost_by_reason": {"restart": 3, "stop": 0, "clean_queues": 0},
        "events_lost_on_restart": 3, "events_resent": 1,
    }  # fmt: skip
    assert (on["events_lost"], on["events_lost_on_restart"], on["events_resent"]) == (0, 0, 3)
    assert (on["keys_differing"], on["traces_with_restarts"]) == (0, 1)
    lines = render_settings(comparison.settings).splitlines()
    assert lines[4] == "queue persistence (model; 1 of 2 traces have restart_sender):"
    assert lines[6].split() == ["on", "0", "0", "0", "0", "0", "3", "0", "0"]
    assert lines[7].split() == ["off", "3", "3", "0", "0", "3", "1", "1", "0"]
    # R33's batch conflation counts in the conflation comparison: 1 conflated in a batch
    assert lines[1].split() == ["on", "42", "1", "0", "1", "1", "0"]


def test_a_stop_of_a_serial_sender_loses_its_queue_only_without_persistence() -> None:
    """Example R37 (stop_serial_loses_queue): without persistence the stop loses 1:1
    (reason stop) and "a" never reaches site 2; with it, 1:1 stays and the final settle
    ships it. "b" was not queued (the sender was stopped): it differs in both."""
    comparison = compare_all([example("stop_serial_loses_queue")], policies=False)
    on, off = comparison.settings["persistence"]
    assert (off.events_lost, off.lost_by_reason["stop"], off.keys_differing) == (1, 1, 2)
    assert (on.events_lost, on.keys_differing, on.traces_with_restarts) == (0, 1, 0)


def test_comparisons_of_parts_merge_into_the_comparison_of_the_whole() -> None:
    """campaign --compare-policies on Spark compares parts of the trace set in tasks and
    merges them: counts add up, the largest backlog is the largest of the parts'."""
    traces = [(CONFIG, OPS), example("restart_not_persistent"),
              example("conflation_in_queue"), example("stop_serial_loses_queue")]  # fmt: skip
    whole = compare_all(traces)
    merged = Comparison.merged([compare_all(traces[:1]), compare_all(traces[1:3]),
                                compare_all(traces[3:])])  # fmt: skip
    assert merged.to_json() == whole.to_json()
    assert whole.to_json()["policies"][0]["traces"] == 4
