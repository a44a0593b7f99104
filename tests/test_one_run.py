"""One run of a trace, one result (issue 15): the defects of the crooked path, fixed.

- `replay --report` reads its trace twice: to validate it, then one run (the report
  and its examples come from that run, the examples shrink the operations it kept).
- `replay` and `report` give the same verdicts on the same trace and impl: after a
  divergence both run the model on alone, so P2-P12 cover the whole trace.
- every summary states P1, and says where the impl stopped.
Expected values are derived by hand from SPEC v1.1 and the traces.
"""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.check import LocalTrace, check_local
from traces.tracefile import open_trace
from wanconform.cli import main

DATA = Path(__file__).parent / "data" / "report"
EXAMPLES = Path(__file__).resolve().parent.parent / "traces" / "examples"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"


def test_replay_report_reads_its_trace_at_most_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "resend.jsonl"
    trace.write_bytes((DATA / "resend.jsonl").read_bytes())
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and os.path.abspath(file) == str(trace):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    html = tmp_path / "r.html"
    argv = ["replay", str(trace), "--engine", "both", "--impl", RESEND, "--report", str(html)]
    assert main(argv) == 1
    assert len(opened) == 2  # validation, then the one run
    page = html.read_text()
    # The example (shrunk from the kept operations) is there, with the run's impl.
    assert "P1 observations: sent.events_resent" in page and RESEND in page
    assert "no example" not in page
    assert capsys.readouterr().err.splitlines()[-1] == f"wanconform: wrote {html}"


def verdicts_of_replay(path: str, impl: str, capsys: pytest.CaptureFixture[str]) -> Any:
    argv = ["replay", path, "--engine", "both", "--impl", impl, "--check-properties", "--json"]
    assert main(argv) == 1
    return json.loads(capsys.readouterr().out)


def test_replay_and_report_give_the_same_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    """resend.jsonl diverges at line 9 (the resend without possible_duplicate, R20): the
    model goes on to line 11, the last, in both, so P3 holds in both (1:1 and 1:2 are
    applied once at site 2 at line 5, their resends at line 10 are duplicates)."""
    path = str(DATA / "resend.jsonl")
    document = verdicts_of_replay(path, RESEND, capsys)
    assert document["operations"] == 10
    assert document["p1"]["status"] == "failed"
    assert document["stopped"].startswith(f"the impl stopped at {path}:9 (P1)")
    source = open_trace(path)
    [row], _, _ = check_local([LocalTrace(path, source.config, list(source.ops()))], RESEND)
    from_report = {
        name.upper(): (verdict["status"], verdict["reason"])
        for name, verdict in row["verdicts"].items()
        if name != "p1"
    }
    from_replay = {
        name: (verdict["status"], verdict["reason"])
        for name, verdict in document["properties"].items()
    }
    assert from_replay == from_report
    assert from_replay["P3"] == ("held", "")
    assert row["operations"] == document["operations"] == 10


def test_every_replay_summary_states_P1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agreeing = str(EXAMPLES / "batching_by_size.jsonl")
    assert main(["replay", agreeing, "--engine", "both"]) == 0
    assert "  P1: held (model and impl:Engine agree at every step)" in capsys.readouterr().out
    assert main(["replay", agreeing]) == 0
    assert (
        "  P1: not applicable: only the model ran (--engine both compares the two)"
        in capsys.readouterr().out
    )
    path = str(DATA / "resend.jsonl")
    assert main(["replay", path, "--engine", "both", "--impl", RESEND]) == 1
    out = capsys.readouterr().out.splitlines()
    # All 10 operations ran (the model to the end): time 2000 + 500 ms, and the
    # summary says where the impl stopped.
    assert out[0] == f"{path}: 10 operations (0 skipped), time 2500 ms"
    assert f"  P1: FAILED: model and impl ({RESEND}) diverge at {path}:9: divergence at " in (
        "\n".join(out)
    )
    assert (
        f"  the impl stopped at {path}:9 (P1); the model ran on alone to the end, so P2-P12 "
        "and the state below are the model's"
    ) in out
