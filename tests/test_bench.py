"""`wanconform bench` runs every timing it reports (its figures are measured, never
asserted: only their presence and the workload's size are checked here)."""

from __future__ import annotations

import json

import pytest

from wanconform.cli import main


def test_bench_times_engines_lockstep_and_reading(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--ops", "3000", "--keys", "500", "--repeat", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ops"] == 3000
    for field in (
        "model_events_per_s",
        "impl_events_per_s",
        "lockstep_events_per_s",
        "read_canonical_ops_per_s",
        "read_plain_ops_per_s",
    ):
        assert result[field] > 0, field
    assert result["lockstep_vs_model"] > 0
    assert result["lockstep_ahead_vs_model"] is None or result["lockstep_ahead_vs_model"] > 0
