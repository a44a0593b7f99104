"""The harness has teeth: each planted bug is found, shrunk and replayable (issue 3).

For every bug of `tools.planted_bugs`, the conformance machine runs with that buggy copy
as the impl; it must fail with a P1 divergence and write the run as a trace file, which
must replay and reproduce the divergence; `conformance.search.shrink` then shrinks it to a short
trace with the same signature (Hypothesis's own shrinking of a stateful run took up to
its five-minute limit on one bug; ddmin on the written trace takes a fraction of a
second), and the real impl agrees with the model on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from counterexamples import counterexample_report
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.running.lockstep import first_divergence
from conformance.search.machine import ConformanceFailure, machine_with_impl
from conformance.search.shrink import find_failure, shrink
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
                phases=[Phase.generate],  # shrinking: conformance.search.shrink below
            ),
        )
    assert f"--impl tools.planted_bugs:{bug.__name__} --steps" in str(failure.value)
    assert machine.last_failure is not None
    _, ops, path = machine.last_failure
    trace = read_trace(path)  # the written counterexample replays ...
    assert trace.ops == tuple(ops)
    failure_found = find_failure(trace.config, trace.ops, bug)
    assert failure_found is not None and failure_found.signature.property == "P1"  # the bug
    shrunk = shrink(trace.config, trace.ops, bug)
    minimal = shrunk.ops(trace.ops)
    assert len(minimal) <= SHORT_TRACE, f"shrunk to {len(minimal)} operations: {minimal}"
    assert shrunk.failure.signature == failure_found.signature
    assert first_divergence(trace.config, minimal, bug) is not None
    assert first_divergence(trace.config, minimal) is None  # the real impl agrees on it
    report = counterexample_report(machine)  # the same report as replay --report
    assert report is not None and report.read_text().startswith("<!DOCTYPE html>")
