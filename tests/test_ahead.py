"""The impl run ahead in a helper process (conformance/running/ahead.py) gives the one-process
lockstep's result: the same divergence at the same operation, or none, the same
exception from an impl that raises, whatever happens to the helper. The property test
of tests/test_lockstep.py runs every planted bug ahead too; here: the cases only a helper
has (it dies, the impl is asked for, the run stops early), and the command line."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from conformance.properties.checker import PropertyChecker, Violation
from conformance.running.ahead import possible
from conformance.running.lockstep import Lockstep
from conformance.running.run import TraceRun
from impl import Engine
from traces.config import Config
from traces.generate import steady_workload
from traces.observations import Observation
from traces.ops import Fail, Op, Put
from traces.tracefile import write_trace
from wanconform.cli import main

pytestmark = pytest.mark.skipif(not possible(), reason="a helper needs a second CPU and fork")


class FailCountsARetry(Engine):
    """State only: injecting a failure (`fail`) counts a retry at the site."""

    def _fail(self, op: Fail, out: list[Observation]) -> bool:
        self._sites[op.site].stats["retries"] += 1
        return super()._fail(op, out)


class RaisesAtFifthPut(Engine):
    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.puts = 0

    def _put(self, op: Put, out: list[Observation]) -> bool:
        self.puts += 1
        if self.puts == 5:
            raise RuntimeError("the fifth put")
        return super()._put(op, out)


def trace_with_fail(writes: int, fail_at: int) -> tuple[Config, list[Op]]:
    """A steady trace with a `fail` at site 2 inserted at index `fail_at` (FailCountsARetry
    differs from the model from there on, in the state only)."""
    config, ops = steady_workload(writes, keys=200, seed=3)
    return config, [*ops[:fail_at], Fail(2, "zz", "E", 1), *ops[fail_at:]]


def run_lockstep(
    config: Config, ops: list[Op], impl: Any, ahead: bool, after: Any = None
) -> tuple[Lockstep, int | None]:
    """Step `ops` in lockstep (ahead or in one process); `after(lockstep, index)` is
    called after each step. The lockstep and the divergence's index."""
    replay = lambda: iter(ops)  # noqa: E731
    lockstep = Lockstep(config, impl, replay=replay, ahead=replay if ahead else None)
    # A helper needs no other thread in this process now (an earlier test in this worker
    # may have left Spark's gateway threads running): without one it runs here.
    assert lockstep.ahead == (ahead and possible())
    for index, op in enumerate(ops):
        lockstep.step(op, f"t.jsonl:{index + 2}")
        if lockstep.divergence is not None:
            break
        if after is not None:
            after(lockstep, index)
    divergence = lockstep.finish()
    assert not lockstep.ahead  # the helper is stopped at the end
    return lockstep, None if divergence is None else divergence.index


def reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_ahead_state_only_difference_located_as_in_one_process() -> None:
    """The `fail` is operation 1,200; the state comparisons are hundreds of operations
    apart: the helper's state digest differs, the impl is brought here and the
    bisection names the `fail`, as in one process."""
    config, ops = trace_with_fail(3000, 1200)
    assert ops[1200] == Fail(2, "zz", "E", 1)
    for ahead in (False, True):
        lockstep, index = run_lockstep(config, ops, FailCountsARetry, ahead)
        assert index == 1200
        assert lockstep.divergence is not None
        assert [d.to_json() for d in lockstep.divergence.differences] == [
            {"path": "state.sites.2.stats.retries", "model": 0, "impl": 1}
        ]


def test_ahead_an_impl_that_raises_diverges_at_the_same_operation() -> None:
    # The impl raising is where it differs (P1), found here whether it ran ahead or not.
    config, ops = steady_workload(40, keys=10, seed=1)
    puts = [i for i, op in enumerate(ops) if isinstance(op, Put)]
    for ahead in (False, True):
        stepped: list[int] = []

        def record(_: Lockstep, index: int, stepped: list[int] = stepped) -> None:
            stepped.append(index)

        lockstep, index = run_lockstep(config, ops, RaisesAtFifthPut, ahead, record)
        assert index == puts[4] and stepped[-1] == puts[4] - 1  # each one before it stepped
        assert lockstep.divergence is not None
        [difference] = lockstep.divergence.differences
        assert difference.path == "observations"
        assert str(difference.impl).startswith("raised RuntimeError: the fifth put")


def test_ahead_helper_killed_mid_run_changes_nothing() -> None:
    """SIGKILL to the helper after 500 operations: the lockstep finds no record where it
    needs one, brings the impl here and goes on: the `fail` at 1,500 is still found."""
    config, ops = trace_with_fail(3000, 1500)
    pids = []

    def kill(lockstep: Lockstep, index: int) -> None:
        if index == 500:
            assert lockstep._ahead is not None
            pids.append(lockstep._ahead.pid)
            os.kill(lockstep._ahead.pid, signal.SIGKILL)

    _, index = run_lockstep(config, ops, FailCountsARetry, True, kill)
    assert index == 1500 and reaped(pids[0])
    config, ops = steady_workload(3000, keys=200, seed=3)
    assert run_lockstep(config, ops, None, True, kill)[1] is None


def test_ahead_the_impl_asked_for_is_brought_here_where_the_lockstep_is() -> None:
    config, ops = steady_workload(2000, keys=200, seed=4)
    asked = []

    def ask(lockstep: Lockstep, index: int) -> None:
        if index == 999:
            assert lockstep.ahead
            asked.append(lockstep.impl.observe() == lockstep.model.observe())
            assert not lockstep.ahead

    assert run_lockstep(config, ops, None, True, ask)[1] is None
    assert asked == [True]


def test_ahead_helper_reaped_when_the_run_stops_early_or_is_dropped() -> None:
    config, ops = steady_workload(2000, keys=200, seed=4)
    replay = lambda: iter(ops)  # noqa: E731
    run = TraceRun("t", config, replay=replay, ahead=replay, properties=False)
    assert run.lockstep is not None and run.lockstep._ahead is not None
    pid = run.lockstep._ahead.pid
    for op in ops[:100]:
        run.step("t", op)
    result = run.finish()  # before the trace's end: the final state compared here
    assert result.divergence is None and result.operations == 100 and reaped(pid)
    lockstep = Lockstep(config, replay=replay, ahead=replay)
    assert lockstep._ahead is not None
    pid = lockstep._ahead.pid
    del lockstep
    assert reaped(pid)


class ViolationAt300(PropertyChecker):
    """P3 said to fail after operation 300 (a stand-in: model and impl agree, so only a
    property can fail while they run in lockstep)."""

    def after_step(self, op: Op, observations: list[Observation], *args: Any) -> list[Violation]:
        self.steps = getattr(self, "steps", 0) + 1
        found = super().after_step(op, observations, *args)
        return [Violation("P3", "planted"), *found] if self.steps == 301 else found


def test_ahead_property_failure_records_the_impl_state_of_that_operation() -> None:
    """A property failing while in lockstep keeps both engines' states at that
    operation: the impl's, brought here from the helper, is the one-process run's."""

    def run(ahead: bool) -> Any:
        config, ops = steady_workload(600, keys=50, seed=5)
        replay = lambda: iter(ops)  # noqa: E731
        trace = TraceRun(
            "t",
            config,
            replay=replay,
            ahead=replay if ahead else None,
            checker=ViolationAt300(config),
        )
        assert trace.lockstep is not None and trace.lockstep.ahead == ahead
        for index, op in enumerate(ops):
            trace.step(f"t:{index}", op)
        return trace.finish()

    one, two = run(False), run(True)
    assert one.failure is not None and one.failure.index == 300
    assert one.failure == two.failure and one.state == two.state
    assert one.failure_states is not None and one.failure_states == two.failure_states
    assert one.failure_states[0] == one.failure_states[1]  # they agree: P1 held


def write_failretry(folder: Path) -> str:
    (folder / "failretry.py").write_text(
        "from impl import Engine as Base\n\n\n"
        "class Engine(Base):\n"
        "    def _fail(self, op, out):\n"
        "        self._sites[op.site].stats['retries'] += 1\n"
        "        return super()._fail(op, out)\n"
    )
    return "failretry:Engine"


def test_cli_replay_engine_both_ahead_prints_what_one_process_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 3,201-operation trace whose `fail` (line 3,002) only the state shows, run whole
    and from a checkpoint at operation 1,000: with and without --one-process the same
    lines, naming the `fail`'s line. The threshold for running ahead is lowered from
    AHEAD_OPERATIONS (20,000) to 2,000, so that the helper runs here (and the test is
    quick)."""
    import conformance.running.lockstep
    from conformance.running.ahead import Ahead

    monkeypatch.setattr("conformance.running.ahead.AHEAD_OPERATIONS", 2_000)
    helpers: list[int] = []  # how many helpers the runs without --one-process started

    class Counted(Ahead):
        def __init__(self, *args: Any) -> None:
            helpers.append(1)
            super().__init__(*args)

    monkeypatch.setattr(conformance.running.lockstep, "Ahead", Counted)
    config, ops = trace_with_fail(3_200, 3_000)
    assert len(ops) - 1_000 >= 2_000
    trace, half = tmp_path / "t.jsonl", tmp_path / "half.jsonl"
    write_trace(trace, config, ops)
    write_trace(half, config, ops[:1_000])
    checkpoint = tmp_path / "c.json"
    assert main(["replay", str(half), "--engine", "both", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    spec = write_failretry(tmp_path)
    for start in ([], ["--from", str(checkpoint)]):
        printed = {}
        for mode in ([], ["--one-process"]):
            argv = ["replay", str(trace), "--engine", "both", "--impl", spec, "--json"]
            assert main(argv + start + mode) == 1
            printed[bool(mode)] = capsys.readouterr().out
        assert printed[False] == printed[True]
        assert len(helpers) == (1 if possible() else 0)  # --one-process starts none
        helpers.clear()
        divergence = json.loads(printed[True])["divergence"]
        assert divergence["where"] == f"{trace}:3002" and divergence["op"]["op"] == "fail"
    for mode in ([], ["--one-process"]):
        assert main(["replay", str(trace), "--engine", "both", *mode]) == 0
        printed[bool(mode)] = capsys.readouterr().out
    assert printed[False] == printed[True]
    assert "P1: held" in printed[False]


class KeysReversed(Engine):
    """Equal observations, each written with its keys in reverse order from the tenth
    operation on: not a divergence (key order is not observable), only another text."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.applied = 0

    def apply(self, op: Op) -> list[Observation]:
        self.applied += 1
        observations = super().apply(op)
        if self.applied < 10:
            return observations
        return [dict(reversed(list(o.items()))) for o in observations]


def test_ahead_keys_in_another_order_are_not_a_divergence() -> None:
    """A step's record holds the impl's text, keys as it wrote them: at the tenth operation
    the model's text differs, the impl is brought here and compared exactly (no
    divergence, as in one process), and the run goes on in this process from there."""
    config, ops = steady_workload(300, keys=20, seed=2)
    for ahead in (False, True):
        ahead_after: list[bool] = []

        def record(lockstep: Lockstep, _: int, ahead_after: list[bool] = ahead_after) -> None:
            ahead_after.append(lockstep.ahead)

        index = run_lockstep(config, ops, KeysReversed, ahead, record)[1]
        assert index is None
        assert ahead_after[:9] == [ahead] * 9  # the first nine texts are the model's
        assert ahead_after[9:] == [False] * (len(ops) - 9)
