"""What a run exercised: operations ran or skipped, receiver statuses, sender outcomes,
and (v2.0, given the configuration) each branch of R28-R31.

The harness's own coverage (a harness that never sees a status is not testing it): the
Hypothesis machine asserts that every item of `required()` occurred, campaigns and
reports show the table. Plain counts, no Hypothesis: the Spark check counts too.

The R28-R31 items, from the observations and the configuration:
- `R28.bucket`: an event got a bucket at a partitioned site;
- `R29.parallel`, `R29.serial`, `R29.key`, `R29.thread`, `R29.partition`: an event was
  routed by a parallel sender (bucket mod N), a serial one with one dispatcher, or a
  serial one with several by each order policy;
- `R30.concurrent`: a dispatcher sent a batch while another of its sender had one out;
- `R31.resend_first`: a parallel dispatcher's batch began with its resend list (after a
  timeout or an invalid delta);
- `R31.interleaved`: a parallel batch took events of two or more buckets;
- `sometimes.cross_key_reordering` (§16.7's "sometimes" property, not required): a
  receiver processed an event after a later-appended one of another key (the property
  checker counts it; `TraceRun` adds it here).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from model.routing import bucket_of
from model.state import State
from traces.config import Config
from traces.engine import settle_cap
from traces.observations import RECEIVER_STATUSES
from traces.ops import OP_NAMES, Op
from traces.text import plural

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
DISPATCH_BRANCHES = (
    "R28.bucket",
    "R29.parallel",
    "R29.serial",
    "R29.key",
    "R29.thread",
    "R29.partition",
    "R30.concurrent",
    "R31.resend_first",
    "R31.interleaved",
)
CROSS_KEY_REORDERING = "sometimes.cross_key_reordering"


QUEUED_AT_END = "queued.at_end"
"""Events still queued when a run ends, summed over its senders (`TraceRun.finish`)."""

CAPPED_SETTLES = "settle.capped."
"""+ an engine's name: how many of its settles stopped at their cap (R25; `TraceRun`)."""


def capped_settles(counts: dict[str, int], traces: int | None = None) -> str | None:
    """R25's cap, when some settle stopped at it: per engine, and in how many traces
    (`traces`, in a campaign); None when none did."""
    found = {
        name.removeprefix(CAPPED_SETTLES): count
        for name, count in sorted(counts.items())
        if name.startswith(CAPPED_SETTLES) and count
    }
    if not found:
        return None
    where = "" if traces is None else f" in {plural(traces, 'trace')}"
    return (
        f"settle stopped at its cap of {settle_cap():,} inner operations (R25: nothing "
        "checked after it is quiescent; an engine that never settles? --settle-cap sets "
        "the cap): "
        + ", ".join(f"{engine} {plural(count, 'time')}" for engine, count in found.items())
        + where
    )


class Coverage:
    """How often each operation ran or was skipped, each receiver status, each outcome,
    how many client events each site wrote, and with a configuration the R28-R31
    branches of one run (a coverage without one counts none of them)."""

    def __init__(self, config: Config | None = None) -> None:
        self.counts: Counter[str] = Counter()
        self.config: Config | None = None
        self._plain = True
        self.start_run(config)
        self._out: dict[str, set[int]] = {}  # sender -> dispatchers with a batch out
        self._resend: set[tuple[str, int]] = set()  # parallel dispatchers with a resend list
        self._buckets: dict[tuple[str, str], int] = {}  # (parallel sender, event) -> bucket
        self._key = ""  # the key of the last event applied (a `forwarded` follows it)

    def start_run(self, config: Config | None) -> None:
        """Count a new run of `config` (its R28-R31 branches) into the same counts."""
        self.config = config
        # plain: every sender serial with one dispatcher and every region replicated (a
        # v1.2 configuration), where an event's route is the only branch there is to count
        self._plain = config is None or (
            not config.regions
            and all(s.dispatcher_threads == 1 and not s.parallel for s in config.senders)
        )
        self._out, self._resend, self._buckets, self._key = {}, set(), {}, ""

    def record(self, op: Op, observations: list[dict[str, Any]]) -> None:
        skipped = observations == [{"kind": "skipped", "op": op.op}]
        self.counts[f"op.{op.op}.{'skipped' if skipped else 'ran'}"] += 1
        counts = self.counts
        config, plain = self.config, self._plain
        for obs in observations:
            kind = obs["kind"]
            if kind == "applied":
                counts[f"status.{obs['status']}"] += 1
            elif kind in SENDER_OUTCOMES:
                counts[f"outcome.{kind}"] += 1
                if kind == "sent":  # Geode's eventsDistributed, batchesRedistributed
                    counts["sent.events"] += len(obs["events"])
                    counts["sent.batches_resent"] += obs["events_resent"] > 0
            elif kind == "redelivery":
                counts[f"redelivery.{obs['outcome']}"] += 1
            elif kind == "enqueued":
                counts[f"{SITE_EVENTS}{obs['site']}"] += 1
                counts["queued.events"] += len(obs["senders"])
            elif kind == "conflated":
                counts[f"conflated.{obs['where']}"] += 1
            elif kind == "alert" or kind == "not_queued":
                counts[kind] += 1
            if config is None:
                continue
            if not plain:
                self._dispatch(op, obs, config)
            elif kind == "enqueued":  # R29's one branch of a v1.2 configuration
                counts["R29.serial"] += len(obs["senders"])
            elif kind == "forwarded":
                counts["R29.serial"] += 1

    def _dispatch(self, op: Op, obs: dict[str, Any], config: Config) -> None:
        """The R28-R31 branches an observation shows."""
        kind = obs["kind"]
        if kind == "applied":
            self._key = obs["key"]
        elif kind == "enqueued":
            for sender, route in obs["routes"].items():
                if route["bucket"] is not None:
                    self.counts["R28.bucket"] += 1
                self._routed(config, sender, obs["event"], route["bucket"])
        elif kind == "forwarded":
            bucket = bucket_of(config, obs["site"], self._key)
            if bucket is not None:
                self.counts["R28.bucket"] += 1
            self._routed(config, obs["sender"], obs["event"], bucket)
        elif kind == "sent":
            sender, index = obs["sender"], obs["dispatcher"]
            out = self._out.setdefault(sender, set())
            if out - {index}:
                self.counts["R30.concurrent"] += 1
            out.add(index)
            if (sender, index) in self._resend:
                self._resend.discard((sender, index))
                self.counts["R31.resend_first"] += 1
            if config.sender(sender).parallel:
                buckets = {self._buckets.get((sender, e)) for e in obs["events"]}
                if len(buckets - {None}) > 1:
                    self.counts["R31.interleaved"] += 1
        elif kind in ("acked", "timeout"):
            sender, index = obs["sender"], obs["dispatcher"]
            self._out.get(sender, set()).discard(index)
            if kind == "timeout" and config.sender(sender).parallel:
                self._resend.add((sender, index))
            if kind == "acked":
                for event in obs["removed"]:
                    self._buckets.pop((sender, event), None)
        elif kind == "invalid_delta" and config.sender(obs["sender"]).parallel:
            self._resend.add((obs["sender"], obs["dispatcher"]))

    def _routed(self, config: Config, sender_id: str, event: str, bucket: int | None) -> None:
        sender = config.sender(sender_id)
        if sender.parallel:
            self.counts["R29.parallel"] += 1
            if bucket is not None:
                self._buckets[(sender_id, event)] = bucket
        elif sender.dispatcher_threads == 1:
            self.counts["R29.serial"] += 1
        else:
            self.counts[f"R29.{sender.order_policy}"] += 1

    def resume(self, state: State) -> None:
        """Take the run's context for R30-R31's branches from a model state (exploration
        steps from any state, not in one run's order): the dispatchers with a batch out,
        the parallel ones with a resend list, the buckets of the events queued at
        parallel senders."""
        if self.config is None or self._plain:
            return
        self._out, self._resend, self._buckets, self._key = {}, set(), {}, ""
        for sender_id, sender in state.senders.items():
            parallel = self.config.sender(sender_id).parallel
            for index, dispatcher in enumerate(sender.dispatchers):
                if dispatcher.in_flight is not None:
                    self._out.setdefault(sender_id, set()).add(index)
                if parallel:
                    if dispatcher.resend:
                        self._resend.add((sender_id, index))
                    for event in dispatcher.queue:
                        if event.bucket is not None:
                            self._buckets[(sender_id, event.event_id)] = event.bucket

    def record_skipped(self, name: str, count: int) -> None:
        """`count` operations named `name` were tried and not enabled (exploration)."""
        self.counts[f"op.{name}.skipped"] += count

    def record_state(self, state: dict[str, Any]) -> None:
        """What the widened strategies must reach: a queue deeper than a batch of 64."""
        if any(
            len(dispatcher["queue"]) > 64
            for sender in state["senders"].values()
            for dispatcher in sender["dispatchers"]
        ):
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
            *DISPATCH_BRANCHES,
        ]

    def missing(self) -> list[str]:
        return [name for name in self.required() if not self.counts[name]]

    def merge(self, other: dict[str, int]) -> None:
        self.counts.update(other)

    def table(self) -> str:
        rows = [f"{name:<28} {self.counts[name]:>8}" for name in self.required()]
        return "\n".join(rows)
