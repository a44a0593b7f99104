"""A run in the names of Geode's own statistics (issue 31, item 12): what operators watch
(`GatewaySenderStatistics`, `GatewayReceiverStatistics`), where the model has the
quantity, each counted from the observations (`conformance.running.coverage`), so the
model, the impl, a user's engine and a log all give it alike; "not modelled", with the
reason, where it has not. Summed over the senders and the receiving sites of a run (and
over the traces of a campaign). docs/GEODE_STATS.md is written from this one table:

    .venv/bin/python -m conformance.running.geode_stats docs/GEODE_STATS.md
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

SENDER = "GatewaySenderStatistics"
RECEIVER = "GatewayReceiverStatistics"
SOURCES = {
    SENDER: "geode-core/src/main/java/org/apache/geode/internal/cache/wan/GatewaySenderStats.java",
    RECEIVER: "geode-core/src/main/java/org/apache/geode/internal/cache/wan/"
    "GatewayReceiverStats.java",
}

Counts = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class GeodeStat:
    """One Geode statistic: its type and name, and what it is here (`value` None: not
    modelled, `meaning` says why)."""

    type: str
    name: str
    meaning: str
    value: Callable[[Counts], int] | None = None


def _statuses(counts: Counts) -> int:
    return sum(n for name, n in counts.items() if name.startswith("status."))


STATS: tuple[GeodeStat, ...] = (
    GeodeStat(
        SENDER, "eventsReceived",
        "events offered to a sender: queued (eventsQueued) or not queued because it was "
        "stopped (R37)",
        lambda c: c["queued.events"] + c["outcome.forwarded"] + c["redelivery.requeued"]
        + c["not_queued"],
    ),
    GeodeStat(
        SENDER, "eventsQueued",
        "events appended to a queue: a client write's, once per sender at its site (R11), "
        "a forwarded one (R22), a redelivered dead letter (R26)",
        lambda c: c["queued.events"] + c["outcome.forwarded"] + c["redelivery.requeued"],
    ),
    GeodeStat(
        SENDER, "eventsNotQueuedConflated",
        "events removed from a queue by a later update of their key (`conflated` in the "
        "queue, R32)",
        lambda c: c["conflated.queue"],
    ),
    GeodeStat(
        SENDER, "eventsConflatedFromBatches",
        "batch members kept back because a later update ships (`conflated` in a batch, R33)",
        lambda c: c["conflated.batch"],
    ),
    GeodeStat(
        SENDER, "eventsDistributed",
        "events of every batch sent (R15; a batch sent again counts again, as Geode's "
        "endBatch does)",
        lambda c: c["sent.events"],
    ),
    GeodeStat(SENDER, "batchesDistributed", "batches sent (R15)", lambda c: c["outcome.sent"]),
    GeodeStat(
        SENDER, "batchesRedistributed",
        "batches sent that hold an event sent again after a timeout (events_resent > 0, "
        "R20); a delta sent again as its full value (R19) is not counted: it is not marked "
        "possible_duplicate",
        lambda c: c["sent.batches_resent"],
    ),
    GeodeStat(
        SENDER, "eventsExceedingAlertThreshold",
        "events acknowledged after waiting past alert_threshold_ms (`alert`, R38)",
        lambda c: c["alert"],
    ),
    GeodeStat(
        SENDER, "eventsDroppedDueToPrimarySenderNotRunning",
        "events a stopped sender did not queue (`not_queued`, R37)",
        lambda c: c["not_queued"],
    ),
    GeodeStat(
        SENDER, "notQueuedEvent",
        "events not queued: here only a stopped sender's (R37; no filter, §16.10)",
        lambda c: c["not_queued"],
    ),
    GeodeStat(
        SENDER, "eventQueueSize",
        "a gauge: events queued when the run ends, every dispatcher of every sender",
        lambda c: c["queued.at_end"],
    ),
    GeodeStat(
        SENDER, "tempQueueSize",
        "not modelled: Geode's events held while a sender starts; a start is one step here",
    ),
    GeodeStat(
        SENDER, "secondaryEventQueueSize",
        "not modelled: one member per site, so no secondary queue (nor eventsProcessedByPQRM, "
        "nor the unprocessed event and token maps)",
    ),
    GeodeStat(
        SENDER, "eventQueueTime",
        "not modelled: time spent queueing (no processing time; the model's clock is R5's "
        "ticks; batchDistributionTime and loadBalanceTime likewise)",
    ),
    GeodeStat(
        SENDER, "batchesResized",
        "not modelled: batches split because too large for the socket (no byte limit on a "
        "batch)",
    ),
    GeodeStat(
        SENDER, "conflationIndexesSize",
        "not observed: R32's index is internal state, not an observation",
    ),
    GeodeStat(SENDER, "eventsFiltered", "not modelled: no GatewayEventFilter (§16.10)"),
    GeodeStat(
        SENDER, "synchronizationEventsEnqueued",
        "not modelled: no queue synchronization between members (one member per site)",
    ),
    GeodeStat(
        RECEIVER, "eventsReceived",
        "events a receiver processed, whatever their status (`applied`, R16)",
        _statuses,
    ),
    GeodeStat(
        RECEIVER, "processBatchRequests",
        "not counted: no observation marks a batch's arrival, only its events' `applied`",
    ),
    GeodeStat(
        RECEIVER, "exceptionsOccurred",
        "events that failed every attempt (status failed, R16.2)",
        lambda c: c["status.failed"],
    ),
    GeodeStat(
        RECEIVER, "eventsRetried",
        "not in the observations: the site counter `retries` (R16.2) in replay's summary",
    ),
    GeodeStat(
        RECEIVER, "duplicateBatchesReceived",
        "not modelled: the receiver checks event ids (R16.1), not batch ids; duplicate "
        "events are the status duplicate (coverage status.duplicate)",
    ),
    GeodeStat(
        RECEIVER, "outoforderBatchesReceived",
        "not modelled: batch ids are not checked for order at the receiver",
    ),
    GeodeStat(RECEIVER, "earlyAcks", "not modelled: an ack follows its batch's processing (R17)"),
    GeodeStat(
        RECEIVER, "createRequests",
        "not counted: `applied` does not name the operation (updateRequest and "
        "destroyRequest likewise)",
    ),
)  # fmt: skip


def values(counts: Counts, kind: str) -> list[tuple[str, int]]:
    """(name, value) of every modelled statistic of `kind` (SENDER or RECEIVER)."""
    known = _Zero(counts)  # a count never made is 0
    return [(s.name, s.value(known)) for s in STATS if s.type == kind and s.value]


class _Zero(dict[str, int]):
    def __missing__(self, key: str) -> int:
        return 0


def lines(counts: Counts, width: int = 92) -> list[str]:
    """The view as text: per statistics type, lines of at most `width` characters (those
    after the first indented by two spaces)."""
    out: list[str] = []
    for kind in (SENDER, RECEIVER):
        text = f"{kind}: " + ", ".join(f"{name} {n:,}" for name, n in values(counts, kind))
        out += textwrap.wrap(text, width, subsequent_indent="  ")
    return out


def document() -> str:
    """docs/GEODE_STATS.md."""
    out = [
        "# Geode's statistics in wanconform's runs",
        "",
        "Written by `python -m conformance.running.geode_stats docs/GEODE_STATS.md` from the",
        "table in `conformance/running/geode_stats.py` (tests/test_docs.py checks they",
        "agree). `replay`, `check`, `campaign` and the report show each run (summed over",
        "its senders and receiving sites; a campaign over its traces) in these names, so",
        "that a campaign's figures can be held against a Geode cluster's monitoring. Each",
        "is counted from the observations (SPEC §10), so the model, the impl, a user's",
        "engine and a log give it alike.",
    ]
    for kind in (SENDER, RECEIVER):
        out += ["", f"## {kind}", "", f"Geode source: `{SOURCES[kind]}`.", ""]
        out += ["| statistic | here |", "|---|---|"]
        out += [f"| `{s.name}` | {s.meaning} |" for s in STATS if s.type == kind]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(document(), encoding="utf-8")
