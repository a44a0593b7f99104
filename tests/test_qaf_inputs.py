"""Bad input found by a sweep of every command: one line on stderr, exit 2, nothing
written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACE = str(ROOT / "traces" / "examples" / "batching_by_size.jsonl")  # 11 operations


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    return line


def test_bench_ops_beyond_a_list_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # was a traceback: ValueError from islice() deep in steady_workload
    assert main(["bench", "--ops", str(2**70)]) == 2
    assert one_error(capsys) == (f"wanconform: error: --ops: at most {sys.maxsize}, got {2**70}")


def test_bench_segments_of_a_bad_trace_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was a traceback: RuntimeError "model: exit 2: ..." from the first timed run
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["bench", "--segments", str(empty)]) == 2
    assert one_error(capsys) == (
        f'wanconform: error: {empty}:1: empty trace: the first line must be {{"config": {{...}}}}'
    )


def test_replay_checkpoint_onto_its_own_from_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--from ck --checkpoint ck --force` replaced the input checkpoint
    ck = tmp_path / "ck.json"
    assert main(["replay", TRACE, "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    before = ck.read_bytes()
    assert main(["replay", TRACE, "--from", str(ck), "--checkpoint", str(ck), "--force"]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {ck}: is an input, and the output --checkpoint is it; give "
        "the output a path of its own"
    )
    assert ck.read_bytes() == before


def test_a_checkpoint_position_of_true_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `"operations": true` was taken as 1: the state after 11 operations run from the 2nd
    ck = tmp_path / "ck.json"
    assert main(["replay", TRACE, "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    doc = json.loads(ck.read_text())
    doc["position"]["operations"] = True
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["replay", TRACE, "--engine", "both", "--from", str(bad)]) == 2
    assert one_error(capsys) == (
        f"wanconform: error: {bad}: position.operations: True is not an operation count "
        f"of {TRACE} (0..11)"
    )
