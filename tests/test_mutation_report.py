"""`make mutation`'s score (tools/mutation_report.py) on made-up mutmut verdicts."""

from __future__ import annotations

import pytest

from tools import mutation_report
from tools.mutation_report import report, verdicts


def test_verdicts_reads_mutmuts_result_lines() -> None:
    text = "    impl.a.x_f__mutmut_1: killed\n    impl.a.x_f__mutmut_2: survived\nnoise\n"
    assert verdicts(text) == {"impl.a.x_f__mutmut_1": "killed", "impl.a.x_f__mutmut_2": "survived"}


def test_score_leaves_out_equivalents_counts_timeouts_as_killed_and_names_stale_listings() -> None:
    results = {
        "m1": "killed",
        "m2": "timeout",
        "m3": "survived",  # listed: equivalent
        "m4": "survived",  # a real survivor
        "m5": "killed",  # listed, but killed: stale, scored as killed
        "m6": "not checked",
        "m7": "no tests",  # counts as survived
    }
    listed = {"m3": "why", "m5": "why", "gone": "not a mutant any more"}
    score, survivors, summary = report(results, listed)
    assert survivors == ["m4", "m7"]
    assert score == 60.0  # killed m1, m2, m5 of m1, m2, m4, m5, m7
    assert "score: 3 of 5 non-equivalent mutants killed = 60.0%" in summary
    assert "listed as equivalent (mutation-equivalents.txt): 1\n" in summary
    assert "take them off the list): m5\n" in summary


def test_no_mutant_checked_is_no_score(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        mutation_report, "mutmut", lambda *args: "impl.a.x__mutmut_1: not checked\n"
    )
    assert mutation_report.main([]) == 2
    assert capsys.readouterr() == (
        "",
        "mutation_report: no mutant checked: run `make mutation` first\n",
    )
