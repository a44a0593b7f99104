"""`make fuzz` (tools/fuzz.py): its judge, and a smoke run of a few hundred inputs.

The smoke run is the million-input run in small: every input kind through the command
line's `main` in two worker processes, and no input may end in a traceback, a hang or
anything but exit 0/1 or one error line with exit 2. A planted hang and a planted crash
check that the watchdog counts them, keeps them and runs the rest of their chunk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tools import fuzz


def entry(printing: str, code: int = 2, stdout: str = "", leave: str = "") -> Any:
    def run(argv: list[str]) -> int:
        print(printing, file=sys.stderr, end="")
        print(stdout, end="")
        if leave:
            Path(leave).write_text("x")
        return code

    return run


def raises(argv: list[str]) -> int:
    raise KeyError("event_id")


def prints_a_surrogate(argv: list[str]) -> int:
    print("key \ud800")  # a terminal's stdout is strict UTF-8: UnicodeEncodeError
    return 0


@pytest.mark.parametrize(
    ("run", "outcome"),
    [(entry("wanconform: error: t.jsonl:2: ms: must be an integer\n"), "rejected"),
     (entry("wanconform: warning: x\nwanconform: error: y\n"), "not-one-line"),
     (entry("", code=0, stdout="fine\n"), "accepted"),
     (entry("", code=1), "accepted"),
     (raises, "traceback"),
     (prints_a_surrogate, "traceback"),
     (entry("Traceback (most recent call last):\n", code=1), "traceback"),
     (entry("wanconform: error: a\rb\n"), "not-one-line"),
     (entry("wanconform: error: a\nmore\n"), "not-one-line"),
     (entry(""), "not-one-line"),
     (entry("wanconform: error: a\n", stdout="half a summary\n"), "output-on-error"),
     (entry("wanconform: error: a\n", leave="out.json"), "left-behind"),
     (entry("", code=3), "bad-exit")],
)  # fmt: skip
def test_judge_names_each_outcome(tmp_path: Path, run: Any, outcome: str) -> None:
    case = fuzz.Case("trace", {"t.jsonl": b"{}\n"}, ["replay", "t.jsonl"])
    assert fuzz.run_case(case, tmp_path / "input", run).outcome == outcome
    assert os.getcwd() != str(tmp_path / "input")


def test_every_kind_makes_the_same_input_from_the_same_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = fuzz.build_corpus(tmp_path)
    assert capsys.readouterr() == ("", "")  # each worker builds one: it says nothing
    kinds = list(fuzz.KINDS)
    made = [fuzz.make_case(7, index, kinds, corpus) for index in range(200)]
    again = [fuzz.make_case(7, index, kinds, corpus) for index in range(200)]
    assert made == again
    assert {case.kind for case in made} == set(fuzz.KINDS)  # every kind in 200 inputs
    assert made != [fuzz.make_case(8, index, kinds, corpus) for index in range(200)]


SMOKE = """
import json, os, sys, time
from pathlib import Path
from tools import fuzz

real_make, real_run = fuzz.make_case, fuzz.run_case

def make_case(seed, index, kinds, corpus):
    if index in (37, 150):
        return fuzz.Case("trace", {"t.jsonl": b""}, ["hang" if index == 37 else "crash"])
    return real_make(seed, index, kinds, corpus)

def run_case(case, folder, entry=None):
    if case.argv == ["hang"]:
        time.sleep(600)
    if case.argv == ["crash"]:
        os._exit(70)
    return real_run(case, folder, entry)

fuzz.make_case, fuzz.run_case = make_case, run_case  # inherited by the forked workers
totals = fuzz.run_fuzz(int(sys.argv[2]), 5, 2, 3.0, Path(sys.argv[1]), list(fuzz.KINDS), chunk=50)
print(json.dumps([[kind, outcome, n] for (kind, outcome), n in totals.by_kind.items()]))
"""


def test_smoke_run_no_traceback_no_hang_and_the_watchdog_counts_a_planted_hang_and_crash(
    tmp_path: Path,
) -> None:
    # In its own interpreter, as `make fuzz` runs: the workers are forked, and a pytest
    # worker may hold a Spark session's threads, which a forked child must not inherit.
    inputs = 300  # 3 of them Parquet trace sets
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", SMOKE, str(out), str(inputs)],
        cwd=fuzz.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    by_kind = Counter({(kind, outcome): n for kind, outcome, n in json.loads(done.stdout)})
    assert sum(by_kind.values()) == inputs
    assert by_kind["trace", "hang"] == 1
    assert by_kind["trace", "crash"] == 1
    assert sorted(p.name for p in out.iterdir()) == ["trace-crash-150", "trace-hang-37"]
    assert (out / "trace-hang-37" / "command").read_text() == "hang\n"
    failing = {key: n for key, n in by_kind.items() if key[1] not in fuzz.OUTCOMES_OK}
    assert failing == {("trace", "hang"): 1, ("trace", "crash"): 1}
    for kind in fuzz.KINDS:  # each kind ran, and the mutations are not all rejected
        assert by_kind[kind, "rejected"] + by_kind[kind, "accepted"] > 0
    rejected = sum(n for (_, outcome), n in by_kind.items() if outcome == "rejected")
    accepted = sum(n for (_, outcome), n in by_kind.items() if outcome == "accepted")
    assert rejected > inputs / 2
    assert accepted > inputs / 10


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "0"], "argument --workers: must be at least 1, got 0"),  # waited forever
        (["--inputs", "-5"], "argument --inputs: must be at least 1, got -5"),
        (["--timeout", "0"], "argument --timeout: must be more than 0, got 0"),
        (["--only", "x"], "argument --only: not an integer: 'x'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_wrong_command_line_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        fuzz.main(argv)
    assert exit_.value.code == 2
    prog = "python -m tools.fuzz"
    assert capsys.readouterr() == ("", f"{prog}: error: {message} (see: {prog} --help)\n")
