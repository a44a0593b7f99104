"""The harness has teeth: each planted bug is found, shrunk and replayable (issue 3).

For every bug of `tools.planted_bugs`, the conformance machine runs with that
buggy copy as the impl; it must fail with a P1 divergence, shrink the run to a short
trace, write that trace, and the written trace must reproduce the divergence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.lockstep import first_divergence
from conformance.machine import ConformanceFailure, counterexample_report, machine_with_impl
from impl import Engine
from tools.planted_bugs import PLANTED_BUGS
from traces.tracefile import read_trace

SHORT_TRACE = 12  # operations, after shrinking


@pytest.mark.parametrize("bug", PLANTED_BUGS, ids=lambda bug: bug.__name__)
def test_planted_bug_is_found_and_shrunk(bug: type[Engine], tmp_path: Path) -> None:
    machine = machine_with_impl(bug, tmp_path)
    with pytest.raises(ConformanceFailure, match="P1") as failure:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=10_000,
                stateful_step_count=20,
                database=None,
                phases=[Phase.generate, Phase.shrink],  # no slow "explain" phase
            ),
        )
    assert f"--impl tools.planted_bugs:{bug.__name__} --steps" in str(failure.value)
    assert machine.last_failure is not None
    _, ops, path = machine.last_failure
    assert len(ops) <= SHORT_TRACE, f"shrunk to {len(ops)} operations: {ops}"
    trace = read_trace(path)  # the written counterexample replays ...
    assert trace.ops == tuple(ops)
    divergence = first_divergence(trace.config, trace.ops, bug)
    assert divergence is not None  # ... and shows the bug
    assert (
        first_divergence(trace.config, trace.ops) is None
    )  # while the real impl agrees with the model on it
    report = counterexample_report(machine)  # the same report as replay --report
    assert report is not None and report.read_text().startswith("<!DOCTYPE html>")
