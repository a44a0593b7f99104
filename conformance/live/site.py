"""One live site: an OS process running asyncio (docs/LIVE.md).

    python -m conformance.live.site RUN.json SITE [--recover | --recover-wiped]

RUN.json (written by `conformance.live.run`) holds the configuration, the seed, the load
and the planted bug if any. The process opens its event log (`site-SITE.jsonl` beside
RUN.json), binds its receiver to 127.0.0.1 on a free port and prints `PORT n`; it then
reads one JSON line on stdin, the proxy ports of its senders, the end of the load and the
grace time (epoch ms), runs the client load until the end, keeps dispatching until the
end of the grace time and exits. Every step it takes is appended to its event log at
once, in one write, with `t` and `at` read from the machine's realtime clock
(`time.time_ns()`), which every site process shares.

The log is also the site's memory: a site killed with SIGKILL and started again with
`--recover` reads its own log and takes its steps again, without their I/O, to its state
before the kill (R21: a site that comes back keeps everything); with `--recover-wiped`
it keeps only what a wiped site keeps (R21: its sequence numbers, batch ids and the
timestamp floor above every tag it issued). A delivery's line carries the batch's events
in `_events` for this (a field starting with `_` is the process's own: validate ignores
it). A line is written with one `write` to a file opened for appending, so a kill leaves
it whole or absent.

The rules it implements (the serial subset of SPEC v2.0): R9-R11 client writes (put,
destroy), R12-R15 one queue and one batch in flight per sender (one dispatcher), R16 the
receiver's duplicate and conflict checks, R17 and R18 acks, R20 timeouts (the connection
closed, the events marked possible duplicates), R21 through kills and restarts, R22
forwarding. A connection that the proxy does not complete (no `hello`) is R15's
connection failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.live.wire import read_frame, write_frame
from traces.canonical import size
from traces.config import Config, SenderConfig, parse_config

BUGS = ("wrong_flush", "forward_to_origin", "resend_without_possible_duplicate", "ack_before_apply")
"""The bugs a live site can be told to have (`wanconform live --bug`)."""

Version = tuple[int, int, int]  # [entry_version, timestamp, dsid]


@dataclass(frozen=True, slots=True)
class Event:
    """A gateway event as a sender queues it (R11, R22)."""

    id: str
    origin: int
    key: str
    op: str  # create | update | destroy
    value: dict[str, Any] | None
    version: Version
    recipients: frozenset[int]
    enqueued_at: int
    possible_duplicate: bool = False

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id, "origin": self.origin, "key": self.key, "op": self.op,
            "value": self.value, "version": list(self.version),
            "recipients": sorted(self.recipients),
            "possible_duplicate": self.possible_duplicate,
        }  # fmt: skip


@dataclass
class Dispatcher:
    """A sender's one dispatcher: its queue, batch in flight and connection (R12-R15)."""

    config: SenderConfig
    queue: deque[Event] = field(default_factory=deque)
    in_flight: tuple[int, int, int] | None = None  # batch id, its event count, sent at
    next_retry_at: int = 0
    last_batch_id: int = 0
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class Clock:
    """`t` (ms) and `at` (ns) of the realtime clock, never running back in this process."""

    def __init__(self) -> None:
        self.last = 0

    def read(self) -> tuple[int, int]:
        self.last = max(self.last, time.time_ns())
        return self.last // 1_000_000, self.last


class Site:
    def __init__(self, config: Config, site: int, run: dict[str, Any], log: Path) -> None:
        self.config = config
        self.site = site
        self.bug = run.get("bug")
        self.clock = Clock()
        self.entries: dict[str, tuple[dict[str, Any] | None, Version]] = {}
        self.applied: set[str] = set()
        self.seq = 0
        self.floor = 0  # R21: above every tag issued before a wipe
        self.issued = 0  # the largest timestamp of a tag this site issued (R9)
        self.senders = {
            s.id: Dispatcher(s)
            for s in sorted(config.senders, key=lambda s: s.id)
            if s.site == site
        }
        self.remotes = frozenset(d.config.remote for d in self.senders.values())
        self.stopping = False
        self.log_path = log
        self.fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size == 0:
            header = {"log": "events", "version": 1, "process": f"site-{site}",
                      "config": run["config"]}  # fmt: skip
            os.write(self.fd, (json.dumps(header) + "\n").encode())

    # -- the log ------------------------------------------------------------------------

    def log(self, t: int, at: int, step: dict[str, Any], observed: list[dict[str, Any]]) -> None:
        line = {"t": t, "at": at, **step, "observed": observed}
        os.write(self.fd, (json.dumps(line) + "\n").encode())

    # -- the state's changes, shared by the live steps and recovery ----------------------

    def apply_write(self, t: int, key: str, op: str, event_id: str, version: Version,
                    value: dict[str, Any] | None) -> None:  # fmt: skip
        self.seq = max(self.seq, int(event_id.split(":")[1]))
        self.issued = max(self.issued, version[1])
        self.entries[key] = (value, version)
        recipients = frozenset({self.site, *self.remotes})
        event = Event(event_id, self.site, key, op, value, version, recipients, t)
        for dispatcher in self.senders.values():
            dispatcher.queue.append(event)
            dispatcher.wake.set()

    def apply_flush(self, sender: str, t: int, batch_id: int, count: int) -> None:
        dispatcher = self.senders[sender]
        dispatcher.last_batch_id = batch_id
        dispatcher.in_flight = (batch_id, count, t)

    def apply_failure(self, sender: str, t: int) -> None:
        dispatcher = self.senders[sender]
        dispatcher.next_retry_at = t + dispatcher.config.retry_interval_ms

    def apply_ack(self, sender: str) -> None:
        dispatcher = self.senders[sender]
        assert dispatcher.in_flight is not None
        for _ in range(dispatcher.in_flight[1]):  # ok, duplicate, conflict: all leave (R18)
            dispatcher.queue.popleft()
        dispatcher.in_flight = None

    def apply_timeout(self, sender: str, t: int) -> None:
        dispatcher = self.senders[sender]
        assert dispatcher.in_flight is not None
        resent = self.bug != "resend_without_possible_duplicate"
        for index in range(dispatcher.in_flight[1]):
            dispatcher.queue[index] = replace(dispatcher.queue[index], possible_duplicate=resent)
        dispatcher.in_flight = None
        dispatcher.next_retry_at = t + dispatcher.config.retry_interval_ms

    def apply_deliver(
        self, t: int, sender: str, events: list[dict[str, Any]], logged: list[str] | None
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """R16 and R22 for a batch, event by event (each decided on the state the earlier
        left): the statuses and the `applied` and `forwarded` observations. `logged`: the
        statuses a replayed line says (recovery), else each is decided now."""
        statuses: list[str] = []
        observed: list[dict[str, Any]] = []
        for index, wire in enumerate(events):
            version = tuple(wire["version"])
            if logged is not None:
                status = logged[index]
            else:
                status = self.status(wire["id"], wire["key"], version)
            statuses.append(status)
            applied = {"kind": "applied", "site": self.site, "sender": sender,
                       "event": wire["id"], "key": wire["key"], "status": status}  # fmt: skip
            observed.append(applied)
            if status == "ok":
                self.entries[wire["key"]] = (wire["value"], version)
                self.applied.add(wire["id"])
                observed.extend(self.forward(wire, t))
        return statuses, observed

    # -- R9-R11: client writes ----------------------------------------------------------

    def write(self, key: str, value: dict[str, Any] | None) -> None:
        t, at = self.clock.read()
        current = self.entries.get(key)
        entry_version = current[1][0] + 1 if current else 1
        timestamp = t
        if current is not None and t <= current[1][1]:
            timestamp = current[1][1] + 1
        timestamp = max(timestamp, self.floor)
        version = (entry_version, timestamp, self.site)
        if value is None:
            op = "destroy"
        else:
            op = "create" if current is None or current[0] is None else "update"
        event_id = f"{self.site}:{self.seq + 1}"
        self.apply_write(t, key, op, event_id, version, value)
        enqueued = {
            "kind": "enqueued", "site": self.site, "event": event_id, "key": key, "op": op,
            "version": list(version), "value": value, "senders": list(self.senders),
            "routes": {sid: {"dispatcher": 0, "bucket": None} for sid in self.senders},
        }  # fmt: skip
        step: dict[str, Any] = {"op": "put", "site": self.site, "key": key, "value": value}
        if value is None:
            step = {"op": "destroy", "site": self.site, "key": key}
        self.log(t, at, step, [enqueued])

    # -- R15: the dispatcher ------------------------------------------------------------

    @staticmethod
    def due(dispatcher: Dispatcher) -> int | None:
        """When R15 lets it flush (None: not until another step)."""
        queue, config = dispatcher.queue, dispatcher.config
        if dispatcher.in_flight is not None or not queue:
            return None
        if len(queue) >= config.batch_size:
            return dispatcher.next_retry_at
        return max(dispatcher.next_retry_at, queue[0].enqueued_at + config.batch_time_interval_ms)

    async def dispatch(self, dispatcher: Dispatcher, proxy: int) -> None:
        while not self.stopping:
            if dispatcher.in_flight is not None:
                await self.await_ack(dispatcher)
                continue
            due = self.due(dispatcher)
            t, _ = self.clock.read()
            if due is not None and t >= due:
                await self.flush(dispatcher, proxy)
                continue
            dispatcher.wake.clear()
            wait = 0.05 if due is None else min(0.05, (due - t) / 1000)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(dispatcher.wake.wait(), timeout=max(wait, 0.0005))

    async def connect(self, proxy: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        """A connection to the remote through the proxy, and whether it is open: the
        proxy says `hello` (it reached the remote's receiver) or `refused` (the remote is
        down: the sender then logs its connection failure and says `noted`)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy)
        try:
            answer = await read_frame(reader)
        except (OSError, asyncio.IncompleteReadError):
            answer = None
        return reader, writer, answer is not None and answer.get("type") == "hello"

    async def flush(self, dispatcher: Dispatcher, proxy: int) -> None:
        """R15: a connection per batch (so none is ever stale: the proxy's answer, at the
        moment of the flush, is whether the remote can be reached)."""
        config = dispatcher.config
        self.drop_connection(dispatcher)
        if dispatcher.connection is None:
            reader, writer, open_ = await self.connect(proxy)
            if not open_:
                t, at = self.clock.read()
                self.apply_failure(config.id, t)
                failed = {"kind": "connection_failed", "sender": config.id, "dispatcher": 0,
                          "remote": config.remote}  # fmt: skip
                self.log(t, at, {"op": "flush", "sender": config.id}, [failed])
                with contextlib.suppress(OSError):  # logged: the proxy may go on
                    await write_frame(writer, {"type": "noted"})
                writer.close()
                return
            dispatcher.connection = (reader, writer)
        t, at = self.clock.read()
        count = min(config.batch_size, len(dispatcher.queue))
        if self.bug == "wrong_flush" and count > 1:
            count -= 1  # takes one event fewer than R15
        events = list(dispatcher.queue)[:count]
        batch_id = dispatcher.last_batch_id + 1
        self.apply_flush(config.id, t, batch_id, count)
        sent = {
            "kind": "sent", "sender": config.id, "dispatcher": 0, "batch_id": batch_id,
            "events": [e.id for e in events], "bytes_full": sum(size(e.value) for e in events),
            "bytes_delta": 0, "events_resent": sum(e.possible_duplicate for e in events),
        }  # fmt: skip
        self.log(t, at, {"op": "flush", "sender": config.id}, [sent])
        _, writer = dispatcher.connection
        message = {"type": "batch", "sender": config.id, "batch_id": batch_id,
                   "events": [e.wire() for e in events]}  # fmt: skip
        with contextlib.suppress(OSError):  # else the ack will not come: R20 times it out
            await write_frame(writer, message)

    async def await_ack(self, dispatcher: Dispatcher) -> None:
        """R18 on the ack, or R20 when it is overdue."""
        assert dispatcher.in_flight is not None
        batch_id, count, sent_at = dispatcher.in_flight
        config = dispatcher.config
        deadline = sent_at + config.ack_timeout_ms
        ack: dict[str, Any] | None = None
        while ack is None and not self.stopping:
            t, _ = self.clock.read()
            if t >= deadline:
                break
            if dispatcher.connection is None:  # lost with a kill, or closed: wait it out
                await asyncio.sleep(min(0.05, (deadline - t) / 1000))
                continue
            try:
                ack = await asyncio.wait_for(
                    read_frame(dispatcher.connection[0]), timeout=(deadline - t) / 1000
                )
            except TimeoutError:
                continue
            except (OSError, asyncio.IncompleteReadError):
                ack = None
            if ack is None:
                self.drop_connection(dispatcher)
            elif ack.get("batch_id") != batch_id:
                ack = None
        if self.stopping and ack is None:
            return
        t, at = self.clock.read()
        if ack is None:  # R20
            self.drop_connection(dispatcher)
            events = [e.id for e in list(dispatcher.queue)[:count]]
            self.apply_timeout(config.id, t)
            timeout = {"kind": "timeout", "sender": config.id, "dispatcher": 0,
                       "batch_id": batch_id, "events": events}  # fmt: skip
            self.log(t, at, {"op": "timeout", "sender": config.id}, [timeout])
            return
        self.drop_connection(dispatcher)
        removed = [e.id for e in list(dispatcher.queue)[:count]]
        self.apply_ack(config.id)
        acked = {"kind": "acked", "sender": config.id, "dispatcher": 0, "batch_id": batch_id,
                 "removed": removed}  # fmt: skip
        step = {"op": "deliver_ack", "sender": config.id, "batch_id": batch_id}
        self.log(t, at, step, [acked])

    @staticmethod
    def drop_connection(dispatcher: Dispatcher) -> None:
        if dispatcher.connection is not None:
            dispatcher.connection[1].close()
            dispatcher.connection = None

    # -- R16, R17, R22: the receiver ----------------------------------------------------

    async def receive(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                batch = await read_frame(reader)
                if batch is None:
                    return
                if self.bug == "ack_before_apply":  # acks, then applies (20 ms later)
                    await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                               "statuses": []})  # fmt: skip
                    await asyncio.sleep(0.02)
                    self.deliver(batch)
                    continue
                statuses = self.deliver(batch)
                await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                           "statuses": statuses})  # fmt: skip
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the peer went, or the site stops
        finally:
            writer.close()

    def deliver(self, batch: dict[str, Any]) -> list[str]:
        t, at = self.clock.read()
        statuses, observed = self.apply_deliver(t, batch["sender"], batch["events"], None)
        step = {"op": "deliver", "sender": batch["sender"], "batch_id": batch["batch_id"],
                "_events": batch["events"]}  # fmt: skip
        self.log(t, at, step, observed)
        return statuses

    def status(self, event: str, key: str, version: tuple[int, ...]) -> str:
        """R16.1 and R16.3 (no injected failures, no deltas here)."""
        if event in self.applied:
            return "duplicate"
        current = self.entries.get(key)
        if current is None:
            return "ok"
        (ev, ts, dsid), (cev, cts, cdsid) = version, current[1]
        if dsid == cdsid:
            return "ok" if (ts, ev) > (cts, cev) else "conflict"
        return "ok" if ts > cts or (ts == cts and dsid > cdsid) else "conflict"

    def forward(self, wire: dict[str, Any], t: int) -> list[dict[str, Any]]:
        """R22: offered to every sender here, in id order."""
        received = frozenset(wire["recipients"])
        observed = []
        for sid, dispatcher in self.senders.items():
            remote = dispatcher.config.remote
            skip = remote == wire["origin"] or remote in received
            if skip and self.bug != "forward_to_origin":
                continue
            event = Event(
                wire["id"], wire["origin"], wire["key"], wire["op"], wire["value"],
                tuple(wire["version"]), received | self.remotes, t,
            )  # fmt: skip
            dispatcher.queue.append(event)
            dispatcher.wake.set()
            observed.append({"kind": "forwarded", "site": self.site, "sender": sid,
                             "dispatcher": 0, "event": wire["id"]})  # fmt: skip
        return observed

    # -- R21: coming back after a kill --------------------------------------------------

    def recover(self, wiped: bool) -> None:
        """Take the steps of this site's own log again, without their I/O, each earlier
        wipe where it happened (`site-N.wipes`, the number of steps logged before each):
        its state before the kill; `wiped`: then only what a wiped site keeps (R21), and
        this wipe noted."""
        wipes_path = self.log_path.with_suffix(".wipes")
        wipes = json.loads(wipes_path.read_text()) if wipes_path.exists() else []
        steps = 0
        with open(self.log_path, encoding="utf-8") as lines:
            next(lines)  # the header
            for text in lines:
                while steps in wipes[:1]:
                    self.wipe()
                    wipes.pop(0)
                self.replay(json.loads(text))
                steps += 1
        for _ in wipes:  # wiped, then killed again before its next step
            self.wipe()
        if wiped:
            self.wipe()
            done = json.loads(wipes_path.read_text()) if wipes_path.exists() else []
            partial = wipes_path.with_suffix(".wipes.tmp")
            partial.write_text(json.dumps([*done, steps]))
            os.replace(partial, wipes_path)

    def wipe(self) -> None:
        """R21's wipe: a new distributed system but for its sequence numbers, batch ids
        and timestamp floor."""
        self.entries.clear()
        self.applied.clear()
        for dispatcher in self.senders.values():
            dispatcher.queue.clear()
            dispatcher.in_flight = None
            dispatcher.next_retry_at = 0
        self.floor = max(self.floor, self.issued + 1)

    def replay(self, line: dict[str, Any]) -> None:
        op, t, observed = line["op"], line["t"], line["observed"]
        if op in ("put", "destroy"):
            e = observed[0]
            self.apply_write(t, e["key"], e["op"], e["event"], tuple(e["version"]), e["value"])
        elif op == "flush" and observed[0]["kind"] == "sent":
            sent = observed[0]
            self.apply_flush(line["sender"], t, sent["batch_id"], len(sent["events"]))
        elif op == "flush":
            self.apply_failure(line["sender"], t)
        elif op == "deliver_ack":
            self.apply_ack(line["sender"])
        elif op == "timeout":
            self.apply_timeout(line["sender"], t)
        elif op == "deliver":
            statuses = [o["status"] for o in observed if o["kind"] == "applied"]
            self.apply_deliver(t, line["sender"], line["_events"], statuses)

    # -- the client load ----------------------------------------------------------------

    async def load(self, rng: random.Random, end: int, rate: float, keys: int) -> None:
        while True:
            await asyncio.sleep(rng.expovariate(rate))
            t, _ = self.clock.read()
            if t >= end:
                return
            key = f"k{rng.randrange(keys)}"
            live = self.entries.get(key, (None,))[0] is not None
            if live and rng.random() < 0.2:
                self.write(key, None)
            else:
                self.write(key, {"n": rng.randrange(1000), "site": self.site})


async def serve(run: dict[str, Any], folder: Path, site: int, mode: str) -> None:
    config = parse_config(run["config"])
    node = Site(config, site, run, folder / f"site-{site}.jsonl")
    if mode != "fresh":
        node.recover(wiped=mode == "wiped")
    server = await asyncio.start_server(node.receive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    plan = json.loads(await asyncio.to_thread(sys.stdin.readline))
    end, grace = plan["end"], plan["grace"]
    await asyncio.sleep(max(0.0, (plan["start"] - time.time_ns() / 1e6) / 1000))
    rng = random.Random(f"{run['seed']}:{site}:{plan.get('life', 0)}")
    tasks = [
        asyncio.create_task(node.dispatch(dispatcher, plan["proxies"][sid]))
        for sid, dispatcher in node.senders.items()
    ]
    await node.load(rng, end, run["rate"], run["keys"])
    await asyncio.sleep(max(0.0, (end + grace - time.time_ns() / 1e6) / 1000))
    node.stopping = True
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    server.close()
    os.close(node.fd)


def main() -> None:
    run_file = Path(sys.argv[1])
    run = json.loads(run_file.read_text(encoding="utf-8"))
    modes = {"--recover": "kept", "--recover-wiped": "wiped"}
    mode = modes.get(sys.argv[3], "fresh") if len(sys.argv) > 3 else "fresh"
    asyncio.run(serve(run, run_file.parent, int(sys.argv[2]), mode))


if __name__ == "__main__":
    main()
