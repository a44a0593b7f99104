"""A run in Geode's statistics (issue 31, item 12; docs/GEODE_STATS.md), derived by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.running import geode_stats
from conformance.running.run import run_trace
from conformance.spark.campaign import render, summarize
from conformance.spark.check import LocalTrace, check_local
from reports.report_data import build_report
from traces.tracefile import read_trace, where
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "traces" / "examples"


def test_the_documented_table_is_the_code_s_own() -> None:
    assert (ROOT / "docs" / "GEODE_STATS.md").read_text() == geode_stats.document()
    names = [s.name for s in geode_stats.STATS]
    pairs = [(s.type, s.name) for s in geode_stats.STATS]
    assert len(pairs) == len(set(pairs))  # each statistic once per type
    for required in ("eventsQueued", "eventsDistributed", "batchesDistributed",
                     "batchesRedistributed", "eventsNotQueuedConflated",
                     "eventsConflatedFromBatches", "eventsExceedingAlertThreshold",
                     "eventQueueSize", "tempQueueSize", "duplicateBatchesReceived",
                     "eventsRetried", "outoforderBatchesReceived"):  # fmt: skip
        assert required in names


def test_a_lost_ack_and_its_resend_in_geode_s_names(capsys: pytest.CaptureFixture[str]) -> None:
    """lost_ack_resend.jsonl: a, b, c queued on ny (eventsQueued 3); batch 1 of the three
    sent at the third put; delivered (3 applied ok); its ack dropped; at 2,000 ms the batch
    times out (R20) and at 2,500 ms it is sent again (batch 2, events_resent 3:
    batchesRedistributed 1); delivered again (3 duplicates) and acknowledged: nothing
    queued at the end. So eventsDistributed 6 in 2 batches, and 6 events received."""
    trace = read_trace(EXAMPLES / "lost_ack_resend.jsonl")
    result = run_trace(
        "t", trace.config, [(where("t", i + 2), op) for i, op in enumerate(trace.ops)]
    )
    assert geode_stats.values(result.coverage, geode_stats.SENDER) == [
        ("eventsReceived", 3), ("eventsQueued", 3), ("eventsNotQueuedConflated", 0),
        ("eventsConflatedFromBatches", 0), ("eventsDistributed", 6),
        ("batchesDistributed", 2), ("batchesRedistributed", 1),
        ("eventsExceedingAlertThreshold", 0), ("eventsDroppedDueToPrimarySenderNotRunning", 0),
        ("notQueuedEvent", 0), ("eventQueueSize", 0),
    ]  # fmt: skip
    assert geode_stats.values(result.coverage, geode_stats.RECEIVER) == [
        ("eventsReceived", 6), ("exceptionsOccurred", 0)
    ]  # fmt: skip
    assert main(["replay", str(EXAMPLES / "lost_ack_resend.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "  in Geode's statistics (docs/GEODE_STATS.md):\n" in out
    assert "eventsDistributed 6, batchesDistributed 2," in out
    assert "    GatewayReceiverStatistics: eventsReceived 6, exceptionsOccurred 0\n" in out


def test_an_invalid_delta_sent_again_in_full_is_no_redistributed_batch() -> None:
    """delta_and_full_fallback_after_wipe.jsonl: batches 1-3 (a put, two deltas, batch
    size 1); site 2 is wiped between the deltas, so batch 3's delta is invalid there
    (R16.4) and R19 sends 1:3 again as its full value in batch 4. R19 does not mark it
    possible_duplicate (only R20's timeout does), so events_resent stays 0 and no batch
    counts as redistributed: 4 batches of one event each, 0 redistributed."""
    trace = read_trace(EXAMPLES / "delta_and_full_fallback_after_wipe.jsonl")
    result = run_trace(
        "t", trace.config, [(where("t", i + 2), op) for i, op in enumerate(trace.ops)]
    )
    stats = dict(geode_stats.values(result.coverage, geode_stats.SENDER))
    assert (stats["eventsDistributed"], stats["batchesDistributed"]) == (4, 4)
    assert stats["batchesRedistributed"] == 0


def test_conflation_alerts_and_a_stopped_sender_in_geode_s_names() -> None:
    """Example R32 (conflation_in_queue): 1:2 conflated by 1:3 in the queue, one of five
    writes (eventsNotQueuedConflated 1). A stopped serial sender (stop_serial_loses_queue):
    "b" is not queued (eventsDroppedDueToPrimarySenderNotRunning 1, eventsReceived one more
    than eventsQueued). Summed over the two traces, as a campaign sums them; the summary
    and the report say the same."""
    traces = [
        LocalTrace(name, read_trace(EXAMPLES / f"{name}.jsonl").config,
                   list(enumerate(read_trace(EXAMPLES / f"{name}.jsonl").ops, 2)))
        for name in ("conflation_in_queue", "stop_serial_loses_queue")
    ]  # fmt: skip
    rows, examples, notes = check_local(traces)
    counts = summarize(rows, 1.0).coverage.counts
    sender = dict(geode_stats.values(counts, geode_stats.SENDER))
    assert sender["eventsNotQueuedConflated"] == 1
    assert sender["eventsDroppedDueToPrimarySenderNotRunning"] == 1
    assert sender["eventsReceived"] == sender["eventsQueued"] + 1
    text = render(summarize(rows, 1.0))
    assert "in Geode's statistics, over every trace (docs/GEODE_STATS.md):" in text
    assert "eventsNotQueuedConflated 1," in text
    report = build_report(rows, examples, notes, "impl:Engine")
    assert ("GatewaySenderStatistics", "eventsNotQueuedConflated", 1) in report.geode
