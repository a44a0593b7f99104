"""An engine that never settles (issue 31, item 6): each settle that stops at R25's cap is
reported, per trace, in the replay summary, the campaign summary and the report, and
`--settle-cap` sets the cap for both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.spark.campaign import render, summarize
from conformance.spark.check import LocalTrace, check_local
from reports.report_data import build_report
from traces.config import parse_config
from traces.engine import SETTLE_CAP_VARIABLE
from traces.ops import Op, Put, Settle
from traces.tracefile import write_trace
from wanconform.cli import main

NEVER_SETTLES = '''"""A user's engine whose settle always finds one more thing to do."""

from impl import Engine as Impl
from traces.ops import Tick


class Engine(Impl):
    def _settle_next(self):
        return Tick(1)  # R25 is never reached: a tick, and another, to the cap
'''

CONFIG = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
OPS: list[Op] = [Put(1, "k", {"v": 1}), Settle(), Put(1, "j", {"v": 2}), Settle()]


@pytest.fixture
def never_settles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The engine's module and a trace beside it; the cap restored after the test (the
    command line sets it in this process's environment)."""
    monkeypatch.setenv(SETTLE_CAP_VARIABLE, "1000000")
    (tmp_path / "never.py").write_text(NEVER_SETTLES)
    write_trace(tmp_path / "t.jsonl", CONFIG, OPS)
    return tmp_path


def test_replay_reports_the_capped_settle_and_the_cap_is_settable(
    never_settles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(never_settles / "t.jsonl")
    command = ["replay", "--engine", "both", "--impl", "never:Engine", trace]
    assert main([*command, "--settle-cap", "40"]) == 1
    out = capsys.readouterr().out
    # the model settles (a tick to the batch time, deliver, deliver_ack); the engine ticks
    # 1 ms 40 times and stops at the cap: P1 fails there, at the first settle
    assert (
        "P1: FAILED: model and impl (never:Engine) diverge at "
        f'{trace}:3: divergence at {{"op":"settle"}}' in out
    )
    assert (
        "  settle stopped at its cap of 40 inner operations (R25: nothing checked after it "
        "is quiescent; an engine that never settles? --settle-cap sets the cap): impl 1 time\n"
    ) in out
    with pytest.raises(SystemExit) as exit_status:
        main([*command, "--settle-cap", "0"])
    assert exit_status.value.code == 2
    assert "argument --settle-cap: must be at least 1, got 0" in capsys.readouterr().err
    for text, said in (
        ("١٢", "not an integer: '١٢'"),  # digits, but not ASCII ones (as --segment-ops)
        (str(2**70), f"must be at most {2**63 - 1}, got {2**70}"),
    ):
        with pytest.raises(SystemExit):
            main([*command, "--settle-cap", text])
        assert f"argument --settle-cap: {said}" in capsys.readouterr().err


def test_a_campaign_summary_and_report_name_the_traces_whose_settle_stopped_at_the_cap(
    never_settles: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SETTLE_CAP_VARIABLE, "25")
    monkeypatch.syspath_prepend(str(never_settles))
    traces = [LocalTrace(name, CONFIG, list(enumerate(OPS, 2))) for name in ("a", "b", "c", "d")]
    rows, examples, notes = check_local(traces[:2], "never:Engine")
    fine, _, _ = check_local(traces[2:])  # the project's impl settles
    text = render(summarize([*rows, *fine], 1.0))
    assert (
        "  settle stopped at its cap of 25 inner operations (R25: nothing checked after it "
        "is quiescent; an engine that never settles? --settle-cap sets the cap): impl 2 "
        "times in 2 traces (first: a, b)\n"
    ) in text
    report = build_report([*rows, *fine], examples, notes, "never:Engine")
    assert report.capped.endswith("impl 2 times in 2 traces (first: a, b)")
    assert build_report(fine, {}, {}, "impl:Engine").capped == ""


def test_steps_say_a_settle_that_stopped_at_its_cap_did_not_settle_R25(
    never_settles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(never_settles / "t.jsonl")
    assert main(["replay", "--steps", "--settle-cap", "2", trace]) == 0
    out = capsys.readouterr().out
    # R25, by hand: put k at 0 waits for the batch time (1000 ms); the settle's first inner
    # operation ticks 1000 ms (R15 sends batch 1), its second delivers it; the cap is 2
    assert (
        f"{trace}:3 settle → not settled: stopped at its cap of 2 inner operations "
        "(2 observations)\n"
        "    ny sent batch 1 [1:1] (7 bytes full, 0 delta)\n"
        "    site 2 applied 1:1 ok\n"
    ) in out
    assert main(["replay", "--steps", "--settle-cap", "1000000", trace]) == 0  # R25's cap
    out = capsys.readouterr().out
    # the same and its ack: sent, applied, acked
    assert f"{trace}:3 settle → settled (3 observations)\n" in out
    assert "not settled" not in out
