"""The property checker's own mechanics (conformance/properties/checker.py)."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from conformance.properties.checker import PropertyChecker
from traces.config import Config, parse_config
from traces.ops import Tick

SITES = [1, 2, 3, 4]
MESH: Config = parse_config(
    {
        "sites": SITES,
        "senders": [
            {"id": f"s{a}-{b}", "site": a, "remote": b} for a in SITES for b in SITES if a != b
        ],
    }
)


def is_tree_rooted_at_origin(edges: set[tuple[int, int]], origin: int) -> bool:
    graph = nx.DiGraph(edges)
    return bool(nx.is_arborescence(graph)) and origin in graph and graph.in_degree(origin) == 0


@given(st.lists(st.sampled_from([s.id for s in MESH.senders]), min_size=1, max_size=12))
def test_P4_edge_by_edge_check_agrees_with_networkx(shippers: list[str]) -> None:
    """Ship event 1:1 along random senders (a resend repeats an edge): the checker's first
    P4 violation comes exactly at the first shipment after which the graph of senders
    that shipped it is no tree rooted at site 1 (networkx's is_arborescence)."""
    checker = PropertyChecker(MESH)
    enqueue = {
        "kind": "enqueued", "site": 1, "event": "1:1", "key": "k", "op": "create",
        "version": [1, 0, 1], "value": {}, "senders": [s.id for s in MESH.senders],
    }  # fmt: skip
    checker.after_step(Tick(1), [enqueue], dict)
    edges: set[tuple[int, int]] = set()
    expected = None
    for index, sender_id in enumerate(shippers):
        sender = MESH.sender(sender_id)
        edges.add((sender.site, sender.remote))
        if expected is None and not is_tree_rooted_at_origin(edges, 1):
            expected = index
    found = None
    for index, sender_id in enumerate(shippers):
        sent = {"kind": "sent", "sender": sender_id, "dispatcher": 0, "batch_id": index + 1,
                "events": ["1:1"], "bytes_full": 2, "bytes_delta": 0,
                "events_resent": 0}  # fmt: skip
        if checker.after_step(Tick(1), [sent], dict) and found is None:
            found = index
    assert found == expected
