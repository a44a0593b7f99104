"""What a run exercised: operations ran or skipped, receiver statuses, sender outcomes.

The harness's own coverage (a harness that never sees a status is not testing it): the
Hypothesis machine asserts that every item of `required()` occurred, campaigns and
reports show the table. Plain counts, no Hypothesis: the Spark check counts too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from traces.observations import RECEIVER_STATUSES
from traces.ops import OP_NAMES, Op

# What the harness must see happen (coverage of the harness itself).
SENDER_OUTCOMES = (
    "sent",
    "timeout",
    "connection_failed",
    "dropped",
    "dlq",
    "invalid_delta",
    "forwarded",
)
REDELIVERY_OUTCOMES = ("requeued", "superseded", "unrecoverable")  # R26 (v1.2)
SITE_EVENTS = "events.site."  # + a site: client events written there (`enqueued`), not required


class Coverage:
    """How often each operation ran or was skipped, each receiver status, each outcome,
    and how many client events each site wrote."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def record(self, op: Op, observations: list[dict[str, Any]]) -> None:
        skipped = observations == [{"kind": "skipped", "op": op.op}]
        self.counts[f"op.{op.op}.{'skipped' if skipped else 'ran'}"] += 1
        for obs in observations:
            if obs["kind"] == "applied":
                self.counts[f"status.{obs['status']}"] += 1
            elif obs["kind"] in SENDER_OUTCOMES:
                self.counts[f"outcome.{obs['kind']}"] += 1
            elif obs["kind"] == "redelivery":
                self.counts[f"redelivery.{obs['outcome']}"] += 1
            elif obs["kind"] == "enqueued":
                self.counts[f"{SITE_EVENTS}{obs['site']}"] += 1

    def record_skipped(self, name: str, count: int) -> None:
        """`count` operations named `name` were tried and not enabled (exploration)."""
        self.counts[f"op.{name}.skipped"] += count

    def record_state(self, state: dict[str, Any]) -> None:
        """What the widened strategies must reach: a queue deeper than a batch of 64."""
        if any(len(sender["queue"]) > 64 for sender in state["senders"].values()):
            self.counts["queue.deeper_than_64"] += 1

    def required(self) -> list[str]:
        """What every trace set should show (the campaign's table too); the machine's
        own `queue.deeper_than_64` is asserted by its test."""
        return [
            *(
                f"op.{name}.{how}"
                for name in OP_NAMES
                for how in ("ran", "skipped")
                if not (name in ("tick", "fail", "settle") and how == "skipped")
            ),
            *(f"status.{status}" for status in RECEIVER_STATUSES),
            *(f"outcome.{outcome}" for outcome in SENDER_OUTCOMES),
            *(f"redelivery.{outcome}" for outcome in REDELIVERY_OUTCOMES),
        ]

    def missing(self) -> list[str]:
        return [name for name in self.required() if not self.counts[name]]

    def merge(self, other: dict[str, int]) -> None:
        self.counts.update(other)

    def table(self) -> str:
        rows = [f"{name:<28} {self.counts[name]:>8}" for name in self.required()]
        return "\n".join(rows)
