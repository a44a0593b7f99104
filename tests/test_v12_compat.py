"""SPEC §16: "every trace valid under v1.2 is valid under v2.0 and gives the same entries,
versions, counters and dead letters". `tests/data/v12_behaviour.json` holds, for every
example trace of `traces/examples/` and for 60 generated traces of the v1.2 profiles (seed
7, 400 operations each), a digest of what the v1.2 engines did, recorded with the code
of SPEC v1.2 (commit 100bc35): every step's observations, less the fields v2.0 adds
(`dispatcher`, `routes`), then the final entries, versions, timestamps floors, site
and v1.2 sender counters and dead letters (v1.2's fields). Both v2.0 engines must give
the same digests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import impl
import model
from conformance.generation.profiles import generate_trace
from traces.config import Config
from traces.engine import EngineFactory
from traces.ops import Op
from traces.tracefile import read_trace

ROOT = Path(__file__).resolve().parent.parent
RECORDED: dict[str, str] = json.loads((ROOT / "tests/data/v12_behaviour.json").read_text())
V12_SENDER_STATS = (
    "batches_sent", "events_sent", "events_resent", "bytes_full", "bytes_delta",
    "batches_timed_out", "connection_failures", "events_dropped", "invalid_deltas",
    "dlq_records", "redelivered", "redelivery_superseded", "redelivery_unrecoverable",
)  # fmt: skip
V12_RECORD = ("event_id", "sender", "key", "op", "exception", "version", "value", "recipients")


def v12_final(state: dict[str, Any]) -> dict[str, Any]:
    """The v1.2 fields of an observable state that §16 says do not change."""
    return {
        "time": state["time"],
        "sites": {
            site: {name: value[name] for name in ("seq", "timestamp_floor", "entries", "stats")}
            for site, value in state["sites"].items()
        },
        "senders": {
            sender: {
                "stats": {name: value["stats"][name] for name in V12_SENDER_STATS},
                "dlq": [{k: r[k] for k in V12_RECORD if k in r} for r in value["dlq"]],
            }
            for sender, value in state["senders"].items()
        },
    }


def behaviour(config: Config, ops: list[Op], engine: EngineFactory) -> str:
    run = engine(config)
    digest = hashlib.sha256()
    for op in ops:
        observed = [
            {k: v for k, v in obs.items() if k not in ("dispatcher", "routes")}
            for obs in run.apply(op)
        ]
        digest.update(json.dumps(observed, sort_keys=True).encode())
    digest.update(json.dumps(v12_final(run.observe()), sort_keys=True).encode())
    return digest.hexdigest()[:32]


def traces() -> list[tuple[str, Config, list[Op]]]:
    out = []
    for name in sorted(RECORDED):
        if name.endswith(".jsonl"):
            trace = read_trace(ROOT / "traces/examples" / name)
            out.append((name, trace.config, list(trace.ops)))
        else:
            profile, _ = name.rsplit("-", 1)
            config, ops = generate_trace(7, name, profile, 400)
            out.append((name, config, list(ops)))
    return out


@pytest.mark.parametrize("engine", [model.Engine, impl.Engine], ids=["model", "impl"])
def test_v12_traces_behave_as_under_v12(engine: EngineFactory) -> None:
    assert len(RECORDED) == 14 + 60
    differing = [name for name, c, ops in traces() if behaviour(c, ops, engine) != RECORDED[name]]
    assert differing == []
