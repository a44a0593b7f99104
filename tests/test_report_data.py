"""The report's data (issue 10), not its HTML bytes: verdicts, coverage, groups and the
explained example, from trace files with a planted bug; times masked."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conformance.check import LocalTrace, check_local
from conformance.results import read_results, rows_table, write_results
from reports.render import report_json, write_report
from traces.tracefile import open_trace
from wanconform.cli import main

DATA = Path(__file__).parent / "data" / "report"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"


def local(paths: list[str]) -> list[LocalTrace]:
    sources = [open_trace(path) for path in paths]
    return [LocalTrace(s.name, s.config, list(s.ops()), "report") for s in sources]


def test_report_data_of_planted_r20_bug(tmp_path: Path) -> None:
    paths = [str(DATA / "resend.jsonl"), str(DATA / "dead_letter.jsonl")]
    rows, examples, notes = check_local(local(paths), RESEND)
    report = report_json(write_report(rows, examples, notes, tmp_path / "r.html", RESEND))
    report["generated"] = "<time>"
    report["seconds"] = 0.0
    assert report["traces"] == 2 and report["failing"] == 1
    # resend.jsonl (10 operations) diverges at its 8th, the resend; the check goes on
    # with the model alone for P2-P7 (as `wanconform check`); dead_letter.jsonl has 6.
    assert report["operations"] == 10 + 6
    assert report["profiles"] == ["report"]
    verdicts = {row["property"]: row["cells"][0] for row in report["verdicts"]}
    assert verdicts["P1"] == {"held": 1, "failed": 1, "not_applicable": 0}
    # P7: no sender has dlq_secure in either trace.
    assert verdicts["P7"] == {"held": 0, "failed": 0, "not_applicable": 2}
    coverage = dict(report["coverage"])
    assert coverage["outcome.dlq"] == 1  # x failed once at site 1, dead-lettered (R24)
    assert coverage["outcome.timeout"] == 1 and coverage["op.drop_ack.ran"] == 1
    assert report["dead_lettered"] == 1 and report["dropped"] == 0
    [group] = report["groups"]
    assert group["signature"] == "P1 observations: sent.events_resent"
    assert group["count"] == 1
    example = group["example"]
    # The life of 1:1 in the minimal trace (put a, put b, tick 2000, tick 500), by hand:
    # batch_size 2 sends [1:1, 1:2] at 0 (7 bytes each); at 2000 the ack is overdue
    # (R20), next_retry_at 2500; at 2500 the batch goes again, both flagged (R15).
    assert example["event"] == "1:1"
    assert example["event_life"] == [
        "resend.min.jsonl:2 site 1 wrote 1:1 (create a, [1,0,1]), queued on ny",
        "resend.min.jsonl:3 ny sent batch 1 [1:1, 1:2] (14 bytes full, 0 delta)",
        "resend.min.jsonl:4 ny timed out on batch 1 [1:1, 1:2], will resend them",
        "resend.min.jsonl:5 ny sent batch 2 [1:1, 1:2] (14 bytes full, 0 delta, "
        "2 resent as possible duplicates)",
    ]
    assert example["kept_lines"] == [2, 3, 8, 9]
    assert example["original_operations"] == 10
    assert example["step"].endswith("tick 500 → ny sent batch 2 [1:1, 1:2] (14 bytes full, "
                                    "0 delta, 2 resent as possible duplicates)")  # fmt: skip
    differing = [row for row in example["side"] if row["differs"]]
    assert [(r["path"], r["model"], r["impl"]) for r in differing] == [
        ("observations[0].events_resent", "2", "0")
    ]
    assert "<svg" in example["sequence_svg"] and "timeout batch 1" in example["sequence_svg"]
    assert "first_divergence" in example["pytest"]
    assert [row["trace"] for row in report["rows"]] == paths
    assert report["caps"] == []


def test_report_of_a_directory_without_results_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"wanconform: error: {tmp_path}: not a campaign or results directory (no "
        "results.parquet); give trace files or the directory `wanconform campaign --out` wrote"
    )
    assert not out.exists()


def test_report_of_a_results_directory_equals_the_report_of_its_traces(tmp_path: Path) -> None:
    """A results directory keeps the rows, the impl and the examples: its report is the
    report of the traces it came from, with nothing run again (a results directory
    keeps its rows sorted by trace id, so the traces are given in that order)."""
    paths = [str(DATA / "dead_letter.jsonl"), str(DATA / "resend.jsonl")]
    rows, examples, notes = check_local(local(paths), RESEND)
    direct = report_json(write_report(rows, examples, notes, tmp_path / "a.html", RESEND))
    write_results(tmp_path / "results", rows_table(rows), RESEND, "", list(examples.values()))
    results = read_results(tmp_path)
    assert results.impl == RESEND and set(results.examples) == set(examples)
    again = write_report(
        results.rows, results.examples, results.notes, tmp_path / "b.html", results.impl
    )
    assert report_json(again) | {"generated": ""} == direct | {"generated": ""}


def test_report_is_deterministic_with_source_date_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    outputs = []
    for name in ("a.html", "b.html"):
        path = tmp_path / name
        assert main(["report", str(DATA / "resend.jsonl"), "-o", str(path), "--impl", RESEND]) == 1
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]
    html = outputs[0].decode()
    assert "1970-01-01 00:00:00 UTC" in html
    blob = html.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(blob)["signatures"] == ["P1 observations: sent.events_resent"]
    assert os.path.getsize(tmp_path / "a.html") < 200_000


def test_report_of_10000_traces_stays_under_5_mb_and_says_what_it_cut(tmp_path: Path) -> None:
    """A 10,000-trace campaign: 70 failure signatures (each trace fails P1 with one of
    them) and every row in the table would be 10,000 rows; the caps keep the file small
    and say so."""
    [row], _, _ = check_local(local([str(DATA / "dead_letter.jsonl")]))
    rows: list[dict[str, Any]] = []
    for n in range(10_000):
        failing = copy.deepcopy(row) | {
            "trace_id": f"chaos-{n:06d}",
            "failures": [f"P1 settle observations[].status #{n % 70}"],
        }
        failing["verdicts"]["p1"]["status"] = "failed"
        rows.append(failing)
    path = tmp_path / "r.html"
    report = report_json(write_report(rows, {}, {}, path, "impl:Engine"))
    assert path.stat().st_size < 5_000_000
    assert report["traces"] == 10_000 and report["failing"] == 10_000
    assert len(report["groups"]) == 50
    assert "showing 50 of 70 failure signatures" in report["caps"]
