"""Static topology verification: R22 (forwarding) and R23 (supported topologies).

A topology is the directed graph of senders (edge `site -> remote`, SPEC R23). Whether it
is *supported* is not a question of plain graph reachability: R22 decides hop by hop
whether a receiving site forwards an event, using the event's `recipients` set as it
was received. So this module simulates R22 for one event per origin, forwarding at
*every* arrival, and records the path (the list of sites) of each arrival:

- at the origin `o` (R11) the event goes along every sender of `o`, with
  `recipients = {o} | {remote of every sender at o}`;
- on arrival at site `r` with recipients `R` (the set as received) it goes along every
  sender `g` at `r` with `g.remote != o` and `g.remote not in R`, and the copy carries
  `R | {remote of every sender at r}`.

A topology is supported iff no site is reached along two paths from any origin (R23).

Forwarding at every arrival, rather than only at the first one as the engines do (a
second arrival is a `duplicate` under R16 and is not forwarded), gives the same verdict
and the same reached sites: if no site is reached twice, every arrival is a first
arrival and the engines forward exactly where this simulation does; if some site is
reached twice here, the engines reach it twice too (the arrivals before the first
repeated site are all first arrivals). The property test in `tests/test_topology.py`
checks this against the reference model.

Propagation is finite: the site an event arrives at is always in its recipients set
(every site added to the set was shipped to by the adding site or before it), so a path
never visits a site twice and has at most `len(sites)` elements. The simulation checks
that invariant on every hop rather than trusting it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traces.config import Config
from traces.errors import WanconformError

if TYPE_CHECKING:  # networkx is imported where a graph is made: start-up stays quick
    import networkx as nx

Path = tuple[int, ...]
"""The sites an event passed through, origin first, receiving site last."""

MAX_ARRIVALS_PER_ORIGIN = 200_000
"""Bound on the simulated arrivals of one origin's event.

Paths are simple, but their number can grow exponentially in the number of sites (a
lattice of diamonds). Real WANs are a handful of sites; beyond this bound the analysis
stops with an error instead of running for hours.
"""


class TopologyTooLargeError(WanconformError):
    """The R22 simulation would enumerate more paths than `MAX_ARRIVALS_PER_ORIGIN`."""


@dataclass(frozen=True, slots=True)
class SenderEdge:
    """One sender as an edge of the topology graph."""

    sender: str
    site: int
    remote: int


@dataclass(frozen=True, slots=True)
class Delivery:
    """Every path along which an event written at `origin` arrives at `site` (sorted)."""

    origin: int
    site: int
    paths: tuple[Path, ...]

    @property
    def is_duplicate(self) -> bool:
        """R23: the site receives the same event more than once."""
        return len(self.paths) > 1

    def to_json(self) -> dict[str, Any]:
        return {"origin": self.origin, "site": self.site, "paths": [list(p) for p in self.paths]}


@dataclass(frozen=True, slots=True)
class UnreachablePair:
    """A site that never receives events written at `origin` (no path of senders)."""

    origin: int
    site: int

    def to_json(self) -> dict[str, int]:
        return {"origin": self.origin, "site": self.site}


@dataclass(frozen=True, slots=True)
class TopologyAnalysis:
    """The R22/R23 verdict on one configuration's topology.

    `deliveries` holds one entry per (origin, reached site), sorted by (origin, site);
    the origin itself is not listed (R22 never ships an event back to its origin).
    """

    sites: tuple[int, ...]
    senders: tuple[SenderEdge, ...]
    deliveries: tuple[Delivery, ...]
    unreachable: tuple[UnreachablePair, ...]

    @property
    def duplicates(self) -> tuple[Delivery, ...]:
        """The (origin, site) pairs reached along more than one path, sorted."""
        return tuple(d for d in self.deliveries if d.is_duplicate)

    @property
    def supported(self) -> bool:
        """R23: no site receives an event from any origin along two paths."""
        return not self.duplicates

    def deliveries_from(self, origin: int) -> tuple[Delivery, ...]:
        return tuple(d for d in self.deliveries if d.origin == origin)

    def unreachable_from(self, origin: int) -> tuple[int, ...]:
        return tuple(pair.site for pair in self.unreachable if pair.origin == origin)

    def duplicate_edges(self) -> frozenset[tuple[int, int]]:
        """The (site, remote) hops that lie on some duplicate path (for highlighting)."""
        return frozenset(
            (path[i], path[i + 1])
            for delivery in self.duplicates
            for path in delivery.paths
            for i in range(len(path) - 1)
        )

    def to_json(self) -> dict[str, Any]:
        """The `wanconform topology --json` document."""
        return {
            "supported": self.supported,
            "duplicates": [d.to_json() for d in self.duplicates],
            "unreachable": [pair.to_json() for pair in self.unreachable],
        }


def topology_edges(shape: str, sites: list[int], hub: int = 0) -> list[tuple[int, int]]:
    """The sender edges (site, remote) of a named topology over `sites`."""
    n = len(sites)
    if shape == "pair":
        return [(sites[0], sites[1]), (sites[1], sites[0])]
    if shape == "chain":  # one-way chain: 1 -> 2 -> 3
        return [(sites[i], sites[i + 1]) for i in range(n - 1)]
    if shape == "ring":
        return [(sites[i], sites[(i + 1) % n]) for i in range(n)]
    if shape == "mesh":
        return [(a, b) for a in sites for b in sites if a != b]
    if shape == "star":  # hub-and-spoke, both directions
        centre = sites[hub % n]
        return [e for s in sites if s != centre for e in ((centre, s), (s, centre))]
    if shape == "diamond":  # unsupported (R23): 1->2, 1->3, 2->4, 3->4
        a, b, c, d = sites[:4]
        return [(a, b), (a, c), (b, d), (c, d)]
    raise ValueError(f"unknown topology {shape!r}")


def sender_graph(config: Config) -> nx.DiGraph:
    """The topology as a networkx DiGraph: a node per site, an edge per sender.

    Each edge carries the sender's id as attribute `sender` (R6 allows at most one
    sender per ordered pair of sites, so the graph never needs parallel edges).
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(config.sites)
    for sender in config.senders:
        graph.add_edge(sender.site, sender.remote, sender=sender.id)
    return graph


def _descendants(graph: nx.DiGraph, origin: int) -> set[int]:
    import networkx as nx

    return set(nx.descendants(graph, origin))


def _remotes_at(graph: nx.DiGraph, site: int) -> frozenset[int]:
    return frozenset(graph.successors(site))


def delivery_paths(graph: nx.DiGraph, origin: int) -> dict[int, list[Path]]:
    """Simulate R22 for one event written at `origin`; map each reached site to its paths.

    Arrivals are explored breadth first and every arrival forwards (see the module
    docstring for why that gives the engines' verdict). Paths come out sorted.
    """
    recipients = frozenset({origin}) | _remotes_at(graph, origin)  # R11
    # One pending arrival: the path so far (ending at the receiving site) and the
    # recipients set the event carries on arrival.
    pending: deque[tuple[Path, frozenset[int]]] = deque(
        ((origin, remote), recipients) for remote in sorted(_remotes_at(graph, origin))
    )
    reached: dict[int, list[Path]] = {}
    arrivals = 0
    while pending:
        path, received = pending.popleft()
        site = path[-1]
        arrivals += 1
        if arrivals > MAX_ARRIVALS_PER_ORIGIN:
            raise TopologyTooLargeError(
                f"origin {origin}: more than {MAX_ARRIVALS_PER_ORIGIN} arrivals to enumerate; "
                "the topology is too large for path enumeration"
            )
        _check_arrival_invariant(path, received)
        reached.setdefault(site, []).append(path)
        remotes = _remotes_at(graph, site)
        forwarded = received | remotes  # R22: the set as received, plus remotes at `site`
        for remote in sorted(remotes):
            if remote == origin or remote in received:  # R22: not re-forwarded
                continue
            pending.append(((*path, remote), forwarded))
    return {site: sorted(paths) for site, paths in sorted(reached.items())}


def _check_arrival_invariant(path: Path, received: frozenset[int]) -> None:
    """Every site on the path is in the recipients set, so no path repeats a site.

    This is what keeps R22 propagation finite on cyclic topologies (a ring); a
    violation would be a bug in this module, not in the user's input.
    """
    if len(set(path)) != len(path) or not set(path) <= received:
        raise AssertionError(
            f"R22 invariant broken: path {list(path)} with recipients {sorted(received)}"
        )


def analyse_topology(config: Config) -> TopologyAnalysis:
    """Find every duplicate delivery (R23) and every unreachable (origin, site) pair."""
    graph = sender_graph(config)
    deliveries: list[Delivery] = []
    unreachable: list[UnreachablePair] = []
    for origin in config.sites:
        reached = delivery_paths(graph, origin)
        # Cross-check with plain reachability: R22 suppresses only hops to sites that
        # already have the event, so it must reach exactly the graph's descendants.
        descendants = _descendants(graph, origin)
        if set(reached) != descendants:
            raise AssertionError(
                f"R22 simulation from {origin} reached {sorted(reached)}, "
                f"graph reachability says {sorted(descendants)}"
            )
        for site in config.sites:
            if site == origin:
                continue
            if site in reached:
                deliveries.append(Delivery(origin, site, tuple(reached[site])))
            else:
                unreachable.append(UnreachablePair(origin, site))
    return TopologyAnalysis(
        sites=config.sites,
        senders=tuple(SenderEdge(s.id, s.site, s.remote) for s in config.senders),
        deliveries=tuple(deliveries),
        unreachable=tuple(unreachable),
    )
