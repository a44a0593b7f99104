"""`wanconform bench` runs every timing it reports (its figures are measured, never
asserted: only their presence and the workload's size are checked here)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from conformance.bench import round_ratios
from wanconform.cli import main

EXAMPLES = Path(__file__).parent.parent / "traces" / "examples"


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
    assert result["model_conflation_vs_off"] > 0 and result["lockstep_conflation_vs_off"] > 0
    assert result["lockstep_ahead_vs_model"] is None or result["lockstep_ahead_vs_model"] > 0
    # one round: each ratio is that round's
    assert result["ratio_rounds"]["model_parallel_vs_serial"] == [
        result["model_parallel_vs_serial"]
    ]
    assert result["ratio_rounds"]["speedup"] == [result["speedup"]]
    # every field it prints is documented where the command is
    commands = (Path(__file__).parent.parent / "docs" / "COMMANDS.md").read_text()
    assert [field for field in result if f"`{field}`" not in commands] == []


def test_bench_prints_its_workload_with_thousands_separators(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # was "workload: 20000 ops, 19418 client events, 10000 keys", unlike its other lines
    from conformance import bench

    figures: defaultdict[str, Any] = defaultdict(lambda: 1, ops=20_000, events=19_418)
    monkeypatch.setattr(bench, "engines", lambda *args: figures)
    assert main(["bench", "--ops", "20000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "workload: 20,000 ops, 19,418 client events, 10,000 keys"


def test_bench_says_one_run_not_one_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # was "(rates: the best of 1 runs; ratios: the median of the 1 rounds' own, ...)"
    from conformance import bench

    figures: defaultdict[str, Any] = defaultdict(lambda: 1, ops=20_000, events=19_418)
    monkeypatch.setattr(bench, "engines", lambda *args: figures)
    assert main(["bench", "--ops", "20000", "--repeat", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "(rates: the best of 1 run; ratios: the median of the rounds' own, 1 round, each "
        "running every timing once, in turn: --json gives each)"
    )


def test_bench_ratios_are_each_rounds_own() -> None:
    # rounds of 2/1, 4/2 and 3/1 s: 2, 2, 3 (median 2); per event with 1.25 times the
    # events: 1.6, 1.6, 2.4
    assert round_ratios([2.0, 4.0, 3.0], [1.0, 2.0, 1.0]) == [2.0, 2.0, 3.0]
    assert round_ratios([2.0, 4.0, 3.0], [1.0, 2.0, 1.0], 1.25) == [1.6, 1.6, 2.4]


def test_bench_queue_crash_kills_a_real_writer_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A small N; docs/QUEUE_STORE.md ("Crash campaign") records N = 1,000.
    assert main(["bench", "--queue-crash", "20", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kills"] == 20 and 1 <= result["power_loss_trials"] <= 10
    assert result["torn_tails_cut"] == result["power_loss_trials"]  # each with one notice
    assert result["events_appended"] > 0 and result["events_acked"] > 0
    for name in ("lost", "acked_back", "phantoms", "out_of_order", "slots_changed",
                 "updates_lost", "torn_accepted", "unopenable"):  # fmt: skip
        assert result[name] == 0, name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--explore", "1", "--dlq-crash", "1"],
         "bench: --dlq-crash and --explore each measure something else; give one"),
        (["--spark", "--explore", "1"],
         "bench: --spark and --explore each measure something else; give one"),
        (["--ops", "100", "--traces", "3"], "bench: --traces goes with --spark"),
        (["--explore", "1", "--runs", "model"], "bench: --runs goes with --segments"),
        # an option of the engines' timing with a mode that does not read it
        (["--startup", "--ops", "7"],
         "bench: --ops goes with the engines' timing (no mode) or --spark"),
        (["--dlq-crash", "3", "--keys", "4"],
         "bench: --keys goes with the engines' timing (no mode) or --explore"),
        (["--explore", "1", "--repeat", "2"], "bench: --repeat goes with the engines' timing "
         "(no mode) or --queue-throughput or --startup"),
        (["--queue-throughput", "--seed", "2"], "bench: --seed goes with the engines' timing "
         "(no mode) or --spark or --dlq-crash or --queue-crash"),
        # --keys 10000 is no longer taken for "not given" (explore's 2 keys)
        (["--explore", "1", "--keys", "10000"], "--keys: with --explore, 1 to 9, got 10000"),
    ],
)  # fmt: skip
def test_bench_refuses_what_it_would_ignore(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["bench", *argv]) == 2
    assert capsys.readouterr() == ("", f"wanconform: error: {message}\n")


@pytest.mark.parametrize("runs", ["model,", "model,,fast", ""])
def test_bench_segments_refuses_an_empty_run_name(
    capsys: pytest.CaptureFixture[str], runs: str
) -> None:
    from conformance.bench import SEGMENT_RUNS

    trace = str(EXAMPLES / "batching_by_size.jsonl")
    assert main(["bench", "--segments", trace, "--runs", runs]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: --runs: an empty name: choose from {', '.join(SEGMENT_RUNS)}\n",
    )


def test_bench_queue_crash_refuses_no_kills(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--queue-crash", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "wanconform: error: --queue-crash: must be at least 1, got 0\n"


def test_bench_queue_throughput_measures_both_fsync_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "--queue-throughput", "--repeat", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["batch"] == 100 and result["repeat"] == 1
    assert result["events_per_s_fsync"] > 0 and result["events_per_s_no_fsync"] > 0
