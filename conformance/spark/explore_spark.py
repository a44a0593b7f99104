"""Exhaustive exploration on Spark (`wanconform explore --master URL`): level-synchronous BFS.

Each level is one Spark job. The frontier is an RDD of nodes `(rank, path)` partitioned
by the hash of their states' digests; executors rebuild each node's state and property
checker from its path (`Expander.replay`: a few steps, where shipping states and
checkers cost several times the expansion itself, in pickling and in the shuffle's
spills) and expand it with the same `conformance.search.explore.Expander` as the local search.
Successors are keyed by their digest and deduplicated by a shuffle on it
(`reduceByKey`, keeping the smallest rank), then by `subtractByKey` against the visited
digests (an RDD partitioned the same way). The survivors are the next frontier, already
partitioned by state hash.

A node's rank is the tuple of the positions of its path's operations in their states'
sequences of operations tried: the local search discovers states in exactly the
lexicographic order of these tuples (a level in its parents' order, each parent's
operations in order), so keeping the smallest rank keeps the local search's path, and
the smallest violating rank is the local search's first counterexample. With the
figures counted by complete levels (`conformance.search.explore.explore`), the counts, the
coverage and the counterexample are the local ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from conformance.search.explore import (
    Bounds,
    Expander,
    ExploreResult,
    Found,
    Tally,
)
from model import initial_state
from traces.config import Config
from traces.engine import load_impl

Rank = tuple[int, ...]


def _hashable(key: bytes) -> int:
    """A digest as an int: Spark partitions keys by Python's hash, which for bytes
    changes from process to process (an int's does not)."""
    return int.from_bytes(key, "big")


def _expander(config: Config, bounds: Bounds, impl_spec: str | None) -> Expander:
    impl = None if impl_spec is None else load_impl(impl_spec)
    return Expander(config, bounds, impl)


def explore_on_spark(
    spark: Any,
    config: Config,
    bounds: Bounds,
    impl_spec: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> ExploreResult:
    """The search of `conformance.search.explore.explore`, one Spark job per level."""
    from conformance.spark.glue import parallelism, ship_impl

    started = time.perf_counter()
    ship_impl(spark, impl_spec)
    context = spark.sparkContext
    parts = parallelism(spark)
    local = _expander(config, bounds, None)
    root = initial_state(config)
    root_key, root_plain = map(_hashable, local.key_of(root))
    frontier = context.parallelize([(root_key, ((), ()))], parts).partitionBy(parts)
    visited = context.parallelize([(root_key, None)], parts).partitionBy(parts)
    concrete = context.parallelize([root_plain], parts)
    total = Tally()
    first_depth: dict[str, int] = {}
    found: list[Found] = []
    levels = [1]
    states = 1
    capped = stopped = False
    depth = 0

    def expand(nodes: Iterator[tuple[int, Any]]) -> Iterator[tuple[str, Any]]:
        expander = _expander(config, bounds, impl_spec)
        for _, (rank, path) in nodes:
            expansion = expander.expand(path, *expander.replay(path))
            found_here = [((*rank, position), f) for position, f in expansion.found]
            yield ("tally", (expansion.tally, found_here))
            for s in expansion.successors:
                node = ((*rank, s.position), (*path, s.op))
                yield ("next", (_hashable(s.key), _hashable(s.concrete), node))

    while depth < bounds.depth and not frontier.isEmpty():
        expanded = frontier.mapPartitions(expand).persist()
        level = Tally()
        level_found: list[tuple[Rank, Found]] = []
        for tally, found_here in expanded.filter(lambda r: r[0] == "tally").values().collect():
            level.add(tally)
            level_found += found_here
        level_found.sort(key=lambda item: item[0])
        if level_found and not bounds.collect_all:
            found.append(level_found[0][1])
            stopped = True
            break
        found += [f for _, f in level_found]
        successors = expanded.filter(lambda r: r[0] == "next").values()
        best = successors.map(lambda s: (s[0], s[2])).reduceByKey(
            lambda a, b: a if a[0] <= b[0] else b, parts
        )
        new = best.subtractByKey(visited, parts).persist()
        count = new.count()
        expanded.unpersist()
        if states + count > bounds.max_states:
            capped = True
            break
        depth += 1
        states += count
        total.add(level)
        if bounds.symmetry:
            concrete = concrete.union(successors.map(lambda s: s[1])).distinct(parts)
            concrete.persist().localCheckpoint()
        visited = visited.union(new.mapValues(lambda _: None)).partitionBy(parts)
        visited.persist().localCheckpoint()
        for item, number in level.counts.items():
            if number:
                first_depth.setdefault(item, depth)
        if count:
            levels.append(count)
        frontier = new
        if progress is not None:
            progress(depth, states, total.transitions)
    if not (capped or stopped) and depth == bounds.depth:

        def settle(
            nodes: Iterator[tuple[int, Any]],
        ) -> Iterator[tuple[Rank, Found | None, Tally]]:
            expander = _expander(config, bounds, impl_spec)
            for _, (rank, path) in nodes:
                tally = Tally()
                check = expander.settle_check(path, *expander.replay(path), tally)
                yield (rank, check, tally)

        checks = sorted(frontier.mapPartitions(settle).collect(), key=lambda item: item[0])
        for _, _, tally in checks:
            total.add(tally)
        violations = [check for _, check, _ in checks if check is not None]
        found += violations if bounds.collect_all else violations[:1]
    return ExploreResult(
        depth=bounds.depth,
        depth_reached=len(levels) - 1,
        levels=levels,
        states=states,
        transitions=total.transitions,
        skipped=total.skipped,
        seconds=time.perf_counter() - started,
        capped=capped,
        covered_depth=bounds.depth if not (capped or stopped) else depth,
        coverage=dict(total.counts),
        first_depth=first_depth,
        found=found,
        alphabet=len(local.fixed),
        concrete=concrete.count() if bounds.symmetry else 0,
        step_seconds=total.step_seconds,
        settle_checks=total.settle_checks,
    )
