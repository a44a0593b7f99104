"""Live sites (issue 30, items 3-4, the part done; docs/LIVE.md): real processes, sockets
and timers write event logs that `validate` accepts, under dropped messages too, and each
planted bug is found at its line. Short runs: a few seconds of load each."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.live.run import Faults, Proxy
from conformance.live.wire import read_frame
from traces.outputs import CONTENTS, LIVE_MARKER
from wanconform.cli import main

SENDER = {"batch_size": 10, "batch_time_interval_ms": 50, "ack_timeout_ms": 1500,
          "retry_interval_ms": 200}  # fmt: skip
TWO_WAY = {
    "sites": [1, 2],
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, **SENDER},
        {"id": "ln", "site": 2, "remote": 1, **SENDER},
    ],
}
RING = {  # 1 -> 2 -> 3 -> 1: site 2 forwards 1's events to 3 (R22)
    "sites": [1, 2, 3],
    "senders": [
        {"id": "a", "site": 1, "remote": 2, **SENDER},
        {"id": "b", "site": 2, "remote": 3, **SENDER},
        {"id": "c", "site": 3, "remote": 1, **SENDER},
    ],
}
# R27-R31: ny parallel over 7 buckets, 3 dispatchers; ln serial, 2 dispatchers by thread
PARALLEL: dict[str, object] = {
    "sites": [1, 2],
    "regions": {"1": {"type": "partition", "total_num_buckets": 7}},
    "senders": [
        {"id": "ny", "site": 1, "remote": 2, "parallel": True, "dispatcher_threads": 3,
         **SENDER, "batch_size": 4},
        {"id": "ln", "site": 2, "remote": 1, "dispatcher_threads": 2, "order_policy": "thread",
         **SENDER, "batch_size": 4},
    ],
}  # fmt: skip


def with_senders(config: dict[str, object], **fields: object) -> dict[str, Any]:
    """A copy of `config` whose every sender has `fields`."""
    changed: dict[str, Any] = json.loads(json.dumps(config))
    for sender in changed["senders"]:
        sender.update(fields)
    return changed


def steps(out: Path, *processes: str) -> list[dict[str, Any]]:
    """The lines of these processes' event logs (`site-1`, `nemesis`), headers left out."""
    return [
        json.loads(text)
        for process in processes
        for text in list((out / f"{process}.jsonl").open())[1:]
    ]


CONFLATING = with_senders(PARALLEL, enable_batch_conflation=True)  # R32-R33


def live(tmp_path: Path, config: dict[str, object], *options: str) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "wanconform", "live", "--config", str(tmp_path / "config.json"),
        "--out", str(out), "--seed", "7", *options,
        *(() if "--duration" in options else ("--duration", "3")),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"check them: wanconform validate {out}" in done.stdout
    return out


def validate(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    # The bound is wide: the sites share this 2-core machine with the rest of the tests.
    status = main(["validate", str(out), "--json", "--check-properties", "--max-late-ms", "3000"])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("config", "seconds"), [(TWO_WAY, "20"), (RING, "3")], ids=["two_way_20s", "ring"]
)
def test_an_undisturbed_run_validates_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, object], seconds: str
) -> None:
    out = live(tmp_path, config, "--duration", seconds)
    assert sorted(p.name for p in out.iterdir()) == [
        CONTENTS,
        "live.json",
        *(f"site-{site}.jsonl" for site in config["sites"]),  # type: ignore[attr-defined]
    ]
    status, result = validate(out, capsys)
    assert status == 0, result
    assert result["p1"]["status"] == "held"  # type: ignore[index]
    properties = result["properties"]
    assert properties["lateness"]["status"] == "held"  # type: ignore[index]
    # every write was queued, sent and acknowledged: the queues drained in the grace time
    senders = result["state"]["senders"].values()  # type: ignore[index]
    assert all(d["queue"] == [] for s in senders for d in s["dispatchers"])
    assert all(s["stats"]["batches_sent"] > 0 for s in senders)
    assert result["converged"] is True  # the sites hold identical entries


def test_r20_dropped_messages_time_out_and_are_resent_as_possible_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = live(tmp_path, TWO_WAY, "--drop", "0.15")
    record = json.loads((out / "live.json").read_text())
    assert sum(sum(kinds.values()) for kinds in record["dropped"].values()) > 0
    status, result = validate(out, capsys)
    assert status == 0, result
    stats = [s["stats"] for s in result["state"]["senders"].values()]  # type: ignore[index]
    assert sum(s["batches_timed_out"] for s in stats) > 0
    assert sum(s["events_resent"] for s in stats) > 0


def test_r21_sites_killed_and_wiped_come_back_and_the_run_validates_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SIGKILL and a restart from the site's own log (R21: it keeps everything) or wiped
    # (R21: it keeps its sequence numbers, batch ids and timestamp floor), partitions,
    # drops and delays: every fault at once.
    out = live(
        tmp_path, TWO_WAY, "--nemesis", "kill,wipe,partition", "--drop", "0.05",
        "--delay", "50", "--duplicate", "0.1", "--reset", "0.03", "--duration", "6",
    )  # fmt: skip
    record = json.loads((out / "live.json").read_text())
    assert record["kills"] >= 1
    assert sum(record["duplicated"].values()) > 0 and sum(record["resets"].values()) > 0
    nemesis = steps(out, "nemesis")
    assert [line["op"] for line in nemesis] == ["site_down", "site_up"] * record["kills"]
    assert sorted(p.name for p in out.iterdir()) == [
        CONTENTS,
        "live.json",
        "nemesis.jsonl",
        "site-1.jsonl",
        "site-2.jsonl",
    ]
    status, result = validate(out, capsys)
    assert status == 0, result
    assert result["p1"]["status"] == "held"  # type: ignore[index]


def test_r28_r31_parallel_and_serial_dispatchers_route_by_the_spec_and_validate_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = live(
        tmp_path, PARALLEL, "--nemesis", "kill,wipe", "--drop", "0.1", "--duration", "4",
    )  # fmt: skip
    lines = steps(out, "site-1", "site-2")
    writes = [line for line in lines if line["op"] in ("put", "destroy")]
    for line in writes:
        routes = line["observed"][0]["routes"]
        if line["site"] == 1:  # R28: |hashCode rem 7|; R29: bucket mod 3
            h = {"k0": 3365, "k1": 3366, "k5": 3370, "k11": 104395}.get(line["key"])
            if h is not None:
                assert routes["ny"] == {"bucket": h % 7, "dispatcher": h % 7 % 3}
        else:  # R29, thread policy: the client thread mod 2; a replicated site: no bucket
            assert routes["ln"] == {"bucket": None, "dispatcher": line.get("thread", 0) % 2}
    used = {(line["sender"], line["dispatcher"]) for line in lines if line["op"] == "flush"}
    assert used == {("ny", 0), ("ny", 1), ("ny", 2), ("ln", 0), ("ln", 1)}
    status, result = validate(out, capsys)
    assert status == 0, result
    assert result["p1"]["status"] == "held"  # type: ignore[index]
    properties = result["properties"]
    assert properties["P8"]["status"] == "held"  # type: ignore[index]


def dead_lettering(config: dict[str, object]) -> dict[str, object]:
    """`config` with ny dead-lettering (R24) and site 2's receiver retrying once (R16.2)."""
    changed = with_senders(config)
    changed["senders"][0]["failure_listener"] = "dlq"
    changed["receivers"] = [{"site": 2, "retry_attempts": 1}]
    return changed


def test_r16_r24_injected_failures_are_dead_lettered_in_the_durable_store_across_kills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = live(
        tmp_path, dead_lettering(PARALLEL), "--fail", "0.15", "--nemesis", "kill",
        "--duration", "4",
    )  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == [
        CONTENTS,
        "dlq-site-1",
        "live.json",
        "nemesis.jsonl",
        "site-1.jsonl",
        "site-2.jsonl",
    ]  # fmt: skip  (ln drops what fails: no store at site 2)
    logged = {site: steps(out, f"site-{site}") for site in (1, 2)}
    fails = [line for line in logged[2] if line["op"] == "fail"]
    assert fails and all(line["exception"] == "InjectedFailure" for line in fails)
    assert all(1 <= line["times"] <= 3 for line in fails)
    follow_ups = [
        o for line in logged[1] if line["op"] == "deliver_ack" for o in line["observed"][1:]
    ]
    dead = [o["event"] for o in follow_ups if o["kind"] == "dlq"]
    assert dead and all(o["kind"] == "dlq" for o in follow_ups)
    # the store holds exactly what was logged dead-lettered, in order, with R24's fields
    exported = tmp_path / "dead.jsonl"
    assert main(["dlq", str(out / "dlq-site-1"), "--format", "jsonl", "-o", str(exported)]) == 0
    assert capsys.readouterr().out == f"{exported}: {len(dead)} record{'s' * (len(dead) > 1)}\n"
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [r["event_id"] for r in records] == dead
    assert {r["exception"] for r in records} == {"InjectedFailure"}
    assert all(r["sender"] == "ny" and "value" in r for r in records)
    # ln has no listener: what fails at site 1 is dropped (R18)
    dropped = [o for line in logged[2] if line["op"] == "deliver_ack" for o in line["observed"][1:]]
    assert all(o["kind"] == "dropped" for o in dropped)
    status, result = validate(out, capsys)
    assert status == 0, result
    senders = result["state"]["senders"]  # type: ignore[index]
    assert [r["event_id"] for r in senders["ny"]["dlq"]] == dead


def test_r36_r38_the_senders_lifecycle_and_alerts_under_kills_validate_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = with_senders(PARALLEL)
    ny, ln = config["senders"]
    ny["alert_threshold_ms"] = 60  # R38
    ln["manual_start"] = True  # R37: ln begins stopped
    out = live(
        tmp_path, config, "--lifecycle", "0.08", "--drop", "0.05", "--nemesis", "kill",
        "--duration", "4",
    )  # fmt: skip
    logged = {site: steps(out, f"site-{site}") for site in (1, 2)}
    actions = [line["op"] for lines in logged.values() for line in lines]
    assert {"stop_sender", "start_sender", "pause_sender", "restart_sender"} <= set(actions)
    # R37: while a sender is stopped (as ln is until its first start, and after a stop;
    # a kill keeps it as it was, R21), every write at its site is not queued on it
    for site, sender in ((1, "ny"), (2, "ln")):
        running = sender == "ny"
        for line in logged[site]:
            if line["op"] in ("stop_sender", "start_sender", "restart_sender"):
                running = line["op"] != "stop_sender"
            if line["op"] in ("put", "destroy"):
                enqueued, *after = line["observed"]
                assert (sender in enqueued["senders"]) == running, line
                assert (not running) == (
                    {"kind": "not_queued", "sender": sender, "event": enqueued["event"],
                     "reason": "stopped"} in after
                )  # fmt: skip
    # R38: an alert for each event an ack removed that waited more than 60 ms, and its wait
    queued_at = {
        line["observed"][0]["event"]: line["t"]
        for line in logged[1]
        if line["op"] in ("put", "destroy")
    }
    alerts = 0
    for line in logged[1]:
        if line["op"] != "deliver_ack":
            continue
        removed = line["observed"][0]["removed"]
        expected = [e for e in removed if e in queued_at and line["t"] - queued_at[e] > 60]
        got = [o for o in line["observed"] if o["kind"] == "alert"]
        assert [o["event"] for o in got if o["event"] in queued_at] == expected
        assert all(o["queued_ms"] == line["t"] - queued_at[o["event"]] for o in got
                   if o["event"] in queued_at)  # fmt: skip
        alerts += len(got)
    assert alerts > 0
    status, result = validate(out, capsys)
    assert status == 0, result
    properties = result["properties"]
    assert properties["P11"]["status"] in ("held", "not applicable")  # type: ignore[index]


def test_r32_r33_conflation_in_the_queue_and_in_the_batch_validates_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = live(
        tmp_path, CONFLATING, "--keys", "4", "--drop", "0.15", "--nemesis", "kill",
        "--duration", "4",
    )  # fmt: skip
    lines = steps(out, "site-1", "site-2")
    writes = {
        line["observed"][0]["event"]: line["observed"][0]
        for line in lines
        if line["op"] in ("put", "destroy")
    }
    in_queue = 0
    for line in lines:
        for seen in line["observed"]:
            if seen["kind"] != "conflated":
                continue
            earlier, later = writes.get(seen["event"]), writes.get(seen["by"])
            if seen["where"] == "queue":  # R32: an update replaced by a newer one of its key
                in_queue += 1
                if line["op"] in ("put", "destroy"):
                    assert seen["by"] == line["observed"][0]["event"]
            else:  # R33: kept back from the batch, its successor shipped
                sent = line["observed"][-1]
                assert seen["by"] in sent["events"] and seen["event"] not in sent["events"]
            if earlier is not None and later is not None:
                assert earlier["op"] == later["op"] == "update"
                assert earlier["key"] == later["key"]
    assert in_queue > 0
    status, result = validate(out, capsys)
    assert status == 0, result
    assert result["properties"]["P9"]["status"] == "held"  # type: ignore[index]


def test_r10_r14_r16_4_r19_deltas_ship_as_deltas_and_fall_back_to_full_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = with_senders(PARALLEL, delta=True)  # R14
    out = live(tmp_path, config, "--keys", "5", "--drop", "0.05", "--duration", "3")
    lines = steps(out, "site-1", "site-2")
    written = {  # R10: every event carries the full value its write made
        line["observed"][0]["event"]: line["observed"][0]["value"]
        for line in lines
        if line["op"] in ("put", "delta", "destroy")
    }
    assert sum(line["op"] == "delta" for line in lines) > 0
    sent = [o for line in lines for o in line["observed"] if o["kind"] == "sent"]
    assert sum(o["bytes_delta"] for o in sent) > 0
    # R16.5: a delta applied builds exactly the value its write made (P6)
    built = [
        o for line in lines for o in line["observed"] if o["kind"] == "applied" and "value" in o
    ]
    assert built and all(o["value"] == written[o["event"]] for o in built)
    status, result = validate(out, capsys)
    assert status == 0, result
    assert result["properties"]["P6"]["status"] == "held"  # type: ignore[index]


def test_r36_persistent_queues_live_in_the_impls_store_and_survive_every_kill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = with_senders(PARALLEL, enable_persistence=True)
    out = live(
        tmp_path, config, "--nemesis", "kill", "--lifecycle", "0.03", "--drop", "0.1",
        "--duration", "5",
    )  # fmt: skip
    assert sorted(p.name for p in out.glob("queues-site-*/*.queue")) == [
        "ln.0.queue", "ln.1.queue", "ny.0.queue", "ny.1.queue", "ny.2.queue",
    ]  # fmt: skip
    record = json.loads((out / "live.json").read_text())
    nemesis = steps(out, "nemesis")
    killed = [n["site"] for n in nemesis if n["op"] == "site_down"]
    assert killed and record["queue_stores"]["recoveries"] == len(killed)
    stores = {1: 3, 2: 2}  # a store per dispatcher of each site's persistent sender
    checked = record["queue_stores"]["exact"] + record["queue_stores"]["behind"]
    assert checked == sum(stores[site] for site in killed)
    assert record["queue_stores"]["lost"] == []
    status, result = validate(out, capsys)
    assert status == 0, result


def test_r26_an_operator_redelivers_the_dead_letters_and_the_store_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = live(
        tmp_path, dead_lettering(PARALLEL), "--fail", "0.3", "--lifecycle", "0.2",
        "--nemesis", "kill", "--duration", "6",
    )  # fmt: skip
    lines = steps(out, "site-1")
    waiting: list[str] = []  # ny's dead letters, as site 1's own lines say, in order
    outcomes = []
    for line in lines:
        for seen in line["observed"]:
            if seen["kind"] == "dlq":
                waiting.append(seen["event"])
        if line["op"] == "redeliver":  # R26: every record leaves, in queue order
            redelivered = [o for o in line["observed"] if o["kind"] == "redelivery"]
            assert [o["event"] for o in redelivered] == waiting
            outcomes += [o["outcome"] for o in redelivered]
            waiting = []
    assert outcomes and set(outcomes) <= {"requeued", "superseded", "unrecoverable"}
    exported = tmp_path / "left.jsonl"
    assert main(["dlq", str(out / "dlq-site-1"), "--format", "jsonl", "-o", str(exported)]) == 0
    capsys.readouterr()
    left = [json.loads(line)["event_id"] for line in exported.read_text().splitlines()]
    assert left == waiting  # the store holds what was not redelivered, across every kill
    status, result = validate(out, capsys)
    assert status == 0, result


@pytest.mark.parametrize(
    ("bug", "config", "difference"),
    [
        ("wrong_flush", TWO_WAY, "observations[0].events["),
        ("cursor_reset", PARALLEL, "observations[0].events["),
        ("dead_letter_after_ack", dead_lettering(PARALLEL), '"kind":"dlq"'),
        ("conflate_in_flight", CONFLATING, '"where":"queue"'),
        ("apply_duplicate_batch", TWO_WAY, 'model="skipped" log="applied"'),
        ("forward_to_origin", RING, "observations["),
        ("resend_without_possible_duplicate", TWO_WAY, "observations[0].events_resent"),
    ],
)
def test_a_planted_bug_is_found_at_its_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bug: str,
    config: dict[str, object],
    difference: str,
) -> None:
    # conflate_in_flight shows only where an update meets its key's batch in flight: with
    # 20 keys and loopback acks that could miss a whole run on a loaded host (CI saw it)
    meet = ("--keys", "2", "--delay", "150") if bug == "conflate_in_flight" else ()
    out = live(tmp_path, config, "--bug", bug, "--drop", "0.15", "--fail", "0.1",
               "--duplicate", "0.2", *meet)  # fmt: skip
    report = tmp_path / "report.html"
    assert main(["validate", str(out), "--report", str(report)]) == 1
    text = capsys.readouterr().out
    assert f"P1: FAILED: model and the log diverge at {out}/site-" in text
    assert difference in text
    # the report points at the merged line where it showed, with the fields that differ
    line = text.split("diverge at ", 1)[1].split(": divergence", 1)[0]
    page = report.read_text()
    assert f'Where it showed first: <code class="focus">{line}</code>' in page
    assert '<table class="diff">' in page


def test_r17_an_ack_before_its_batch_is_applied_is_a_log_no_merge_explains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # R17: the receiver answers after R16 applied the batch. This one answers first and
    # applies 20 ms later: its sender logs the ack before the receiver logs the delivery.
    out = live(tmp_path, TWO_WAY, "--bug", "ack_before_apply")
    assert main(["validate", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"wanconform: error: {out}/site-" in err
    assert "deliver_ack of batch " in err
    assert "but no line before it received that batch" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--delay", "400"], "--delay: 400 ms: keep it below a quarter of the smallest"),
        (["--nemesis", "kill,flood"], "--nemesis: unknown 'flood' (one or more of kill, wipe"),
        (["--nemesis", "kill,,wipe"], "--nemesis: an empty name (one or more of kill, wipe"),
        (["--nemesis", "kill,"], "--nemesis: an empty name (one or more of kill, wipe"),
        (["--nemesis", "kill,wipe,kill"], "--nemesis: 'kill' given twice"),
    ],
)
def test_a_fault_the_model_cannot_explain_or_does_not_know_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TWO_WAY))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out), *options]
    assert main(command) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("sites", [[1], [1, 2]], ids=["one_site", "two_sites"])
def test_a_configuration_without_senders_runs_its_clients_and_validates_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sites: list[int]
) -> None:
    # No sender: no ack timeout to bound --delay by, no dispatcher to drain (1 s of grace).
    (tmp_path / "config.json").write_text(json.dumps({"sites": sites, "senders": []}))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "wanconform", "live", "--config",
               str(tmp_path / "config.json"), "--out", str(out), "--duration", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    count = "1 site" if sites == [1] else "2 sites"
    assert f"live: {count} running for 1 s (+ 1 s to drain)" in done.stderr
    assert sorted(p.name for p in out.glob("*.jsonl")) == [f"site-{s}.jsonl" for s in sites]
    status, result = validate(out, capsys)
    assert status == 0
    assert result["p1"] == {
        "reason": "model and the log agree at every step", "status": "held", "violations": []
    }  # fmt: skip


CHAIN = {  # 1 -> 2 -> 3
    "sites": [1, 2, 3],
    "senders": [
        {"id": "a", "site": 1, "remote": 2, **SENDER},
        {"id": "b", "site": 2, "remote": 3, **SENDER},
    ],
}


@pytest.mark.parametrize(
    ("bug", "config", "options", "needs"),
    [
        ("ack_before_apply", {"sites": [1, 2], "senders": []}, [],
         "a sender, and the configuration has none"),
        ("wrong_flush", with_senders(TWO_WAY, batch_size=1), [],
         "a sender with batch_size 2 or more"),
        ("forward_to_origin", CHAIN, [], "a site that receives an event and has a sender to"),
        ("resend_without_possible_duplicate", TWO_WAY, ["--duplicate", "0.5", "--delay", "10"],
         "a timeout to resend after: give --drop, --reset or --nemesis"),
        ("cursor_reset", TWO_WAY, [], "a parallel sender with more buckets than dispatcher"),
        ("cursor_reset", with_senders(PARALLEL, dispatcher_threads=7, order_policy="key"), [],
         "a parallel sender with more buckets than dispatcher"),
        ("dead_letter_after_ack", dead_lettering(TWO_WAY), [],
         '--fail, and a sender with failure_listener "dlq" whose remote'),
        ("dead_letter_after_ack", TWO_WAY, ["--fail", "0.5"],
         '--fail, and a sender with failure_listener "dlq" whose remote'),
        ("dead_letter_after_ack", {**dead_lettering(TWO_WAY),
                                   "receivers": [{"site": 2, "retry_attempts": 3}]},
         ["--fail", "0.5"], '--fail, and a sender with failure_listener "dlq" whose remote'),
        ("conflate_in_flight", PARALLEL, [], "a sender with enable_batch_conflation (R32)"),
        ("apply_duplicate_batch", TWO_WAY, ["--drop", "0.5"],
         "a batch passed twice: give --duplicate"),
    ],
)  # fmt: skip
def test_a_bug_the_run_cannot_show_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bug: str,
    config: dict[str, object],
    options: list[str],
    needs: str,
) -> None:
    # (was: the run went ahead, validate found nothing: "P1: held", as if the bug were
    # not there)
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out),
               "--bug", bug, *options]  # fmt: skip
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"wanconform: error: --bug {bug}: cannot show in this run, and validate would find "
        f"nothing: it needs {needs}"
    )
    assert err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("senders", "back"),
    [
        ([(1, 2), (2, 1)], True),  # both ways: 2 would send 1's event back to 1
        ([(1, 2), (2, 3), (3, 1)], True),  # a ring: 3 would send 1's event back to 1
        ([(1, 2), (2, 3)], False),  # a chain: every forward is one R22 makes
        ([(1, 2), (1, 3), (2, 3)], True),  # 2 would send 1's event to 3, which has it
        ([(1, 2), (1, 3), (2, 4), (3, 4)], False),  # the diamond: 4 receives it twice
        ([(1, 2)], False),
    ],
)
def test_forward_to_origin_shows_where_a_site_has_a_sender_r22_skips(
    senders: list[tuple[int, int]], back: bool
) -> None:
    from conformance.live.run import forwards_back
    from traces.config import parse_config

    sites = sorted({site for pair in senders for site in pair})
    config = {"sites": sites, "senders": [{"id": f"s{a}{b}", "site": a, "remote": b}
                                          for a, b in senders]}  # fmt: skip
    assert forwards_back(parse_config(config)) is back


def test_the_summary_counts_the_frames_partitions_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (was: printed only with --drop: a run with --nemesis partition said "3 partitions"
    # and nothing of the frames lost, which live.json's "dropped" counts)
    import conformance.live.run

    record = {"lines": {"nemesis.jsonl": 0, "site-1.jsonl": 40, "site-2.jsonl": 38},
              "dropped": {"ln": {"batch": 2, "ack": 1}, "ny": {"batch": 1, "ack": 0}},
              "duplicated": {"ln": 0, "ny": 0}, "resets": {"ln": 0, "ny": 0},
              "nemesis": ["partition"], "kills": 0, "wipes": 0, "partitions": 3}  # fmt: skip
    monkeypatch.setattr(conformance.live.run, "live", lambda *args: record)
    (tmp_path / "config.json").write_text(json.dumps(TWO_WAY))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out),
               "--nemesis", "partition"]  # fmt: skip
    assert main(command) == 0
    assert capsys.readouterr().out.splitlines()[3:5] == [
        "the proxies dropped 4 messages",
        "the nemesis killed 0 sites (0 of them wiped), 3 partitions",
    ]


def test_r36_a_store_that_lost_a_queued_event_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (was: "1 LOST OR CHANGED: ..." printed, exit 0, so `live ... && validate` passed a run
    # whose persistent queue lost an event; validate reads the logs, not the stores)
    import conformance.live.run

    record = {"lines": {"nemesis.jsonl": 2, "site-1.jsonl": 40, "site-2.jsonl": 38},
              "dropped": {"ln": {}, "ny": {}}, "duplicated": {}, "resets": {},
              "nemesis": ["kill"], "kills": 1, "wipes": 0, "partitions": 0,
              "queue_stores": {"recoveries": 1, "exact": 0, "behind": 0,
                               "lost": ["site 1 ny d0"]}}  # fmt: skip
    monkeypatch.setattr(conformance.live.run, "live", lambda *args: record)
    (tmp_path / "config.json").write_text(json.dumps(TWO_WAY))
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(tmp_path / "r"),
               "--nemesis", "kill"]  # fmt: skip
    assert main(command) == 1
    out = capsys.readouterr().out
    assert "1 LOST OR CHANGED: site 1 ny d0" in out
    record["queue_stores"] = {"recoveries": 1, "exact": 1, "behind": 0, "lost": []}
    assert main(command) == 0  # every store as the log says: the run passes


def test_a_run_directory_missing_a_log_it_wrote_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (was: validate DIR without site-2.jsonl said "deliver of batch 1 of ny dispatcher 0,
    # but no line before it sent that batch", exit 2, naming neither the file nor why)
    out = live(tmp_path, TWO_WAY, "--duration", "1")
    (out / "site-2.jsonl").unlink()
    assert main(["validate", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {out}/site-2.jsonl: missing: the run wrote it "
        f"({CONTENTS} lists it); validate a run's event logs whole\n"
    )


def test_the_directory_a_killed_live_left_is_refused_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `live` killed with SIGKILL leaves `.DIR.PID.*.tmp` with the sites' logs but not the
    # nemesis's (written at the end): validate said "P1: FAILED" at the first connection
    # failure to a site whose site_down was never written, blaming a system that was right
    staging = tmp_path / ".run.4242.k9x_1.tmp"
    staging.mkdir()
    header = {"log": "events", "version": 1, "process": "site-1",
              "config": {"sites": [1], "senders": []}}  # fmt: skip
    (staging / "site-1.jsonl").write_text(json.dumps(header) + "\n")
    (staging / "run.json").write_text("{}")
    assert main(["validate", str(staging)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {staging}: unfinished: the directory a wanconform command was "
        "building when it was killed (or still builds), not a whole run: its logs lack what "
        "the run writes at its end (live's nemesis.jsonl); run it again\n"
    )
    (staging / "run.json").unlink()  # the same log in a directory of the user's: valid
    done = tmp_path / "run"
    staging.rename(done)
    assert main(["validate", str(done)]) == 0


def test_a_killed_run_s_staging_is_removed_by_the_next_run_once_its_process_is_gone(
    tmp_path: Path,
) -> None:
    # `live` SIGKILLed leaves `.DIR.PID.*.tmp` (docs/LIVE.md): the next run of DIR removes
    # it if process PID is gone, never one of a process still running, nor another DIR's
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    dead = int(ended.stdout)  # (its pid, not reused this soon)
    stale = tmp_path / f".run.{dead}.k1ll3d.tmp"
    running = tmp_path / f".run.{os.getpid()}.st4ged.tmp"  # (this test's own process)
    other = tmp_path / f".other.{dead}.k1ll3d.tmp"
    for staging in (stale, running, other):
        staging.mkdir()
        (staging / "site-1.jsonl").write_text("{}\n")
    out = live(tmp_path, TWO_WAY, "--duration", "1")
    assert (out / LIVE_MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == sorted(
        [running.name, other.name]
    )


@pytest.mark.parametrize("seed", [str(2**63), str(-(2**63) - 1), "9" * 40])
def test_a_seed_beyond_64_bits_is_refused_as_generate_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    # (was: any integer ran, recorded in live.json, where generate refuses it)
    (tmp_path / "config.json").write_text(json.dumps(TWO_WAY))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out),
               "--seed", seed]  # fmt: skip
    assert main(command) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: --seed: must be a 64-bit integer, got {seed}\n"
    )
    assert not out.exists()


@pytest.mark.parametrize("kinds", ["partition", "kill,partition"])
def test_a_partition_without_a_sender_to_cut_off_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kinds: str
) -> None:
    # (was: the nemesis's first partition chose from no proxies: IndexError, a traceback,
    # exit 1, after the sites had run for a while)
    (tmp_path / "config.json").write_text(json.dumps({"sites": [1], "senders": []}))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out),
               "--duration", "5", "--nemesis", kinds]  # fmt: skip
    assert main(command) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: --nemesis: partition cuts a sender off from its remote, and the "
        "configuration has no sender; leave partition out\n"
    )
    assert not out.exists()


def test_a_drain_longer_than_an_hour_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (was: "live: 2 sites running for 1 s (+ 9e+15 s to drain)", then the sites slept on
    # until Ctrl-C: the drain is the senders' ack_timeout_ms + retry_interval_ms + 1 s)
    config = with_senders(TWO_WAY, ack_timeout_ms=1000)
    config["senders"][1]["retry_interval_ms"] = 9 * 10**18  # ln's
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out)]
    assert main(command) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: live: sender ln's ack_timeout_ms + retry_interval_ms is "
        "9,000,000,000,000,001,000 ms, and the sites dispatch that long (+ 1 s) after the "
        "load to drain: at most 3,600 s in all; lower them for a live run\n"
    )
    assert not out.exists()


def test_a_geode_file_as_config_points_at_import_not_at_a_flag_live_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xml = tmp_path / "cache.xml"
    xml.write_text("<cache/>\n")
    out = tmp_path / "run"
    assert main(["live", "--config", str(xml), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"wanconform: error: {xml}: not a JSON configuration or trace; for Geode cache.xml "
        f"or gfsh files import them first: wanconform import --site 1={xml} --site 2=OTHER "
        "-o CONFIG.json\n"
    )
    assert not out.exists()


def test_a_slow_load_stops_at_the_end_not_at_its_next_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --rate 0.001: the first write is due some 1,000 s away; the sites stop when the
    # load ends (was: each slept until that write, and the run failed 30 s past the end)
    out = live(tmp_path, TWO_WAY, "--duration", "1", "--rate", "0.001", "--nemesis", "kill")
    assert steps(out, "site-1", "site-2") == []
    status, result = validate(out, capsys)
    assert (status, result["operations"]) == (0, 0)


def test_a_run_reports_its_progress_in_seconds_of_the_run_and_its_drain(tmp_path: Path) -> None:
    # (what `live` shows on a terminal: `live: 1/2 s`)
    from conformance.live.run import Faults
    from conformance.live.run import live as run_live
    from traces.config import parse_config

    raw = {"sites": [1], "senders": []}  # 1 s of run, 1 s of grace
    seen: list[tuple[int, int]] = []
    load = {"rate": 5.0, "keys": 3, "fail": 0.0, "lifecycle": 0.0}
    run_live(
        parse_config(raw), raw, tmp_path / "run", 1.0, 7, load, Faults(), [], None,
        lambda line: None, lambda seconds, of: seen.append((seconds, of)),
    )  # fmt: skip
    assert seen and {of for _, of in seen} == {2}
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)  # never back
    assert seen[-1] == (2, 2)  # the sites stop after their run and its drain


def test_r21_a_site_started_again_cuts_a_line_its_kill_left_cut_short(tmp_path: Path) -> None:
    # A SIGKILL can stop a line's `write` at a page boundary: the next line must not
    # start inside it (CI saw the site fail to start: "Unterminated string")
    from conformance.live.site import Site, cut_torn_line
    from traces.config import parse_config

    raw = {"sites": [1], "senders": []}
    log = tmp_path / "site-1.jsonl"
    Site(parse_config(raw), 1, {"config": raw}, log)  # writes the header
    header = log.read_bytes()
    assert header.endswith(b"\n") and header.count(b"\n") == 1
    whole = b'{"t":5,"at":5,"op":"put","site":1,"key":"a","observed":[]}\n'
    log.write_bytes(header + whole + whole[:30])  # the second line's write cut short
    site = Site(parse_config(raw), 1, {"config": raw}, log)
    assert log.read_bytes() == header + whole
    site.log(6, 6, {"op": "tick"}, [])
    assert log.read_bytes().splitlines()[-1] == b'{"t":6,"at":6,"op":"tick","observed":[]}'
    # a whole log is left as it is; a last line longer than one read is cut whole
    cut_torn_line(log)
    assert log.read_bytes().count(b"\n") == 3
    long = b'{"t":7,"_":"' + b"x" * 200_000
    log.write_bytes(header + long)
    cut_torn_line(log)
    assert log.read_bytes() == header
    log.write_bytes(header[:10])  # not even the header: written again
    Site(parse_config(raw), 1, {"config": raw}, log)
    assert log.read_bytes() == header


def sites_of(folder: Path) -> list[int]:
    """The live site processes whose RUN.json lies under `folder` (Linux's /proc; an
    ended process, a zombie not yet reaped, has no command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"conformance.live.site" in words and any(str(folder).encode() in w for w in words):
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_the_sites_stop_when_live_is_killed_not_at_their_planned_end(tmp_path: Path) -> None:
    # The sites have sessions of their own (Ctrl-C reaches `live` only): SIGKILLed, `live`
    # cannot stop them, and they ran on as orphans until their end (was: 60 s + drain)
    import signal
    import time

    (tmp_path / "config.json").write_text(json.dumps(TWO_WAY))
    command = [sys.executable, "-m", "wanconform", "live", "--config",
               str(tmp_path / "config.json"), "--out", str(tmp_path / "run"), "--seed", "7",
               "--duration", "60", "--rate", "20"]  # fmt: skip
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        logs: list[Path] = []
        while time.monotonic() < deadline:  # both sites up and writing (they have the plan)
            logs = sorted(tmp_path.glob(".run.*/site-*.jsonl"))
            if len(logs) == 2 and all(len(p.read_bytes().splitlines()) > 3 for p in logs):
                break
            time.sleep(0.1)
        assert len(logs) == 2 and len(sites_of(tmp_path)) == 2
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 30
    while sites_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sites_of(tmp_path) == []
    for log in logs:  # stopped between two steps: every line whole
        text = log.read_bytes()
        assert text.endswith(b"\n")
        assert all(json.loads(line) for line in text.splitlines())


def test_a_site_whose_plan_never_comes_stops_quietly(tmp_path: Path) -> None:
    # `live` killed before it sent a site its plan: EOF on stdin (was: a JSONDecodeError
    # traceback and exit 1)
    raw = {"sites": [1], "senders": []}
    (tmp_path / "run.json").write_text(json.dumps({"config": raw, "seed": 1}))
    site = subprocess.Popen(
        [sys.executable, "-m", "conformance.live.site", str(tmp_path / "run.json"), "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert site.stdout is not None and site.stdout.readline().startswith("PORT ")
    out, err = site.communicate(input="", timeout=60)  # stdin closed: no plan
    assert (site.returncode, out, err) == (0, "", "")
    assert len((tmp_path / "site-1.jsonl").read_text().splitlines()) == 1  # its header only


@pytest.mark.parametrize(("late_ms", "made"), [(0.0, 1018), (0.7, 1017), (3.0, 1017)])
def test_the_load_paces_against_the_clock_so_late_sleeps_do_not_lower_the_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late_ms: float, made: int
) -> None:
    # --rate 1000 gave some 600 writes a second: each write slept its interval after the
    # last one was made, so every sleep's overshoot and every write's own time added up.
    # On a simulated clock whose every sleep comes `late_ms` late, the load makes as many
    # writes in its second as when sleeps are exact (the last one, due just before the end,
    # comes after it and is not made) (was: 592 with 0.7 ms, 254 with 3 ms).
    import asyncio
    import random
    import types

    import conformance.live.site as site_module
    from conformance.live.site import Site
    from traces.config import parse_config

    now = [1_000_000_000_000_000_000]  # ns

    async def sleep(seconds: float) -> None:
        now[0] += int(seconds * 1e9 + (late_ms * 1e6 if seconds else 0))  # (a turn: none)

    monkeypatch.setattr(site_module, "time", types.SimpleNamespace(time_ns=lambda: now[0]))
    monkeypatch.setattr(asyncio, "sleep", sleep)
    raw = {"sites": [1], "senders": []}
    site = Site(parse_config(raw), 1, {"config": raw}, tmp_path / "site-1.jsonl")
    end = now[0] // 1_000_000 + 1000  # one second of load
    run = {"rate": 1000.0, "keys": 20}
    asyncio.run(site.load(random.Random("7:1:0"), end, run))
    writes = steps(tmp_path, "site-1")
    assert len(writes) == made
    assert all(w["t"] < end for w in writes)


def test_an_ack_timeout_too_short_for_a_real_network_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (was: ack_timeout_ms 1 or 20 ran, and validate said "P1: FAILED" at a delivery that
    # came after its sender had timed the batch out, a disagreement no bug caused)
    config = with_senders(TWO_WAY, ack_timeout_ms=1000)
    config["senders"][1]["ack_timeout_ms"] = 1  # ln's
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    command = ["live", "--config", str(tmp_path / "config.json"), "--out", str(out)]
    assert main(command) == 2
    assert capsys.readouterr().err == (
        "wanconform: error: live: sender ln's ack_timeout_ms is 1: at least 500 for a live "
        "run (a batch takes real time to cross and be applied; one applied after its sender "
        "timed it out would be a disagreement the system did not cause)\n"
    )
    assert not out.exists()


async def connect_while_a_kill_begins(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A sender connects through its proxy; while the proxy connects to the remote, the
    nemesis begins a kill of the remote (its fence sees no greeted link), kills it and
    marks the proxy down. Return the proxy's first frame to the sender."""
    remote = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0)
    proxy = Proxy("ny", 1, 2, remote.sockets[0].getsockname()[1], 0, Faults())
    connect = asyncio.open_connection
    fence_saw: list[set[int]] = []

    async def kill_meanwhile(host: str, port: int) -> Any:
        proxy.set_state(proxy.state, passing=False)  # Runner.kill: the fence begins
        fence_saw.append(set(proxy.greeted))  # it waits for greeted links: none yet
        connection = await connect(host, port)  # the remote accepted before it died
        proxy.set_state("down")  # SIGKILL, `site_down` logged: new connections refused
        return connection

    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    monkeypatch.setattr(asyncio, "open_connection", kill_meanwhile)
    reader, writer = await connect("127.0.0.1", server.sockets[0].getsockname()[1])
    frame = await asyncio.wait_for(read_frame(reader), timeout=5)
    writer.close()
    server.close()
    remote.close()
    assert fence_saw == [set()]
    assert frame is not None
    return frame


def test_r21_a_sender_connecting_while_its_remote_is_killed_is_refused_not_greeted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (was: `hello`, so the sender logged its batch `sent` after the nemesis logged
    # `site_down`, and validate's P1 failed on a run nothing was wrong with: found with
    # --nemesis kill, 70 kills, at a flush 2 ms after the site_down)
    assert asyncio.run(connect_while_a_kill_begins(monkeypatch)) == {"type": "refused"}


def test_a_site_that_cannot_write_its_log_stops_the_run_with_one_line(tmp_path: Path) -> None:
    # A full disk (here: a file size limit, EFBIG, as ENOSPC would be): was a traceback
    # per site on the terminal, then "live: site 1 did not start (exit None)" or "site
    # processes failed: {1: 1}", naming neither the directory nor the reason
    import resource
    import signal

    def limited() -> None:  # inherited by the sites; SIGXFSZ ignored: the write fails
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    (tmp_path / "config.json").write_text(
        json.dumps(with_senders(TWO_WAY, enable_persistence=True))
    )
    out = tmp_path / "run"
    command = [sys.executable, "-m", "wanconform", "live", "--config",
               str(tmp_path / "config.json"), "--out", str(out), "--seed", "3",
               "--duration", "20", "--rate", "200"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=limited, timeout=120)
    assert done.returncode == 2
    failing = [  # whichever site reaches the limit first; drain 1500 + 200 + 1000 ms
        [
            "live: 2 sites running for 20 s (+ 2.7 s to drain)",
            f"wanconform: error: {out}: cannot write: File too large (site {site}; nothing "
            "written)",
        ]
        for site in (1, 2)
    ]
    assert done.stderr.splitlines() in failing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]
