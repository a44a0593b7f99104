"""P1-P8 and P12 under the Hypothesis conformance machine, and the coverage of the harness itself.

The `ci` profile runs a fixed, derandomized 1,000 runs of up to 50 steps;
`--hypothesis-profile=deep` (or WANCONFORM_PROFILE=deep, WANCONFORM_EXAMPLES=N)
explores for as long as asked.
"""

from __future__ import annotations

import os

from counterexamples import counterexample_report
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.running.coverage import Coverage
from conformance.search.machine import ConformanceFailure, WanConformance

CI_RUNS = 1000


def test_P1_to_P7_hold_and_every_operation_status_and_outcome_occurs() -> None:
    """Model and impl agree and P2-P12 hold on every run; then the harness's coverage:
    every operation kind ran and was skipped, every receiver status and every sender
    outcome occurred at least once, and some queue grew deeper than a batch of 64 (else
    the harness is not testing what it claims)."""
    coverage = Coverage()
    machine = type("WanConformanceRun", (WanConformance,), {"coverage": coverage})
    runs = max(CI_RUNS, settings().max_examples)  # the deep profile asks for more
    try:
        run_state_machine_as_test(
            machine, settings=settings(max_examples=runs, stateful_step_count=50)
        )
    except ConformanceFailure as failure:
        raise ConformanceFailure(f"{failure}\nreport: {counterexample_report(machine)}") from None
    finally:
        WanConformance.coverage.merge(dict(coverage.counts))  # for the terminal summary
    if os.environ.get("WANCONFORM_PROFILE") == "mutation":
        # `make mutation`: a mutant is killed by a failing run above. Which runs the
        # derandomized machine draws differs between the compiled impl (make test) and
        # the interpreted one mutmut runs, so the coverage below, the harness's own
        # strength under make test, is not asked of it there.
        return
    assert coverage.missing() == []
    assert coverage.counts["queue.deeper_than_64"] > 0  # the widened strategies' deep queues
