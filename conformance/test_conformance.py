"""P1 and the properties under the Hypothesis conformance machine, and its coverage.

The `ci` profile keeps this run short; `--hypothesis-profile=deep` (or
WANCONFORM_PROFILE=deep) explores for as long as asked.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.machine import Coverage, WanConformance


def test_P1_model_and_impl_agree_and_P2_to_P7_hold() -> None:
    run_state_machine_as_test(WanConformance, settings=settings(stateful_step_count=40))


def test_harness_coverage_every_operation_status_and_outcome_occurs() -> None:
    """Every op kind ran and was skipped, every receiver status and sender outcome occurred."""
    coverage = Coverage()
    machine = type("CoverageRun", (WanConformance,), {"coverage": coverage})
    run_state_machine_as_test(machine, settings=settings(stateful_step_count=40))
    WanConformance.coverage.merge(dict(coverage.counts))
    assert coverage.missing() == []
