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
from traces.engine import settle_cap
from traces.observations import Observation
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
    Flush,
    Op,
    PauseSender,
    Put,
    PutAll,
    Redeliver,
    RestartSender,
    ResumeSender,
    Settle,
    SiteDown,
    SiteUp,
    StartSender,
    StopSender,
    Tick,
    Timeout,
)
from traces.text import plural, printable


def op_text(op: Op, config: Config | None = None) -> str:
    """An operation as a user writes it: `deliver ny`, `put 1 k {"v":1}`, `tick 100`;
    v2.0's `thread` when not 0, and the dispatcher of a sender that has several (or, without
    the configuration, when not 0): `deliver ny d1`."""
    match op:
        case Put(site=site, key=key, value=value, thread=thread):
            return f"put {site} {key} {canonical_json(value)}{_thread(thread)}"
        case Delta(site=site, key=key, changes=changes, thread=thread):
            return f"delta {site} {key} {canonical_json(changes)}{_thread(thread)}"
        case Destroy(site=site, key=key, thread=thread):
            return f"destroy {site} {key}{_thread(thread)}"
        case PutAll(site=site, entries=entries, thread=thread):
            entries_text = canonical_json({k: dict(v) for k, v in entries.items()})
            return f"putall {site} {entries_text}{_thread(thread)}"
        case Tick(ms=ms):
            return f"tick {ms}"
        case (
            Deliver(sender=s)
            | DeliverAck(sender=s)
            | Drop(sender=s)
            | DropAck(sender=s)
            | Flush(sender=s)
            | Timeout(sender=s)
        ):
            return f"{op.op} {lane(s, op.dispatcher, config)}"
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
        case StartSender(sender=s, clean_queues=clean):
            return f"start_sender {s}" + (" clean_queues" if clean else "")
        case RestartSender(sender=s) | StopSender(sender=s) | PauseSender(sender=s):
            return f"{op.op} {s}"
        case ResumeSender(sender=s):
            return f"resume_sender {s}"
    raise TypeError(op)


def _ids(events: list[str]) -> str:
    return ", ".join(events) if events else "none"


def _thread(thread: int) -> str:
    return f" thread {thread}" if thread else ""


def lane(sender: str, dispatcher: int, config: Config | None = None) -> str:
    """A sender's dispatcher as the words name it (R29): the sender alone when it has one
    dispatcher, else `ny d1`; without the configuration, `d0` is left out."""
    several = dispatcher != 0 if config is None else config.sender(sender).dispatcher_threads > 1
    return f"{sender} d{dispatcher}" if several else sender


def _route(sender: str, route: dict[str, Any] | None, config: Config | None) -> str:
    """A sender of an `enqueued` and, when there is a choice, where it queued the event."""
    if route is None:
        return sender
    bucket = route.get("bucket")
    where = lane(sender, route.get("dispatcher", 0), config)
    return where + (f" (bucket {bucket})" if bucket is not None else "")


def describe(obs: Observation, config: Config | None = None) -> str:
    """One observation as a clause (without the operation); with the configuration, a
    sender with several dispatchers is named with the dispatcher (`ny d1`)."""
    kind = obs["kind"]
    who = lane(obs["sender"], obs.get("dispatcher", 0), config) if "sender" in obs else ""
    if kind == "enqueued":
        senders = obs["senders"]
        routes = obs.get("routes", {})
        version = canonical_json(obs["version"])
        queued = (
            "queued on " + ", ".join(_route(s, routes.get(s), config) for s in senders)
            if senders
            else "queued on no sender"
            if config is not None and config.senders_at(obs["site"])
            else "no sender at the site"
        )
        what = f"{obs['op']} {obs['key']}, {version}"
        return f"site {obs['site']} wrote {obs['event']} ({what}), {queued}"
    if kind == "sent":
        text = (
            f"{who} sent batch {obs['batch_id']} [{_ids(obs['events'])}] "
            f"({obs['bytes_full']} bytes full, {obs['bytes_delta']} delta"
        )
        resent = obs["events_resent"]
        return text + (f", {resent} resent as possible duplicates)" if resent else ")")
    if kind == "connection_failed":
        return f"{who} cannot connect: site {obs['remote']} is down"
    if kind == "applied":
        status = obs["status"]
        if status == "failed":
            status = f"failed ({obs['exception']})"
        return f"site {obs['site']} applied {obs['event']} {status}"
    if kind == "forwarded":
        return f"site {obs['site']} forwarded {obs['event']} on {who}"
    if kind == "acked":
        return f"{who} got the ack of batch {obs['batch_id']}, removed [{_ids(obs['removed'])}]"
    if kind == "dropped":
        return f"{who} dropped {obs['event']} ({obs['exception']}): data loss"
    if kind == "dlq":
        return f"{who} dead-lettered {obs['event']} ({obs['exception']})"
    if kind == "invalid_delta":
        return f"{who} keeps {obs['event']} to resend as its full value (invalid delta)"
    if kind == "redelivery":
        return {
            "requeued": f"dead letter {obs['event']} redelivered: back in {obs['sender']}'s queue",
            "superseded": f"dead letter {obs['event']} superseded by a newer write: not sent",
            "unrecoverable": f"dead letter {obs['event']} unrecoverable: a secure record "
            "has no value and its write is gone",
        }[obs["outcome"]] + " (R26)"
    if kind == "timeout":
        return (
            f"{who} timed out on batch {obs['batch_id']} [{_ids(obs['events'])}], will resend them"
        )
    if kind == "skipped":
        return "skipped"
    return _describe_v2(kind, who, obs)


def _describe_v2(kind: str, who: str, obs: Observation) -> str:
    """SPEC v2.0's sender kinds (§16.4, §16.5): conflation, losses, lifecycle, alerts."""
    if kind == "conflated":
        where = "in the queue" if obs["where"] == "queue" else "in its batch, not shipped"
        return f"{who} conflated {obs['event']} by {obs['by']} {where}"
    if kind == "queue_lost":
        return f"{who} lost {obs['event']} from its queue ({obs['reason']})"
    if kind == "not_queued":
        return f"{obs['event']} not queued on {obs['sender']} ({obs['reason']})"
    if kind == "alert":
        return f"{who} alert: {obs['event']} queued {obs['queued_ms']} ms"
    if kind == "lifecycle":
        kept = f", kept {obs['kept']}" if obs["action"] == "restart" else ""
        return f"{obs['sender']} {obs['action']}{kept}"
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
        self._batch: dict[tuple[str, int], int] = {}  # the batch each dispatcher last sent

    def line(
        self,
        where: str,
        op: Op,
        observations: list[Observation],
        state_before: Callable[[], dict[str, Any]],
        capped: bool = False,
    ) -> str:
        """`where op → what happened`; `state_before` (the engine's state) is asked only
        for a skipped op, or a batch in flight this run did not see sent."""
        config = self.config
        head = f"{where} {op_text(op, config)} → "
        if len(observations) == 1 and observations[0]["kind"] == "skipped":
            return printable(head + "skipped: " + self.why_skipped(op, state_before()))
        clauses = [(obs["kind"], describe(obs, config)) for obs in observations]
        for obs in observations:
            if obs["kind"] == "sent":
                self._batch[(obs["sender"], obs["dispatcher"])] = obs["batch_id"]
        words = _join_applied(clauses)
        match op:
            case Deliver(sender=sender, dispatcher=d):
                words.append(
                    f"ack of batch {self._batch_of(sender, d, state_before)} in the network"
                )
            case Drop(sender=sender, dispatcher=d):
                batch = self._batch_of(sender, d, state_before)
                words.insert(0, f"batch {batch} of {lane(sender, d, config)} lost")
            case DropAck(sender=sender, dispatcher=d):
                batch = self._batch_of(sender, d, state_before)
                words.insert(0, f"ack of batch {batch} of {lane(sender, d, config)} lost")
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
                shown = "".join(f"\n    {printable(w)}" for w in words)
                outcome = (  # R25: a settle that stopped at its cap did not settle
                    f"not settled: stopped at its cap of {plural(settle_cap(), 'inner operation')}"
                    if capped
                    else "settled"
                )
                return printable(head) + f"{outcome} ({count})" + shown
        return printable(head + ("; ".join(words) if words else "nothing to do"))  # one line

    def _batch_of(self, sender: str, index: int, state: Callable[[], dict[str, Any]]) -> Any:
        """The batch in flight of a dispatcher (a deliver, drop or drop_ack leaves it so):
        the last one this run saw sent, or, when it saw none (a run from a checkpoint),
        the engine's state's."""
        if (sender, index) not in self._batch:
            in_flight = state()["senders"][sender]["dispatchers"][index]["in_flight"]
            if in_flight is None:
                return "?"
            self._batch[(sender, index)] = in_flight["batch_id"]
        return self._batch[(sender, index)]

    def why_skipped(self, op: Op, state: dict[str, Any]) -> str:
        """Why `op` was not enabled in `state` (SPEC §3's table, `traces.enabled`)."""
        if isinstance(op, Flush):
            return "R15 does not let it flush now (docs/LOG.md, event logs)"
        if isinstance(op, Timeout):
            return "R20 does not time it out now (docs/LOG.md, event logs)"
        return why_skipped(self.config, ObservedState(state), op) or "not enabled"
