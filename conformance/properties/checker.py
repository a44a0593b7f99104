"""The properties of SPEC §11 and §16.7 (P2-P12) in one place, for Hypothesis, trace
replay and Spark.

`PropertyChecker` follows a run step by step from the observations alone: `after_step`
returns the violations a step shows (P3, P4, P6 at once; P2 and P5 after a `settle` that
leaves every site up), `finish` checks the final state (P7), and `verdicts` says for
every property whether it held, failed, or did not apply to the run and why (§11: a
property that was not checked is never reported as holding). P1 (agreement of two
engines) lives in `conformance.running.lockstep`.

Memory follows the engines' state, not the run's length: the checker knows which queues
hold each event (from `enqueued`, `forwarded` and `acked`, and R21's wipe), and forgets
an event once no queue holds it, since it can then never be delivered again (a batch in
the network is always a queue's prefix, R12). What P2 still needs of a forgotten event
is decided then: at every site it can reach it was applied or stopped on the way;
otherwise it is kept as a candidate until the next quiescence, where it may still be
superseded.

Cost follows the changes, not the state (issue 32): nothing walks every key. At a
`settle` the checker asks the engine for the entries of the keys it has to look at
(`observe_keys`, an optional part of the engine surface; without it the whole
observable state, at the cost of its size): for P2, the keys of the events still
unaccounted for; for P5, the keys written or applied since the last comparison, and the
keys that differed then. P5 keeps which keys differ across sites, so a settle compares
only what changed, and its verdicts and messages are those of a comparison of every key
(tests/whole_state_checker.py is that comparison, the oracle the tests hold this one to).

Readings where §11 is silent (also in the README):
- A wiped site is a brand-new distributed system (R21): P3 forgets what it applied.
- P6 holds through wipes (SPEC v1.1): tags are unique (R9's timestamp floor), so "the
  origin's value for the same tag" is the value the origin wrote for the event.
- P2 (v1.2) is checked on the events written after the last wipe: a wipe loses the
  wiped site's queues by design (R21), so events written before it may be lost.
- P5 (v1.2) is checked key by key, on the keys that no dropped event, no dead-letter
  record still in a queue and no write before the last wipe concerns. "Concerns": the
  event's or record's key; the keys written before a wipe are every key written until
  then, at any site.
- R26: a redelivered (requeued) event is the same event again: the checker keeps what
  it knew of a dead-lettered event (sites that applied it, its shipping tree, P3, P4)
  and takes it up again when it is requeued.
- "Reachable" (P2, P5) is reachability in the digraph of senders; "on the way" to a
  site means on an R22 delivery path from the origin to it (`delivery_paths`): a stop
  at a sender of that path (dropped or dead-lettered) or a lost conflict at a site of
  it accounts for the event there. With several paths (an unsupported topology, R23),
  every path must be stopped.
- "Superseded" (P2): the site's entry tag is newer than the event's in R16.3's order,
  which is the total order (timestamp, dsid, entry_version).
- P4 applies to supported topologies (R23) when some event was shipped; P3 when some
  event was applied, P6 when some value was built from a delta, P7 when a secure sender
  wrote a dead letter.
  P4's edge is the sender, whatever its dispatchers (§16.7).
- P8 (v2.0): "appended to g" is each append (R11, R22, R26's requeue: a requeued event is
  appended again); "processes (first time)" is the first `applied` of that append,
  whatever its status. A sender using the thread policy with several dispatchers is left
  out (Example R29); P8 applies when some other sender had two events of one key
  processed. The checker also counts cross-key reordering (an event processed after a
  later-appended one of another key), the "sometimes" property §16.7 asks campaigns for.
- P12 (v2.0) is checked after every `settle`, on the dispatchers of the senders that run
  unpaused with their site and remote up; a dispatcher whose next due time may lie past
  2^63-1, or a settle stopped at its inner-operation cap (the engine's `settle_capped`,
  when it has one), makes the check not applicable there.
- P9 (v2.0 part 2) is checked at each `conflated`: the event conflated is an update
  queued at the sender, not in its batch in flight (R32), and a later-appended update of
  the same key with a newer tag is queued there; the conflated event stops on the way for
  P2, and P5 still compares its key (the final value). P10 runs a second engine with
  every such limit at the default beside the one the properties follow
  (`conformance.properties.overflow`, only when some sender's limit is below the default)
  and compares their observations step by step and their final states.
  P11 after each `restart_sender` (and a `stop_sender` of a persistent or serial sender):
  with persistence the queues hold exactly what was queued, in append order, and a batch
  given up is sent again with `events_resent`; without, exactly the queued events are
  reported `queue_lost`; dead-letter records survive either way.
- P2 and P5 (as amended by §16.7) leave out events `not_queued` by a stopped sender and,
  at a settle where a stopped or paused sender still holds events, are not checked there
  (those events are neither lost nor delivered yet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from conformance.properties.overflow import OverflowTwin, unlimited
from conformance.properties.topology import analyse_topology, delivery_paths, sender_graph
from traces.config import DEFAULT_QUEUE_MEMORY, INT64_MAX, Config, SenderConfig
from traces.observations import Observation
from traces.ops import Op, Settle, SiteUp
from traces.text import plural

PROPERTIES = ("P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12")
Status = Literal["held", "failed", "not applicable"]


@dataclass(frozen=True, slots=True)
class Violation:
    property: str  # "P2" .. "P12"
    message: str
    where: str = ""  # the operation that showed it, e.g. "t.jsonl:9"

    def __str__(self) -> str:
        at = f"{self.where}: " if self.where else ""
        return f"{at}{self.property}: {self.message}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One property's outcome on a run: held, failed (with violations) or not applicable
    (with the reason)."""

    property: str
    status: Status
    reason: str = ""
    violations: tuple[Violation, ...] = ()

    def __str__(self) -> str:
        if self.status == "failed":  # a reason: how many in all, when not all are listed
            count = self.reason or plural(len(self.violations), "violation")
            return f"{self.property}: FAILED ({count})"
        if self.status == "not applicable":
            return f"{self.property}: not applicable: {self.reason}"
        return f"{self.property}: held" + (f" ({self.reason})" if self.reason else "")


def tag_order(tag: Iterable[int]) -> tuple[int, int, int]:
    """R16.3's order as a sort key: timestamp, then dsid, then entry_version."""
    entry_version, timestamp, dsid = tag
    return (timestamp, dsid, entry_version)


def unordered_senders(config: Config) -> dict[str, int]:
    """P8 (§16.7): the senders that do not keep per-key order, with their dispatchers:
    a serial sender of order_policy thread with several (Example R29)."""
    return {
        s.id: s.dispatcher_threads
        for s in config.senders
        if s.order_policy == "thread" and s.dispatcher_threads > 1 and not s.parallel
    }


def fully_connected(config: Config) -> bool:
    """Does every site reach every other one along senders (P5's precondition)?"""
    import networkx as nx  # here: start-up stays quick

    return bool(nx.is_strongly_connected(sender_graph(config)))


def _not_quiescent(dispatcher: dict[str, Any]) -> list[str]:
    """What keeps a dispatcher's observed state from quiescence (P12), in words."""
    left = []
    if dispatcher["queue"]:
        shown = ", ".join(dispatcher["queue"][:3]) + ("..." if len(dispatcher["queue"]) > 3 else "")
        left.append(f"{plural(len(dispatcher['queue']), 'queued event')} ({shown})")
    if dispatcher.get("resend"):
        left.append(f"{plural(len(dispatcher['resend']), 'event')} to resend")
    if dispatcher["in_flight"] is not None:
        left.append(f"batch {dispatcher['in_flight']['batch_id']} in flight")
    if dispatcher["network"]["batch"] or dispatcher["network"]["ack"]:
        left.append("a message in the network")
    return left


def _due_past_the_end(sender: SenderConfig, dispatcher: dict[str, Any], now: int) -> bool:
    """Might R39's next due time of this dispatcher lie past 2^63-1 (where settle stops)?
    Exact for a batch in flight; for a queue, its head's enqueue time is not observable,
    so any head that could wait past the end counts."""
    in_flight = dispatcher["in_flight"]
    if in_flight is not None:
        return bool(in_flight["sent_at"] + sender.ack_timeout_ms > INT64_MAX)
    if dispatcher["next_retry_at"] > INT64_MAX:
        return True
    waiting = len(dispatcher["queue"])
    return waiting < sender.batch_size and now + sender.batch_time_interval_ms > INT64_MAX


class _Event:
    """What the checker keeps of one event while some queue holds it (a plain slotted
    class: one is made per client write, and a dataclass's factories cost more)."""

    __slots__ = (
        "applied",
        "before_wipe",
        "conflicts",
        "key",
        "op",
        "origin",
        "queues",
        "shipped",
        "stops",
        "value",
        "version",
    )

    def __init__(
        self,
        origin: int,
        key: str,
        version: tuple[int, int, int],
        value: Any,
        queues: set[str],
        applied: set[int] | None = None,
        conflicts: set[int] | None = None,
        stops: set[tuple[int, int]] | None = None,
        shipped: dict[int, int] | None = None,
        before_wipe: bool = False,
        op: str = "",
    ) -> None:
        self.origin = origin
        self.op = op  # R10's label: create, update or destroy (P9)
        self.key = key
        self.version = version
        self.value = value
        self.queues = queues  # senders whose queue holds it
        self.applied: set[int] = set() if applied is None else applied  # sites, ok (P3)
        self.conflicts: set[int] = set() if conflicts is None else conflicts  # lost R16.3
        self.stops: set[tuple[int, int]] = set() if stops is None else stops  # drop/dlq hops
        self.shipped: dict[int, int] = {} if shipped is None else shipped  # P4: to <- from
        self.before_wipe = before_wipe  # written before the last wipe: P2 does not apply


SKIPPED_SITE_UP = {"kind": "skipped", "op": "site_up"}


@dataclass(frozen=True, slots=True)
class _Unaccounted:
    """P2: an event that left every queue without reaching `site`; superseded later?"""

    event: str
    site: int
    key: str
    version: tuple[int, int, int]


class PropertyChecker:
    """Follows one run of `config` and checks P2-P12 on it. `overflow`: a factory of a
    second engine of the kind under test, for P10's second run (conformance/properties/
    overflow.py); without one P10 is not checked."""

    def __init__(self, config: Config, overflow: Callable[[Config], Any] | None = None) -> None:
        self.config = config
        analysis = analyse_topology(config)
        self.supported = analysis.supported
        self._duplicate_paths = analysis.duplicates
        self._graph = sender_graph(config)
        self._connected = fully_connected(config)
        self._paths: dict[int, dict[int, list[tuple[int, ...]]]] = {}
        self._events: dict[str, _Event] = {}
        self._unaccounted: list[_Unaccounted] = []
        self._violations: dict[str, list[Violation]] = {name: [] for name in PROPERTIES}
        self._wiped_at = ""  # which site was wiped last, and where ("" = none)
        self._quiescent_checks = 0  # settles with every site up that checked events (P2)
        self._p5_checks = 0  # settles that compared at least one key (P5)
        self._settles = 0  # settles with every site up
        self._written_since_wipe = 0  # events written after the last wipe (P2)
        self._keys_written: set[str] = set()  # every key written so far (P5)
        self._keys_before_wipe: set[str] = set()  # written before the last wipe (P5)
        self._keys_dropped: set[str] = set()  # of a dropped event (P5)
        self._lost_from_queue = False  # a queue_lost or not_queued event left a key out (P5)
        self._dead_lettered: dict[tuple[str, str], _Event] = {}  # (sender, event): R26
        self._held: dict[str, int] = {}  # key -> dead-letter records of it still held (P5)
        self._comparable: set[str] = set()  # written keys that nothing excludes from P5
        self._dirty: set[str] = set()  # comparable keys written or applied since P5 looked
        self._differing: set[str] = set()  # comparable keys that differed when P5 looked
        self._applied_any = False
        self._shipped_any = False  # P4: some event was shipped (else nothing was checked)
        self._built_any = False
        self._secure_dead_letters = 0
        self._step = 0
        self._leaving: list[str] = []  # events that left their last queue in this step
        # P8: each sender's appends, numbered; an append is forgotten once processed.
        self._unordered = unordered_senders(config)
        self._appends: dict[str, int] = {}  # sender -> appends so far
        self._appended: dict[tuple[str, str], int] = {}  # (sender, event) -> its append
        self._last_of_key: dict[tuple[str, str], tuple[int, str]] = {}  # (sender, key) ->
        #   the latest append processed, and its event
        self._last_of_sender: dict[str, int] = {}  # sender -> the latest append processed
        self._p8_checks = 0  # processings that followed another of the same key and sender
        self.reordered = 0  # cross-key reorderings seen (§16.7's "sometimes" property)
        # P12
        self._p12_checks = 0  # dispatchers found quiescent or not after a settle
        self._p12_exempt = ""  # why a settle left a dispatcher unchecked (the last reason)
        self._any_settle = False
        # v2.0 part 2: the senders' lifecycle (R36, R37), P2's exemptions, P9, P10, P11
        self._running = {s.id: not s.manual_start for s in config.senders}
        self._paused = {s.id: False for s in config.senders}
        self._conflating = {s.id for s in config.senders if s.enable_batch_conflation}
        self._persistent = {s.id for s in config.senders if s.enable_persistence}
        self._tracked = self._conflating | self._persistent  # senders followed in detail:
        self._position: dict[tuple[str, str], int] = {}  # (sender, event) -> its append,
        #   while queued (P9's "later-appended", P11's order)
        self._in_flight: dict[tuple[str, int], set[str]] = {}  # (sender, dispatcher) ->
        #   the members of its batch in flight (P9, P11)
        self._kept_back: dict[tuple[str, int], list[str]] = {}  # R33: members kept back
        #   from the batch about to be sent
        self._flagged: set[tuple[str, str]] = set()  # P11: possible duplicates a restart
        #   or stop owes to the next batch that ships them
        self._lost_now: dict[str, set[str]] = {}  # sender -> events lost in this step
        self._lifecycle: list[tuple[str, str, set[str], int, str]] = []  # P11 checks due
        #   after this step: (sender, action, queued before, kept, where)
        self._lifecycle_checks = 0
        self._conflations = 0  # P9: `conflated` observations checked
        self._exempt: dict[str, list[str]] = {}  # P2: why an event is exempt -> events
        self._held_back = ""  # P2, P5: the last settle they did not apply at, and why
        self._held_back_settles = 0  # settles where a stopped or paused sender held events,
        #   or that stopped before quiescence (R25)
        self._stopped_short = ""  # this settle stopped before quiescence (R25), and why
        self._twin: OverflowTwin | None = None  # P10's second run
        if overflow is not None and unlimited(config) is not None:
            self._twin = OverflowTwin(config, overflow)

    def clone(self) -> PropertyChecker:
        """An independent copy of the checker as it is now (exhaustive exploration,
        `conformance.search.explore`, checks each edge from its parent's checker). What never
        changes during a run (the configuration, its topology, the path cache) is
        shared; each event record is copied once, so an event known both as queued and
        as dead-lettered stays one record in the copy."""
        other = PropertyChecker.__new__(PropertyChecker)
        other.__dict__ = self.__dict__.copy()  # the shared values, then the copies
        copies: dict[int, _Event] = {}

        def copied(event: _Event) -> _Event:
            found = copies.get(id(event))
            if found is None:
                found = copies[id(event)] = _Event(
                    event.origin, event.key, event.version, event.value, set(event.queues),
                    set(event.applied), set(event.conflicts), set(event.stops),
                    dict(event.shipped), event.before_wipe, event.op,
                )  # fmt: skip
            return found

        other._events = {k: copied(e) for k, e in self._events.items()}
        other._dead_lettered = {k: copied(e) for k, e in self._dead_lettered.items()}
        other._unaccounted = list(self._unaccounted)
        other._violations = {name: list(found) for name, found in self._violations.items()}
        other._keys_written = set(self._keys_written)
        other._keys_before_wipe = set(self._keys_before_wipe)
        other._keys_dropped = set(self._keys_dropped)
        other._held = dict(self._held)
        other._comparable = set(self._comparable)
        other._dirty = set(self._dirty)
        other._differing = set(self._differing)
        other._leaving = list(self._leaving)
        other._appends = dict(self._appends)
        other._appended = dict(self._appended)
        other._last_of_key = dict(self._last_of_key)
        other._last_of_sender = dict(self._last_of_sender)
        other._running = dict(self._running)
        other._paused = dict(self._paused)
        other._position = dict(self._position)
        other._in_flight = {k: set(v) for k, v in self._in_flight.items()}
        other._kept_back = {k: list(v) for k, v in self._kept_back.items()}
        other._flagged = set(self._flagged)
        other._lost_now = {}
        other._lifecycle = []
        other._exempt = {k: list(v) for k, v in self._exempt.items()}
        other._twin = None  # a second engine cannot be copied: P10 is not checked
        return other

    # -- following the run ---------------------------------------------------------------

    def after_step(
        self,
        op: Op,
        observations: list[Observation],
        observe: Callable[[], dict[str, Any]],
        where: str = "",
        settle_capped: Callable[[], bool] | None = None,
        observe_keys: Callable[[Iterable[str]], dict[str, Any]] | None = None,
    ) -> list[Violation]:
        """Record one step and return the violations it shows. `observe` returns the
        observable state after the step; it is called only after a `settle`, and only when
        `observe_keys` (the same state with only the entries of the keys asked for, the
        engine's `observe_keys`) is not given. `where` names the operation in messages
        (default: "operation N", 1-based). `settle_capped` says whether the engine's last
        settle stopped at its cap of inner operations (R25), for P12; without it, no
        settle is taken to have."""
        self._step += 1
        where = where or f"operation {self._step}"
        found: list[Violation] = []
        if type(op) is SiteUp and op.wipe and observations[:1] != [SKIPPED_SITE_UP]:
            self._wipe(op.site, where)
        events = self._events
        for obs in observations:
            kind = obs["kind"]
            if kind == "applied":
                event_id, site = obs["event"], obs["site"]
                violation = self._processed(obs, where)
                if violation is not None:
                    found.append(violation)
                status = obs["status"]
                event = events.get(event_id)
                if event is None:  # an engine that ships what no queue holds: forgotten
                    if status == "ok" and obs["key"] in self._comparable:
                        self._dirty.add(obs["key"])
                    continue
                if status == "ok":
                    if site in event.applied:  # P3
                        found.append(
                            Violation("P3", f"event {event_id} applied twice at site {site}", where)
                        )
                    event.applied.add(site)
                    self._applied_any = True
                    if "value" in obs:  # P6: a value built from a delta
                        found.extend(self._built(obs, event, where))
                    if obs["key"] in self._comparable:
                        self._dirty.add(obs["key"])
                elif status == "conflict":
                    event.conflicts.add(site)
            elif kind == "enqueued":
                event_id, key, version, senders = (
                    obs["event"],
                    obs["key"],
                    obs["version"],
                    obs["senders"],
                )
                events[event_id] = _Event(
                    obs["site"],
                    key,
                    (version[0], version[1], version[2]),
                    obs["value"],
                    set(senders),
                    op=obs["op"],
                )
                self._written_since_wipe += 1
                self._written(key)
                for sender in senders:  # P8: the sender's next append
                    self._append(sender, event_id, where, found)
                if not senders:
                    self._leaving.append(event_id)
            elif kind == "forwarded":
                if obs["event"] in events:
                    events[obs["event"]].queues.add(obs["sender"])
                    self._append(obs["sender"], obs["event"], where, found)
            elif kind == "sent":
                found.extend(self._sent(obs, where))
                if obs["sender"] in self._tracked:
                    found.extend(self._sent_tracked(obs, where))
            elif kind == "acked":
                for event_id in obs["removed"]:
                    self._leave_queue(event_id, obs["sender"])
                self._in_flight.pop((obs["sender"], obs["dispatcher"]), None)
            elif kind == "timeout":
                self._in_flight.pop((obs["sender"], obs["dispatcher"]), None)
            elif kind == "conflated":
                found.extend(self._conflated(obs, where))
            elif kind in ("queue_lost", "not_queued"):
                self._lost(obs)
            elif kind == "lifecycle":
                self._lifecycle_action(obs, where)
            elif kind in ("dropped", "dlq"):
                sender = self.config.sender(obs["sender"])
                found_event = events.get(obs["event"])
                if found_event is None:
                    continue  # an engine that answers for what no queue holds: forgotten
                event = found_event
                event.stops.add((sender.site, sender.remote))
                if kind == "dropped":
                    self._keys_dropped.add(event.key)
                else:
                    self._dead_lettered[(sender.id, obs["event"])] = event
                    self._held[event.key] = self._held.get(event.key, 0) + 1
                self._exclude(event.key)
                if kind == "dlq" and sender.dlq_secure:
                    self._secure_dead_letters += 1
                if kind == "dropped" and sender.failure_listener == "dlq":
                    found.append(
                        Violation(
                            "P2", f"event {obs['event']} dropped by dlq sender {sender.id}", where
                        )
                    )
            elif kind == "redelivery":  # R26: the record left the dead-letter queue
                known = self._dead_lettered.pop((obs["sender"], obs["event"]), None)
                if known is None:
                    continue  # a record the checker never saw written
                self._released(known.key)
                if obs["outcome"] == "requeued":  # the same event, queued again
                    events.setdefault(obs["event"], known).queues.add(obs["sender"])
                    self._append(obs["sender"], obs["event"], where, found)
        if self._twin is not None:  # P10: the second run takes the same step
            difference = self._twin.step(op, observations)
            if difference is not None:
                found.append(Violation("P10", difference, where))
        for event_id in self._leaving:  # after the step: its drops and conflicts are known
            leaving = self._events.get(event_id)
            if leaving is not None and not leaving.queues:
                self._forget(event_id)
        self._leaving.clear()
        if self._lifecycle:  # P11, on the senders' state after the step
            state = observe() if observe_keys is None else observe_keys(())
            found.extend(self._p11(state))
        if self._lost_now:
            self._lost_now.clear()
        if type(op) is Settle:  # never skipped
            self._any_settle = True
            pending = self._pending()
            if observe_keys is None:
                state = observe()
            else:
                state = observe_keys({item.key for item in pending} | self._p5_keys())
            capped = settle_capped is not None and settle_capped()
            self._stopped_short = ""
            found.extend(self._p12(state, capped, where))
            if all(site["up"] for site in state["sites"].values()):
                found.extend(self._at_quiescence(state, pending, where))
        for violation in found:
            self._violations[violation.property].append(violation)
        return found

    def finish(self, state: dict[str, Any], where: str = "end of run") -> list[Violation]:
        """P7 on the final observable state: dead letters are never lost (R24), so every
        record ever written is there; P10: the second run ends in the same state."""
        if self._twin is not None:
            difference = self._twin.finish(state)
            if difference is not None:
                self._violations["P10"].append(Violation("P10", difference, where))
        found = [
            Violation(
                "P7",
                f"secure sender {sender.id} dead-lettered {record['event_id']} with its value",
                where,
            )
            for sender in self.config.senders
            if sender.dlq_secure
            for record in state["senders"][sender.id]["dlq"]
            if "value" in record
        ]
        self._violations["P7"].extend(found)
        return found

    def verdicts(self) -> list[Verdict]:
        """P2-P12, each held, failed or not applicable (with the reason)."""
        return [self._verdict(name) for name in PROPERTIES]

    # -- P5's keys ------------------------------------------------------------------------

    def _written(self, key: str) -> None:
        """A client wrote `key`: it is compared at the next quiescence, unless excluded."""
        self._keys_written.add(key)
        if self._connected and not self._excluded(key):
            self._comparable.add(key)
            self._dirty.add(key)

    def _excluded(self, key: str) -> bool:
        """P5 (v1.2) leaves out a key that a drop, a dead letter still held or a write
        before the last wipe concerns."""
        return key in self._keys_dropped or key in self._keys_before_wipe or key in self._held

    def _exclude(self, key: str) -> None:
        self._comparable.discard(key)
        self._dirty.discard(key)
        self._differing.discard(key)

    def _released(self, key: str) -> None:
        """A dead-letter record of `key` left its queue (R26): the key may count again."""
        left = self._held[key] - 1
        if left:
            self._held[key] = left
            return
        del self._held[key]
        if self._connected and not self._excluded(key):
            self._comparable.add(key)
            self._dirty.add(key)

    def _p5_keys(self) -> set[str]:
        """The keys P5 looks at the next quiescence: changed since it last looked, or
        differing then."""
        return (self._dirty | self._differing) & self._comparable

    # -- P8: per-key order ----------------------------------------------------------------

    def _append(self, sender: str, event: str, where: str, found: list[Violation]) -> None:
        """An append of `event` to `sender`'s queue (any dispatcher), numbered in order
        (P8; P9 and P11 keep the number while it is queued). R37: a stopped sender
        queues nothing (P2: such an event is "not queued")."""
        count = self._appends.get(sender, 0)
        self._appends[sender] = count + 1
        self._appended[(sender, event)] = count
        if sender in self._tracked:
            self._position[(sender, event)] = count
        if not self._running[sender]:
            found.append(
                Violation(
                    "P2",
                    f"event {event} queued by sender {sender}, which is stopped (R37: it is "
                    "not queued)",
                    where,
                )
            )

    def _processed(self, obs: Observation, where: str) -> Violation | None:
        """P8: the receiver processes an event the sender shipped; the first time for this
        append, it must come after every processed append of the same key."""
        sender, event, key = obs["sender"], obs["event"], obs["key"]
        append = self._appended.pop((sender, event), None)
        if append is None:
            return None  # processed before (a resend): only the first time counts
        latest = self._last_of_sender.get(sender, -1)
        if append < latest:
            self.reordered += 1  # an earlier append after a later one (of some key)
        self._last_of_sender[sender] = max(latest, append)
        if sender in self._unordered:
            return None
        before = self._last_of_key.get((sender, key))
        if before is None or before[0] < append:
            if before is not None:
                self._p8_checks += 1
            self._last_of_key[(sender, key)] = (append, event)
            return None
        self._p8_checks += 1
        return Violation(
            "P8",
            f"sender {sender}: event {event} (key {key!r}) processed at site {obs['site']} "
            f"after {before[1]}, which was appended to {sender} after it",
            where,
        )

    # -- P12: quiescence -----------------------------------------------------------------

    def _p12(self, state: dict[str, Any], capped: bool, where: str) -> list[Violation]:
        """P12 after a settle: every dispatcher of a running, unpaused sender whose site
        and remote are up has nothing queued, to resend, in flight or in the network."""
        if capped:
            self._p12_exempt = f"the settle at {where} stopped at its cap of inner operations"
            self._stopped_short = self._p12_exempt
            return []
        sites = state["sites"]
        now = state["time"]
        out: list[Violation] = []
        for sender in self.config.senders:
            seen = state["senders"][sender.id]
            if not (sites[str(sender.site)]["up"] and sites[str(sender.remote)]["up"]):
                continue
            if not seen.get("running", True) or seen.get("paused", False):
                continue
            for index, dispatcher in enumerate(seen["dispatchers"]):
                left = _not_quiescent(dispatcher)
                if not left:
                    self._p12_checks += 1
                    continue
                if _due_past_the_end(sender, dispatcher, now):
                    self._p12_exempt = self._stopped_short = (
                        f"after the settle at {where}, sender {sender.id} dispatcher {index} is "
                        "next due past 2^63-1 (R25)"
                    )
                    continue
                self._p12_checks += 1
                out.append(
                    Violation(
                        "P12",
                        f"after settle, sender {sender.id} dispatcher {index} still has "
                        + ", ".join(left),
                        where,
                    )
                )
        return out

    # -- the events' lives ---------------------------------------------------------------

    def _wipe(self, site: int, where: str) -> None:
        """R21: the site's senders' queues are gone; it forgets what it applied (P3).
        P2 is checked on the events written after it, P5 on the keys not written before."""
        self._wiped_at = f"site {site} was wiped at {where}"
        self._unaccounted.clear()
        self._written_since_wipe = 0
        self._quiescent_checks = 0  # P2's scope starts again: checks before it do not count
        self._keys_before_wipe |= self._keys_written
        self._comparable.clear()  # every key written so far is left out of P5 (v1.2)
        self._dirty.clear()
        self._differing.clear()
        wiped = {s.id for s in self.config.senders_at(site)}
        for events in (self._events.values(), self._dead_lettered.values()):
            for event in events:
                event.before_wipe = True
                event.applied.discard(site)
        for event_id, event in self._events.items():
            for sender in wiped & event.queues:
                self._leave_queue(event_id, sender)
        if wiped:  # P8: the wiped queues' appends will never be processed
            self._appended = {k: v for k, v in self._appended.items() if k[0] not in wiped}
        for config in self.config.senders_at(site):  # a brand-new system starts as configured
            self._running[config.id] = not config.manual_start
            self._paused[config.id] = False
            for index in range(config.dispatcher_threads):
                self._in_flight.pop((config.id, index), None)
                self._kept_back.pop((config.id, index), None)

    # -- the senders' lifecycle, conflation and losses (v2.0 part 2) -------------------

    def _hop(self, sender_id: str) -> tuple[int, int]:
        sender = self.config.sender(sender_id)
        return (sender.site, sender.remote)

    def _exempt_from_p2(self, reason: str, event_id: str) -> None:
        self._exempt.setdefault(reason, []).append(event_id)

    def _lost(self, obs: Observation) -> None:
        """R36, R37: an event lost from a queue (`queue_lost`) or never queued by a stopped
        sender (`not_queued`): stopped on the way at that sender for P2 (exempt, and
        reported), its key left out of P5."""
        sender, event_id = obs["sender"], obs["event"]
        event = self._events.get(event_id)
        if event is None:
            return  # an engine that loses what no queue holds
        event.stops.add(self._hop(sender))
        self._keys_dropped.add(event.key)
        self._lost_from_queue = True
        self._exclude(event.key)
        if obs["kind"] == "queue_lost":
            reason = {
                "restart": "lost on restart",
                "stop": "lost when its sender stopped",
                "clean_queues": "discarded by a clean start",
            }.get(obs["reason"], f"lost ({obs['reason']})")
            self._lost_now.setdefault(sender, set()).add(event_id)
            self._leave_queue(event_id, sender)
        else:
            reason = "not queued (sender stopped)"
        if self.config.sender(sender).remote not in event.applied:  # what it exempts
            self._exempt_from_p2(reason, event_id)

    def _conflated(self, obs: Observation, where: str) -> list[Violation]:
        """P9 (i): a conflated update `p` had, then, a later-appended update of its key with
        a newer tag queued or in flight at the same sender; R32 spares the batch in
        flight. For P2, `p` stopped on the way at that sender (its key's final value is
        followed through the survivor, and P5 still compares the key: P9 (ii))."""
        self._conflations += 1
        sender, event_id, by = obs["sender"], obs["event"], obs["by"]
        dispatcher = obs["dispatcher"]
        event = self._events.get(event_id)
        survivor = self._events.get(by)
        problem = ""
        if event is None or sender not in event.queues:
            problem = f"{event_id} is not queued at {sender}"
        elif event.op != "update":
            problem = f"{event_id} is a {event.op or 'write'}, and only updates conflate"
        elif survivor is None or sender not in survivor.queues:
            problem = f"{by} is not queued at {sender}"
        elif survivor.op != "update" or survivor.key != event.key:
            problem = f"{by} is not an update of {event.key!r}"
        elif tag_order(survivor.version) <= tag_order(event.version):
            problem = f"{by}'s tag {list(survivor.version)} is not newer than {list(event.version)}"
        elif self._position.get((sender, by), -1) <= self._position.get((sender, event_id), -1):
            problem = f"{by} was not appended to {sender} after {event_id}"
        elif obs["where"] == "queue" and event_id in self._in_flight.get((sender, dispatcher), ()):
            problem = f"{event_id} is in the batch in flight (R32 spares it)"
        if event is not None:
            event.stops.add(self._hop(sender))
        if obs["where"] == "queue":
            if event is not None and sender in event.queues:
                self._leave_queue(event_id, sender)
        else:
            self._kept_back.setdefault((sender, dispatcher), []).append(event_id)
        if not problem:
            return []
        return [Violation("P9", f"sender {sender} conflated {event_id} by {by}: {problem}", where)]

    def _sent_tracked(self, obs: Observation, where: str) -> list[Violation]:
        """A batch of a conflating or persistent sender: its members are in flight (P9);
        P11: those a restart or stop left as possible duplicates count as resent."""
        sender, dispatcher = obs["sender"], obs["dispatcher"]
        members = set(obs["events"])
        members.update(self._kept_back.pop((sender, dispatcher), ()))
        self._in_flight[(sender, dispatcher)] = members
        owed = [e for e in obs["events"] if (sender, e) in self._flagged]
        if len(owed) <= obs["events_resent"]:
            return []
        return [
            Violation(
                "P11",
                f"sender {sender} sent {', '.join(owed)} again after a restart or stop with "
                f"events_resent {obs['events_resent']}: each was in flight then and is a "
                "possible duplicate (R36, R37)",
                where,
            )
        ]

    def _lifecycle_action(self, obs: Observation, where: str) -> None:
        """R36, R37: a sender restarts, stops, starts, pauses or resumes. A restart or a
        stop gives up the batches in flight; P11 checks the sender after the step."""
        sender, action = obs["sender"], obs["action"]
        self._running[sender] = action != "stop"
        self._paused[sender] = action == "pause"
        if action not in ("restart", "stop"):
            return
        config = self.config.sender(sender)
        for index in range(config.dispatcher_threads):
            members = self._in_flight.pop((sender, index), set())
            if sender in self._persistent:
                self._flagged.update((sender, event) for event in members)
        queued = {e for e, event in self._events.items() if sender in event.queues}
        self._lost_now.pop(sender, None)
        self._lifecycle.append((sender, action, queued, obs.get("kept", -1), where))

    def _p11(self, state: dict[str, Any]) -> list[Violation]:
        """P11 after a restart or stop: with persistence the queues hold exactly what was
        queued, each dispatcher in append order (so nothing acknowledged comes back);
        without, a restart (or a serial stop) lost exactly what was queued, each event
        reported by `queue_lost`. Dead-letter records are never lost."""
        out: list[Violation] = []
        for sender, action, queued, kept, where in self._lifecycle:
            config = self.config.sender(sender)
            seen = state["senders"][sender]
            lost = self._lost_now.pop(sender, set())
            queues = [dispatcher["queue"] for dispatcher in seen["dispatchers"]]
            held = {event for queue in queues for event in queue}
            problems: list[str] = []
            if config.enable_persistence:
                self._lifecycle_checks += 1
                if action == "restart" and kept != len(queued):
                    problems.append(f"it says it kept {kept} events of the {len(queued)} queued")
                if held != queued:
                    missing, extra = sorted(queued - held), sorted(held - queued)
                    if missing:
                        problems.append("lost " + ", ".join(missing[:3]))
                    if extra:
                        problems.append("holds " + ", ".join(extra[:3]) + ", not queued before")
                for index, queue in enumerate(queues):
                    numbers = [self._position.get((sender, event), -1) for event in queue]
                    if numbers != sorted(numbers):
                        problems.append(f"dispatcher {index}'s queue {queue} is out of order")
            elif action == "restart" or not config.parallel:
                self._lifecycle_checks += 1
                if lost != queued:
                    silent = sorted(queued - lost)
                    problems.append(
                        "lost " + ", ".join(silent[:3]) + " without a queue_lost"
                        if silent
                        else "reported " + ", ".join(sorted(lost - queued)[:3]) + " lost"
                    )
                if held:
                    problems.append("still holds " + ", ".join(sorted(held)[:3]))
            records = {event for s, event in self._dead_lettered if s == sender}
            if {record["event_id"] for record in seen["dlq"]} != records:
                problems.append("its dead-letter records changed")
            if problems:
                what = "restarting" if action == "restart" else "stopping"
                out.append(
                    Violation("P11", f"after {what} sender {sender}: " + "; ".join(problems), where)
                )
        self._lifecycle.clear()
        return out

    def _leave_queue(self, event_id: str, sender: str) -> None:
        """The event left one queue; once it has left all of them (at the end of the
        step) it is forgotten."""
        event = self._events.get(event_id)
        if event is None:
            return  # an engine that removes what no queue holds: forgotten already
        event.queues.discard(sender)
        if not event.queues:
            self._leaving.append(event_id)
        if sender in self._tracked:
            self._position.pop((sender, event_id), None)
            self._flagged.discard((sender, event_id))

    def _forget(self, event_id: str) -> None:
        """No queue holds the event any more: it can never be delivered again. Decide
        P2 for it now (at each reachable site: applied, or stopped on the way)."""
        event = self._events.pop(event_id)
        if event.before_wipe:
            return
        paths = self._paths.get(event.origin)
        if paths is None:
            paths = self._paths[event.origin] = delivery_paths(self._graph, event.origin)
        for site, site_paths in paths.items():
            if site not in event.applied and not all(
                self._stopped(event, path) for path in site_paths
            ):
                self._unaccounted.append(_Unaccounted(event_id, site, event.key, event.version))

    @staticmethod
    def _stopped(event: _Event, path: tuple[int, ...]) -> bool:
        """Was the event stopped on `path` (origin first): a lost conflict at one of its
        sites or a drop / dead letter at one of its hops?"""
        return any(site in event.conflicts for site in path[1:]) or any(
            (path[i], path[i + 1]) in event.stops for i in range(len(path) - 1)
        )

    def _built(self, obs: Observation, event: _Event, where: str) -> list[Violation]:
        """P6: the value a delta built at a site is the value the origin wrote."""
        self._built_any = True
        if obs["value"] == event.value:
            return []
        return [
            Violation(
                "P6",
                f"event {obs['event']} built {obs['value']!r} at site {obs['site']} "
                f"but the origin wrote {event.value!r}",
                where,
            )
        ]

    def _sent(self, obs: Observation, where: str) -> list[Violation]:
        """P4: per event, the senders that shipped it form a tree rooted at its origin.

        Checked edge by edge, in O(1): a graph that is a tree rooted at the origin stays
        one when an edge `site -> remote` is added iff `remote` is not the origin, has no
        other sending site, and `site` is the origin or a site that received the event
        (a new leaf). `tests/test_properties.py` checks this against networkx's
        `is_arborescence` on random shipping sequences."""
        if not self.supported:
            return []
        sender = self.config.sender(obs["sender"])
        out: list[Violation] = []
        self._shipped_any = self._shipped_any or bool(obs["events"])
        for event_id in obs["events"]:
            found = self._events.get(event_id)
            if found is None:
                continue  # an engine that ships what no queue holds: forgotten
            event = found
            into = event.shipped  # receiving site -> sending site
            if sender.remote == event.origin:
                out.append(
                    Violation(
                        "P4", f"event {event_id} sent back to its origin by {sender.id}", where
                    )
                )
            elif into.setdefault(sender.remote, sender.site) != sender.site:
                out.append(
                    Violation(
                        "P4",
                        f"event {event_id} sent to site {sender.remote} from sites "
                        f"{into[sender.remote]} and {sender.site}",
                        where,
                    )
                )
            elif sender.site != event.origin and sender.site not in into:
                out.append(
                    Violation(
                        "P4",
                        f"event {event_id}: shipped by {sender.id} from site {sender.site}, "
                        "which never received it: the shipping graph is not a tree",
                        where,
                    )
                )
        return out

    # -- quiescence: P2 and P5 -----------------------------------------------------------

    def _pending(self) -> list[_Unaccounted]:
        """P2's candidates at a quiescence: the events that left every queue without
        reaching some site, and those still queued (settle's cap); where each still owes
        a site."""
        if not self._written_since_wipe:
            return []
        pending = list(self._unaccounted)
        for event_id, event in self._events.items():  # still queued (settle's cap)
            if event.before_wipe:
                continue
            paths = self._paths.get(event.origin) or delivery_paths(self._graph, event.origin)
            self._paths[event.origin] = paths
            pending.extend(
                _Unaccounted(event_id, site, event.key, event.version)
                for site, site_paths in paths.items()
                if site not in event.applied
                and not all(self._stopped(event, path) for path in site_paths)
            )
        return pending

    def _at_quiescence(
        self, state: dict[str, Any], pending: list[_Unaccounted], where: str
    ) -> list[Violation]:
        """P2 and P5, after `settle` with every site up (`state` holds at least the
        entries of `pending`'s keys and of `_p5_keys`). Neither applies when a stopped or
        paused sender holds events (§16.7), nor, a reading, when the settle stopped before
        quiescence (R25: at its cap, or with a dispatcher next due past 2^63-1, as P12):
        the events still on their way there are neither lost nor delivered."""
        violations: list[Violation] = []
        sites = state["sites"]
        waiting = [
            sender
            for sender, seen in state["senders"].items()
            if (not seen.get("running", True) or seen.get("paused", False))
            and any(dispatcher["queue"] for dispatcher in seen["dispatchers"])
        ]
        if waiting:  # §16.7: P2 does not apply (nor P5: a reading)
            first = min(waiting)  # sorted id order (R11), whatever order the state has
            held = "stopped" if not state["senders"][first].get("running", True) else "paused"
            self._held_back = (
                f"after the settle at {where}, sender {first} is {held} with events queued"
            )
            self._held_back_settles += 1
        elif self._stopped_short:
            self._held_back = self._stopped_short
            self._held_back_settles += 1
        elif self._written_since_wipe:
            self._quiescent_checks += 1
            self._unaccounted.clear()
            for item in pending:
                entry = sites[str(item.site)]["entries"].get(item.key)
                if entry is not None and tag_order(entry["version"]) > tag_order(item.version):
                    continue  # superseded
                violations.append(
                    Violation(
                        "P2",
                        f"event {item.event} (key {item.key!r}) neither applied nor superseded "
                        f"at site {item.site}, and not stopped on the way",
                        where,
                    )
                )
        self._settles += 1
        if self._connected and not waiting and not self._stopped_short:  # P5 too, as P2
            violations.extend(self._p5(state, where))
        return violations

    def _p5(self, state: dict[str, Any], where: str) -> list[Violation]:
        """P5 (v1.2): the same entries at every site, key by key, for the keys that no
        drop, remaining dead letter or write before the last wipe concerns. Only the keys
        changed since the last look, and those that differed then, are compared; the
        message is the one a comparison of every key gives (the first pair of sites, in
        site order, that differs, and its keys in sorted order)."""
        entries = [(site, state["sites"][str(site)]["entries"]) for site in self.config.sites]
        (first, held), *others = entries
        for key in self._p5_keys():
            if any(held.get(key) != other.get(key) for _, other in others):
                self._differing.add(key)
            else:
                self._differing.discard(key)
        self._dirty.clear()
        if not self._comparable:
            return []  # checked on nothing
        self._p5_checks += 1
        if not self._differing:
            return []
        keys = sorted(self._differing)
        for site, other in others:
            differing = [key for key in keys if held.get(key) != other.get(key)]
            if differing:
                shown = ", ".join(repr(key) for key in differing[:3])
                more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
                return [
                    Violation(
                        "P5",
                        f"sites {first} and {site} hold different entries for {shown}{more}",
                        where,
                    )
                ]
        return []

    # -- verdicts ------------------------------------------------------------------------

    def _not_applicable(self, name: str) -> str:
        """Why property `name` did not apply to this run ("" if it did)."""
        no_settle = "no settle with every site up"
        if name == "P2":
            if self._quiescent_checks:
                return ""
            if self._held_back and self._written_since_wipe:
                return self._held_back
            if self._wiped_at:
                return (
                    "no event written after the last wipe was checked at a settle with "
                    f"every site up ({self._wiped_at})"
                )
            return no_settle
        if name == "P3":
            return "" if self._applied_any else "no event was applied"
        if name == "P4":
            if not self.supported:
                first = self._duplicate_paths[0]
                return (
                    f"the topology is unsupported (R23): site {first.site} receives events of "
                    f"site {first.origin} along {len(first.paths)} paths"
                )
            return "" if self._shipped_any else "no event was shipped"
        if name == "P5":
            if self._p5_checks:
                return ""
            if not self._connected:
                return "not every site reaches every other one"
            if not self._settles:
                return no_settle
            if self._held_back_settles == self._settles:
                return self._held_back
            if not self._keys_written:
                return "no key was written"
            if self._lost_from_queue:  # v2.0, §16.7 "P5 amended"
                return (
                    "no key left to compare at a settle with every site up: each was "
                    "dropped, dead-lettered, lost from a queue or not queued (a sender "
                    "restarted or stopped), or written before a wipe"
                )
            return (
                "no key left to compare at a settle with every site up: each was "
                "dropped, dead-lettered or written before a wipe"
            )
        if name == "P6":
            return "" if self._built_any else "no value was built from a delta"
        if name == "P7":
            if not any(s.dlq_secure for s in self.config.senders):
                return "no sender has dlq_secure"
            return "" if self._secure_dead_letters else "no secure sender wrote a dead letter"
        if name == "P8":
            if self._p8_checks:
                return ""
            ordered = [s.id for s in self.config.senders if s.id not in self._unordered]
            if self._unordered and not ordered:
                return (
                    "order_policy thread: "
                    + ", ".join(
                        f"{sender} has {count} dispatchers"
                        for sender, count in self._unordered.items()
                    )
                    + " and per-key order is not kept across them (Example R29)"
                )
            return "no sender had two events of one key processed"
        if name == "P9":
            if not self._conflating:
                return "no sender has enable_batch_conflation"
            return "" if self._conflations else "no event was conflated"
        if name == "P10":
            if unlimited(self.config) is None:
                return (
                    "no sender limits its queue memory below the default "
                    f"({DEFAULT_QUEUE_MEMORY:,} bytes), so nothing overflows"
                )
            if self._twin is None:
                return "not run a second time (exhaustive exploration and segments do not)"
            return ""
        if name == "P11":
            if self._lifecycle_checks:
                return ""
            return "no sender was restarted, and no persistent or serial sender stopped"
        if name == "P12":
            if self._p12_checks:
                return ""
            if self._p12_exempt:
                return self._p12_exempt
            if not self._any_settle:
                return "no settle"
            return "no settle left a running sender with its site and remote up"
        raise ValueError(name)

    def _verdict(self, name: str) -> Verdict:
        violations = tuple(self._violations[name])
        if violations:
            return Verdict(name, "failed", violations=violations)
        reason = self._not_applicable(name)
        if reason:
            return Verdict(name, "not applicable", reason)
        # held where checked: a settle where it did not apply is named (the last one)
        unchecked = ""
        if name == "P12":
            unchecked = self._p12_exempt
        elif name in ("P2", "P5") and self._held_back_settles:
            unchecked = self._held_back
        notes = [f"not checked at a settle ({unchecked})"] if unchecked else []
        if name == "P2" and (self._wiped_at or self._exempt):
            if self._wiped_at:
                notes.insert(0, "on the events written after the last wipe")
            for reason, events in self._exempt.items():
                shown = ", ".join(events[:3]) + (
                    f" and {len(events) - 3} more" if len(events) > 3 else ""
                )
                notes.append(f"exempt, {reason}: {shown}")
        if notes:
            return Verdict(name, "held", "; ".join(notes))
        if name == "P8" and self._unordered:
            return Verdict(
                name,
                "held",
                "not applicable to " + ", ".join(self._unordered) + ": order_policy thread",
            )
        return Verdict(name, "held")
