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
from conformance.profiles import PROFILES, generate_trace
from traces.checkpoint import CheckpointError, checkpoint_text, read_checkpoint
from traces.config import parse_config
from traces.ops import parse_op
from wanconform.cli import main

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
    assert [event["event"] for event in sender["queue"]] == ["1:1"]
    assert sender["queue"][0]["recipients"] == [1, 2]
    assert sender["in_flight"] == {"batch_id": 1, "events": ["1:1"], "sent_at": 0}
    assert sender["batch"]["batch_id"] == 1
    assert sender["batch"]["events"][0]["as_delta"] is False
    assert sender["last_batch_id"] == 1
    run(engine, {"op": "deliver", "sender": "ny"})
    state = engine.checkpoint()["state"]
    assert state["sites"]["2"]["applied"] == {"1": [[1, 1]]}
    assert state["senders"]["ny"]["batch"] is None
    assert state["senders"]["ny"]["ack"] == {"batch_id": 1, "statuses": [["ok", None]]}
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
        (lambda d: d | {"version": 2}, "version: 2 is newer than this wanconform reads (1)"),
        (lambda d: d | {"format": "x"}, "format: not a checkpoint"),
        (lambda d: d | {"state": {**d["state"], "time": -1}}, "state.time: -1 is less than"),
        (lambda d: "{", "not JSON"),
    ],
)
def test_a_bad_checkpoint_file_is_one_line(tmp_path: Path, change: Any, message: str) -> None:
    doc = run(model.Engine(CONFIG), {"op": "put", "site": 1, "key": "k", "value": {}}).checkpoint()
    path = write(tmp_path / "c.json", change(doc))
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_an_inconsistent_checkpoint_is_refused(name: str) -> None:
    doc = run(model.Engine(CONFIG), {"op": "put", "site": 1, "key": "k", "value": {}}).checkpoint()
    doc["state"]["senders"]["ny"]["in_flight"]["events"] = ["1:9"]  # not the queue's head
    with pytest.raises(CheckpointError, match=r"in_flight\.events: not the queue's first events"):
        ENGINES[name].from_checkpoint(CONFIG, doc, "c.json")
    other = parse_config({"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2}]})
    doc = model.Engine(CONFIG).checkpoint()
    with pytest.raises(CheckpointError, match="config: not the configuration"):
        ENGINES[name].from_checkpoint(other, doc, "c.json")


def test_replay_from_a_bad_checkpoint_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": CONFIG.to_json()}) + "\n")
    doc = model.Engine(CONFIG).checkpoint() | {"version": 3}
    path = write(tmp_path / "c.json", doc)
    assert main(["replay", str(trace), "--from", str(path)]) == 2
    err = capsys.readouterr().err
    expected = f"{path}: version: 3 is newer than this wanconform reads (1); upgrade wanconform"
    assert err == f"wanconform: error: {expected}\n"
