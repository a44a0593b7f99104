"""Benchmarks: what `wanconform bench` measures, as plain functions returning figures.

Speed is measured here, never asserted in a test (the README records the figures with
the machine). `engines` times the model and the impl alone on the steady workload;
`spark_campaign` generates and checks a trace set on Spark and measures the whole
process tree (driver, JVM, Python workers) from /proc, against the plain single-process
run of the same traces.
"""

from __future__ import annotations

import collections
import gc
import itertools
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import impl
from conformance.running.ahead import possible as ahead_possible
from conformance.spark.check import check_trace
from traces.canonical import canonical_json
from traces.engine import make_engine
from traces.generate import ring_workload, steady_workload
from traces.ops import Op
from traces.parquet import op_parser, open_trace_set
from traces.text import plural, shell_word

Say = Callable[[str], None]


def time_engine(name: str, config: Any, ops: list[Op]) -> float:
    """Seconds one engine takes to apply every operation (garbage collected first). The
    operations are applied by `map` and each one's observations dropped at once, with no
    bytecode between two calls (a `for` loop's own cost per operation is 4% of the impl's
    and 0.3% of the model's)."""
    engine = make_engine(name, config)
    gc.collect()
    start = time.perf_counter()
    collections.deque(map(engine.apply, ops), maxlen=0)
    return time.perf_counter() - start


def time_checker(config: Any, ops: list[Op]) -> float:
    """Seconds the model takes with the property checker following it (P2-P12, as
    `replay --check-properties` runs them), garbage collected first."""
    from conformance.properties.checker import PropertyChecker

    engine = make_engine("model", config)
    checker = PropertyChecker(config)
    observe, observe_keys = engine.observe, getattr(engine, "observe_keys", None)
    capped = lambda: bool(getattr(engine, "settle_capped", False))  # noqa: E731
    gc.collect()
    start = time.perf_counter()
    for op in ops:
        checker.after_step(op, engine.apply(op), observe, "", capped, observe_keys)
    return time.perf_counter() - start


def time_lockstep(config: Any, ops: list[Op], ahead: bool = False) -> float:
    """Seconds model and impl take in lockstep (`replay --engine both`, P1) over every
    operation, state comparisons included (garbage collected first); `ahead`: the impl
    in a helper process (`conformance.running.ahead`), its start included."""
    from conformance.running.lockstep import Lockstep

    gc.collect()
    start = time.perf_counter()
    replay = lambda: ops  # noqa: E731
    lockstep = Lockstep(config, replay=replay, ahead=replay if ahead else None)
    assert lockstep.ahead == ahead
    for op in ops:
        lockstep.step(op)
    lockstep.finish()
    seconds = time.perf_counter() - start
    assert lockstep.divergence is None, lockstep.divergence
    return seconds


def time_reading(config: Any, ops: list[Op]) -> dict[str, float]:
    """Seconds one validating pass over the workload's trace file takes (`open_trace`, as
    every command reads a trace before running it), written canonically (`write_trace`)
    and as anyone else writes JSON Lines (Python's `json.dumps`: spaces, "op" first)."""
    import json

    from traces.ops import op_to_json
    from traces.tracefile import open_trace, write_trace

    seconds = {}
    with tempfile.TemporaryDirectory() as folder:
        canonical, plain = Path(folder) / "canonical.jsonl", Path(folder) / "plain.jsonl"
        write_trace(canonical, config, ops)
        with open(plain, "w", encoding="utf-8") as out:
            out.write(json.dumps({"config": config.to_json()}) + "\n")
            out.writelines(json.dumps(op_to_json(op)) + "\n" for op in ops)
        for name, path in (("canonical", canonical), ("plain", plain)):
            gc.collect()
            start = time.perf_counter()
            source = open_trace(path)
            seconds[name] = time.perf_counter() - start
            assert source.op_count == len(ops)
    return seconds


def round_ratios(slower: list[float], faster: list[float], scale: float = 1.0) -> list[float]:
    """Each round's ratio of two timings (`scale`: divided by it, as per event), to 2
    places; `engines` reports their median."""
    return [round(a / b / scale, 2) for a, b in zip(slower, faster, strict=True)]


PARALLEL_DISPATCHERS = 5
"""The parallel steady workload: a parallel sender of 5 dispatchers over 113 buckets."""


def engines(ops: int, keys: int, seed: int, repeat: int, say: Say) -> dict[str, Any]:
    """Model and impl, each alone in this process, then both in lockstep, on the steady
    workload (its generation excluded), the engines alone on its parallel variant (SPEC
    v2.0: 113 buckets, 5 dispatchers), and reading its trace file in two forms. `repeat`
    rounds, each running every timing once, in turn: a rate is the best of its runs, a
    ratio the median of the rounds' own ratios (`ratio_rounds`: each round's), as the two
    runs of a round are seconds apart and a machine whose speed drifts slows them alike."""
    config, workload = steady_workload(ops, keys=keys, seed=seed)
    events = sum(1 for op in workload if op.op in ("put", "delta", "destroy"))
    parallel_config, parallel_workload = steady_workload(
        ops, keys=keys, seed=seed, dispatchers=PARALLEL_DISPATCHERS
    )
    parallel_events = sum(1 for op in parallel_workload if op.op in ("put", "delta", "destroy"))
    conflating = steady_workload(ops, keys=keys, seed=seed, conflation=True)[0]
    ring_config, ring = ring_workload(ops, keys=keys, seed=seed)
    seconds: dict[str, float] = {}
    # In the order that puts the two runs of each ratio close together.
    timers: dict[str, Callable[[], float]] = {
        "impl parallel": lambda: time_engine("impl", parallel_config, parallel_workload),
        "impl": lambda: time_engine("impl", config, workload),
        "model": lambda: time_engine("model", config, workload),
        "model parallel": lambda: time_engine("model", parallel_config, parallel_workload),
        "model conflation": lambda: time_engine("model", conflating, workload),
    }
    if ahead_possible():
        timers["lockstep ahead"] = lambda: time_lockstep(config, workload, ahead=True)
    timers |= {
        "lockstep": lambda: time_lockstep(config, workload),
        "lockstep conflation": lambda: time_lockstep(conflating, workload),
        "model, ring": lambda: time_engine("model", ring_config, ring),
        "model and properties, ring": lambda: time_checker(ring_config, ring),
    }
    runs: dict[str, list[float]] = {name: [] for name in timers}
    for attempt in range(1, repeat + 1):
        for name, timer in timers.items():
            say(f"{name} run {attempt}/{repeat} on {len(workload)} ops ...")
            runs[name].append(timer())
    seconds = {name: min(taken) for name, taken in runs.items()}
    per_event = parallel_events / events  # the parallel workload's events per serial one's

    def rounds(slower: str, faster: str, scale: float = 1.0) -> list[float]:
        return round_ratios(runs[slower], runs[faster], scale)

    ratio_rounds = {
        "speedup": rounds("model", "impl"),
        "model_parallel_vs_serial": rounds("model parallel", "model", per_event),
        "impl_parallel_vs_serial": rounds("impl parallel", "impl", per_event),
        "properties_vs_model": rounds("model and properties, ring", "model, ring"),
        "lockstep_vs_model": rounds("lockstep", "model"),
        "model_conflation_vs_off": rounds("model conflation", "model"),
        "lockstep_conflation_vs_off": rounds("lockstep conflation", "lockstep"),
    }
    if "lockstep ahead" in runs:
        ratio_rounds["lockstep_ahead_vs_model"] = rounds("lockstep ahead", "model")
    ratio = {name: round(statistics.median(taken), 2) for name, taken in ratio_rounds.items()}
    reading: dict[str, list[float]] = {"canonical": [], "plain": []}
    for attempt in range(1, repeat + 1):
        say(f"reading run {attempt}/{repeat}: the trace file in two forms ...")
        for form, taken in time_reading(config, workload).items():
            reading[form].append(taken)
    read = {form: min(runs) for form, runs in reading.items()}
    return {
        "ops": len(workload),
        "events": events,
        "keys": keys,
        "model_seconds": round(seconds["model"], 3),
        "impl_seconds": round(seconds["impl"], 3),
        "model_events_per_s": round(events / seconds["model"]),
        "impl_events_per_s": round(events / seconds["impl"]),
        "speedup": ratio["speedup"],
        "parallel_events": parallel_events,
        "model_parallel_events_per_s": round(parallel_events / seconds["model parallel"]),
        "impl_parallel_events_per_s": round(parallel_events / seconds["impl parallel"]),
        # per event, the parallel workload against the serial one (SPEC v2.0's bar: 1.3x)
        "model_parallel_vs_serial": ratio["model_parallel_vs_serial"],
        # the properties (P2-P12) on the ring workload, per operation, beside the model
        "ring_ops": len(ring),
        "model_ring_us_per_op": round(seconds["model, ring"] / len(ring) * 1e6, 2),
        "properties_us_per_op": round(
            (seconds["model and properties, ring"] - seconds["model, ring"]) / len(ring) * 1e6, 2
        ),
        "properties_vs_model": ratio["properties_vs_model"],
        "impl_parallel_vs_serial": ratio["impl_parallel_vs_serial"],
        "lockstep_seconds": round(seconds["lockstep"], 3),
        "lockstep_events_per_s": round(events / seconds["lockstep"]),
        "lockstep_vs_model": ratio["lockstep_vs_model"],
        # the same workload with batch conflation on (R32, R33), against it off (bar: 1.2x)
        "model_conflation_vs_off": ratio["model_conflation_vs_off"],
        "lockstep_conflation_vs_off": ratio["lockstep_conflation_vs_off"],
        # None without a second CPU (or fork): the impl cannot run ahead
        "lockstep_ahead_vs_model": ratio.get("lockstep_ahead_vs_model"),
        "ratio_rounds": ratio_rounds,
        "read_canonical_ops_per_s": round(len(workload) / read["canonical"]),
        "read_plain_ops_per_s": round(len(workload) / read["plain"]),
        "impl_compiled": impl.COMPILED,  # mypyc-compiled (tools/build_compiled.py) or Python
    }


class ProcessTree:
    """CPU seconds and resident memory of this process and all its descendants (the Spark
    JVM, its Python workers), read from /proc (Linux); a background thread samples the
    memory every `interval` seconds and keeps the peak of the sum."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak_rss = 0
        self.cpu_seen: dict[int, float] = {}  # pid -> its CPU seconds at the last sample
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def _stats() -> dict[int, tuple[int, float]]:
        """pid -> (rss bytes, cpu seconds) of the tree rooted at this process."""
        parents: dict[int, int] = {}
        stats: dict[int, tuple[int, float]] = {}
        page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as file:
                    fields = file.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            pid = int(entry)
            parents[pid] = int(fields[1])
            cpu = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
            stats[pid] = (int(fields[21]) * page, cpu)  # rss pages
        root = os.getpid()
        tree = {root}
        changed = True
        while changed:
            changed = False
            for pid, parent in parents.items():
                if parent in tree and pid not in tree:
                    tree.add(pid)
                    changed = True
        return {pid: stats[pid] for pid in tree if pid in stats}

    def rss(self) -> int:
        return sum(rss for rss, _ in self._stats().values())

    def cpu(self) -> dict[int, float]:
        return {pid: cpu for pid, (_, cpu) in self._stats().items()}

    def __enter__(self) -> ProcessTree:
        self.peak_rss = self.rss()

        def sample() -> None:
            while not self._stop.wait(self.interval):
                stats = self._stats()
                self.peak_rss = max(self.peak_rss, sum(rss for rss, _ in stats.values()))
                self.cpu_seen.update((pid, cpu) for pid, (_, cpu) in stats.items())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.peak_rss = max(self.peak_rss, self.rss())


def cpu_since(tree: ProcessTree, before: dict[int, float]) -> float:
    """CPU seconds the tree used since `before` (processes born since count whole)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in tree.cpu().items())


def spark_campaign(
    spark: Any,
    master: str,
    traces: int,
    ops: int,
    profiles: list[str],
    seed: int,
    plain_traces: int | None,
    say: Say,
) -> dict[str, Any]:
    """Campaign figures: generation and check on Spark (wall and CPU seconds of the whole
    process tree: driver, JVM, Python workers; peak resident memory of that tree), and the
    plain single-process lockstep (`conformance.spark.check.check_trace`, same operation parser)
    on the same traces, for Spark's overhead."""
    from conformance.spark import glue

    cores = glue.parallelism(spark)
    operations = traces * ops
    with tempfile.TemporaryDirectory(prefix="wanconform-bench-") as tmp, ProcessTree() as tree:
        folder = Path(tmp)
        # a first, small run warms up the JVM and the Python workers
        glue.generate(spark, folder / "warm", cores, 100, profiles, seed)
        glue.check(spark, folder / "warm", folder / "warm-results")
        say("generating ...")
        cpu, start = tree.cpu(), time.perf_counter()
        glue.generate(spark, folder / "set", traces, ops, profiles, seed)
        generated, generated_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        say("checking on Spark ...")
        tree.peak_rss = tree.rss()
        cpu, start = tree.cpu(), time.perf_counter()
        rows = glue.check(spark, folder / "set", folder / "results")
        checked, checked_cpu = time.perf_counter() - start, cpu_since(tree, cpu)
        check_peak = max(tree.peak_rss, tree.rss())
        trace_set = open_trace_set(folder / "set")
        plain = trace_set.traces[:plain_traces]
        say(f"{plural(len(plain), 'trace')} in one process ...")
        start, start_cpu = time.perf_counter(), time.process_time()
        plain_events = 0
        for info in plain:
            parse = op_parser(info.trace_id, info.config)
            stream = ((seq, parse(seq, text)) for seq, text in trace_set.ops_of(info.trace_id))
            plain_events += check_trace(info.trace_id, info.config, stream)["events"]
        plain_seconds, plain_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    events = sum(row["events"] for row in rows)
    result: dict[str, Any] = {
        "master": master,
        "cores": cores,
        "traces": traces,
        "operations": operations,
        "events": events,
        "generate_seconds": round(generated, 2),
        "generate_cpu_seconds": round(generated_cpu, 2),
        "generate_ops_per_s": round(operations / generated),
        "generate_ops_per_cpu_s": round(operations / generated_cpu),
        "check_seconds": round(checked, 2),
        "check_cpu_seconds": round(checked_cpu, 2),
        "check_events_per_s": round(events / checked),
        "check_peak_rss_mb": round(check_peak / 2**20),
        "plain_traces": len(plain),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    if plain:
        rate, cpu_rate = plain_events / plain_seconds, plain_events / plain_cpu
        result |= {
            "plain_lockstep_events_per_s": round(rate),
            "plain_lockstep_events_per_cpu_s": round(cpu_rate),
            # Spark's rate over (the plain rate x cores): wall clock, and CPU seconds
            "check_efficiency": round(events / checked / (rate * cores), 2),
            "check_efficiency_cpu": round(events / checked_cpu / cpu_rate, 2),
        }
    return result


# -- the dead-letter store under SIGKILL and power loss (issue 17) ------------------------


def dlq_crash(kills: int, seed: int, say: Say) -> dict[str, Any]:
    """`bench --dlq-crash N`: a real writer process (`conformance.running.dlq_writer`) appends
    and removes dead letters in one store directory and is killed with SIGKILL at a
    random moment, N times, each time restarted on the same directory. After each kill:
    the store opens; every record the writer had reported durable (and not removed) is
    there exactly once and intact; no record reported removed is there. Then a power
    loss is simulated on a copy of the file (its last frame cut at a random byte, or a
    byte of it flipped): recovery must cut it and accept only intact records."""
    import random
    import signal
    import subprocess
    import sys

    from impl.dlq_store import StoreError, crash_record, live_records, read_frames, sender_file

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="wanconform-dlq-crash-"))
    path = folder / sender_file("ny")
    durable: set[str] = set()
    removed: set[str] = set()
    counts = {"lost": 0, "duplicated": 0, "torn_accepted": 0, "unopenable": 0,
              "resurrected": 0, "power_loss_trials": 0, "torn_tails_cut": 0}  # fmt: skip
    started = time.perf_counter()
    for kill in range(kills):
        start = str((kill + 1) * 1_000_000)
        writer = subprocess.Popen(
            [sys.executable, "-m", "conformance.running.dlq_writer", str(folder), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert writer.stdout is not None
        first = writer.stdout.readline()  # "ready": the store is open (a torn tail cut)
        first += writer.stdout.readline()  # its first write, durable (on a loaded host too)
        time.sleep(rng.uniform(0.0, 0.05))  # then killed at a random moment of its writing
        writer.send_signal(signal.SIGKILL)
        out = first + writer.stdout.read()  # the same buffered reader: no line is lost
        writer.wait()
        last = ""
        for line in out.splitlines():
            what, _, event = line.partition(" ")
            if what == "add" and event:
                durable.add(event)
            elif what == "remove" and event:
                removed.add(event)
                durable.discard(event)
            last = line
        # Killed between a remove's fsync and its line: one record may be gone unreported
        # (the writer removes one after every add whose number is a multiple of 3).
        in_flight_remove = last.startswith("add 1:") and int(last.split(":")[1]) % 3 == 0
        data = path.read_bytes() if path.exists() else b""
        try:
            payloads, end, size = read_frames(path) if path.exists() else ([], 0, 0)
        except StoreError:
            counts["unopenable"] += 1
            continue
        counts["torn_tails_cut"] += end < size
        records = live_records(payloads)
        ids = [str(r["event_id"]) for r in records]
        adds: dict[str, int] = {}  # each live record's adds since its last remove
        for payload in payloads:
            if "add" in payload:
                adds[payload["add"]["event_id"]] = adds.get(payload["add"]["event_id"], 0) + 1
            else:
                for event_id in payload["remove"]:
                    adds.pop(event_id, None)
        counts["duplicated"] += sum(count - 1 for count in adds.values())
        missing = durable - set(ids)
        durable -= missing  # each counted once
        if in_flight_remove and len(missing) == 1:
            removed |= missing  # that remove reached the disk: not a loss
        else:
            counts["lost"] += len(missing)
        counts["resurrected"] += len(removed & set(ids))
        counts["torn_accepted"] += sum(
            r != crash_record(int(str(r["event_id"]).split(":")[1])) for r in records
        )
        _power_loss(rng, path, data, counts)
        if (kill + 1) % max(1, kills // 10) == 0:
            say(f"dlq-crash: {kill + 1:,} of {kills:,} kills, {len(durable):,} records durable")
    seconds = time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)
    return {"kills": kills, "records_durable": len(durable), "records_removed": len(removed),
            "seconds": round(seconds, 1), **counts, **dlq_write_cost()}  # fmt: skip


def _power_loss(rng: Any, path: Path, data: bytes, counts: dict[str, int]) -> None:
    """A copy of the log whose last frame did not all reach the disk: cut at a random
    byte, or one of its payload bytes flipped. Recovery keeps exactly the frames before."""
    from impl.dlq_store import HEADER, StoreError, live_records, read_frames

    if not data:
        return
    try:
        payloads, end, _ = read_frames(path)
    except StoreError:
        return
    starts = [0]
    for payload in payloads:  # the offsets of the frames, from their encoded lengths
        starts.append(starts[-1] + HEADER + len(canonical_json(payload).encode()))
    if len(starts) < 2:
        return
    last = starts[-2]
    copy = path.with_name(path.name + ".powerloss")
    torn = bytearray(data[:end])
    if rng.random() < 0.5:
        torn = torn[: rng.randrange(last, end)]  # the last frame cut
    else:
        position = rng.randrange(last + HEADER, end) if end > last + HEADER else last
        torn[position] ^= 1 << rng.randrange(8)  # a bit of its payload flipped
    copy.write_bytes(bytes(torn))
    counts["power_loss_trials"] += 1
    try:
        kept = live_records(read_frames(copy)[0])
    except StoreError:
        counts["unopenable"] += 1
        return
    finally:
        copy.unlink()
    expected = live_records(payloads[:-1])
    counts["torn_accepted"] += kept != expected


def dlq_write_cost(records: int = 2000) -> dict[str, int]:
    """Records appended per second to a store, with and without fsync."""
    from impl.dlq_store import SenderLog, crash_record

    out = {}
    for durable in (True, False):
        folder = Path(tempfile.mkdtemp(prefix="wanconform-dlq-cost-"))
        log = SenderLog(folder / "ny.dlq", lambda line: None, durable)
        started = time.perf_counter()
        for number in range(records):
            log.append(crash_record(number))
        seconds = time.perf_counter() - started
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
        out["records_per_s_fsync" if durable else "records_per_s_no_fsync"] = int(records / seconds)
    return out


# -- the queue store under SIGKILL and power loss, and its throughput (SPEC §16.5) ---------

QUEUE_CRASH_BAD = ("lost", "acked_back", "phantoms", "out_of_order", "slots_changed",
                   "updates_lost", "torn_accepted", "unopenable")  # fmt: skip
"""The counts of `bench --queue-crash` that must be 0."""


def queue_crash(kills: int, seed: int, say: Say) -> dict[str, Any]:
    """`bench --queue-crash N`: a real writer process (`conformance.running.queue_writer`)
    works two dispatchers' queues in one queue store and is killed with SIGKILL at a
    random moment, N times, each time restarted on the same directory. After each kill
    the store is reopened and checked against what the writer reported done (synced):
    no acknowledged (removed) event back, no appended event lost, none there that the
    writer never announced, order and slots kept per dispatcher and per bucket, updates
    kept, every record intact. On every other kill a power loss is simulated on a copy of
    one queue file (its last frame cut at a random byte, or a bit of its payload flipped):
    recovery must cut it with one notice and keep exactly the frames before it."""
    import random
    import signal
    import subprocess
    import sys

    from conformance.running.queue_writer import QUEUES
    from impl.queue_store import StoreError, open_queue_store

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="wanconform-queue-crash-"))
    ledger = _QueueLedger()
    counts = dict.fromkeys((*QUEUE_CRASH_BAD, "power_loss_trials", "torn_tails_cut"), 0)
    started = time.perf_counter()
    for kill in range(kills):
        writer = subprocess.Popen(
            [sys.executable, "-m", "conformance.running.queue_writer", str(folder),
             str((kill + 1) * 1_000_000)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert writer.stdout is not None
        first = writer.stdout.readline()  # "ready": the store is open
        time.sleep(rng.uniform(0.0, 0.05))  # then killed at a random moment of its writing
        writer.send_signal(signal.SIGKILL)
        out = first + writer.stdout.read()
        writer.wait()
        pending = ledger.read_report(out)
        files = {d: folder / _queue_name(d) for _, d in QUEUES}
        snapshot = {d: path.read_bytes() if path.exists() else b"" for d, path in files.items()}
        try:
            logs = open_queue_store(folder, QUEUES, lambda line: None, "batch")
            stored = {d: log.read_back() for (_, d), log in logs.items()}
            for log in logs.values():
                log.close()
        except StoreError:
            counts["unopenable"] += 1
            break  # the writer could not open it either
        ledger.check(stored, pending, counts)
        if kill % 2 == 1:
            dispatcher = rng.randrange(2)
            _queue_power_loss(rng, files[dispatcher], snapshot[dispatcher], counts)
        if (kill + 1) % max(1, kills // 10) == 0:
            live = sum(len(ids) for ids in ledger.live.values())
            say(f"queue-crash: {kill + 1:,} of {kills:,} kills, {live:,} events queued")
    seconds = time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)
    return {"kills": kills, "seconds": round(seconds, 1), "events_appended": ledger.appended,
            "events_acked": ledger.acked, "events_queued": sum(map(len, ledger.live.values())),
            "updates": ledger.updates, **counts}  # fmt: skip


def _queue_name(dispatcher: int) -> str:
    from conformance.running.queue_writer import SENDER
    from impl.queue_store import queue_file

    return queue_file(SENDER, dispatcher)


class _QueueLedger:
    """What the crash writer reported done, per dispatcher: its queued events (id ->
    slot), the events removed, those marked possible duplicates; and totals."""

    def __init__(self) -> None:
        self.live: dict[int, dict[str, int]] = {0: {}, 1: {}}
        self.removed: set[str] = set()
        self.duplicates: set[str] = set()
        self.appended = self.acked = self.updates = 0

    def read_report(self, out: str) -> tuple[int, str, list[str]] | None:
        """Apply the writer's `do`/`ok` lines; the operation announced but not done."""
        pending: tuple[int, str, list[str]] | None = None
        for line in out.splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # cut by the kill (not reached for lines this short)
            words = line.split()
            if words[0] == "do":
                ids = words[3].split(",") if len(words) > 3 else []
                pending = (int(words[1]), words[2], ids)
            elif words[0] == "ok" and pending is not None:
                self._done(pending, words[1].split(",") if len(words) > 1 else [])
                pending = None
        return pending

    def _done(self, operation: tuple[int, str, list[str]], slots: list[str]) -> None:
        dispatcher, kind, ids = operation
        queue = self.live[dispatcher]
        if kind == "add":
            queue.update(zip(ids, map(int, slots), strict=True))
            self.appended += len(ids)
        elif kind == "update":
            self.duplicates.add(ids[0])
            self.updates += 1
        else:  # remove, clear
            gone = ids if kind == "remove" else list(queue)
            for event_id in gone:
                del queue[event_id]
            self.removed.update(gone)
            self.acked += len(gone)

    def check(
        self,
        stored: dict[int, list[tuple[int, dict[str, Any]]]],
        pending: tuple[int, str, list[str]] | None,
        counts: dict[str, int],
    ) -> None:
        """Count what the reopened store got wrong; then take it as the truth (the
        restarted writer goes on from it: an announced operation may have happened)."""
        from conformance.running.queue_writer import number_of, queued_event

        for dispatcher, pairs in stored.items():
            queue = self.live[dispatcher]
            here = {str(record["id"]): slot for slot, record in pairs}
            announced = pending[2] if pending and pending[0] == dispatcher else []
            kind = pending[1] if pending and pending[0] == dispatcher else ""
            may_go = set(announced if kind == "remove" else queue if kind == "clear" else ())
            counts["lost"] += sum(event_id not in here and event_id not in may_go
                                  for event_id in queue)  # fmt: skip
            counts["acked_back"] += len(self.removed & here.keys())
            new = set(announced) if kind == "add" else set()
            counts["phantoms"] += sum(i not in queue and i not in new for i in here)
            counts["slots_changed"] += sum(here[i] != queue[i] for i in queue if i in here)
            numbers = [number_of(str(record["id"])) for _, record in pairs]
            slots = [slot for slot, _ in pairs]
            buckets: dict[Any, list[int]] = {}
            for _, record in pairs:
                buckets.setdefault(record["bucket"], []).append(number_of(str(record["id"])))
            counts["out_of_order"] += sum(
                a >= b
                for sequence in (numbers, slots, *buckets.values())
                for a, b in itertools.pairwise(sequence)
            )
            for _, record in pairs:
                event_id = str(record["id"])
                duplicate = record.get("possible_duplicate")
                intact = queued_event(number_of(event_id), dispatcher)
                counts["torn_accepted"] += record != intact | {"possible_duplicate": duplicate}
                marked = kind == "update" and event_id in announced
                counts["updates_lost"] += event_id in self.duplicates and duplicate is not True
                counts["torn_accepted"] += duplicate is True and not (
                    event_id in self.duplicates or marked
                )
            self.removed.update(set(queue) - here.keys())
            self.live[dispatcher] = here
            self.duplicates.update(str(r["id"]) for _, r in pairs if r["possible_duplicate"])


def _queue_power_loss(rng: Any, path: Path, data: bytes, counts: dict[str, int]) -> None:
    """A copy of a queue file whose last frame did not all reach the disk: cut at a random
    byte, or a bit of its payload flipped. Recovery must cut it with one notice and keep
    exactly what the frames before it hold."""
    from impl.framing import HEADER, StoreError, scan_frames
    from impl.queue_store import MAGIC, QueueLog, replay

    if not data:
        return
    folder = Path(tempfile.mkdtemp(prefix="wanconform-queue-powerloss-"))
    try:
        (folder / "whole").write_bytes(data)
        frames, end, _ = scan_frames(folder / "whole", MAGIC, "a queue frame")
        if not frames:
            return
        last = frames[-1][0]
        (folder / "before").write_bytes(data[:last])
        expected = list(replay(folder / "before")[0].items())
        torn = bytearray(data[:end])
        if rng.random() < 0.5:
            torn = torn[: rng.randrange(last + 1, end)]  # the last frame cut, within
        else:
            torn[rng.randrange(last + HEADER, end)] ^= 1 << rng.randrange(8)  # a bit flipped
        (folder / "torn.queue").write_bytes(bytes(torn))
        counts["power_loss_trials"] += 1
        notices: list[str] = []
        try:
            log = QueueLog(folder / "torn.queue", notices.append, "none")
        except StoreError:
            counts["unopenable"] += 1
            return
        kept = log.read_back()
        log.close()
        counts["torn_tails_cut"] += len(notices) == 1
        counts["torn_accepted"] += kept != expected or len(notices) != 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def queue_throughput(repeat: int, say: Say, batch: int = 100) -> dict[str, Any]:
    """`bench --queue-throughput`: events/s through one dispatcher's queue log, in
    batches of `batch` queued events (append, sync, remove, sync: an event's whole life
    in a persistent queue), with fsync per batch and without fsync; best of `repeat`."""
    from conformance.running.queue_writer import queued_event
    from impl.queue_store import open_queue_store

    result: dict[str, Any] = {"batch": batch, "repeat": repeat}
    for fsync, batches in (("batch", 100), ("none", 500)):
        records = [queued_event(number, 1) for number in range(batches * batch)]
        best = 0.0
        for run in range(repeat):
            folder = Path(tempfile.mkdtemp(prefix="wanconform-queue-throughput-"))
            log = open_queue_store(folder, [("ny", 0)], lambda line: None, fsync)["ny", 0]
            gc.collect()
            started = time.perf_counter()
            for first in range(0, len(records), batch):
                slots = log.append(records[first : first + batch])
                log.sync()
                log.remove(slots)
                log.sync()
            seconds = time.perf_counter() - started
            log.close()
            shutil.rmtree(folder, ignore_errors=True)
            best = max(best, len(records) / seconds)
            say(f"queue-throughput: fsync {fsync}, run {run + 1}: {len(records) / seconds:,.0f}/s")
        result["events_per_s_fsync" if fsync == "batch" else "events_per_s_no_fsync"] = round(best)
    result.update(persistent_impl(repeat, say))
    result["load_average"] = [round(x, 1) for x in os.getloadavg()]
    return result


def persistent_impl(repeat: int, say: Say, ops: int = 60_000) -> dict[str, Any]:
    """The impl on the steady workload with its sender persistent and its queue in a
    durable store (`--queue-dir`): client events per second with fsync per batch, without
    fsync, and with the queue in memory only; best of `repeat`."""
    from dataclasses import replace

    from traces.config import Config

    config, workload = steady_workload(ops, keys=10_000, seed=1)
    senders = tuple(replace(s, enable_persistence=True) for s in config.senders)
    config = Config(config.sites, senders, config.receivers, config.regions)
    events = sum(1 for op in workload if op.op in ("put", "delta", "destroy"))
    out: dict[str, Any] = {"impl_ops": ops}
    for mode in ("batch", "none", "memory"):
        best = 0.0
        for _ in range(repeat):
            folder = None if mode == "memory" else tempfile.mkdtemp(prefix="wanconform-queues-")
            from impl import Engine

            engine = (
                Engine(config)
                if folder is None
                else Engine(config, queue_dir=folder, queue_fsync=mode)
            )
            gc.collect()
            started = time.perf_counter()
            for op in workload:
                engine.apply(op)
            best = max(best, events / (time.perf_counter() - started))
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        say(f"queue-throughput: the impl, queues {mode}: {best:,.0f} events/s")
        out[f"impl_events_per_s_{mode}"] = round(best)
    return out


EXPLORE_CONFIG = {
    "sites": [1, 2],
    "senders": [
        {"id": "ln", "site": 2, "remote": 1, "batch_size": 1},
        {"id": "ny", "site": 1, "remote": 2, "batch_size": 1},
    ],
}
"""`bench --explore`: two sites replicating both ways, every write a batch (2 keys)."""

TLC_STATES_PER_MIN = 3_700_000
TLC_WORKERS = 120
"""TLC's published rate on CCF's Raft spec (tlaplus#636): distinct states per minute
with 120 workers; per worker, per second: 3.7M / 60 / 120 = 514."""


def explore_rate(depth: int, keys: int, say: Say) -> dict[str, Any]:
    """`bench --explore`: exhaustive exploration of `EXPLORE_CONFIG` to `depth` with
    `keys` keys and one value (every operation of SPEC §3, P2-P12 checked): distinct
    states per second, and the search's time over the model's plain steps of the same
    transitions (and settle checks), one core."""
    from conformance.search.explore import Bounds, explore
    from traces.config import parse_config

    config = parse_config(EXPLORE_CONFIG)
    say(f"exploring 2 sites, {keys} keys, to depth {depth} ...")
    gc.collect()
    result = explore(config, Bounds(depth, keys))
    steps = result.transitions + result.settle_checks
    tlc_per_core = TLC_STATES_PER_MIN / 60 / TLC_WORKERS
    return {
        "depth": depth,
        "keys": keys,
        "states": result.states,
        "transitions": result.transitions,
        "levels": result.levels,
        "seconds": round(result.seconds, 1),
        "states_per_s": round(result.states_per_s),
        "transitions_per_s": round(result.transitions / result.seconds),
        "model_steps_per_s": round(steps / result.step_seconds),
        "overhead": round(result.overhead, 2),
        "tlc_states_per_s_per_core": round(tlc_per_core),
        "per_core_vs_tlc": round(result.states_per_s / tlc_per_core, 1),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "cores": os.cpu_count(),
    }


STARTUP_COMMANDS = {
    "--version": ["--version"],
    "--help": ["--help"],
    "replay (11 operations)": ["replay", "traces/examples/batching_by_size.jsonl"],
}


def startup(repeat: int, say: Say) -> dict[str, Any]:
    """Wall seconds from `python -m wanconform ...` to its exit, for the commands of
    `STARTUP_COMMANDS` (from the repository's root), each run `repeat` times: the best
    and the median, and the machine's load average."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    figures: dict[str, Any] = {"load_average": list(os.getloadavg()), "commands": {}}
    for name, args in STARTUP_COMMANDS.items():
        say(f"start-up: {name}, {plural(repeat, 'run')}")
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            # Its stderr kept from the terminal: Ctrl-C reaches the child too, and only
            # this process says so (one line).
            done = subprocess.run(
                [sys.executable, "-m", "wanconform", *args],
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            times.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise RuntimeError(f"{name}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
        figures["commands"][name] = {
            "best_s": round(min(times), 3),
            "median_s": round(statistics.median(times), 3),
        }
    return figures


SEGMENT_RUNS = ("model", "fast", "segments")
"""What `segments` measures: the model alone, the fast engine alone with P2-P12 (what the
fast pass does, without its checkpoints), the check in segments."""


def segments(
    trace: str, cores: int, segment_ops: int, runs: Sequence[str], say: Say
) -> dict[str, Any]:
    """One long trace checked in segments against the model alone, each a `wanconform
    replay` process pinned to `cores` CPUs: wall and CPU seconds and the peak resident
    memory of its whole process tree (Spark's JVM and Python workers included). The
    goal of README "Segments": segments' wall <= 1.25 x model / cores + fast."""
    import subprocess
    import sys

    cpus = sorted(os.sched_getaffinity(0))[:cores]
    commands = {
        "model": ["replay", "--engine", "model", trace],
        "fast": ["replay", "--engine", "impl", "--check-properties", trace],
        "segments": [
            "replay",
            "--engine",
            "both",
            "--check-properties",
            "--segment-ops",
            str(segment_ops),
            "--master",
            f"local[{cores}]",
            trace,
        ],
    }
    figures: dict[str, Any] = {
        "trace": trace,
        "cores": len(cpus),
        "segment_ops": segment_ops,
        "load_average": list(os.getloadavg()),
    }
    for name in runs:
        command = " ".join(map(shell_word, commands[name]))
        say(f"segments: {name}: wanconform {command} on {len(cpus)} cores")
        with ProcessTree(interval=0.5) as tree:
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "wanconform", *commands[name]],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=lambda: os.sched_setaffinity(0, cpus),
            )
            seconds = time.perf_counter() - started
        # Every process of the tree as last sampled (a process's last half second is
        # lost), this one's own CPU left out.
        cpu = sum(used for pid, used in tree.cpu_seen.items() if pid != os.getpid())
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{name}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
        figures[name] = {
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 1),
            "peak_rss_mb": round(tree.peak_rss / 2**20),
            "exit": done.returncode,
        }
    if {"model", "fast", "segments"} <= set(figures):
        bound = 1.25 * figures["model"]["seconds"] / len(cpus) + figures["fast"]["seconds"]
        figures["goal_seconds"] = round(bound, 1)
        figures["within_goal"] = figures["segments"]["seconds"] <= bound
    return figures
