"""Checkpoints (docs/CHECKPOINT.md): the full state out and back, for both engines.

The round trip is a property over random traces cut at random points: (run to i,
checkpoint, restore, run on) gives the observations and the state of running through,
for the model and the impl and across them. The fields are checked by hand on a small
trace (R3, R13, R15, R16.1, R17), and a bad document is one line naming what is wrong.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import impl
import model
from conformance.generation.profiles import PROFILES, generate_trace
from traces.checkpoint import CheckpointError, checkpoint_text, read_checkpoint
from traces.config import parse_config
from traces.ops import parse_op
from wanconform.cli import main

ROOT = Path(__file__).resolve().parent.parent

ENGINES: dict[str, type[model.Engine] | type[impl.Engine]] = {
    "model": model.Engine,
    "impl": impl.Engine,
}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_restored_engines_run_on_as_if_never_stopped(profile: str) -> None:
    for seed in range(4):
        config, generated = generate_trace(seed, "cut", profile, 250)
        ops = list(generated)
        cut = random.Random(seed).randrange(len(ops) + 1)
        through = model.Engine(config)
        for op in ops[:cut]:
            through.apply(op)
        writers = {name: engine(config) for name, engine in ENGINES.items()}
        for op in ops[:cut]:
            for engine in writers.values():
                engine.apply(op)
        texts = {name: checkpoint_text(e.checkpoint()) for name, e in writers.items()}
        assert texts["model"] == texts["impl"], (profile, seed, cut)  # one format, one text
        restored = {
            (source, target): ENGINES[target].from_checkpoint(config, json.loads(text))
            for source, text in texts.items()
            for target in ENGINES
        }
        for op in ops[cut:]:
            expected = through.apply(op)
            for engine in restored.values():
                assert engine.apply(op) == expected
        final = checkpoint_text(through.checkpoint())
        for engine in restored.values():
            assert checkpoint_text(engine.checkpoint()) == final


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_impl_writes_the_models_text_and_runs_on_from_it_at_every_cut(profile: str) -> None:
    """docs/CHECKPOINT.md: the model and the impl write the same text for the same state,
    and an engine started from a checkpoint behaves as the one that wrote it. The model is
    the reference: at every cut of a trace (not one random cut) the impl's text is the
    model's, and an impl restored from the model's text gives the model's results and its
    final state (queues, batches, acks and R35's accounting as they were)."""
    for seed in range(2):
        config, generated = generate_trace(seed, "every-cut", profile, 60)
        ops = list(generated)
        through, alongside = model.Engine(config), impl.Engine(config)
        texts, results = [], []
        for op in ops:
            texts.append(checkpoint_text(through.checkpoint()))
            assert checkpoint_text(alongside.checkpoint()) == texts[-1], (profile, seed)
            results.append(through.apply(op))
            alongside.apply(op)
        final = checkpoint_text(through.checkpoint())
        for cut, text in enumerate(texts):
            restored = impl.Engine.from_checkpoint(config, json.loads(text))
            for index in range(cut, len(ops)):
                assert restored.apply(ops[index]) == results[index], (profile, seed, cut, index)
            assert checkpoint_text(restored.checkpoint()) == final, (profile, seed, cut)


CONFIG = parse_config(
    {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 1}]}
)


def run(engine: Any, *ops: dict[str, Any]) -> Any:
    for op in ops:
        engine.apply(parse_op(op, CONFIG))
    return engine


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_the_fields_of_a_checkpoint_by_hand(name: str) -> None:
    # put (R3: seq 1; batch_size 1: R15 sends it at once, R13: in flight), deliver
    # (R16.1: 1:1 applied ok at site 2; R17: the ack [ok])
    engine = run(ENGINES[name](CONFIG), {"op": "put", "site": 1, "key": "k", "value": {"a": 1}})
    state = engine.checkpoint()["state"]
    assert state["sites"]["1"]["seq"] == 1
    assert state["sites"]["1"]["last_issued"] == 0
    sender = state["senders"]["ny"]
    assert [event["event"] for event in sender["dispatchers"][0]["queue"]] == ["1:1"]
    assert sender["dispatchers"][0]["queue"][0]["recipients"] == [1, 2]
    assert sender["dispatchers"][0]["in_flight"] == {
        "batch_id": 1,
        "events": ["1:1"],
        "shipped": ["1:1"],
        "sent_at": 0,
    }
    lane = sender["dispatchers"][0]
    assert lane["batch"]["batch_id"] == 1
    assert lane["batch"]["events"][0]["as_delta"] is False
    assert lane["batch"]["events"][0]["thread"] == 0
    assert lane["last_batch_id"] == 1
    assert lane["memory_bytes"] == 7  # R35: size({"a":1})
    assert sender["running"] is True and sender["paused"] is False
    run(engine, {"op": "deliver", "sender": "ny"})
    state = engine.checkpoint()["state"]
    assert state["sites"]["2"]["applied"] == {"1": [[1, 1]]}
    assert state["senders"]["ny"]["dispatchers"][0]["batch"] is None
    assert state["senders"]["ny"]["dispatchers"][0]["ack"] == {
        "batch_id": 1,
        "statuses": [["ok", None]],
    }
    run(engine, {"op": "fail", "site": 2, "key": "k", "times": 3, "exception": "E"})
    assert engine.checkpoint()["state"]["sites"]["2"]["failures"] == {
        "k": {"exception": "E", "remaining": 3}
    }


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d | {"version": 3}, "version: 3 is newer than this wanconform reads (2)"),
        (
            lambda d: d | {"version": 1},
            "version: 1 was written for SPEC v1.2 (one queue per sender); this wanconform "
            "reads version 2",
        ),
        (lambda d: d | {"format": "x"}, "format: not a checkpoint"),
        (lambda d: d | {"state": {**d["state"], "time": -1}}, "state.time: -1 is less than"),
        (lambda d: "{", "not valid JSON: Expecting property name enclosed in double quotes"),
        (  # was accepted: Python's json keeps the last of a key given twice
            lambda d: '{"version": 99, ' + json.dumps(d)[1:],
            "not valid JSON: field 'version' appears twice in one object",
        ),
        (lambda d: '{"a":' * 5000 + "1" + "}" * 5000, "not a checkpoint: nested too deeply"),
        (
            lambda d: json.dumps(d).replace('"time": 0', '"time": 0.0'),
            "not a checkpoint: 0.0: every number of a checkpoint is an integer",
        ),
        (
            lambda d: json.dumps(d).replace('"k"', '"\\ud800"'),
            "not a checkpoint: \\ud800 is half of a UTF-16 surrogate pair, not a character",
        ),
    ],
)
def test_a_bad_checkpoint_file_is_one_line(tmp_path: Path, change: Any, message: str) -> None:
    doc = run(model.Engine(CONFIG), {"op": "put", "site": 1, "key": "k", "value": {}}).checkpoint()
    path = write(tmp_path / "c.json", change(doc))
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    assert str(caught.value).startswith((f"{path}: ", f"{path}:1: "))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_an_inconsistent_checkpoint_is_refused(name: str) -> None:
    doc = run(model.Engine(CONFIG), {"op": "put", "site": 1, "key": "k", "value": {}}).checkpoint()
    doc["state"]["senders"]["ny"]["dispatchers"][0]["in_flight"]["events"] = [
        "1:9"
    ]  # not the queue's head
    with pytest.raises(CheckpointError, match=r"dispatchers\[0\]\.in_flight\.events: not queued"):
        ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")
    # R3: site 1 has issued one event (seq 1); site 2 cannot have applied 1:2 .. 1:2^32.
    doc = run(model.Engine(CONFIG), {"op": "put", "site": 1, "key": "k", "value": {}}).checkpoint()
    doc["state"]["sites"]["2"]["applied"] = {"1": [[1, 2**32]]}
    with pytest.raises(CheckpointError, match=r"applied\.1: event 1:4294967296 was never issued"):
        ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")
    other = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
    doc = model.Engine(CONFIG).checkpoint()
    with pytest.raises(CheckpointError, match="config: not the configuration"):
        ENGINES[name].from_checkpoint(other, doc, "c.json")


@pytest.mark.parametrize("name", sorted(ENGINES))
@pytest.mark.parametrize(
    ("change", "message"),
    [
        # R3: site 1 has issued two events (seq 2); a queued 1:3 was never issued
        ({"event": "1:3", "seq": 3}, "event 1:3 was never issued (site 1's seq is 2; "
         "sequence numbers only grow, R3, R21)"),
        # R3: an event's id is "origin:seq"
        ({"event": "1:7"}, "event 1:7 has origin 1 and seq 2; its id is 1:2 (R3)"),
        ({"origin": 2}, "event 1:2 has origin 2 and seq 2; its id is 2:2 (R3)"),
        ({"event": "3:2", "origin": 3}, "origin: 3 is not a site of the configuration"),
    ],
)  # fmt: skip
def test_a_queued_event_its_origin_never_issued_is_refused(
    name: str, change: dict[str, Any], message: str
) -> None:
    # batch_size 1: 1:1 is in flight, 1:2 waits behind it (queue[1])
    put = {"op": "put", "site": 1, "key": "k", "value": {}}
    doc = run(model.Engine(CONFIG), put, put).checkpoint()
    queue = doc["state"]["senders"]["ny"]["dispatchers"][0]["queue"]
    assert [(e["event"], e["origin"], e["seq"]) for e in queue] == [("1:1", 1, 1), ("1:2", 1, 2)]
    queue[1].update(change)
    with pytest.raises(CheckpointError) as caught:
        ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")
    assert str(caught.value).startswith("c.json: state.senders.ny.dispatchers[0].queue[1]")
    assert str(caught.value).endswith(message)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_dead_letter_of_an_event_its_origin_never_issued_is_refused(name: str) -> None:
    put = {"op": "put", "site": 1, "key": "k", "value": {}}
    doc = run(model.Engine(CONFIG), put).checkpoint()
    record = {"event_id": "1:1", "sender": "ny", "key": "k", "op": "create",
              "exception": "Injected", "version": [1, 0, 1], "value": {},
              "recipients": [1, 2], "thread": 0}  # fmt: skip
    doc["state"]["senders"]["ny"]["dlq"] = [record]
    ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")  # 1:1 was issued (site 1's seq 1)
    for event_id, message in (
        ("1:2", "dlq[0]: event 1:2 was never issued (site 1's seq is 1; sequence numbers "
         "only grow, R3, R21)"),
        ("3:1", "dlq[0].origin: 3 is not a site of the configuration"),
        ("garbage", "dlq[0].event_id: 'garbage' is not an event id origin:seq (R3)"),
    ):  # fmt: skip
        record["event_id"] = event_id
        with pytest.raises(CheckpointError) as caught:
            ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")
        assert str(caught.value) == f"c.json: state.senders.ny.{message}"


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_a_queued_event_on_a_dispatcher_r29_does_not_route_it_to_is_refused(name: str) -> None:
    # 4 buckets, 2 parallel dispatchers: key "b" hashes to 98, bucket 98 rem 4 = 2, which
    # dispatcher 2 rem 2 = 0 owns (R28, R29). A checkpoint that moves it to dispatcher 1
    # (its memory with it) is a state no run reaches.
    config = parse_config(
        {"sites": [1, 2], "regions": {"1": {"type": "partition", "total_num_buckets": 4}},
         "senders": [{"id": "ny", "site": 1, "remote": 2, "parallel": True,
                      "dispatcher_threads": 2, "batch_size": 10}]}
    )  # fmt: skip
    put = {"op": "put", "site": 1, "key": "b", "value": {"v": 1}}
    doc = run(model.Engine(config), put).checkpoint()
    first, second = doc["state"]["senders"]["ny"]["dispatchers"]
    assert [event["event"] for event in first["queue"]] == ["1:1"]
    second["queue"], first["queue"] = first["queue"], []
    second["memory_bytes"], first["memory_bytes"] = first["memory_bytes"], 0
    with pytest.raises(CheckpointError) as caught:
        ENGINES[name].from_checkpoint(config, doc, "c.json")
    assert str(caught.value) == (
        "c.json: state.senders.ny.dispatchers[1].queue[0]: event 1:1 of key 'b' belongs on "
        "dispatcher 0 (R29), not this one"
    )


PARALLEL = parse_config(
    {"sites": [1, 2], "regions": {"1": {"type": "partition", "total_num_buckets": 4}},
     "senders": [{"id": "ny", "site": 1, "remote": 2, "parallel": True,
                  "dispatcher_threads": 2, "batch_size": 2}]}
)  # fmt: skip


def _stopped_with_resend() -> dict[str, Any]:
    """Keys a and e hash to 97 and 101: bucket 1 of 4, dispatcher 1 of 2 (R28, R29). With
    batch_size 2 the second put sends [1:1, 1:2] from cursor 1 (cursor then 3, R31); the
    stop abandons the batch: its members become `resend` in batch order (R37)."""
    engine = model.Engine(PARALLEL)
    for op in (
        {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},
        {"op": "put", "site": 1, "key": "e", "value": {"v": 1}},
        {"op": "stop_sender", "sender": "ny"},
    ):
        engine.apply(parse_op(op, PARALLEL))
    doc = engine.checkpoint()
    second = doc["state"]["senders"]["ny"]["dispatchers"][1]
    assert (second["resend"], second["cursor"], second["memory_bytes"]) == (["1:1", "1:2"], 3, 14)
    return doc


@pytest.mark.parametrize("name", sorted(ENGINES))
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # R31: bucket 1's FIFO is [1:1, 1:2]; a resend holds its oldest events, in order
        ("resend", ["1:2"], "resend: not the oldest queued events of each bucket, in order (R31)"),
        ("resend", ["1:2", "1:1"], "resend: not the oldest queued events of each bucket, in "
         "order (R31)"),
        # dispatcher 1 of 2 owns buckets {1, 3} of 4: 5 is odd but no bucket (R31)
        ("cursor", 5, "cursor: not a bucket this dispatcher owns (R31)"),
        ("on_disk", ["1:2", "1:2"], "on_disk: names an event twice"),
    ],
)  # fmt: skip
def test_r31_a_parallel_dispatcher_no_run_reaches_is_refused(
    name: str, field: str, value: Any, message: str
) -> None:
    """Each of these was accepted: the model then raised KeyError at the deliver_ack of
    the resent batch (resend [1:2]), or the engines ran on from a state R31 never makes."""
    doc = _stopped_with_resend()
    second = doc["state"]["senders"]["ny"]["dispatchers"][1]
    second[field] = value
    if field == "on_disk":
        second["memory_bytes"] = 7  # 1:1 held in memory, so R35's check still passes
    with pytest.raises(CheckpointError) as caught:
        ENGINES[name].from_checkpoint(PARALLEL, doc, "c.json")
    assert str(caught.value) == f"c.json: state.senders.ny.dispatchers[1].{message}"


def test_r31_a_dispatcher_that_owns_no_bucket_keeps_its_own_index_as_cursor() -> None:
    """R31 with more dispatchers than buckets: dispatcher 1 of 2 over 1 bucket owns none, and
    its cursor stays d = 1 (>= B): a state every run has, so it is accepted."""
    config = parse_config(
        {"sites": [1, 2], "regions": {"1": {"type": "partition", "total_num_buckets": 1}},
         "senders": [{"id": "ny", "site": 1, "remote": 2, "parallel": True,
                      "dispatcher_threads": 2}]}
    )  # fmt: skip
    doc = model.Engine(config).checkpoint()
    assert [d["cursor"] for d in doc["state"]["senders"]["ny"]["dispatchers"]] == [0, 1]
    for engine in ENGINES.values():
        assert engine.from_checkpoint(config, doc, "c.json").checkpoint() == doc


def test_replay_from_a_bad_checkpoint_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": CONFIG.to_json()}) + "\n")
    doc = model.Engine(CONFIG).checkpoint() | {"version": 3}
    path = write(tmp_path / "c.json", doc)
    assert main(["replay", str(trace), "--from", str(path)]) == 2
    err = capsys.readouterr().err
    expected = f"{path}: version: 3 is newer than this wanconform reads (2); upgrade wanconform"
    assert err == f"wanconform: error: {expected}\n"


def test_replay_from_a_trace_given_as_the_checkpoint_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": CONFIG.to_json()}) + "\n" + '{"op": "settle"}\n')
    assert main(["replay", str(trace), "--from", str(trace)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {trace}: a trace, not a checkpoint (`replay TRACE --checkpoint "
        "FILE` writes one: the state after the trace)\n"
    )


def test_replay_checkpoint_then_from_it_goes_on_where_it_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three puts at site 1 (sender ny, batch_size 1). Checkpointed after two, then run
    # from that checkpoint over the whole trace: only the third put runs, and it must
    # find what the first two left. By hand: R3 gives it seq 3, event 1:3; R13 sent
    # batch 1 (event 1:1, batch_size 1) at the first put, and with that batch still in
    # flight (no ack) nothing more is sent: queue 1:1, 1:2, 1:3; one batch sent.
    lines = [json.dumps({"config": CONFIG.to_json()})]
    lines += [
        json.dumps({"op": "put", "site": 1, "key": f"k{i}", "value": {"v": i}}) for i in (1, 2, 3)
    ]
    half, full = tmp_path / "half.jsonl", tmp_path / "full.jsonl"
    half.write_text("\n".join(lines[:3]) + "\n")
    full.write_text("\n".join(lines) + "\n")
    checkpoint = tmp_path / "c.json"
    assert main(["replay", str(half), "--engine", "both", "--checkpoint", str(checkpoint)]) == 0
    assert read_checkpoint(checkpoint)["position"]["operations"] == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"wanconform: wrote {checkpoint}"
    for engine in ("model", "impl", "both"):
        argv = ["replay", "--from", str(checkpoint), str(full), "--engine", engine, "--json"]
        assert main(argv) == 0
        result = json.loads(capsys.readouterr().out)
        sender = result["state"]["senders"]["ny"]
        assert sender["dispatchers"][0]["queue"] == ["1:1", "1:2", "1:3"]
        assert sender["dispatchers"][0]["in_flight"]["events"] == ["1:1"]
        assert sender["stats"]["batches_sent"] == 1
        site = result["state"]["sites"]["1"]
        assert sorted(site["entries"]) == ["k1", "k2", "k3"]
        assert site["entries"]["k3"]["value"] == {"v": 3}
        assert result["divergence"] is None


def test_replay_from_a_checkpoint_says_which_operations_it_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, item 11: the count is the whole trace's, and the skips are the replayed
    part's: the summary says both. lost_ack_resend.jsonl's first 5 operations (3 puts, a
    deliver, the lost ack) are in the checkpoint; the other 5 are replayed, none skipped."""
    example = Path(__file__).resolve().parent.parent / "traces" / "examples"
    full = example / "lost_ack_resend.jsonl"
    part = tmp_path / "part.jsonl"
    part.write_text("".join(full.read_text().splitlines(keepends=True)[:6]))
    checkpoint = tmp_path / "cp.json"
    assert main(["replay", str(part), "--engine", "impl", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    assert main(["replay", str(full), "--from", str(checkpoint), "--engine", "both"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{full}: 10 operations (the first 5 from the checkpoint; 5 operations replayed, "
        "0 of them skipped), time 2500 ms"
    )


def test_steps_from_a_checkpoint_name_the_batch_in_flight_it_started_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # batch_size 3: the first three puts send batch 1, which is in flight at the
    # checkpoint after the seventh put; the run from there never saw it sent, and its
    # deliver still names it (from the engine's state), not "?".
    lines = (ROOT / "traces" / "examples" / "batching_by_size.jsonl").read_text().splitlines()
    head, whole = tmp_path / "head.jsonl", tmp_path / "whole.jsonl"
    head.write_text("\n".join(lines[:8]) + "\n")
    whole.write_text("\n".join(lines) + "\n")
    checkpoint = tmp_path / "c.json"
    assert main(["replay", str(head), "--engine", "both", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    assert (
        main(["replay", str(whole), "--engine", "both", "--from", str(checkpoint), "--steps"]) == 0
    )
    out = capsys.readouterr().out
    assert (
        f"{whole}:9 deliver ny → site 2 applied 1:1 ok, 1:2 ok, 1:3 ok; ack of batch 1 in the "
        "network"
    ) in out
    assert "batch ?" not in out
    # the statistics count the observations of this run (operations 8-11), not the
    # checkpoint's
    assert "in Geode's statistics (docs/GEODE_STATS.md), over the 4 operations replayed" in out


def test_a_checkpoint_with_a_byte_order_mark_is_read_as_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an editor that saves UTF-8 with a BOM: accepted, as in a trace or configuration file
    trace = str(ROOT / "traces" / "examples" / "batching_by_size.jsonl")
    plain, marked = tmp_path / "c.json", tmp_path / "bom.json"
    assert main(["replay", trace, "--checkpoint", str(plain)]) == 0
    marked.write_text("\ufeff" + plain.read_text(encoding="utf-8"), encoding="utf-8")
    assert read_checkpoint(marked) == read_checkpoint(plain)
    capsys.readouterr()
    assert main(["replay", trace, "--engine", "both", "--from", str(marked)]) == 0
    assert "11 operations" in capsys.readouterr().out


def test_replay_from_a_checkpoint_that_fits_only_the_first_trace_runs_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first trace was run and its summary printed before the second was refused
    fits = tmp_path / "t.jsonl"
    fits.write_text(json.dumps({"config": CONFIG.to_json()}) + "\n")
    other = tmp_path / "u.jsonl"
    other.write_text(json.dumps({"config": {"sites": [1, 2, 3], "senders": []}}) + "\n")
    path = write(tmp_path / "c.json", model.Engine(CONFIG).checkpoint())
    assert main(["replay", str(fits), str(other), "--from", str(path)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        f"wanconform: error: {path}: config: not the configuration it is restored on\n",
    )


def test_r35_example_restored_at_every_cut_frees_memory_and_disk_as_it_would_have() -> None:
    # SPEC R35's example (maximum_queue_memory_bytes 20, batch_size 2), then batch 2
    # [1:3 on disk, 1:4 in memory (7)] delivered and acked. Restored at every cut from the
    # model's checkpoint, the impl ends as the example says: after op 6 on_disk [1:3],
    # entries_overflowed 1, bytes_overflowed 7, memory_bytes 7; after the ack both leave
    # (R35: an event frees its memory or leaves on_disk): nothing queued, 0 everywhere.
    config = parse_config(
        {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 2,
                                       "maximum_queue_memory_bytes": 20}]}
    )  # fmt: skip
    ops = [
        parse_op(op, config)
        for op in [
            {"op": "put", "site": 1, "key": "a", "value": {"v": 1}},
            {"op": "put", "site": 1, "key": "b", "value": {"v": 10}},
            {"op": "put", "site": 1, "key": "c", "value": {"v": 1}},
            {"op": "deliver", "sender": "ny"},
            {"op": "deliver_ack", "sender": "ny"},
            {"op": "put", "site": 1, "key": "d", "value": {"v": 1}},
            {"op": "deliver", "sender": "ny"},
            {"op": "deliver_ack", "sender": "ny"},
        ]
    ]
    writer = model.Engine(config)
    texts = []
    for op in ops:
        texts.append(checkpoint_text(writer.checkpoint()))
        writer.apply(op)
    for cut, text in enumerate(texts):
        engine = impl.Engine.from_checkpoint(config, json.loads(text))
        for op in ops[cut:6]:
            engine.apply(op)
        if cut < 6:
            sender = engine.observe()["senders"]["ny"]
            assert sender["dispatchers"][0]["on_disk"] == ["1:3"], cut
            assert sender["dispatchers"][0]["memory_bytes"] == 7, cut
            assert sender["stats"]["entries_overflowed"] == 1, cut
            assert sender["stats"]["bytes_overflowed"] == 7, cut
        for op in ops[max(cut, 6) :]:
            engine.apply(op)
        sender = engine.observe()["senders"]["ny"]
        dispatcher = sender["dispatchers"][0]
        assert (dispatcher["queue"], dispatcher["on_disk"], dispatcher["memory_bytes"]) == (
            [],
            [],
            0,
        ), cut
        assert (sender["stats"]["entries_overflowed"], sender["stats"]["bytes_overflowed"]) == (
            0,
            0,
        ), cut
