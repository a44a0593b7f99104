"""Bad input found by a sweep of every command: one line on stderr, exit 2, nothing
written."""

from __future__ import annotations

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
