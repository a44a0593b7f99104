"""P1 in linear time (conformance/running/lockstep.py) finds what a per-step full comparison finds.

The reference below compares observations *and* the whole observable state after every
operation (the old, quadratic lockstep). `Lockstep` compares the state only on its
schedule and bisects to locate a state-only difference. For bugs whose state difference
persists (every planted bug here), both must name the same first operation.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.running.ahead import possible as ahead_possible
from conformance.running.lockstep import Lockstep, first_divergence, json_differences
from conformance.search.strategies import configs, operations
from impl import Engine
from tools.planted_bugs import PLANTED_BUGS
from traces.canonical import canonical_json
from traces.config import Config, parse_config
from traces.engine import make_engine
from traces.observations import Observation
from traces.ops import Deliver, DeliverAck, Fail, Op, Put, SiteDown, SiteUp, Tick


class SiteDownCountsAFailure(Engine):
    """State only: a site going down adds a connection failure to its senders' counters,
    which no observation shows (R21 says nothing is counted)."""

    def _site_down(self, op: SiteDown, out: list[Observation]) -> bool:
        enabled = super()._site_down(op, out)
        if enabled:
            for sender in self._sites[op.site].senders:
                sender.stats["connection_failures"] += 1
        return enabled


class FailCountsARetry(Engine):
    """State only: injecting a failure (`fail`) counts a retry at the site."""

    def _fail(self, op: Fail, out: list[Observation]) -> bool:
        self._sites[op.site].stats["retries"] += 1
        return super()._fail(op, out)


class WipeKeepsFloor(Engine):
    """State only until the next write: a wipe forgets to raise the timestamp floor (R21)."""

    def _site_up(self, op: SiteUp, out: list[Observation]) -> bool:
        site = self._sites[op.site]
        floor = site.timestamp_floor
        enabled = super()._site_up(op, out)
        site.timestamp_floor = floor
        return enabled


class ForwardedCopyLate(Engine):
    """State only: a duplicate's stats are counted twice."""

    def _deliver(self, op: Deliver, out: list[Observation]) -> bool:
        before = len(out)
        enabled = super()._deliver(op, out)
        duplicates = sum(1 for o in out[before:] if o.get("status") == "duplicate")
        self._senders[op.sender].remote_site.stats["duplicates"] += duplicates
        return enabled


STATE_ONLY_BUGS = (SiteDownCountsAFailure, FailCountsARetry, WipeKeepsFloor, ForwardedCopyLate)


def per_step_reference(config: Config, ops: list[Op], factory: Any) -> tuple[int, str] | None:
    """The old lockstep: compare observations and the whole state after every operation;
    (index, "observations" or "state") of the first difference."""
    model, impl = make_engine("model", config), factory(config)
    for index, op in enumerate(ops):
        model_obs, impl_obs = model.apply(op), impl.apply(op)
        if next(json_differences(model_obs, impl_obs, "observations"), None) is not None:
            return index, "observations"
        if canonical_json(model.observe()) != canonical_json(impl.observe()):
            return index, "state"
    return None


@st.composite
def runs(draw: st.DrawFn) -> tuple[Config, list[Op]]:
    config = draw(configs())
    return config, draw(st.lists(operations(config), min_size=1, max_size=60))


@pytest.mark.parametrize("bug", STATE_ONLY_BUGS + PLANTED_BUGS, ids=lambda bug: bug.__name__)
@pytest.mark.parametrize("state_every", [None, 1, 7])
@pytest.mark.parametrize("replayed", [False, True], ids=["recorded", "replayed"])
@settings(max_examples=12)
@given(run=runs())
def test_P1_lockstep_names_the_same_first_operation_as_a_per_step_comparison(
    bug: type[Engine], state_every: int | None, replayed: bool, run: tuple[Config, list[Op]]
) -> None:
    """`replayed`: the lockstep reads the operations again from a source (as replay and
    check do) instead of recording them."""
    same_first_operation(bug, state_every, "replayed" if replayed else "recorded", run)


@pytest.mark.skipif(not ahead_possible(), reason="a helper needs a second CPU and fork")
@pytest.mark.parametrize("bug", STATE_ONLY_BUGS + PLANTED_BUGS, ids=lambda bug: bug.__name__)
@pytest.mark.parametrize("state_every", [None, 1, 7])
@settings(max_examples=5)
@given(run=runs())
def test_P1_lockstep_ahead_names_the_same_first_operation_as_a_per_step_comparison(
    bug: type[Engine], state_every: int | None, run: tuple[Config, list[Op]]
) -> None:
    """The impl runs ahead in a helper process (conformance/running/ahead.py) that reads the
    operations too: only digests are compared here until one differs."""
    same_first_operation(bug, state_every, "ahead", run)


def same_first_operation(
    bug: type[Engine], state_every: int | None, mode: str, run: tuple[Config, list[Op]]
) -> None:
    config, ops = run
    expected = per_step_reference(config, ops, bug)
    replay = (lambda: iter(ops)) if mode != "recorded" else None
    ahead = replay if mode == "ahead" else None
    lockstep = Lockstep(config, bug, replay=replay, state_every=state_every, ahead=ahead)
    # A helper needs this process to have no other thread *now* (an earlier test in this
    # worker may have left Spark's gateway thread running): without one it runs here.
    assert lockstep.ahead == (mode == "ahead" and ahead_possible())
    for op in ops:
        lockstep.step(op)
        if lockstep.divergence is not None:
            break
    divergence = lockstep.finish()
    if expected is None:
        assert divergence is None
        return
    assert divergence is not None
    index, kind = expected
    assert divergence.index == index
    assert divergence.op == ops[index]
    assert divergence.where == f"operation {index + 1}"
    assert all(d.path.startswith(kind) for d in divergence.differences)


def two_sites() -> Config:
    return parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
    )


def test_P1_state_only_difference_far_from_the_last_comparison_is_located_exactly() -> None:
    """100 writes, then a `fail` (the bug counts a retry: state only), then 100 more:
    with a comparison every 150 operations the difference is seen at the end and the
    bisection names the `fail`, operation index 300 (3 operations per write)."""
    ops: list[Op] = []
    for i in range(100):
        ops += [Put(1, f"k{i}", {"v": i}), Deliver("ny"), DeliverAck("ny")]
    ops.append(Fail(2, "z", "E", 1))
    for i in range(100):
        ops += [Put(1, f"j{i}", {"v": i}), Tick(1)]
    lockstep = Lockstep(two_sites(), FailCountsARetry, state_every=150)
    for position, op in enumerate(ops):
        lockstep.step(op, f"t.jsonl:{position + 2}")
        if lockstep.divergence is not None:
            break
    divergence = lockstep.finish()
    assert divergence is not None
    assert (divergence.index, divergence.where, divergence.op) == (300, "t.jsonl:302", ops[300])
    assert [d.to_json() for d in divergence.differences] == [
        {"path": "state.sites.2.stats.retries", "model": 0, "impl": 1}
    ]


def test_P1_bool_and_int_are_told_apart_in_observations() -> None:
    class TrueForOne(Engine):
        def apply(self, op: Op) -> list[dict[str, Any]]:
            out = super().apply(op)
            for obs in out:
                if obs["kind"] == "enqueued":
                    obs["value"] = {"v": True}
            return out

    divergence = first_divergence(two_sites(), [Put(1, "k", {"v": 1})], TrueForOne)
    assert divergence is not None
    assert [d.to_json() for d in divergence.differences] == [
        {"path": "observations[0].value.v", "model": 1, "impl": True}
    ]
