"""What happened, in words: one operation and its observations (SPEC §3, §10) as a line.

The one place that turns observations into sentences, used by `wanconform replay
--steps` and by the HTML reports. `Narrator` follows a run (it remembers the batch each
sender has in flight, which observations name only when it is sent) and renders:

    t.jsonl:7 deliver ny → site 2 applied 1:3 ok, 1:4 duplicate; ack of batch 2 in the network
    t.jsonl:9 deliver_ack ny → skipped: no ack of ny in the network

A skipped operation says why it was not enabled (§3), from the state before it (which a
skipped operation leaves unchanged).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from traces.canonical import canonical_json
from traces.config import Config
from traces.enabled import ObservedState, why_skipped
from traces.observations import Observation
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
    Redeliver,
    Settle,
    SiteDown,
    SiteUp,
    Tick,
)
from traces.text import plural


def op_text(op: Op) -> str:
    """An operation as a user writes it: `deliver ny`, `put 1 k {"v":1}`, `tick 100`."""
    match op:
        case Put(site=site, key=key, value=value):
            return f"put {site} {key} {canonical_json(value)}"
        case Delta(site=site, key=key, changes=changes):
            return f"delta {site} {key} {canonical_json(changes)}"
        case Destroy(site=site, key=key):
            return f"destroy {site} {key}"
        case PutAll(site=site, entries=entries):
            return f"putall {site} {canonical_json({k: dict(v) for k, v in entries.items()})}"
        case Tick(ms=ms):
            return f"tick {ms}"
        case Deliver(sender=s) | DeliverAck(sender=s) | Drop(sender=s) | DropAck(sender=s):
            return f"{op.op} {s}"
        case SiteDown(site=site):
            return f"site_down {site}"
        case SiteUp(site=site, wipe=wipe):
            return f"site_up {site}" + (" wipe" if wipe else "")
        case Fail(site=site, key=key, exception=exception, times=times):
            return f"fail {site} {key} {exception} x{times}"
        case Settle():
            return "settle"
        case Redeliver(sender=s, events=events):
            return f"redeliver {s}" + ("" if events is None else f" {canonical_json(events)}")
    raise TypeError(op)


def _ids(events: list[str]) -> str:
    return ", ".join(events) if events else "none"


def describe(obs: Observation) -> str:
    """One observation as a clause (without the operation)."""
    kind = obs["kind"]
    if kind == "enqueued":
        senders = obs["senders"]
        version = canonical_json(obs["version"])
        queued = f"queued on {', '.join(senders)}" if senders else "no sender at the site"
        what = f"{obs['op']} {obs['key']}, {version}"
        return f"site {obs['site']} wrote {obs['event']} ({what}), {queued}"
    if kind == "sent":
        text = (
            f"{obs['sender']} sent batch {obs['batch_id']} [{_ids(obs['events'])}] "
            f"({obs['bytes_full']} bytes full, {obs['bytes_delta']} delta"
        )
        resent = obs["events_resent"]
        return text + (f", {resent} resent as possible duplicates)" if resent else ")")
    if kind == "connection_failed":
        return f"{obs['sender']} cannot connect: site {obs['remote']} is down"
    if kind == "applied":
        status = obs["status"]
        if status == "failed":
            status = f"failed ({obs['exception']})"
        return f"site {obs['site']} applied {obs['event']} {status}"
    if kind == "forwarded":
        return f"site {obs['site']} forwarded {obs['event']} on {obs['sender']}"
    if kind == "acked":
        return (
            f"{obs['sender']} got the ack of batch {obs['batch_id']}, "
            f"removed [{_ids(obs['removed'])}]"
        )
    if kind == "dropped":
        return f"{obs['sender']} dropped {obs['event']} ({obs['exception']}): data loss"
    if kind == "dlq":
        return f"{obs['sender']} dead-lettered {obs['event']} ({obs['exception']})"
    if kind == "invalid_delta":
        return f"{obs['sender']} keeps {obs['event']} to resend as its full value (invalid delta)"
    if kind == "redelivery":
        return {
            "requeued": f"dead letter {obs['event']} redelivered: back in {obs['sender']}'s queue",
            "superseded": f"dead letter {obs['event']} superseded by a newer write: not sent",
            "unrecoverable": f"dead letter {obs['event']} unrecoverable: a secure record "
            "has no value and its write is gone",
        }[obs["outcome"]] + " (R26)"
    if kind == "timeout":
        return (
            f"{obs['sender']} timed out on batch {obs['batch_id']} "
            f"[{_ids(obs['events'])}], will resend them"
        )
    if kind == "skipped":
        return "skipped"
    return canonical_json(obs)


def _join_applied(clauses: list[tuple[str, str]]) -> list[str]:
    """Consecutive `applied` clauses of one site become one: `site 2 applied 1:3 ok, 1:4
    duplicate`."""
    out: list[str] = []
    previous_site = ""
    for kind, clause in clauses:
        if kind == "applied":
            site, rest = clause.split(" applied ", 1)
            if previous_site == site:
                out[-1] += f", {rest}"
                continue
            previous_site = site
        else:
            previous_site = ""
        out.append(clause)
    return out


class Narrator:
    """Renders the operations of one run in order (`line`)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._batch: dict[str, int] = {}  # the batch each sender last sent

    def line(
        self,
        where: str,
        op: Op,
        observations: list[Observation],
        state_before: Callable[[], dict[str, Any]],
    ) -> str:
        """`where op → what happened`; `state_before` is asked only for a skipped op."""
        head = f"{where} {op_text(op)} → "
        if len(observations) == 1 and observations[0]["kind"] == "skipped":
            return head + "skipped: " + self.why_skipped(op, state_before())
        clauses = [(obs["kind"], describe(obs)) for obs in observations]
        for obs in observations:
            if obs["kind"] == "sent":
                self._batch[obs["sender"]] = obs["batch_id"]
        words = _join_applied(clauses)
        match op:
            case Deliver(sender=sender):
                words.append(f"ack of batch {self._batch.get(sender, '?')} in the network")
            case Drop(sender=sender):
                words.insert(0, f"batch {self._batch.get(sender, '?')} of {sender} lost")
            case DropAck(sender=sender):
                words.insert(0, f"ack of batch {self._batch.get(sender, '?')} of {sender} lost")
            case SiteDown(site=site):
                words.insert(0, f"site {site} down, messages to and from it lost")
            case SiteUp(site=site, wipe=wipe):
                new = " wiped: a new distributed system" if wipe else ""
                words.insert(0, f"site {site} up{new}")
            case Fail(site=site, key=key, exception=exception, times=times):
                attempt = plural(times, "attempt")
                words.insert(0, f"site {site} will fail the next {attempt} on {key} ({exception})")
            case Settle():
                count = plural(len(observations), "observation")
                return head + f"settled ({count})" + "".join(f"\n    {w}" for w in words)
        return head + ("; ".join(words) if words else "nothing to do")

    def why_skipped(self, op: Op, state: dict[str, Any]) -> str:
        """Why `op` was not enabled in `state` (SPEC §3's table, `traces.enabled`)."""
        return why_skipped(self.config, ObservedState(state), op) or "not enabled"
