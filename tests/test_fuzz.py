"""`make fuzz` (tools/fuzz.py): its judge, and a smoke run of a few hundred inputs.

The smoke run is the million-input run in small: every input kind through the command
line's `main` in two worker processes, and no input may end in a traceback, a hang or
anything but exit 0/1 or one error line with exit 2. A planted hang and a planted crash
check that the watchdog counts them, keeps them and runs the rest of their chunk."""

from __future__ import annotations

import os
import sys
import time
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


def test_every_kind_makes_the_same_input_from_the_same_seed(tmp_path: Path) -> None:
    corpus = fuzz.build_corpus(tmp_path)
    kinds = list(fuzz.KINDS)
    made = [fuzz.make_case(7, index, kinds, corpus) for index in range(200)]
    again = [fuzz.make_case(7, index, kinds, corpus) for index in range(200)]
    assert made == again
    assert {case.kind for case in made} == set(fuzz.KINDS)  # every kind in 200 inputs
    assert made != [fuzz.make_case(8, index, kinds, corpus) for index in range(200)]


def test_smoke_run_no_traceback_no_hang_and_the_watchdog_counts_a_planted_hang_and_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_make, real_run = fuzz.make_case, fuzz.run_case

    def make_case(seed: int, index: int, kinds: Any, corpus: Any) -> fuzz.Case:
        if index in (37, 150):
            return fuzz.Case("trace", {"t.jsonl": b""}, ["hang" if index == 37 else "crash"])
        return real_make(seed, index, kinds, corpus)

    def run_case(case: fuzz.Case, folder: Path, entry: Any = None) -> fuzz.Outcome:
        if case.argv == ["hang"]:
            time.sleep(600)
        if case.argv == ["crash"]:
            os._exit(70)
        return real_run(case, folder, entry)

    monkeypatch.setattr(fuzz, "make_case", make_case)  # inherited by the forked workers
    monkeypatch.setattr(fuzz, "run_case", run_case)
    inputs = 300  # 3 of them Parquet trace sets
    totals = fuzz.run_fuzz(inputs, 5, 2, 3.0, tmp_path, list(fuzz.KINDS), chunk=50)
    assert totals.inputs == inputs
    assert totals.by_kind["trace", "hang"] == 1
    assert totals.by_kind["trace", "crash"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace-crash-150", "trace-hang-37"]
    assert (tmp_path / "trace-hang-37" / "command").read_text() == "hang\n"
    failing = {key: n for key, n in totals.by_kind.items() if key[1] not in fuzz.OUTCOMES_OK}
    assert failing == {("trace", "hang"): 1, ("trace", "crash"): 1}
    for kind in fuzz.KINDS:  # each kind ran, and the mutations are not all rejected
        assert totals.by_kind[kind, "rejected"] + totals.by_kind[kind, "accepted"] > 0
    assert totals.count("rejected") > inputs / 2
    assert totals.count("accepted") > inputs / 10
