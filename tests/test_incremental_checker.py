"""Issue 32: the property checker looks at what changed, never at the whole state, and
says exactly what the whole-state checker (tests/whole_state_checker.py, the oracle)
says: every verdict, violation and "not applicable" reason, on the example traces, on
traces of every profile (model, impl and planted bugs), and on the states of an
exhaustive exploration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from whole_state_checker import WholeStateChecker

import conformance.search.explore as explore_module
import impl
from conformance.generation.profiles import PROFILES, generate_trace
from conformance.properties.checker import PropertyChecker, Verdict
from conformance.running.run import run_trace
from conformance.search.explore import Bounds, explore
from tools.planted_bugs import DISPATCHER_BUGS, PLANTED_BUGS
from traces.config import Config
from traces.engine import EngineFactory
from traces.ops import Op
from traces.tracefile import read_trace

EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"


def verdicts(checker: PropertyChecker) -> list[tuple[str, str, str, list[str]]]:
    return [
        (v.property, v.status, v.reason, [str(x) for x in v.violations]) for v in checker.verdicts()
    ]


def both(config: Config, ops: list[Op], engine: str = "model", factory: Any = None) -> None:
    """Run the trace once per checker; the two must say the same."""
    said = []
    for checker in (PropertyChecker(config), WholeStateChecker(config)):
        run_trace(
            "t", config, ((f"t:{i + 2}", op) for i, op in enumerate(ops)),
            engine=engine, impl=factory, checker=checker,
        )  # fmt: skip
        said.append(verdicts(checker))
    assert said[0] == said[1]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_the_examples_get_the_whole_state_verdicts(path: Path) -> None:
    trace = read_trace(path)
    both(trace.config, list(trace.ops))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profile_gets_the_whole_state_verdicts(profile: str) -> None:
    for index in range(6):
        config, stream = generate_trace(32, f"{profile}-{index}", profile, 600)
        both(config, list(stream))


BUGS: list[EngineFactory] = [*PLANTED_BUGS, *DISPATCHER_BUGS]


@pytest.mark.parametrize("bug", BUGS, ids=lambda bug: getattr(bug, "__name__", "impl"))
def test_a_planted_bugs_own_run_gets_the_whole_state_verdicts(bug: EngineFactory) -> None:
    # The bug's engine alone (engine "impl"): its violations, P5's above all, are those
    # of the oracle too. Traces of the profiles that reach the bug.
    failed = 0
    for profile in ("chaos", "parallel", "dlq"):
        for index in range(4):
            config, stream = generate_trace(5, f"{profile}-{index}", profile, 500)
            ops = list(stream)
            both(config, ops, engine="impl", factory=bug)
            checker = PropertyChecker(config)
            run_trace("t", config, ((str(i), op) for i, op in enumerate(ops)),
                      engine="impl", impl=bug, checker=checker)  # fmt: skip
            failed += any(v.status == "failed" for v in checker.verdicts())
    # the comparison is not only of clean runs: these bugs break P2-P12 on their own
    # (the others show only as P1, a difference from the model)
    p1_only = ("ResendWithoutPossibleDuplicate", "LateBatchTime", "DeadLetterWithoutValue")
    assert bool(failed) == (getattr(bug, "__name__", "") not in p1_only)


def test_p5_messages_name_the_first_differing_sites_and_their_keys() -> None:
    # By hand: sites 1, 2, 3 in a mesh; an engine that never applies key "b" at site 3
    # (its receiver drops it silently) leaves b differing between sites 1 and 3 only.
    class LosesB(impl.Engine):
        def _deliver(self, op: Any, out: list[Any]) -> bool:
            done = super()._deliver(op, out)
            site3 = self._sites[3]
            site3.entries.pop("b", None)
            return done

    from traces.config import parse_config
    from traces.ops import Put, Settle

    config = parse_config({
        "sites": [1, 2, 3],
        "senders": [{"id": f"s{a}{b}", "site": a, "remote": b}
                    for a in (1, 2, 3) for b in (1, 2, 3) if a != b],
    })  # fmt: skip
    ops: list[Op] = [Put(1, "a", {"v": 1}), Put(1, "b", {"v": 1}), Settle()]
    checkers = []
    for checker in (PropertyChecker(config), WholeStateChecker(config)):
        run_trace("t", config, ((f"t:{i + 2}", op) for i, op in enumerate(ops)),
                  engine="impl", impl=LosesB, checker=checker)  # fmt: skip
        checkers.append(checker)
    p5 = {c.verdicts()[3].property: c.verdicts()[3] for c in checkers}
    assert list(p5) == ["P5"]
    for checker in checkers:
        (violation,) = checker.verdicts()[3].violations
        assert str(violation) == "t:4: P5: sites 1 and 3 hold different entries for 'b'"


def test_exploration_gets_the_whole_state_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # A mesh of two sites, faults on, two keys: every state to depth 3 (2,331 states; the
    # lifecycle operations make depth 4 21,838, 10x the time), both checkers.
    config = read_trace(EXAMPLES / "site_down_and_back.jsonl").config
    bounds = Bounds(depth=3, keys=2, collect_all=True)
    incremental = explore(config, bounds)
    monkeypatch.setattr(explore_module, "PropertyChecker", WholeStateChecker)
    whole = explore(config, bounds)
    assert incremental.states == whole.states and incremental.transitions == whole.transitions
    assert incremental.found == whole.found


def test_verdict_lists_have_every_property() -> None:
    checker = PropertyChecker(read_trace(EXAMPLES / "lost_ack_resend.jsonl").config)
    assert [v.property for v in checker.verdicts()] == [
        "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12",
    ]  # fmt: skip
    assert all(isinstance(v, Verdict) for v in checker.verdicts())
