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


def test_P4_checked_on_nothing_is_not_applicable() -> None:
    """Issue 31 item 4: a property checked on nothing is "not applicable". Site 2 is down
    from the start, so ny never ships the write (R21: no connection) and P4 has no edge
    to check; once site 2 is back and the write shipped (batch_size 1), P4 holds."""
    import model
    from traces.ops import Op, Put, Settle, SiteDown, SiteUp

    config = parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
    )

    def p4(ops: list[Op]) -> tuple[str, str]:
        engine, checker = model.Engine(config), PropertyChecker(config)
        for op in ops:
            checker.after_step(op, engine.apply(op), engine.observe)
        checker.finish(engine.observe())
        [verdict] = [v for v in checker.verdicts() if v.property == "P4"]
        return verdict.status, verdict.reason

    down: list[Op] = [SiteDown(2), Put(1, "a", {"v": 1}), Tick(1000)]
    assert p4(down) == ("not applicable", "no event was shipped")
    assert p4([*down, SiteUp(2), Settle()]) == ("held", "")


def test_P2_after_a_wipe_with_nothing_written_since_is_not_applicable() -> None:
    """Issue 31 item 4: P2 is checked on the events written after the last wipe (a
    reading, README); a settle that checked events before the wipe does not make it
    "held" on none. Written after it and settled: held again."""
    import model
    from traces.ops import Op, Put, Settle, SiteDown, SiteUp

    config = parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
    )

    def p2(ops: list[Op]) -> tuple[str, str]:
        engine, checker = model.Engine(config), PropertyChecker(config)
        for index, op in enumerate(ops):
            checker.after_step(op, engine.apply(op), engine.observe, f"t:{index + 2}")
        checker.finish(engine.observe())
        [verdict] = [v for v in checker.verdicts() if v.property == "P2"]
        return verdict.status, verdict.reason

    wiped: list[Op] = [Put(1, "a", {"v": 1}), Settle(), SiteDown(1), SiteUp(1, wipe=True), Settle()]
    assert p2(wiped[:2]) == ("held", "")
    assert p2(wiped) == (
        "not applicable",
        "no event written after the last wipe was checked at a settle with every site up "
        "(site 1 was wiped at t:5)",
    )
    assert p2([*wiped, Put(1, "b", {"v": 2}), Settle()])[0] == "held"
