"""The per-trace check (P1 with P2-P12) without Spark: rows, planted bugs, bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.generation.profiles import generate_trace
from conformance.spark.check import CHECK_INPUT_SCHEMA, check_batches, check_trace, results_table
from conformance.spark.results import RESULTS_SCHEMA, plain_row
from impl import Engine
from tools.planted_bugs import PLANTED_BUGS
from traces.canonical import canonical_json
from traces.config import parse_config
from traces.engine import load_impl
from traces.errors import TraceError
from traces.ops import Deliver, DeliverAck, Op, Put, op_to_json

CONFIG = parse_config(
    {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
)


def test_a_row_of_a_small_trace_by_hand() -> None:
    # put at site 1 -> R15 sends it at once (batch_size 1); deliver applies it at site 2
    # (ok); deliver_ack removes it; a second deliver has nothing in the network: skipped.
    ops: list[Op] = [Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"), Deliver("ny")]
    row = check_trace("t", CONFIG, zip(range(2, 6), ops, strict=True))
    assert set(row) == set(RESULTS_SCHEMA.names)
    assert (row["operations"], row["events"], row["skipped"]) == (4, 1, 1)
    verdicts = row["verdicts"]
    assert verdicts["p1"]["status"] == "held" and row["divergence"] is None
    assert row["failures"] == []
    coverage = row["coverage"]
    assert (coverage["status.ok"], coverage.get("status.duplicate", 0)) == (1, 0)
    assert coverage["outcome.sent"] == 1
    assert row["bytes_full"] == len('{"a":1}') and row["bytes_delta"] == 0  # R4, R14
    assert (row["dropped"], row["dead_lettered"]) == (0, 0)
    assert verdicts["p3"]["status"] == "held"  # 1:1 applied once
    assert verdicts["p6"] == {  # no delta
        "status": "not applicable",
        "reason": "no value was built from a delta",
        "violation_count": 0,
        "violations": [],
    }
    assert coverage["op.deliver.skipped"] == 1


# Which profile shows each planted bug on small traces, and how the divergence looks.
BUG_EXPECTATIONS = {
    "HighWaterMark": ("multisite", "duplicate decided differently (R16.1)"),
    "ResendWithoutPossibleDuplicate": ("faults", "observations: sent.events_resent"),  # R20
    "RemoveInvalidDelta": ("dlq", "observations: acked.removed"),  # R19
    "ForwardToKnownRecipients": ("multisite", "forwarding (R22) differ"),
    "LateBatchTime": ("chaos", "batch dispatch and timers (R13, R15, R20, R25) differ"),
    "DeadLetterWithoutValue": ("dlq", "state.senders.*.dlq[].value"),  # R24, state only
}


@pytest.mark.parametrize("bug", PLANTED_BUGS, ids=lambda bug: bug.__name__)
def test_each_planted_bug_is_found_through_impl(bug: type[Engine]) -> None:
    profile, expected = BUG_EXPECTATIONS[bug.__name__]
    factory = load_impl(f"tools.planted_bugs:{bug.__name__}")
    signatures = []
    for index in range(6):
        trace_id = f"{profile}-{index}"
        config, stream = generate_trace(1, trace_id, profile, 300)
        ops = list(stream)
        row = check_trace(trace_id, config, zip(range(2, 302), ops, strict=True), factory)
        clean = check_trace(trace_id, config, zip(range(2, 302), ops, strict=True))
        assert clean["verdicts"]["p1"]["status"] == "held"  # the real impl agrees on it
        if row["verdicts"]["p1"]["status"] == "failed":
            signatures.append(row["failures"][0])
            seq = int(row["divergence"]["where"].rsplit(":", 1)[1])
            assert row["divergence"]["op"] == canonical_json(op_to_json(ops[seq - 2]))
    assert any(expected in signature for signature in signatures), signatures


# -- the Arrow stream Spark feeds ------------------------------------------------------


def rows_of(trace_id: str, ops: list[Op], operations: int | None = None) -> list[dict[str, object]]:
    config_row = {
        "trace_id": trace_id, "seq": 1, "kind": "config",
        "json": canonical_json(CONFIG.to_json()), "profile": "hand", "seed": 7,
        "operations": len(ops) if operations is None else operations,
    }  # fmt: skip
    return [config_row] + [
        {"trace_id": trace_id, "seq": n, "kind": "op", "json": canonical_json(op_to_json(op)),
         "profile": None, "seed": None, "operations": None}
        for n, op in enumerate(ops, start=2)
    ]  # fmt: skip


def stream(rows: list[dict[str, object]], size: int = 3) -> Iterator[pa.RecordBatch]:
    for start in range(0, len(rows), size):  # several batches: a trace spans them
        yield pa.RecordBatch.from_pylist(rows[start : start + size], schema=CHECK_INPUT_SCHEMA)


OPS: list[Op] = [Put(1, "k", {"a": 1}), Deliver("ny"), DeliverAck("ny"), Deliver("ny")]


def test_the_stream_gives_one_row_per_trace_as_check_trace_does() -> None:
    rows = rows_of("a", OPS) + rows_of("b", OPS[:2])
    table = results_table(check_batches(stream(rows)))
    assert table.column("trace_id").to_pylist() == ["a", "b"]
    assert table.column("operations").to_pylist() == [4, 2]
    assert table.column("profile").to_pylist() == ["hand", "hand"]
    expected = check_trace("a", CONFIG, zip(range(2, 6), OPS, strict=True), profile="hand", seed=7)
    got = plain_row(table.to_pylist()[0])
    assert {k: v for k, v in got.items() if k != "seconds"} == {
        k: v for k, v in expected.items() if k != "seconds"
    }


def test_the_stream_asserts_the_order() -> None:
    rows = rows_of("a", OPS)
    rows[2], rows[3] = rows[3], rows[2]
    with pytest.raises(AssertionError, match="rows out of order"):
        list(check_batches(stream(rows)))


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("duplicate seq", "a:3: seq: appears twice"),
        (
            "gap in seq",
            "a:5: seq: expected 4 (seq is the operation's line in the trace: none missing)",
        ),
        ("no configuration", "a:2: trace_id: no configuration in configs"),
        ("bad operation", "a:3: sender: unknown sender 'nobody' (the config has ['ny'])"),
        ("missing rows", "a:1: operations: configs says 9, ops has 4 rows"),
        (
            "bad configuration",
            "a:1: config.sites: missing (a list of distributed-system-ids 1..255)",
        ),
    ],
)
def test_bad_rows_become_one_error_and_no_results(case: str, message: str) -> None:
    rows = rows_of("a", OPS) + rows_of("b", OPS)
    if case == "duplicate seq":
        rows.insert(3, dict(rows[2]))
    elif case == "gap in seq":
        for row in rows[3 : len(OPS) + 1]:  # 2, 3, 5, ...
            row["seq"] = int(str(row["seq"])) + 1
    elif case == "no configuration":
        rows.pop(0)
    elif case == "bad operation":
        rows[2]["json"] = '{"op": "deliver", "sender": "nobody"}'
    elif case == "missing rows":
        rows[0]["operations"] = 9
    elif case == "bad configuration":
        rows[0]["json"] = "{}"
    batches = list(check_batches(stream(rows)))
    with pytest.raises(TraceError) as caught:
        results_table(batches)
    assert str(caught.value) == message


def test_check_keeps_persistent_queues_in_a_store_per_trace(tmp_path: Path) -> None:
    """`check --queue-dir DIR` (issue 29): each trace's persistent queues in DIR/TRACE_ID/,
    read back at restart_sender and compared with the model's (P1 holds)."""
    example = Path(__file__).resolve().parent.parent / "traces" / "examples"
    lines = (example / "restart_persistent.jsonl").read_text().splitlines()
    config = json.loads(lines[0])["config"]
    rows: list[dict[str, object]] = [
        {"trace_id": "r", "seq": 1, "kind": "config", "json": canonical_json(config),
         "profile": "hand", "seed": 1, "operations": len(lines) - 1}
    ]  # fmt: skip
    rows += [
        {"trace_id": "r", "seq": n, "kind": "op", "json": line, "profile": None,
         "seed": None, "operations": None} for n, line in enumerate(lines[1:], start=2)
    ]  # fmt: skip
    queues = tmp_path / "queues"
    queues.mkdir()
    [row] = [
        plain_row(r)
        for r in results_table(check_batches(stream(rows), queue_dir=str(queues))).to_pylist()
    ]
    assert row["verdicts"]["p1"]["status"] == "held"
    assert row["coverage"]["op.restart_sender.ran"] == 1
    assert sorted(p.name for p in (queues / "r").iterdir()) == ["ny.0.queue"]
