"""Hypothesis strategies for configurations and operations (SPEC §2, §3, §16.1, §16.2).

v2.0: sites are partitioned (R27) with few buckets or Geode's 113; senders are parallel
where they can be, with 1-5 dispatchers and every valid order policy (R29), sometimes a
queue memory small enough to overflow (R35); writes carry a client thread and network
operations a dispatcher index of their sender.

Topologies are the supported shapes of R23 (pair, chain, ring, mesh, star) plus the
unsupported diamond. Site ids are drawn so that string order and numeric order differ
(e.g. 10 < 9 as strings), which R25's "lowest id means string order" cares about.
Keys, fields and values come from tiny pools so that operations collide on purpose,
mixed (swarm style: each draw picks one kind) with what reaches every branch of the impl's
size code (R4, `impl/state.py`): integers across digit boundaries and signs up to the
64-bit edges (§3), strings with JSON escapes, non-ASCII and astral characters, long
strings and values with many fields; batch size 64 and `putall`s of many keys
(`BULK_KEYS`) give deep queues.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.properties.topology import topology_edges
from traces.config import Config, parse_config
from traces.ops import (
    Deliver,
    DeliverAck,
    Delta,
    Destroy,
    Drop,
    DropAck,
    Fail,
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
)

SUPPORTED_TOPOLOGIES = ("pair", "chain", "ring", "mesh", "star")
KEYS = ("a", "b", "c")
FIELDS = ("x", "y")
EXCEPTIONS = ("LowMemoryException", "CacheWriterException")
SITE_POOL = (1, 2, 9, 10, 23)
BULK_KEYS = tuple(f"k{i}" for i in range(80))
"""Keys of a bulk `putall`: enough events for a queue deeper than a large batch."""
MANY_FIELDS = ("x", "y", "z", "w", "é", "日本", 'q"', "\\", "\n", "\x01", "😀", "f" * 40)
"""Field names of a wide value: escapes, non-ASCII and astral characters count in R4."""
INT_EDGES = (
    *(
        sign * n
        for n in (9, 10, 99, 100, 999, 1000, 9999, 10_000, 99_999, 100_000)
        for sign in (1, -1)
    ),
    10**12,
    -(10**15),
    10**18,
    -(2**63),
    2**63 - 1,
)
"""Integers on each side of a digit boundary, both signs, and the signed 64-bit edges (§3)."""
ESCAPED = ('"', "\\", "a\nb", "\t", "\x01", "\x1f", "\x7f", "\b\f\r", "日本", "😀", 'é😀"\\\n')
"""Strings whose JSON text is longer than their characters (R4 with `ensure_ascii`)."""


@st.composite
def sender_options(draw: st.DrawFn, partitioned: bool = False) -> dict[str, Any]:
    """A sender's settings; `partitioned`: its site's region is (a parallel one may be)."""
    listener = draw(st.sampled_from([None, "dlq", "dlq"]))
    parallel = partitioned and draw(st.booleans())
    dispatchers = draw(st.sampled_from([1, 1, 2, 3, 5]))
    policies = ["key", "partition"] if parallel else ["key", "thread", "partition"]
    return {
        "batch_size": draw(st.one_of(st.integers(1, 4), st.just(64))),
        "batch_time_interval_ms": draw(st.sampled_from([0, 10, 100, 1000])),
        "ack_timeout_ms": draw(st.sampled_from([50, 500, 10000])),
        "retry_interval_ms": draw(st.sampled_from([0, 20, 5000])),
        "delta": draw(st.booleans()),
        "failure_listener": listener,
        "dlq_secure": draw(st.booleans()) if listener else False,
        "parallel": parallel,
        "dispatcher_threads": dispatchers,
        "order_policy": draw(st.sampled_from(policies)),
        # R35: now and then a limit a few events fill (overflow changes nothing observed)
        "maximum_queue_memory_bytes": draw(st.sampled_from([104_857_600] * 3 + [0, 30])),
        "enable_batch_conflation": draw(st.booleans()),  # R32-R34
        "enable_persistence": draw(st.booleans()),  # R36, R37
        "alert_threshold_ms": draw(st.sampled_from([0, 0, 100])),  # R38
        "manual_start": draw(st.sampled_from([False] * 7 + [True])),  # R37
    }


@st.composite
def configs(draw: st.DrawFn, shapes: tuple[str, ...] = SUPPORTED_TOPOLOGIES) -> Config:
    """A valid configuration over one of `shapes`; about half its sites partitioned."""
    shape = draw(st.sampled_from(shapes))
    least = {"pair": 2, "diamond": 4}.get(shape, 2)
    most = {"pair": 2, "diamond": 4, "star": 5}.get(shape, 4)  # a hub of 5: 4 senders
    count = draw(st.integers(least, most))
    sites = draw(st.permutations(SITE_POOL))[:count]
    edges = topology_edges(shape, sites, draw(st.integers(0, count - 1)))
    regions = {
        str(site): {"type": "partition", "total_num_buckets": draw(st.sampled_from([1, 2, 3, 113]))}
        for site in sites
        if draw(st.booleans())
    }
    senders = [
        {
            "id": f"s{site}-{remote}",
            "site": site,
            "remote": remote,
            **draw(sender_options(str(site) in regions)),
        }
        for site, remote in edges
    ]
    receivers = [
        {"site": site, "retry_attempts": draw(st.sampled_from([-1, 0, 0, 1, 2]))} for site in sites
    ]
    return parse_config(
        {"sites": sites, "senders": senders, "receivers": receivers, "regions": regions}
    )


scalars = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["", "v", "é"]),
    st.booleans(),
    st.none(),
    st.sampled_from(INT_EDGES),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(ESCAPED),
    st.text(max_size=6),  # any characters, astral ones included
    st.builds(
        lambda text, times: text * times, st.sampled_from(["v", *ESCAPED]), st.integers(10, 40)
    ),
)
_narrow_values = st.dictionaries(st.sampled_from(FIELDS), scalars, max_size=2)
values = st.one_of(  # one value in four is wide (cost): many fields, escaped names
    _narrow_values,
    _narrow_values,
    _narrow_values,
    st.dictionaries(st.sampled_from(MANY_FIELDS), scalars, min_size=3, max_size=8),
)
bulk_entries = st.lists(st.sampled_from(BULK_KEYS), min_size=65, max_size=80, unique=True).map(
    lambda keys: {key: {"i": index} for index, key in enumerate(keys)}
)
"""The entries of a bulk `putall`: 65 to 80 events at once, a queue deeper than a batch."""


threads = st.sampled_from([0, 0, 1, 2, 3])
"""Client threads (R29's "thread" policy): mostly 0, as in v1.2."""


def operations(config: Config, *, faults: bool = True, wipes: bool = True) -> st.SearchStrategy[Op]:
    """Any well-formed operation on `config`; many will be not enabled (and skipped)."""
    sites = st.sampled_from(config.sites)
    keys = st.sampled_from(KEYS)
    choices: list[st.SearchStrategy[Op]] = [
        st.builds(Put, sites, keys, values, threads),
        st.builds(Delta, sites, keys, values, threads),
        st.builds(Destroy, sites, keys, threads),
        st.builds(PutAll, sites, st.dictionaries(keys, values, max_size=2), threads),
        st.builds(Tick, st.sampled_from([1, 10, 100, 1000, 6000])),
    ]
    if config.senders:
        lanes = st.sampled_from(
            [(s.id, d) for s in config.senders for d in range(s.dispatcher_threads)]
        )
        choices += [
            lanes.map(lambda lane: Deliver(*lane)),
            lanes.map(lambda lane: DeliverAck(*lane)),
        ]
        senders = st.sampled_from([s.id for s in config.senders])
        if faults:
            choices += [lanes.map(lambda lane: Drop(*lane)), lanes.map(lambda lane: DropAck(*lane))]
    if faults:
        choices += [
            st.builds(SiteDown, sites),
            st.builds(SiteUp, sites, st.booleans() if wipes else st.just(False)),
            st.builds(Fail, sites, keys, st.sampled_from(EXCEPTIONS), st.integers(1, 3)),
            st.just(Settle()),
        ]
        if config.senders:
            ids = st.lists(st.from_regex(r"[1-9]:[1-9]", fullmatch=True), max_size=2)
            choices.append(st.builds(Redeliver, senders, st.none() | ids.map(tuple)))
            choices += [  # R36, R37
                st.builds(RestartSender, senders),
                st.builds(StopSender, senders),
                st.builds(StartSender, senders, st.booleans()),
                st.builds(PauseSender, senders),
                st.builds(ResumeSender, senders),
            ]
    return st.one_of(choices)
