"""Event logs of a running system (issue 30, items 1-2; docs/LOG.md "Event logs"): one file
per process, merged, checked against the model whose flushes and timeouts the log chooses
among the moments R15 and R20 allow, with their lateness against --max-late-ms.

Hand-derived expectations come from SPEC R4, R9-R20 worked by hand; the round trip over
every profile checks that each deterministic run is a behaviour the driven model accepts
(and `event_log_of` asserts that the driven model, taking the same steps, makes exactly
the deterministic model's observations: one model, two modes)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from conformance.generation.profiles import PROFILES, generate_trace
from conformance.running.events import event_log_of
from traces.logschema import schema_text
from traces.ops import Settle
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {
    "sites": [1, 2],
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 2, "batch_time_interval_ms": 100}
    ],
}


def header(process: str) -> dict[str, Any]:
    return {"log": "events", "version": 1, "process": process, "config": CONFIG}


def put(t: int, key: str, n: int, seq: int) -> dict[str, Any]:
    """A put of {"n": n} at site 1 at t, the site's `seq`-th write: tag [1, t, 1] (R9)."""
    value = {"n": n}
    enqueued = {
        "kind": "enqueued", "site": 1, "event": f"1:{seq}", "key": key, "op": "create",
        "version": [1, t, 1], "value": value, "senders": ["ny"],
        "routes": {"ny": {"dispatcher": 0, "bucket": None}},
    }  # fmt: skip
    return {"t": t, "op": "put", "site": 1, "key": key, "value": value, "observed": [enqueued]}


def flush(t: int, batch_id: int, events: list[str]) -> dict[str, Any]:
    """R15: each {"n": n} value is 7 bytes of canonical JSON (R4)."""
    sent = {
        "kind": "sent", "sender": "ny", "dispatcher": 0, "batch_id": batch_id,
        "events": events, "bytes_full": 7 * len(events), "bytes_delta": 0, "events_resent": 0,
    }  # fmt: skip
    return {"t": t, "op": "flush", "sender": "ny", "observed": [sent]}


def deliver(t: int, batch_id: int, events: list[tuple[str, str]]) -> dict[str, Any]:
    applied = [
        {"kind": "applied", "site": 2, "sender": "ny", "event": event, "key": key, "status": "ok"}
        for event, key in events
    ]
    return {"t": t, "op": "deliver", "sender": "ny", "batch_id": batch_id, "observed": applied}


def timeout_line(t: int, batch_id: int, events: list[str]) -> dict[str, Any]:
    """R20: batch `batch_id` of ny's dispatcher 0 timed out."""
    timeout = {
        "kind": "timeout", "sender": "ny", "dispatcher": 0, "batch_id": batch_id,
        "events": events,
    }  # fmt: skip
    return {"t": t, "op": "timeout", "sender": "ny", "observed": [timeout]}


def ack(t: int, batch_id: int, removed: list[str]) -> dict[str, Any]:
    acked = {"kind": "acked", "sender": "ny", "dispatcher": 0, "batch_id": batch_id}
    return {
        "t": t, "op": "deliver_ack", "sender": "ny", "batch_id": batch_id,
        "observed": [acked | {"removed": removed}],
    }  # fmt: skip


def write_logs(folder: Path, logs: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for process, lines in logs.items():
        text = "".join(json.dumps(line) + "\n" for line in [header(process), *lines])
        (folder / f"{process}.jsonl").write_text(text)
    return folder


def two_batches() -> dict[str, list[dict[str, Any]]]:
    """Puts at 10, 30, 40: the queue is full (batch_size 2) at 30, so R15 lets batch 1 go
    from 30; the system sends it at 45 (15 ms late) with the queue's first two events.
    After the ack at 60, 1:3 (enqueued at 40) is due at 40 + 100 = 140; sent at 150 (10 ms
    late)."""
    return {
        "site-1": [
            put(10, "a", 1, 1), put(30, "b", 2, 2), put(40, "c", 3, 3),
            flush(45, 1, ["1:1", "1:2"]), ack(60, 1, ["1:1", "1:2"]), flush(150, 2, ["1:3"]),
        ],
        "site-2": [deliver(50, 1, [("1:1", "a"), ("1:2", "b")])],
    }  # fmt: skip


def test_r15_a_late_flush_within_the_bound_agrees_and_its_lateness_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    # 7 lines at 7 instants (10, 30, 40, 45, 50, 60, 150): a tick before each
    assert out.splitlines()[0] == (
        f"{folder}: 14 operations (7 logged steps and 7 ticks to their times; 0 skipped), "
        "time 150 ms"
    )
    assert "P1: held (model and the log agree at every step)" in out
    # lateness 15 and 10 ms: p50 in the bucket <= 10, p99 in <= 20 but never above the worst
    assert (
        "lateness: held (2 flushes and 0 timeouts, late by at most 15 ms (p50 <= 10 ms, "
        "p99 <= 15 ms); bound 1000 ms)"
    ) in out


def test_segment_options_on_an_event_log_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an event log is checked whole (COMMANDS.md: its synopsis has no --segment-ops)
    folder = write_logs(tmp_path / "run", two_batches())
    for flag, value in (("--segment-ops", "2"), ("--master", "local")):
        assert main(["validate", str(folder), flag, value]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith(f"wanconform: error: {flag}: an event log") and "whole" in err


@pytest.mark.parametrize(
    ("bound", "verdict"),
    [
        ("1000", "held (2 flushes and 0 timeouts, late by at most 15 ms (p50 &lt;= 10 ms, "
         "p99 &lt;= 15 ms); bound 1000 ms)"),
        ("12", "FAILED (1 violation; 2 flushes and 0 timeouts, late by at most 15 ms "
         "(p50 &lt;= 10 ms, p99 &lt;= 15 ms))"),
    ],
    ids=["held", "failed"],
)  # fmt: skip
def test_the_report_s_summary_shows_the_lateness_distribution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bound: str, verdict: str
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    report = tmp_path / "report.html"
    main(["validate", str(folder), "--max-late-ms", bound, "--report", str(report)])
    capsys.readouterr()
    # (was: only a failure's group, named "lateness"; held: nowhere)
    summary = report.read_text().split('id="summary">', 1)[1].split("</p>", 1)[0]
    assert summary.endswith(f'<span class="lateness">lateness: {verdict}</span>')


def test_r15_max_late_ms_makes_a_late_flush_a_violation_not_a_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    assert main(["validate", str(folder), "--max-late-ms", "12", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["p1"]["status"] == "held"
    assert (result["operations"], result["ticks"], result["skipped"]) == (14, 7, 0)
    assert result["properties"]["lateness"]["violations"] == [
        {
            "where": f"{folder}/site-1.jsonl:5",
            "message": "flush of ny dispatcher 0 late by 15 ms (due at t=30; --max-late-ms 12)",
        }
    ]


def test_a_flush_before_r15_allows_it_is_a_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One event enqueued at 10: R15 lets it go at 10 + 100 = 110, not at 50.
    lines = [put(10, "a", 1, 1), flush(50, 1, ["1:1"])]
    folder = write_logs(tmp_path / "run", {"site-1": lines})
    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"P1: FAILED: model and the log diverge at {folder}/site-1.jsonl:3" in out
    assert 'observations[0].kind: model="skipped" log="sent"' in out


def test_r15_a_flush_that_takes_the_wrong_events_is_a_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three events queued by 12: R15 takes the first min(batch_size, 3) = 2.
    lines = [put(10, "a", 1, 1), put(11, "b", 2, 2), put(12, "c", 3, 3)]
    lines.append(flush(20, 1, ["1:1", "1:2", "1:3"]))
    folder = write_logs(tmp_path / "run", {"site-1": lines})
    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"diverge at {folder}/site-1.jsonl:5" in out
    assert 'observations[0].events[2]: model="<absent>" log="1:3"' in out


def test_r15_a_flush_never_taken_is_late_once_the_bound_has_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1:1 is due at 110; the log goes on to 2,000 at site 2 without sending it.
    site2 = [{"t": 2000, "op": "site_down", "site": 2, "observed": []}]
    folder = write_logs(tmp_path / "run", {"site-1": [put(10, "a", 1, 1)], "site-2": site2})
    assert main(["validate", str(folder), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["p1"]["status"] == "held"
    assert result["properties"]["lateness"]["violations"] == [
        {
            "where": f"{folder}/site-2.jsonl:2",
            "message": "flush of ny dispatcher 0 due at t=110 not taken by t=2000: late by "
            "more than --max-late-ms 1000",
        }
    ]


@pytest.mark.parametrize(
    ("late_line", "message"),
    [
        # R20: batch 1 sent at 110 (1:1 enqueued at 10 waited 100); no ack by 110 + 10,000
        # (ack_timeout_ms's default) = 10,110; the ack at 20,000 ends the timeout untaken.
        (
            ack(20000, 1, ["1:1"]),
            "timeout of ny dispatcher 0 due at t=10110 not taken by t=20000",
        ),
        # R15 (R37): 1:2 enqueued at 200 is due at 300 once the ack at 130 freed the
        # dispatcher; the pause at 2,000 ends the flush untaken, 1,700 ms after it fell due.
        (
            {
                "t": 2000,
                "op": "pause_sender",
                "sender": "ny",
                "observed": [{"kind": "lifecycle", "sender": "ny", "action": "pause"}],
            },
            "flush of ny dispatcher 0 due at t=300 not taken by t=2000",
        ),
    ],
    ids=["ack-ends-timeout", "pause-ends-flush"],
)
def test_a_due_step_the_line_past_its_bound_ends_is_still_not_taken(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    late_line: dict[str, Any],
    message: str,
) -> None:
    # The line that brings the time past the bound is the one that ends the due step, with
    # no other line in between: still "not taken by then" (docs/LOG.md, "Lateness").
    site1 = [put(10, "a", 1, 1), flush(110, 1, ["1:1"])]
    if "timeout" not in message:
        site1 += [ack(130, 1, ["1:1"]), put(200, "b", 2, 2)]
    site1.append(late_line)
    folder = write_logs(
        tmp_path / "run", {"site-1": site1, "site-2": [deliver(120, 1, [("1:1", "a")])]}
    )
    assert main(["validate", str(folder), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["p1"]["status"] == "held"
    assert result["properties"]["lateness"]["violations"] == [
        {
            "where": f"{folder}/site-1.jsonl:{len(site1) + 1}",
            "message": f"{message}: late by more than --max-late-ms 1000",
        }
    ]


def test_a_timeout_is_accepted_from_the_moment_r20_allows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Batch 1 sent at 30 (due then: full); its ack never comes: R20 lets it time out at
    # 30 + 10,000 (ack_timeout_ms's default) = 10,030. At 10,000 it may not.
    lines = [put(10, "a", 1, 1), put(30, "b", 2, 2), flush(30, 1, ["1:1", "1:2"])]
    early = [*lines, timeout_line(10000, 1, ["1:1", "1:2"])]
    late = [*lines, timeout_line(10033, 1, ["1:1", "1:2"])]
    assert main(["validate", str(write_logs(tmp_path / "early", {"site-1": early}))]) == 1
    assert 'observations[0].kind: model="skipped" log="timeout"' in capsys.readouterr().out
    assert main(["validate", str(write_logs(tmp_path / "late", {"site-1": late}))]) == 0
    assert "2 flushes" not in (out := capsys.readouterr().out)
    assert "lateness: held (1 flush and 1 timeout, late by at most 3 ms" in out


def test_r21_lines_of_one_millisecond_are_ordered_as_the_model_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Site 2 is down from 5 and comes back at 30; site 1's flush at 30 sent its batch, so
    # it came after site 2's site_up, though site-1's file sorts first.
    site2 = [
        {"t": 5, "op": "site_down", "site": 2, "observed": []},
        {"t": 30, "op": "site_up", "site": 2, "observed": []},
    ]
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), flush(30, 1, ["1:1", "1:2"])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 0
    assert "P1: held" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda lines: lines[1].pop("t"), "site-1.jsonl:3: t: missing (the time of the step"),
        (
            lambda lines: lines[1].update(t=5),
            "site-1.jsonl:3: t: 5 is before the previous line's 10: a process logs its steps",
        ),
        (
            lambda lines: lines.append({"t": 90, "op": "tick", "ms": 5, "observed": []}),
            "site-1.jsonl:4: op: unknown operation 'tick' (one of put, ",
        ),
        (
            lambda lines: lines[0].update(batch_id=1),
            "site-1.jsonl:2: batch_id: only a deliver, deliver_ack, drop or drop_ack has one",
        ),
        (lambda lines: lines[0].update(at=1), "site-1.jsonl:3: at: missing: the file's first step"),
        (lambda lines: lines[0].update(t=-1), "site-1.jsonl:2: t: must be an integer >= 0, got -1"),
        (
            lambda lines: lines.append(deliver(40, 1, [("1:1", "a")]) | {"batch_id": -2}),
            "site-1.jsonl:4: batch_id: must be an integer >= 1, got -2",
        ),
        (
            lambda lines: lines.append(deliver(40, 1, [("1:1", "a")]) | {"batch_id": 2**63}),
            "site-1.jsonl:4: batch_id: 9223372036854775808 is outside the signed 64-bit "
            "range (SPEC §3)",
        ),
    ],
)
def test_a_bad_line_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    lines = [put(10, "a", 1, 1), put(30, "b", 2, 2)]
    change(lines)
    folder = write_logs(tmp_path / "run", {"site-1": lines})
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert message in line


@pytest.mark.parametrize(
    "second_put",
    [
        pytest.param(30, id="alone"),  # t=40 holds site-2's line alone: its own order
        pytest.param(40, id="shared"),  # t=40 holds a line of each: the order is searched
    ],
)
def test_a_delivery_logged_before_its_batch_was_sent_names_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second_put: int
) -> None:
    site1 = [put(10, "a", 1, 1), put(second_put, "b", 2, 2), flush(45, 1, ["1:1", "1:2"])]
    site2 = [deliver(40, 1, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{folder}/site-2.jsonl:2: t=40: deliver of batch 1 of ny dispatcher 0, but no line "
        "before it sent that batch (a batch is received after it is sent, its ack after it "
        f"is received): the line that sent it is {folder}/site-1.jsonl:4 at t=45"
    ) in err


def test_a_merge_failure_names_the_line_that_sent_the_batch_not_the_next_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # site-1's next line after t=40 is the put at 41 (line 5); the flush is line 6 at 45
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), put(41, "c", 3, 3)]
    site1.append(flush(45, 1, ["1:1", "1:2"]))
    site2 = [deliver(40, 1, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    # (was: "the next line of any other process is site-1.jsonl:4 at t=41")
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-2.jsonl:2: t=40: deliver of batch 1 of ny "
        "dispatcher 0, but no line before it sent that batch (a batch is received after it "
        "is sent, its ack after it is received): the line that sent it is "
        f"{folder}/site-1.jsonl:5 at t=45\n",
    )


def test_an_ack_before_its_delivery_names_the_delivery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = two_batches()
    logs["site-1"][4] = ack(48, 1, ["1:1", "1:2"])  # before site-2 delivered batch 1 at 50
    folder = write_logs(tmp_path / "run", logs)
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-1.jsonl:6: t=48: deliver_ack of batch 1 of ny "
        "dispatcher 0, but no line before it received that batch (a batch is received after "
        "it is sent, its ack after it is received): the line that received it is "
        f"{folder}/site-2.jsonl:2 at t=50\n",
    )


def test_a_batch_sent_before_a_lower_one_is_still_sent_for_the_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # batch 2 sent at 45, then a batch 1 at 70: the deliver of 2 at 80 comes after the
    # flush that sent it (docs/LOG.md, Merge), so the files merge; the model then finds
    # the flush at 45 wrong (R15: a dispatcher's first batch is 1)
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), flush(45, 2, ["1:1", "1:2"])]
    site1.append(flush(70, 1, ["1:1", "1:2"]))
    site2 = [deliver(80, 2, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"diverge at {folder}/site-1.jsonl:4: " in out
    assert "observations[0].batch_id: model=1 log=2" in out


def test_a_batch_below_the_highest_sent_that_no_line_sent_is_not_received(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # only batch 2 was sent; a deliver of batch 1 has no flush to come after
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), flush(45, 2, ["1:1", "1:2"])]
    site2 = [deliver(50, 1, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-2.jsonl:2: t=50: deliver of batch 1 of ny "
        "dispatcher 0, but no line before it sent that batch (a batch is received after it "
        "is sent, its ack after it is received): no other process logs anything after it\n",
    )


def test_an_ack_of_a_batch_never_received_is_refused_though_a_later_one_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # batches 1 and 2 sent, only 2 delivered: the ack of 1 follows no deliver of 1
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), flush(45, 1, ["1:1", "1:2"])]
    site1 += [flush(46, 2, ["1:1", "1:2"]), ack(60, 1, ["1:1", "1:2"])]
    site2 = [deliver(50, 2, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-1.jsonl:6: t=60: deliver_ack of batch 1 of ny "
        "dispatcher 0, but no line before it received that batch (a batch is received after "
        "it is sent, its ack after it is received): no other process logs anything after "
        "it\n",
    )


@pytest.mark.parametrize("receiver", ["site-2", "r-site-2"])  # read after site-1, or before
def test_a_merge_failure_names_the_line_no_merge_can_take_not_one_it_holds_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], receiver: str
) -> None:
    # at t=50 site-1 acks a batch 5 no line received, then sends batch 1, which the
    # receiver delivers at 50: the deliver waits for the flush, the flush for the ack,
    # and the ack for nothing any file holds (was, with the receiver's file read first:
    # the deliver, "the line that sent it is site-1.jsonl:5 at t=50", not the ack)
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), ack(50, 5, [])]
    site1.append(flush(50, 1, ["1:1", "1:2"]))
    logs = {"site-1": site1, receiver: [deliver(50, 1, [("1:1", "a"), ("1:2", "b")])]}
    folder = write_logs(tmp_path / "run", logs)
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-1.jsonl:4: t=50: deliver_ack of batch 5 of ny "
        "dispatcher 0, but no line before it received that batch (a batch is received after "
        "it is sent, its ack after it is received): the next line of any other process is "
        f"{folder}/{receiver}.jsonl:2 at t=50\n",
    )


def test_a_batch_no_file_sends_names_the_next_line_of_another_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site1 = [put(10, "a", 1, 1), put(30, "b", 2, 2), put(41, "c", 3, 3)]
    site2 = [deliver(40, 1, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr().err.endswith(
        f"the next line of any other process is {folder}/site-1.jsonl:4 at t=41\n"
    )


def test_a_status_the_model_does_not_give_is_the_log_s_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = two_batches()
    logs["site-2"][0]["observed"][0]["status"] = "conflict"  # R16 applies it: "ok"
    folder = write_logs(tmp_path / "run", logs)
    assert main(["validate", str(folder)]) == 1
    assert 'observations[0].status: model="ok" log="conflict"' in capsys.readouterr().out
    assert main(["validate", "--json", str(folder)]) == 1
    [violation] = json.loads(capsys.readouterr().out)["p1"]["violations"]
    assert violation == {
        "message": 'model and the log diverge: observations[0].status: model="ok" log="conflict"',
        "where": f"{folder}/site-2.jsonl:2",
    }


def test_an_event_log_given_twice_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    one, two = str(folder / "site-1.jsonl"), str(folder / "site-2.jsonl")
    assert main(["validate", one, two, one]) == 2
    # (was: "site-1.jsonl:1: process: 'site-1' is also the process of site-1.jsonl")
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {one}: given twice (one run's event logs, each once)\n",
    )


def test_two_files_of_one_process_are_named_in_json_s_quoting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    text = (folder / "site-2.jsonl").read_text()
    (folder / "site-3.jsonl").write_text(text)  # its header says "process": "site-2"
    assert main(["validate", str(folder)]) == 2
    # (was: process: 'site-2' ...)
    assert capsys.readouterr() == (
        "",
        f'wanconform: error: {folder}/site-3.jsonl:1: process: "site-2" is also the process '
        f"of {folder}/site-2.jsonl\n",
    )


def test_a_log_from_a_pipe_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # read once to find its header, it was empty the second time: "empty event log"
    pipe = tmp_path / "site-1.jsonl"
    os.mkfifo(pipe)  # (not opened: nothing blocks)
    assert main(["validate", str(pipe)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {pipe}: not a regular file (a pipe?): a log is read more than "
        "once; give a file\n",
    )


def test_a_folder_named_like_a_log_in_the_directory_is_not_read_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    (folder / "old.jsonl").mkdir()  # the directory's logs are its *.jsonl files
    assert main(["validate", str(folder)]) == 0
    assert "P1: held" in capsys.readouterr().out


def test_a_hidden_log_in_the_directory_is_not_read_as_a_shell_glob_would_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    # an editor's backup of site-2's log: read, it was "process: 'site-2' is also the
    # process of" the real one
    (folder / ".site-2.jsonl").write_text((folder / "site-2.jsonl").read_text())
    assert main(["validate", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{folder}: 14 operations (7 logged steps and 7 ticks to their times; 0 skipped), "
        "time 150 ms"
    )


def test_a_broken_link_named_like_a_log_in_the_directory_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    (folder / "site-3.jsonl").symlink_to(tmp_path / "gone.jsonl")  # (was: skipped, exit 0)
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-3.jsonl: a broken symbolic link (its target does "
        "not exist)\n",
    )


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")], ids=["compact", "spaced"])
def test_a_process_s_own_field_is_ignored_however_deep_up_to_the_nesting_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], separators: tuple[str, str]
) -> None:
    def deep(levels: int) -> Path:
        logs = two_batches()
        logs["site-2"][0]["_events"] = "deep"  # (json.dumps recurses too: written below)
        folder = tmp_path / f"run{levels}"
        folder.mkdir()
        for process, lines in logs.items():
            text = "".join(
                json.dumps(line, separators=separators) + "\n" for line in [header(process), *lines]
            )
            text = text.replace('"deep"', "[" * levels + "]" * levels)
            (folder / f"{process}.jsonl").write_text(text)
        return folder

    # 300 levels: orjson (the fast path) reads them but writes at most 255 (was: a
    # traceback, TypeError: Recursion limit reached)
    assert main(["validate", str(deep(300))]) == 0
    assert "P1: held" in capsys.readouterr().out
    folder = deep(2000)
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {folder}/site-2.jsonl:2: not valid JSON: nested too deeply\n",
    )


@pytest.mark.parametrize("given", ["run", "run/site-1.jsonl"], ids=["directory", "file"])
def test_event_logs_are_refused_by_shrink_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    write_logs(tmp_path / "run", two_batches())
    path = tmp_path / given
    # (was: "is a directory, not a trace file"; a file: "the first line must be {"config" ...")
    assert main(["shrink", str(path), "-o", str(tmp_path / "min.jsonl")]) == 2
    what = "a directory" if given == "run" else "an event log"
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {path}: {what}: a running system's event logs (docs/LOG.md) "
        "cannot be shrunk, only validated; shrink takes one trace file, or one log of the "
        "model's operations (`shrink LOG -o T.jsonl` writes its trace up to its first "
        "disagreement)\n",
    )
    assert not (tmp_path / "min.jsonl").exists()


@pytest.mark.parametrize(
    ("given", "what", "form"),
    [
        ("run", "a directory of event logs", "DIR"),
        ("run/site-1.jsonl", "an event log", "DIR"),
        ("ops.jsonl", "a log", "LOG"),
    ],
    ids=["directory", "file", "log"],
)
def test_logs_are_refused_by_report_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str, what: str, form: str
) -> None:
    # (was: a directory: "not a campaign or results directory"; an event log: "the first
    # line must be {"config" ..."; a log of the model's operations: "observed: unknown
    # field for 'put'")
    write_logs(tmp_path / "run", two_batches())
    config = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]}
    put = {"op": "put", "site": 1, "key": "a", "value": {"n": 1}, "observed": []}
    (tmp_path / "ops.jsonl").write_text(
        json.dumps({"config": config}) + "\n" + json.dumps(put) + "\n"
    )
    path = tmp_path / given
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 2
    assert capsys.readouterr() == (
        "",
        f"wanconform: error: {path}: {what} (docs/LOG.md): `wanconform validate {form} "
        "--report HTML` reports on it; report takes trace files or a results directory\n",
    )
    assert not out.exists()


def test_the_processes_of_one_run_share_one_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    other = json.loads((folder / "site-2.jsonl").read_text().splitlines()[0])
    other["config"]["sites"] = [1, 2, 3]
    lines = (folder / "site-2.jsonl").read_text().splitlines()
    (folder / "site-2.jsonl").write_text("\n".join([json.dumps(other), *lines[1:]]) + "\n")
    assert main(["validate", str(folder)]) == 2
    assert f"{folder}/site-2.jsonl:1: config: not the configuration of" in capsys.readouterr().err


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_deterministic_run_is_a_behaviour_the_event_log_model_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str
) -> None:
    for number in range(5):
        config, stream = generate_trace(30, f"t{number}", profile, 400)
        ops = [op for op in stream if type(op) is not Settle]
        logs = event_log_of(config, ops)  # asserts: driven == deterministic observations
        folder = tmp_path / f"run{number}"
        folder.mkdir()
        for process, lines in logs.items():
            (folder / f"{process}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        # The deterministic model flushes and times out only when an operation runs:
        # a step is late by at most the longest tick.
        longest = max([op.ms for op in ops if hasattr(op, "ms")], default=0)
        assert main(["validate", str(folder), "--max-late-ms", str(longest), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["p1"]["status"] == "held"
        assert result["properties"]["lateness"]["status"] == "held"


def test_a_batch_with_its_events_swapped_is_found_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, stream = generate_trace(30, "t0", "faults", 300)
    logs = event_log_of(config, [op for op in stream if type(op) is not Settle])
    process, number = next(
        (process, number)
        for process, lines in logs.items()
        for number, line in enumerate(lines)
        if line.get("op") == "flush" and len(line["observed"][-1].get("events", [])) > 1
    )
    sent = logs[process][number]["observed"][-1]
    sent["events"] = sent["events"][::-1]
    folder = tmp_path / "run"
    folder.mkdir()
    for name, lines in logs.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["validate", str(folder)]) == 1
    assert f"diverge at {folder}/{process}.jsonl:{number + 1}" in capsys.readouterr().out


def test_the_event_log_schema_says_what_the_reader_accepts(tmp_path: Path) -> None:
    # The file in the repository is what traces/logschema.py makes from the reader's own
    # tables; the logs the tests above validate are valid under it, and a deliver without
    # its batch_id is refused by both.
    assert (ROOT / "docs" / "eventlog.schema.json").read_text() == schema_text(events=True)
    validator = jsonschema.Draft202012Validator(json.loads(schema_text(events=True)))
    config, stream = generate_trace(30, "t0", "chaos", 300)
    logs = event_log_of(config, [op for op in stream if type(op) is not Settle])
    lines = [line for process in logs.values() for line in process]
    assert [e.message for line in lines for e in validator.iter_errors(line)] == []
    bad = deliver(50, 1, [("1:1", "a")])
    del bad["batch_id"]
    assert [e.message for e in validator.iter_errors(bad)]
    folder = write_logs(tmp_path / "run", {"site-2": [bad]})
    assert main(["validate", str(folder)]) == 2


def test_r15_the_report_names_the_first_late_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_logs(tmp_path / "run", two_batches())
    report = tmp_path / "report.html"
    assert main(["validate", str(folder), "--max-late-ms", "12", "--report", str(report)]) == 1
    text = report.read_text()
    assert (
        f"first: {folder}/site-1.jsonl:5: lateness: flush of ny dispatcher 0 late by 15 ms "
        "(due at t=30; --max-late-ms 12)"
    ) in text


def test_r15_the_report_names_every_late_step_its_summary_says_it_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bound 5: batch 1, due at 30 (full at 30), is still not taken at the put of 40 (10 ms
    # > 5, line 4: counted there once); batch 2, due at 40 + 100, is sent at 150 (line 7)
    folder = write_logs(tmp_path / "run", two_batches())
    report = tmp_path / "report.html"
    assert main(["validate", str(folder), "--max-late-ms", "5", "--report", str(report)]) == 1
    capsys.readouterr()
    text = report.read_text()
    assert "lateness: FAILED (2 violations; " in text
    # (was: only the first of them)
    assert (
        f"first: {folder}/site-1.jsonl:4: lateness: flush of ny dispatcher 0 due at t=30 not "
        "taken by t=40: late by more than --max-late-ms 5; "
        f"{folder}/site-1.jsonl:7: lateness: flush of ny dispatcher 0 late by 10 ms (due at "
        "t=140; --max-late-ms 5)"
    ) in text


def test_the_report_on_event_logs_does_not_offer_shrink_which_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = two_batches()
    logs["site-1"][3] = flush(45, 1, ["1:1"])  # R15 takes the queue's first 2 (batch_size 2)
    folder = write_logs(tmp_path / "run", logs)
    report = tmp_path / "report.html"
    assert main(["validate", str(folder), "--report", str(report)]) == 1
    capsys.readouterr()
    text = report.read_text()
    assert f"{folder}/site-1.jsonl:5" in text
    # (was: "`wanconform shrink LOG -o T.jsonl` writes the trace up to the disagreement")
    assert "shrink LOG" not in text
    assert (
        "no example: a running system&#39;s event logs cannot be shrunk, not even cut to a "
        "trace (`wanconform shrink` refuses them): they are only validated (docs/LOG.md)"
    ) in text
    assert main(["shrink", str(folder), "-o", str(tmp_path / "t.jsonl")]) == 2
    assert "cannot be shrunk, only validated" in capsys.readouterr().err


def test_at_on_some_files_only_is_the_error_even_where_it_breaks_the_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # site-1 logs `at`, site-2 does not; site-2's deliver shares t=45 with the flush that
    # sent its batch, so without `at` it sorts first: the mix, not the order, is the error.
    site1 = [{**line, "at": line["t"] * 1000 + 1} for line in two_batches()["site-1"]]
    site2 = [deliver(45, 1, [("1:1", "a"), ("1:2", "b")])]
    folder = write_logs(tmp_path / "run", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {folder}/site-1.jsonl:2: at: this file's lines have one, those "
        f"of {folder}/site-2.jsonl:2 and on do not (give every process's lines `at`, or "
        "none)\n"
    )


def test_an_event_log_of_one_instant_still_counts_its_ticks_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # every line at t=0: the merge adds no tick, and says so (the JSON keeps its `ticks`)
    folder = write_logs(tmp_path / "run", {"site-1": [put(0, "a", 1, 1), put(0, "b", 2, 2)]})
    assert main(["validate", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{folder}: 2 operations (2 logged steps and 0 ticks to their times; 0 skipped), time 0 ms"
    )
    assert main(["validate", str(folder), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["operations"], document["ticks"]) == (2, 0)


def test_r20_a_delivery_of_a_timed_out_batch_is_a_divergence_even_with_its_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Batch 1 [1:1, 1:2] sent at 30 is dropped; R20 times it out at 30 + 10,000 = 10,030
    # (takes it out of the network), next_retry_at = 10,030 + 5,000 (retry_interval_ms's
    # default) = 15,030: batch 2 re-sends the same events. A delivery logged as batch 1's
    # (a stale message) after that is not in the model's network: the model skips it,
    # though batch 2 holds the same events (before: the model delivered batch 2, P1 held).
    resent = flush(15030, 2, ["1:1", "1:2"])
    resent["observed"][0]["events_resent"] = 2
    site1 = [
        put(10, "a", 1, 1), put(30, "b", 2, 2), flush(30, 1, ["1:1", "1:2"]),
        timeout_line(10030, 1, ["1:1", "1:2"]), resent,
    ]  # fmt: skip
    network = [{"t": 31, "op": "drop", "sender": "ny", "batch_id": 1, "observed": []}]
    events = [("1:1", "a"), ("1:2", "b")]
    for batch_id, verdict in ((2, 0), (1, 1)):
        site2 = [deliver(15040, batch_id, events)]
        logs = {"site-1": site1, "site-2": site2, "network": network}
        folder = write_logs(tmp_path / f"deliver-{batch_id}", logs)
        assert main(["validate", str(folder)]) == verdict
        out = capsys.readouterr().out
        if verdict:
            assert f"P1: FAILED: model and the log diverge at {folder}/site-2.jsonl:2" in out
            assert 'observations[0].kind: model="skipped" log="applied"' in out
        else:
            assert "P1: held" in out


def test_at_on_one_line_of_a_file_only_is_that_file_s_error_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # site-1's first step has `at`, its second not; site-2 has none. The error is site-1's
    # own, at its line 3 (before: the mix of files, naming no line, as if site-1's lines
    # all had one).
    site1 = two_batches()["site-1"]
    site1 = [{**site1[0], "at": 10_000_001}, *site1[1:]]
    logs = {"site-1": site1, "site-2": two_batches()["site-2"]}
    folder = write_logs(tmp_path / "run", logs)
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {folder}/site-1.jsonl:3: at: missing: "
        "the file's first step line has one\n"
    )


def test_an_ack_before_its_delivery_in_one_file_names_no_line_of_that_file_as_another_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # site-1's own file, given alone: its ack of batch 1 (line 6, t=60) has no delivery
    # before it, and no other process has lines; its own next line (7, t=150) is not
    # "the next line of any other process" (before: it was named as one).
    site1 = two_batches()["site-1"]
    folder = write_logs(tmp_path / "run", {"site-1": site1})
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {folder}/site-1.jsonl:6: t=60: deliver_ack of batch 1 of ny "
        "dispatcher 0, but no line before it received that batch (a batch is received "
        "after it is sent, its ack after it is received): no other process logs anything "
        "after it\n"
    )
    # Two processes at one instant: site-2 delivers at 60 too, but batch 2 (never sent);
    # the other process's line is site-2's, not site-1's own next one.
    site2 = [deliver(60, 2, [("1:3", "c")])]
    folder = write_logs(tmp_path / "two", {"site-1": site1, "site-2": site2})
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {folder}/site-1.jsonl:6: t=60: deliver_ack of batch 1 of ny "
        "dispatcher 0, but no line before it received that batch (a batch is received "
        "after it is sent, its ack after it is received): the next line of any other "
        f"process is {folder}/site-2.jsonl:2 at t=60\n"
    )


PARALLEL = {
    "sites": [1, 2],
    "regions": {"1": {"type": "partition", "total_num_buckets": 4}},
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, "parallel": True, "dispatcher_threads": 2,
         "batch_size": 2, "batch_time_interval_ms": 100},
    ],
}  # fmt: skip


def parallel_run(deliver_d1_at: int) -> dict[str, list[dict[str, Any]]]:
    """SPEC R28, R29, R31 (example R31-a): B = 4, N = 2; "a" is bucket 1 (d1), "b" bucket 2
    and "d" bucket 0 (both d0). d0 is full at 1002: from cursor 0 it takes bucket 0 (1:3)
    then bucket 2 (1:2), batch 1 of d0; d1's head 1:1 waited 100 ms at 1100: batch 1 of
    d1. Both are "batch 1": a line names its dispatcher."""

    def put_at(t: int, key: str, seq: int, dispatcher: int, bucket: int) -> dict[str, Any]:
        line = put(t, key, 1, seq)
        line["observed"][0]["routes"] = {"ny": {"dispatcher": dispatcher, "bucket": bucket}}
        return line

    def sent(t: int, dispatcher: int, events: list[str]) -> dict[str, Any]:
        line = flush(t, 1, events) | {"dispatcher": dispatcher}
        line["observed"][0]["dispatcher"] = dispatcher
        return line

    def delivered(t: int, dispatcher: int, events: list[tuple[str, str]]) -> dict[str, Any]:
        return deliver(t, 1, events) | {"dispatcher": dispatcher}

    return {
        "site-1": [
            put_at(1000, "a", 1, 1, 1), put_at(1001, "b", 2, 0, 2), put_at(1002, "d", 3, 0, 0),
            sent(1002, 0, ["1:3", "1:2"]), sent(1100, 1, ["1:1"]),
        ],
        "site-2": [
            delivered(deliver_d1_at, 1, [("1:1", "a")]),
            delivered(1105, 0, [("1:3", "d"), ("1:2", "b")]),
        ],
    }  # fmt: skip


def write_parallel(folder: Path, logs: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True)
    for process, lines in logs.items():
        first = {"log": "events", "version": 1, "process": process, "config": PARALLEL}
        text = "".join(json.dumps(line) + "\n" for line in [first, *lines])
        (folder / f"{process}.jsonl").write_text(text)
    return folder


def test_r29_batch_1_of_each_dispatcher_is_its_own_batch_in_the_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_parallel(tmp_path / "run", parallel_run(1105))
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    # 7 lines at 5 instants (1000, 1001, 1002, 1100, 1105)
    assert out.splitlines()[0] == (
        f"{folder}: 12 operations (7 logged steps and 5 ticks to their times; 0 skipped), "
        "time 1105 ms"
    )
    assert "lateness: held (2 flushes and 0 timeouts, late by at most 0 ms" in out
    # d1's batch 1 received at 1050: d0's batch 1 was sent (1002), d1's was not (1100)
    folder = write_parallel(tmp_path / "early", parallel_run(1050))
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"wanconform: error: {folder}/site-2.jsonl:2: t=1050: deliver of batch 1 of ny "
        "dispatcher 1, but no line before it sent that batch (a batch is received after it "
        "is sent, its ack after it is received): the line that sent it is "
        f"{folder}/site-1.jsonl:6 at t=1100\n"
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (  # a process killed mid-write: its last line cut short
            lambda text: text[: text.rindex('"observed"')],
            "site-1.jsonl:3: not valid JSON: ",
        ),
        (
            lambda text: text.replace('"version": 1', '"version": 2', 1),
            "site-1.jsonl:1: version: this wanconform reads event logs of version 1, got 2",
        ),
        (  # (was: got '1', Python's quoting)
            lambda text: text.replace('"version": 1', '"version": "1"', 1),
            'site-1.jsonl:1: version: this wanconform reads event logs of version 1, got "1"\n',
        ),
        (
            lambda text: text.replace('"log": "events"', '"log": "events", "host": "h1"', 1),
            "site-1.jsonl:1: host: unknown field (the header has config, log, process, version)",
        ),
        (
            lambda text: text.replace('"t": 30', '"t": 30, "thread_name": "d0"', 1),
            "site-1.jsonl:3: thread_name: unknown field for 'put'",
        ),
    ],
    ids=["truncated", "version", "version-string", "header-field", "step-field"],
)
def test_a_bad_file_is_one_line_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    folder = write_logs(tmp_path / "run", {"site-1": [put(10, "a", 1, 1), put(30, "b", 2, 2)]})
    path = folder / "site-1.jsonl"
    path.write_text(edit(path.read_text()))
    assert main(["validate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"wanconform: error: {folder}/{message}")
    assert len(captured.err.splitlines()) == 1


def test_a_process_s_own_underscore_fields_are_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = two_batches()
    logs["site-1"][3]["_thread"] = "dispatcher-0"
    logs["site-2"][0]["_events"] = [{"id": "1:1"}]
    assert main(["validate", str(write_logs(tmp_path / "run", logs))]) == 0
    assert "P1: held (model and the log agree at every step)" in capsys.readouterr().out
