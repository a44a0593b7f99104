"""The properties of SPEC §11 (P2-P7) in one place, for Hypothesis, trace replay and Spark.

`PropertyChecker` follows a run step by step. `after_step` checks what must hold after
every step (P3, P4, P6, P7); `at_quiescence` checks what must hold after `settle` with
every site up (P2, P5). P1 (agreement of two engines) lives in `conformance.agreement`.

Readings where §11 is silent (also in the README):
- A wiped site is a brand-new distributed system (R21): P3 forgets what it applied.
- P6 is checked only until the first wipe: a wiped origin gives out its tags again (R9
  over an empty region, R21), so "the origin's value for the same tag" stops being one
  value, and R16.4's base-tag check can let a delta build on a stale base.
- P2 is checked only on runs without a wipe: a wipe loses the wiped site's queues by
  design (R21), so events in them can neither arrive nor be recorded as dropped.
- "Reachable" (P2, P5) is reachability in the digraph of senders.
- "Superseded" (P2): the site's entry tag is newer than the event's in R16.3's order,
  which is the total order (timestamp, dsid, entry_version), or a newer write of the
  same key was itself dropped or dead-lettered. An event that loses a conflict at an
  intermediate site is not forwarded (R22 forwards only `ok`), so downstream sites see
  only the newer write; when that one is dead-lettered, the older one is accounted for
  by the record of the newer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from conformance.topology import sender_graph
from traces.config import Config
from traces.observations import Observation
from traces.ops import Op, Settle, SiteUp


@dataclass(frozen=True, slots=True)
class Violation:
    property: str  # "P2" .. "P7"
    message: str

    def __str__(self) -> str:
        return f"{self.property}: {self.message}"


def tag_order(tag: Iterable[int]) -> tuple[int, int, int]:
    """R16.3's order as a sort key: timestamp, then dsid, then entry_version."""
    entry_version, timestamp, dsid = tag
    return (timestamp, dsid, entry_version)


def fully_connected(config: Config) -> bool:
    """Does every site reach every other one along senders (P5's precondition)?"""
    return bool(nx.is_strongly_connected(sender_graph(config)))


@dataclass(slots=True)
class _Written:
    origin: int
    key: str
    version: tuple[int, int, int]
    value: Any


@dataclass
class PropertyChecker:
    """Follows one run; `check_p4` is False for unsupported topologies (R23)."""

    config: Config
    check_p4: bool = True
    written: dict[str, _Written] = field(default_factory=dict)
    applied: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    shipped: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(dict))
    lost: set[str] = field(default_factory=set)  # dropped or dead-lettered events
    wiped: bool = False

    def after_step(
        self, op: Op, observations: list[Observation], observe: Callable[[], dict[str, Any]]
    ) -> list[Violation]:
        """Record one step and return the violations it shows: P3, P4 and P6 always, P7
        when a dead letter was written, P2 and P5 after a `settle` that leaves every site
        up. `observe` returns the observable state; it is called only when needed."""
        violations: list[Violation] = []
        if isinstance(op, SiteUp) and op.wipe:
            self.wiped = True
            self.applied[op.site] = set()  # a brand-new distributed system (R21)
        for obs in observations:
            kind = obs["kind"]
            if kind == "enqueued":
                self.written[obs["event"]] = _Written(
                    obs["site"], obs["key"], tuple(obs["version"]), obs["value"]
                )
            elif kind == "applied" and obs["status"] == "ok":
                violations.extend(self._applied(obs))
            elif kind == "sent":
                violations.extend(self._sent(obs))
            elif kind in ("dropped", "dlq"):
                self.lost.add(obs["event"])
                if kind == "dropped" and self.config.sender(obs["sender"]).failure_listener:
                    violations.append(
                        Violation(
                            "P2", f"event {obs['event']} dropped by dlq sender {obs['sender']}"
                        )
                    )
        if any(obs["kind"] == "dlq" for obs in observations):
            violations.extend(self._secure_dead_letters(observe()))
        if isinstance(op, Settle):
            state = observe()
            if all(site["up"] for site in state["sites"].values()):
                violations.extend(self.at_quiescence(state))
        return violations

    def _applied(self, obs: Observation) -> list[Violation]:
        out: list[Violation] = []
        site, event = obs["site"], obs["event"]
        if event in self.applied[site]:  # P3
            out.append(Violation("P3", f"event {event} applied twice at site {site}"))
        self.applied[site].add(event)
        if "value" in obs and not self.wiped:  # P6: a value built from a delta
            origin = self.written.get(event)
            if origin is not None and origin.value != obs["value"]:
                out.append(
                    Violation(
                        "P6",
                        f"event {event} built {obs['value']!r} at site {site} "
                        f"but the origin wrote {origin.value!r}",
                    )
                )
        return out

    def _sent(self, obs: Observation) -> list[Violation]:
        """P4: per event, the senders that shipped it form a tree rooted at its origin."""
        if not self.check_p4:
            return []
        sender = self.config.sender(obs["sender"])
        out: list[Violation] = []
        for event in obs["events"]:
            origin = int(event.split(":")[0])
            into = self.shipped[event]  # receiving site -> sending site
            if sender.remote == origin:
                out.append(Violation("P4", f"event {event} sent back to its origin by {sender.id}"))
            elif into.setdefault(sender.remote, sender.site) != sender.site:
                out.append(
                    Violation(
                        "P4",
                        f"event {event} sent to site {sender.remote} from sites "
                        f"{into[sender.remote]} and {sender.site}",
                    )
                )
            else:
                graph = nx.DiGraph((src, dst) for dst, src in into.items())
                if not nx.is_arborescence(graph) or origin not in graph or graph.in_degree(origin):
                    out.append(Violation("P4", f"event {event}: shipping graph is not a tree"))
        return out

    def _secure_dead_letters(self, state: dict[str, Any]) -> list[Violation]:
        """P7: with dlq_secure, no dead-letter record holds a value."""
        out: list[Violation] = []
        for sender in self.config.senders:
            if sender.dlq_secure:
                for record in state["senders"][sender.id]["dlq"]:
                    if "value" in record:
                        out.append(
                            Violation(
                                "P7",
                                f"secure sender {sender.id} dead-lettered "
                                f"{record['event_id']} with its value",
                            )
                        )
        return out

    def at_quiescence(self, state: dict[str, Any]) -> list[Violation]:
        """P2 and P5, after `settle` with every site up (the caller makes sure of that)."""
        violations: list[Violation] = []
        graph = sender_graph(self.config)
        sites = state["sites"]
        if not self.wiped:
            newest_lost: dict[str, tuple[int, int, int]] = {}  # key -> newest lost tag
            for event in self.lost:
                written = self.written[event]
                order = tag_order(written.version)
                newest_lost[written.key] = max(order, newest_lost.get(written.key, order))
            for event, written in self.written.items():
                if event in self.lost:
                    continue
                order = tag_order(written.version)
                for site in nx.descendants(graph, written.origin):
                    entry = sites[str(site)]["entries"].get(written.key)
                    if (
                        event in self.applied[site]
                        or (entry is not None and tag_order(entry["version"]) > order)
                        or newest_lost.get(written.key, order) > order
                    ):
                        continue
                    violations.append(
                        Violation(
                            "P2",
                            f"event {event} (key {written.key!r}) neither applied nor superseded "
                            f"at site {site}, and not dropped or dead-lettered",
                        )
                    )
        if not self.wiped and not self.lost and fully_connected(self.config):
            first, *others = self.config.sites
            for site in others:
                if sites[str(site)]["entries"] != sites[str(first)]["entries"]:
                    violations.append(
                        Violation("P5", f"sites {first} and {site} hold different entries")
                    )
        return violations
