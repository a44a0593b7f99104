"""The report's data (issue 10), not its HTML bytes: verdicts, coverage, groups and the
explained example, from trace files with a planted bug; times masked."""

from __future__ import annotations

import copy
import html
import json
import os
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.check import LocalTrace, check_local
from conformance.spark.results import read_results, rows_table, write_results
from reports.render import report_json, write_report
from reports.sequence_svg import LABEL_CHARS, render_sequence_svg, sequence_diagram
from traces.config import parse_config
from traces.ops import parse_op
from traces.tracefile import open_trace
from wanconform.cli import main

DATA = Path(__file__).parent / "data" / "report"
RESEND = "tools.planted_bugs:ResendWithoutPossibleDuplicate"
SVG = "{http://www.w3.org/2000/svg}"


def local(paths: list[str]) -> list[LocalTrace]:
    sources = [open_trace(path) for path in paths]
    return [LocalTrace(s.name, s.config, list(s.ops()), "report") for s in sources]


def test_report_data_of_planted_r20_bug(tmp_path: Path) -> None:
    paths = [str(DATA / "resend.jsonl"), str(DATA / "dead_letter.jsonl")]
    rows, examples, notes = check_local(local(paths), RESEND)
    report = report_json(write_report(rows, examples, notes, tmp_path / "r.html", RESEND))
    # one page, several drawings: each element id once, each reference to one that exists
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)) and set(re.findall(r"url\(#([^)]+)\)", page)) <= set(ids)
    assert 'id="example-0-head"' in page and "url(#topology-1-head)" in page
    report["generated"] = "<time>"
    report["seconds"] = 0.0
    assert report["traces"] == 2 and report["failing"] == 1
    # resend.jsonl (10 operations) diverges at its 8th, the resend; the check goes on
    # with the model alone for P2-P12 (as `wanconform check`); dead_letter.jsonl has 6.
    assert report["operations"] == 10 + 6
    assert report["profiles"] == ["report"]
    verdicts = {row["property"]: row["cells"][0] for row in report["verdicts"]}
    assert verdicts["P1"] == {"held": 1, "failed": 1, "not_applicable": 0, "reasons": []}
    # P7: no sender has dlq_secure in either trace.
    assert verdicts["P7"] == {
        "held": 0, "failed": 0, "not_applicable": 2,
        "reasons": [["no sender has dlq_secure", 2]],
    }  # fmt: skip
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


def test_without_javascript_the_trace_table_says_what_is_missing(tmp_path: Path) -> None:
    # the trace table is drawn by the page's script; a viewer without JavaScript (a mail
    # preview, a locked-down browser) is told so where the table would be
    report = tmp_path / "report.html"
    assert main(["report", str(DATA / "resend.jsonl"), "-o", str(report)]) == 0
    traces = report.read_text().split('<section id="traces">')[1].split("</section>")[0]
    assert traces.index("<noscript><p") < traces.index('<table id="trace-table">')
    assert (
        "This table is drawn by the page's script, which did not run here: open the report "
        "in a browser with JavaScript on. Every other section needs none.</p></noscript>"
    ) in traces


def test_report_counts_the_operations_run_across_its_traces() -> None:
    # `report` of a 200,000-operation trace ran it for many seconds with nothing on the
    # terminal: check_local now counts each operation run, the traces' one after another
    # (resend.jsonl: 10 operations, all run although it diverges at its 8th, as the
    # check goes on with the model alone; dead_letter.jsonl: 6)
    counts: list[int] = []
    paths = [str(DATA / "resend.jsonl"), str(DATA / "dead_letter.jsonl")]
    check_local(local(paths), RESEND, counted=counts.append)
    assert counts == list(range(1, 10 + 6 + 1))


def test_event_life_names_dispatcher_d0_as_the_narrative_does_r29(tmp_path: Path) -> None:
    # With two dispatchers, the life of an event on dispatcher 0 said "queued on ny
    # (bucket 2)" and "ny sent batch 1" where the narrative above it says "ny d0".
    # SPEC R29: parallel, d = bucket(k) mod 2; key b is in bucket 2 of 4 (R31's example),
    # so d0. Defaults: batch_time_interval 1,000 ms sends batch 1, ack_timeout 10,000 ms
    # times it out (R20), retry_interval 5,000 ms resends it as batch 2, with 1 resent;
    # the version tag [entry_version 1, timestamp 0, dsid 1]; {"v":1} is 7 bytes.
    trace = tmp_path / "d0.jsonl"
    config = {
        "sites": [1, 2],
        "regions": {"1": {"type": "partition", "total_num_buckets": 4}},
        "senders": [
            {"id": "ny", "site": 1, "remote": 2, "parallel": True, "dispatcher_threads": 2}
        ],
    }
    ops = [
        {"op": "put", "site": 1, "key": "b", "value": {"v": 1}},
        {"op": "tick", "ms": 1000},
        {"op": "tick", "ms": 10000},
        {"op": "tick", "ms": 5000},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in [{"config": config}, *ops]))
    _, examples, _ = check_local(local([str(trace)]), RESEND)
    [example] = examples.values()
    assert example.event == "1:1"
    assert [line.split(" ", 1)[1] for line in example.event_life] == [
        "site 1 wrote 1:1 (create b, [1,0,1]), queued on ny d0 (bucket 2)",
        "ny d0 sent batch 1 [1:1] (7 bytes full, 0 delta)",
        "ny d0 timed out on batch 1 [1:1], will resend them",
        "ny d0 sent batch 2 [1:1] (7 bytes full, 0 delta, 1 resent as possible duplicates)",
    ]


def test_variants_say_the_values_are_shown_only_when_short(tmp_path: Path) -> None:
    # The heading said "(operation, model value, impl value)" above variants that show
    # no value: a dispatcher is a number, never part of a variant (only short text,
    # true, false or null is; conformance.running.run.p1_signature).
    paths = [
        str(EXAMPLES / "order_policy_partition.jsonl"),
        str(EXAMPLES / "order_policy_thread.jsonl"),
    ]
    rows, examples, notes = check_local(local(paths), "tools.planted_bugs:RouteByKeyAndTime")
    out = tmp_path / "r.html"
    report = write_report(rows, examples, notes, out, "tools.planted_bugs:RouteByKeyAndTime")
    [group] = report.groups
    assert [variant for variant, _ in group.variants] == [
        "put observations[].routes.ln.dispatcher",
        "put observations[].routes.ny.dispatcher",
    ]
    assert (
        "2 variants (operation and field; model and impl values when both are short text, "
        "true, false or null):</p>"
    ) in out.read_text(encoding="utf-8")


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


def test_report_of_a_damaged_results_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A footer Arrow reads as a 128-bit integer type: ArrowNotImplementedError (not
    # ArrowInvalid), which was a traceback.
    damaged = Path(__file__).parent / "data" / "parquet" / "damaged-footer" / "ops"
    (tmp_path / "res").mkdir()
    shutil.copy(damaged / "part-00000.parquet", tmp_path / "res" / "results.parquet")
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {tmp_path / 'res' / 'results.parquet'}: not readable Parquet: "
        "Integers with more than 64 bits not implemented\n"
    )
    assert not out.exists()


def test_report_of_results_in_a_folder_whose_name_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # pyarrow takes only UTF-8 paths: reading results.parquet in a folder named with byte
    # 0xff was a traceback (UnicodeEncodeError)
    rows, examples, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "res", rows_table(rows), RESEND, "", list(examples.values()))
    moved = tmp_path / os.fsdecode(b"b\xff")
    (tmp_path / "res").rename(moved)
    out = tmp_path / "r.html"
    assert main(["report", str(moved), "-o", str(out)]) == 1  # resend's failure
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"{out}: 1 trace, 1 failing")
    assert "resend" in out.read_text()


def test_report_of_results_with_null_cells_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # results.parquet edited by hand: its columns as check writes them, but null cells
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.spark.results import FILE_SCHEMA

    (tmp_path / "res").mkdir()
    table = pa.Table.from_pylist([{"trace_id": "t0"}], schema=FILE_SCHEMA)
    pq.write_table(table, tmp_path / "res" / "results.parquet")
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {tmp_path / 'res' / 'results.parquet'}: operations: 1 null cell(s), "
        "where `wanconform check` writes a value in every row\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("name", ["manifest.json", "examples.json", "timings.json"])
def test_report_of_results_missing_a_file_check_wrote_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # A results directory of a planted bug with one file deleted: without manifest.json
    # the report named impl:Engine as the failing impl, without examples.json it left out
    # every example; both silently.
    rows, examples, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "res", rows_table(rows), RESEND, "", list(examples.values()))
    (tmp_path / "res" / name).unlink()
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {tmp_path / 'res' / name}: missing (`wanconform check` writes it "
        "beside results.parquet); check the traces again with `wanconform check`\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("value", ["-1.5", "NaN", "Infinity", '"0.1"', "null", "true"])
def test_report_of_results_with_a_damaged_time_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # timings.json edited by hand: a negative, NaN or infinite time was taken as measured
    rows, examples, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "res", rows_table(rows), RESEND, "", list(examples.values()))
    timings = tmp_path / "res" / "timings.json"
    timings.write_text('{"seconds": {' + json.dumps(rows[0]["trace_id"]) + f": {value}}}}}")
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {timings}: damaged: not a number of seconds for every trace\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda e: e.update(focus="1"), 'examples.0.focus: "1" is not of type integer'),
        (lambda e: e.update(focus=99), "examples.0.focus: 99 is not a step (0.."),
        (
            lambda e: e.update(config={"sites": "x"}),
            "examples.0.config: sites: must be a non-empty list",
        ),
        (lambda e: e["steps"][0].update(op=7), "examples.0.steps.0.op: 7 is not of type object"),
        (
            lambda e: e["steps"][0].update(op={"op": "put"}),
            "examples.0.steps.0.op: site: missing (required by 'put')",
        ),
        (
            lambda e: e["steps"][0].update(observations=[{"kind": "sent"}]),
            "examples.0.steps.0.observations.0: sent.sender: missing (SPEC §10",
        ),
        (
            lambda e: e["steps"][0].update(observations=[5]),
            "examples.0.steps.0.observations.0: 5 is not of type object",
        ),
        (
            lambda e: e["steps"][0].update(observations=[{"kind": "nope"}]),
            "examples.0.steps.0.observations.0: kind: not an observation's kind",
        ),
        (
            lambda e: e.update(kept_lines=[2, "3"]),
            'examples.0.kept_lines.1: "3" is not of type integer',
        ),
        (lambda e: e.pop("event_life"), "examples.0: 'event_life' is a required property"),
    ],
)
def test_report_of_results_with_an_edited_example_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, problem: str
) -> None:
    # examples.json edited by hand: each was a traceback (TypeError, IndexError, KeyError)
    # or a line that did not name the file, while the report was drawn
    rows, examples, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "res", rows_table(rows), RESEND, "", list(examples.values()))
    path = tmp_path / "res" / "examples.json"
    document = json.loads(path.read_text())
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 1  # as written: fine
    out.unlink()
    edit(document["examples"][0])
    path.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "res"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"wanconform: error: {path}: damaged: {problem}")
    assert err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: [1, 2], "no policies"),
        (lambda d: d | {"policies": 5}, "policies: not a list"),
        (lambda d: d | {"policies": [1]}, "policies[0]: not an object"),
        (lambda d: d | {"policies": [{"title": "drop"}]}, "policies[0]: no events_lost"),
        (lambda d: d | {"colour": []}, "colour: not a comparison wanconform makes"),
    ],
)
def test_report_of_a_campaign_with_an_edited_policies_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, problem: str
) -> None:
    # each was a traceback (TypeError) while the report was drawn
    from conformance.spark.policies import SETTINGS, Comparison, PolicyFigures, SettingFigures

    rows, _, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "camp" / "results", rows_table(rows), RESEND, "", [])
    settings = {s: [SettingFigures(s, True), SettingFigures(s, False)] for s in SETTINGS}
    document = Comparison([PolicyFigures("drop")], settings).to_json()
    policies = tmp_path / "camp" / "policies.json"
    out = tmp_path / "r.html"
    policies.write_text(json.dumps(document))
    assert main(["report", str(tmp_path / "camp"), "-o", str(out)]) == 1  # as written: fine
    out.unlink()
    policies.write_text(json.dumps(edit(document)))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "camp"), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"wanconform: error: {policies}: not a policies comparison: {problem}"
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


def test_shrink_budget_with_a_results_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # report --help: --shrink-budget shrinks "(with trace files)"; a results directory
    # keeps its examples, shrunk already: the option was ignored
    rows, examples, _ = check_local(local([str(DATA / "resend.jsonl")]), RESEND)
    write_results(tmp_path / "results", rows_table(rows), RESEND, "", list(examples.values()))
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "results"), "-o", str(out), "--shrink-budget", "1"]) == 2
    printed, err = capsys.readouterr()
    assert printed == ""
    assert err.startswith("wanconform: error: --shrink-budget: ") and "trace files" in err
    assert not out.exists()
    assert main(["report", str(tmp_path / "results"), "-o", str(out)]) == 1  # it fails P1


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


def test_the_cap_on_a_groups_traces_names_its_signature_as_written(tmp_path: Path) -> None:
    # 99 traces of one signature read "showing 50 of 99 traces of P1 ...events_resents":
    # the plural's "s" went on the end of the signature
    [row], _, _ = check_local(local([str(DATA / "dead_letter.jsonl")]))
    signature = "P1 observations: sent.events_resent"
    rows = [copy.deepcopy(row) | {"trace_id": f"t-{n}", "failures": [signature]} for n in range(51)]
    report = report_json(write_report(rows, {}, {}, tmp_path / "r.html", "impl:Engine"))
    assert report["caps"] == [f"showing 50 of 51 traces of {signature}"]


# -- issue 20: reasons, charts, sequence labels --------------------------------------------

CHARTED = [
    {"config": {"sites": [1, 2], "senders": [
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1, "delta": True},
        {"id": "ld", "site": 2, "remote": 1, "batch_size": 1}]}},
    {"op": "put", "site": 1, "key": "k", "value": {"q": 1}},
    {"op": "deliver", "sender": "ny"},
    {"op": "deliver_ack", "sender": "ny"},
    {"op": "delta", "site": 1, "key": "k", "changes": {"q": 22}},
    {"op": "deliver", "sender": "ny"},
    {"op": "deliver_ack", "sender": "ny"},
    {"op": "put", "site": 2, "key": "j", "value": {"s": "abc"}},
    {"op": "deliver", "sender": "ld"},
]  # fmt: skip


def bar_titles(html: str, chart: str) -> list[str]:
    """The <title> texts of the bars of the chart whose class is `chart`."""
    svg = html.split(f'class="chart {chart}"', 1)[1].split("</svg>", 1)[0]
    return re.findall(r"<rect [^>]*><title>(.*?)</title>", svg)


def test_charts_of_a_small_trace_carry_its_figures(tmp_path: Path) -> None:
    """Bandwidth, statuses, outcomes and events per site, counted by hand. Batch size 1
    (R15): each write ships at once. 1:1 put {"q":1}, 7 bytes full (R4, R14); 1:2 a
    delta from a delta operation on a delta sender, {"q":22}, 8 bytes as a delta; 2:1 put
    {"s":"abc"} at site 2, 11 bytes full. Three batches (outcome `sent`), three deliveries
    each `ok` (R16, no conflicts: one writer per key; the delta's base is 1:1's tag), no
    forward (R22: each sender's remote is the origin). Site 1 wrote 2 events, site 2 one."""
    trace = tmp_path / "charted.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in CHARTED), encoding="utf-8")
    rows, examples, notes = check_local(local([str(trace)]))
    path = tmp_path / "r.html"
    write_report(rows, examples, notes, path, "impl:Engine")
    html = path.read_text(encoding="utf-8")
    assert bar_titles(html, "chart-bandwidth") == ["report: full values: 18", "report: deltas: 8"]
    statuses = "receiver statuses (R16): "
    assert bar_titles(html, "chart-statuses") == [
        f"{statuses}{s}" for s in ("ok: 3", "duplicate: 0", "conflict: 0", "failed: 0",
                                   "invalid_delta: 0")
    ]  # fmt: skip
    outcomes = dict(t.split(": ", 1)[1].split(": ") for t in bar_titles(html, "chart-outcomes"))
    assert outcomes == {
        "sent": "3", "timeout": "0", "connection_failed": "0", "dropped": "0", "dlq": "0",
        "invalid_delta": "0", "forwarded": "0",
    }  # fmt: skip
    assert bar_titles(html, "chart-sites") == [
        "client events written per site: site 1: 2",
        "client events written per site: site 2: 1",
    ]
    # each section scaled alone: its largest bar is BAR_PX (300) long, the others to scale
    assert re.findall(r'width="(\d+)" height="14"', html.split("chart-sites", 1)[1])[:2] == [
        "300",
        "150",
    ]


def test_policies_chart_has_a_section_per_measure_and_a_bar_per_policy(tmp_path: Path) -> None:
    [row], _, _ = check_local(local([str(DATA / "dead_letter.jsonl")]))
    redelivery = {"requeued": 0, "superseded": 0, "unrecoverable": 0}
    policies = [
        {"title": title, "events_lost": lost, "keys_differing": 1, "records_left": 0,
         "largest_backlog": 2, "redelivery": redelivery, "redelivery_conflicts": 0}
        for title, lost in (("drop", 4), ("block", 2))
    ]  # fmt: skip
    path = tmp_path / "r.html"
    write_report([row], {}, {}, path, "impl:Engine", policies=policies)
    titles = bar_titles(path.read_text(encoding="utf-8"), "chart-policies")
    assert titles[:2] == ["events lost: drop: 4", "events lost: block: 2"]
    assert titles[6:] == ["largest backlog: drop: 2", "largest backlog: block: 2"]
    assert len(titles) == 8
    # `report CAMPAIGN` reads the comparison a campaign wrote beside its results
    write_results(tmp_path / "c" / "results", rows_table([row]), "impl:Engine", "", [])
    document = {"policies": policies, "conflation": [], "persistence": []}
    (tmp_path / "c" / "policies.json").write_text(json.dumps(document))
    again = tmp_path / "again.html"
    assert main(["report", str(tmp_path / "c"), "-o", str(again)]) == 0
    assert bar_titles(again.read_text(encoding="utf-8"), "chart-policies") == titles


def test_not_applicable_verdicts_show_their_reason(tmp_path: Path) -> None:
    """Neither trace has a sender with dlq_secure: P7 (§11) does not apply to either."""
    paths = [str(DATA / "resend.jsonl"), str(DATA / "dead_letter.jsonl")]
    rows, examples, notes = check_local(local(paths), RESEND)
    path = tmp_path / "r.html"
    report = report_json(write_report(rows, examples, notes, path, RESEND))
    p7 = next(row for row in report["verdicts"] if row["property"] == "P7")
    assert p7["cells"][0]["reasons"] == [["no sender has dlq_secure", 2]]
    html = path.read_text(encoding="utf-8")
    row = html.split("<tr><th>P7</th>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="reason">n/a: no sender has dlq_secure (2)</span>' in row


def test_a_long_sequence_label_ends_with_an_ellipsis_and_has_a_title() -> None:
    config = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
    value = {"name": "a rather long value", "n": 12345}
    op = parse_op({"op": "put", "site": 1, "key": "k", "value": value}, config)
    full = 'put 1 k {"n":12345,"name":"a rather long value"}'  # op_text: canonical JSON
    svg = render_sequence_svg(sequence_diagram(config, [("t.jsonl:2", op, [])], 0))
    labels = [t for t in ET.fromstring(svg).iter(f"{SVG}text") if t.find(f"{SVG}title") is not None]
    [label] = labels
    title = label.find(f"{SVG}title")
    assert title is not None and title.text == f"2  {full}"
    assert label.text is not None and label.text.endswith("…")
    assert len(label.text) == LABEL_CHARS and f"2  {full}".startswith(label.text[:-1])


def test_a_key_with_a_bidi_override_is_drawn_escaped_as_the_narrative_shows_it() -> None:
    # the sequence diagram drew U+202E raw: its label and mark read backwards in a browser
    config = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
    op = parse_op({"op": "put", "site": 1, "key": "\u202eevil", "value": {"n": 1}}, config)
    from model import Engine as ModelEngine

    steps = [("t.jsonl:2", op, ModelEngine(config).apply(op))]
    svg = render_sequence_svg(sequence_diagram(config, steps, 0))
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert '2  put 1 \\u202eevil {"n":1}' in texts and "write \\u202eevil (1:1)" in texts
    assert "\u202e" not in svg


def test_r29_r31_the_report_names_dispatchers_and_buckets() -> None:
    # Example R31-a (traces/examples): ny parallel, 4 buckets, 2 dispatchers; d0 owns
    # buckets 0 and 2, d1 buckets 1 and 3; "d" is bucket 0, "b" bucket 2, "a" bucket 1.
    from model import Engine as ModelEngine
    from reports.report_data import side_by_side
    from traces.tracefile import read_trace

    trace = read_trace(Path(__file__).parent.parent / "traces/examples/"
                       "parallel_dispatchers_no_global_order.jsonl")  # fmt: skip
    engine = ModelEngine(trace.config)
    steps = [(f"t.jsonl:{i + 2}", op, engine.apply(op)) for i, op in enumerate(trace.ops)]
    svg = render_sequence_svg(sequence_diagram(trace.config, steps, len(steps) - 1))
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert "ny d0 batch 1" in texts  # the deliver of d0's batch: an arrow labelled by lane
    assert "5  deliver ny d0" in texts and "d1 send batch 1 (1)" in texts
    lane = engine.observe()["senders"]["ny"]
    impl_side = copy.deepcopy(lane)
    impl_side["dispatchers"][0]["queue"] = ["1:3", "1:2"]  # a made-up difference
    keys = {"1:1": "a", "1:2": "b", "1:3": "d"}
    rows = side_by_side(lane, impl_side, "state.senders.ny", trace.config, keys)
    queue = [r for r in rows if ".queue[" in r.path and "dispatchers[0]" in r.path]
    assert [(r.path, r.model, r.impl, r.differs) for r in queue] == [
        ('state.senders.ny.dispatchers[0] (buckets 0, 2).queue[0]',
         '"1:2" (bucket 2)', '"1:3" (bucket 0)', True),
        ('state.senders.ny.dispatchers[0] (buckets 0, 2).queue[1]',
         '"1:3" (bucket 0)', '"1:2" (bucket 2)', True),
    ]  # fmt: skip


# -- SPEC v2.0 part 2 (§16.4-16.6): conflation, losses, lifecycle, alerts ------------------

EXAMPLES = Path(__file__).parent.parent / "traces" / "examples"


def svg_texts(svg: str) -> list[str]:
    """Every <text> of a diagram as it reads, its <tspan>s included, without its tooltip."""
    out = []
    for element in ET.fromstring(svg).iter(f"{SVG}text"):
        title = element.find(f"{SVG}title")
        out.append("".join(element.itertext())[: None if title is None else -len(title.text or "")])
    return out


def svg_titles(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}title")]


def example_of(report: dict[str, Any], signature: str) -> dict[str, Any]:
    [group] = [g for g in report["groups"] if g["signature"] == signature]
    example: dict[str, Any] = group["example"]
    return example


def test_r33_report_greys_the_members_a_batch_kept_back(tmp_path: Path) -> None:
    """Example R33 (conflation_in_batch_after_timeout): batch 2 = [1:1, 1:2, 1:3], 1:2
    conflated by 1:3 in the batch, `sent` names 1:1 and 1:3. The planted impl's ack
    removes the shipped members only, so the whole trace is the minimal one (the ack of a
    batch that conflated) and its diagram shows batch 2's send and arrow with 1:2 greyed."""
    spec = "report_engines:AckForgetsConflatedMembers"
    path = str(EXAMPLES / "conflation_in_batch_after_timeout.jsonl")
    rows, examples, notes = check_local(local([path]), spec)
    report = report_json(write_report(rows, examples, notes, tmp_path / "r.html", spec))
    example = example_of(report, "P1 observations: acked.removed")
    assert example["kept_lines"] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [r["text"].split(" ", 1)[1] for r in example["narrative"]][5] == (
        "tick 5000 → ny conflated 1:2 by 1:3 in its batch, not shipped; ny sent batch 2 "
        "[1:1, 1:3] (14 bytes full, 0 delta, 1 resent as possible duplicates)"
    )
    svg = example["sequence_svg"]
    texts = svg_texts(svg)
    assert "send batch 2 (2) 1:2 conflated" in texts  # its six-row send mark
    assert "batch 2 1:2 conflated" in texts  # the deliver's arrow
    assert texts.count("send batch 1 (2)") == 1  # batch 1 conflated nothing
    kept = [t for t in ET.fromstring(svg).iter(f"{SVG}tspan") if t.get("class") == "kept"]
    assert [(t.text, t.get("fill")) for t in kept] == [
        ("1:2 conflated", "#999"),
        (" 1:2 conflated", "#999"),
    ]
    why = "batch 2: ships 1:1, 1:3; kept back, conflated in the batch (R33): 1:2 (by 1:3)"
    assert svg_titles(svg) == [why, why]
    differing = [(r["path"], r["model"], r["impl"]) for r in example["side"] if r["differs"]]
    assert differing == [
        ("observations[0].removed[1]", '"1:2"', '"1:3"'),
        ("observations[0].removed[2]", '"1:3"', "—"),
    ]


def test_r33_side_by_side_shows_shipped_against_members_and_the_sender_state(
    tmp_path: Path,
) -> None:
    """Example R33 up to its resend (lines 2-7): in flight {batch 2, events [1:1, 1:2,
    1:3], shipped [1:1, 1:3], sent_at 16000}. A planted impl says it shipped every member;
    the side by side shows the sender (§16.6): running, not paused, the in-flight lists
    with 1:2 marked as not shipped, nothing recovered or on disk, 21 bytes in memory
    (R35: 7 bytes each, the default limit)."""
    lines = (EXAMPLES / "conflation_in_batch_after_timeout.jsonl").read_text().splitlines()
    trace = tmp_path / "resend.jsonl"
    trace.write_text("\n".join(lines[:7]) + "\n")
    spec = "report_engines:ShipsConflatedMembers"
    rows, examples, notes = check_local(local([str(trace)]), spec)
    report = report_json(write_report(rows, examples, notes, tmp_path / "r.html", spec))
    example = example_of(report, "P1 state.senders.*.dispatchers[].in_flight.shipped[]")
    assert (
        example["side_note"] == "the observable state under state.senders.ny after this operation"
    )
    side = {r["path"].removeprefix("state.senders.ny."): r for r in example["side"]}
    flight = "dispatchers[0].in_flight."
    assert [side[f"{flight}events[{i}]"]["model"] for i in range(3)] == [
        '"1:1"', '"1:2" (not shipped: conflated, R33)', '"1:3"'
    ]  # fmt: skip
    assert side[f"{flight}events[1]"]["impl"] == '"1:2"'  # the impl ships it: no note
    shipped = [side[f"{flight}shipped[{i}]"] for i in range(3)]
    assert [(r["model"], r["impl"]) for r in shipped] == [
        ('"1:1"', '"1:1"'), ('"1:3"', '"1:2"'), ("—", '"1:3"')
    ]  # fmt: skip
    assert [p for p, r in side.items() if r["differs"]] == [
        f"{flight}shipped[1]", f"{flight}shipped[2]"
    ]  # fmt: skip
    assert {k: side[k]["model"] for k in ("running", "paused", "dispatchers[0].recovered",
            "dispatchers[0].on_disk", "dispatchers[0].memory_bytes")} == {
        "running": "true", "paused": "false", "dispatchers[0].recovered": "[]",
        "dispatchers[0].on_disk": "[]", "dispatchers[0].memory_bytes": "21",
    }  # fmt: skip


def test_r37_report_of_a_serial_stop_marks_the_loss_and_the_stopped_sender(
    tmp_path: Path,
) -> None:
    """Example R37 (stop_serial_loses_queue), serial and not persistent: the stop loses
    1:1 (`queue_lost`, reason stop). The planted impl calls it a restart; the minimal
    trace is `put a`, `stop_sender ny`, and its diagram has the stop as a lifecycle mark,
    the loss as a red cross with its reason, and ny stopped from the stop to the end."""
    spec = "report_engines:StopSaysRestart"
    path = str(EXAMPLES / "stop_serial_loses_queue.jsonl")
    rows, examples, notes = check_local(local([path]), spec)
    report = report_json(write_report(rows, examples, notes, tmp_path / "r.html", spec))
    example = example_of(report, "P1 observations: the sender's lifecycle (R36, R37) differ")
    assert example["kept_lines"] == [2, 3]
    assert example["step"].endswith("stop_sender ny → ny stop; ny lost 1:1 from its queue (stop)")
    root = ET.fromstring(example["sequence_svg"])
    assert svg_texts(example["sequence_svg"])[-2:] == ["write a (1:1)", "stop ny, lost 1:1 (stop)"]
    styled = [(t.get("class"), t.text) for t in root.iter(f"{SVG}tspan")]
    assert styled == [("lifecycle", "stop ny"), ("lost", "lost 1:1 (stop)")]
    assert [e.get("class") for e in root if e.get("class", "").startswith("mark-")] == ["mark-lost"]
    [band] = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "stopped"]
    title = band.find(f"{SVG}title")
    # rows at y 70 (put) and 100 (stop); the band runs from the stop to half a row after
    assert (band.get("y"), band.get("height"), title is not None and title.text) == (
        "100", "15", "ny stopped"
    )  # fmt: skip


def test_v2_part2_marks_in_the_sequence_diagram_of_the_examples() -> None:
    """The model's runs of §16.5's examples, drawn: what each lane says, row by row
    (rows at y = 70, 100, ...)."""
    from model import Engine as ModelEngine
    from reports.sequence_svg import SequenceDiagram
    from traces.tracefile import read_trace

    def drawn(name: str) -> SequenceDiagram:
        trace = read_trace(EXAMPLES / f"{name}.jsonl")
        engine = ModelEngine(trace.config)
        steps = [(f"t.jsonl:{i + 2}", op, engine.apply(op)) for i, op in enumerate(trace.ops)]
        return sequence_diagram(trace.config, steps, len(steps) - 1)

    def marks(d: SequenceDiagram) -> list[tuple[int, str, str, str]]:
        return [(m.y, m.symbol, m.text, m.full) for m in d.marks]

    stop = drawn("stop_serial_loses_queue")  # R37: serial, not persistent
    assert marks(stop)[1:4] == [
        (100, "lost", "stop ny, lost 1:1 (stop)", ""),
        (130, "lost", "write b (1:2), not queued 1:2…",
         "write b (1:2), not queued 1:2 (ny stopped)"),
        (160, "lifecycle", "start ny", ""),
    ]  # fmt: skip
    assert [(s.kind, s.y, s.height, s.title) for s in stop.shades] == [
        ("stopped", 100, 60, "ny stopped")
    ]
    restart = drawn("restart_not_persistent")  # R36 (a): the restart loses 1:1, 1:2, 1:3
    assert marks(restart)[-1] == (
        190, "lost", "restart ny (kept 0), lost 1:1…",
        "restart ny (kept 0), lost 1:1, 1:2, 1:3 (restart)",
    )  # fmt: skip
    assert restart.shades == ()  # a restart leaves the sender running
    alert = drawn("alert_threshold")  # R38: the ack at 600 alerts for 1:1
    assert marks(alert)[-1] == (190, "alert", "alert 1:1 (queued 600 ms)", "")
    queue = drawn("conflation_in_queue")  # R32: 1:2 conflated by 1:3 at enqueue
    assert marks(queue)[2] == (
        130, "dot", "write k (1:3), 1:2 conflated…", "write k (1:3), 1:2 conflated by 1:3 (queue)"
    )  # fmt: skip
    assert [p.style for p in queue.marks[2].parts] == ["", "kept"]
    svg = render_sequence_svg(stop)
    assert '<rect class="mark-lifecycle"' in svg and '<path class="mark-lost"' in svg


def test_settings_chart_and_tables_of_conflation_and_persistence(tmp_path: Path) -> None:
    """`--compare-policies`' conflation and persistence figures (as policies.json holds
    them: `conformance.spark.policies.Comparison.to_json`) of Examples R32 and R36, drawn."""
    from conformance.spark.policies import compare_all
    from traces.tracefile import read_trace

    traces = [read_trace(EXAMPLES / f"{n}.jsonl") for n in ("conflation_in_queue",
                                                           "restart_not_persistent")]  # fmt: skip
    compared = compare_all([(t.config, list(t.ops)) for t in traces], policies=False).to_json()
    [row], _, _ = check_local(local([str(DATA / "dead_letter.jsonl")]))
    redelivery = {"requeued": 0, "superseded": 0, "unrecoverable": 0}
    policies = [{"title": "drop", "events_lost": 1, "keys_differing": 1, "records_left": 0,
                 "largest_backlog": 2, "redelivery": redelivery,
                 "redelivery_conflicts": 0}]  # fmt: skip
    path = tmp_path / "r.html"
    settings = {k: v for k, v in compared.items() if k != "policies"}
    report = report_json(write_report([row], {}, {}, path, "impl:Engine", policies=policies,
                                      settings=settings))  # fmt: skip
    assert [s["title"] for s in report["settings"]] == [
        "batch conflation on", "batch conflation off", "queue persistence on",
        "queue persistence off",
    ]  # fmt: skip
    html = path.read_text(encoding="utf-8")
    assert bar_titles(html, "chart-settings") == [
        "bytes shipped: batch conflation on: 35", "bytes shipped: batch conflation off: 42",
        "events conflated: batch conflation on: 1", "events conflated: batch conflation off: 0",
        "keys that differ (conflation): batch conflation on: 1",
        "keys that differ (conflation): batch conflation off: 1",
        "events lost from queues: queue persistence on: 0",
        "events lost from queues: queue persistence off: 3",
        "events re-sent: queue persistence on: 2", "events re-sent: queue persistence off: 0",
        "keys that differ (persistence): queue persistence on: 0",
        "keys that differ (persistence): queue persistence off: 1",
    ]  # fmt: skip
    persistence = html.split('<table class="persistence">', 1)[1].split("</table>", 1)[0]
    assert ('<td>queue persistence off</td><td class="num">2 (1)</td><td class="num">3</td>'
            '<td class="num">3 / 0 / 0</td>') in persistence  # fmt: skip


def test_a_propertys_example_is_not_hidden_by_the_impls_divergence() -> None:
    # The trace of SPEC's P8 contradiction fails P8 on the model's run, and the planted
    # R20 bug diverges from it first (P1 at line 9). P8's example is shrunk with the
    # model as the impl: it shows the P8 violation, not the divergence of another group.
    from conformance.search.examples import MODEL_AS_IMPL, explain
    from traces.tracefile import read_trace

    path = (
        Path(__file__).parent.parent / "traces" / "examples" / "p8_batch_conflation_reorders.jsonl"
    )
    trace = read_trace(path)
    lines = list(range(2, len(trace.ops) + 2))
    bug = "tools.planted_bugs:ResendWithoutPossibleDuplicate"
    example, note = explain("P8", "p8", trace.config, trace.ops, lines, bug, str(path))
    assert example is not None and note == ""
    assert (
        example.impl == MODEL_AS_IMPL and ": P8: sender ny: event 1:2 (key 'k')" in example.failure
    )
    assert f"--impl {MODEL_AS_IMPL}" in example.command


def test_a_bidi_override_in_a_trace_name_sender_and_key_is_shown_escaped(
    tmp_path: Path,
) -> None:
    # a U+202E in the trace's file name, its sender id and its key was written raw into
    # the page: the example's heading, the life of its event and the reproduce commands
    # read backwards in a browser
    rlo = "\u202e"
    sender = f"ny<b>{rlo}"
    config = {"sites": [1, 2], "senders": [{"id": sender, "site": 1, "remote": 2,
              "batch_size": 1, "ack_timeout_ms": 2000, "retry_interval_ms": 500}]}  # fmt: skip
    lines = [
        {"config": config},
        {"op": "put", "site": 1, "key": f"<script>k{rlo}&", "value": {"n": f"{rlo}v"}},
        {"op": "deliver", "sender": sender},
        {"op": "drop_ack", "sender": sender},
        {"op": "tick", "ms": 2000},
        {"op": "tick", "ms": 500},
    ]
    trace = tmp_path / f"t{rlo}x.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = tmp_path / "r.html"
    assert main(["report", str(trace), "-o", str(report), "--impl", RESEND]) == 1
    page = report.read_text(encoding="utf-8")
    assert not re.search("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]", page)
    assert f"<h4>Example: {tmp_path}/t\\u202ex.jsonl, shrunk from 5 to " in page
    assert "t\\u202ex.min.jsonl:3 ny&lt;b&gt;\\u202e timed out on batch 1 [1:1]" in page
    assert "&lt;script&gt;k\\u202e&amp;" in page and "<script>k" not in page
    data = json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert data["rows"][0]["trace"] == f"{tmp_path}/t\\u202ex.jsonl"


def test_the_reproduce_commands_of_a_trace_named_with_a_space_and_quotes_run_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "wanconform shrink my traces/it's & more.jsonl -o it's & more.min.jsonl ..." was
    # shown unquoted: pasted into a shell it ran "more.jsonl" in the background
    folder = tmp_path / "my traces"
    folder.mkdir()
    trace = folder / "it's & more.jsonl"
    shutil.copy(DATA / "resend.jsonl", trace)
    report = tmp_path / "r.html"
    assert main(["report", str(trace), "-o", str(report), "--impl", RESEND]) == 1
    page = report.read_text(encoding="utf-8")
    block = page.split("<h4>Reproduce</h4>\n<pre>", 1)[1].split("</pre>", 1)[0]
    shrink, replay = [shlex.split(html.unescape(line)) for line in block.splitlines()]
    minimal = "it's & more.min.jsonl"
    assert shrink == ["wanconform", "shrink", str(trace), "-o", minimal, "--impl", RESEND,
                      "--pytest", "test_it's & more.py"]  # fmt: skip
    assert replay == ["wanconform", "replay", "--engine", "both", "--impl", RESEND,
                      "--steps", minimal]  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(shrink[1:]) == 0 and (tmp_path / minimal).exists()
    assert main(replay[1:]) == 1  # the minimal trace shows the failure


def test_the_summary_names_a_report_whose_name_is_not_utf_8_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # byte 0xfc of a file name (surrogate-escaped) printed raw to a UTF-8 stdout was a
    # traceback after the report was written
    report = tmp_path / os.fsdecode(b"\xfc.html")
    assert main(["report", str(DATA / "resend.jsonl"), "-o", str(report)]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}/\\udcfc.html: 1 trace, 0 failing, 0 failure signatures\n"
    )


def test_report_of_one_trace_given_twice_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `report T ./T` counted the trace twice (2 traces, its verdicts doubled)
    shutil.copy(DATA / "resend.jsonl", tmp_path / "t.jsonl")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", "t.jsonl", "./t.jsonl", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: ./t.jsonl: given twice (also as t.jsonl): a report counts each "
        "trace once\n"
    )
    assert not out.exists()
