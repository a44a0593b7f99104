"""One live site: an OS process running asyncio (docs/LIVE.md).

    python -m conformance.live.site RUN.json SITE

RUN.json (written by `conformance.live.run`) holds the configuration, the seed, the load,
the planted bug if any, and where to write the log. The process binds its receiver to
127.0.0.1 on a free port and prints `PORT n`; it then reads one JSON line on stdin, the
proxy ports of its senders and the start and end times (epoch ms), runs the client load
from the start to the end, keeps dispatching until the end of the grace time, writes its
log and exits. Every step it takes is one line of its event log, with `t` and `at` read
from the machine's realtime clock (`time.time_ns()`), which every site process shares.

The rules it implements (the serial subset of SPEC v2.0): R9-R11 client writes (put,
destroy), R12-R15 one queue and one batch in flight per sender (one dispatcher), R16 the
receiver's duplicate and conflict checks, R17 and R18 acks, R20 timeouts (the connection
closed, the events marked possible duplicates), R22 forwarding. A connection that cannot
be opened is R15's connection failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.live.wire import read_frame, write_frame
from traces.canonical import size
from traces.config import Config, SenderConfig, parse_config

BUGS = ("wrong_flush", "forward_to_origin", "resend_without_possible_duplicate")
"""The bugs a live site can be told to have (`wanconform live --bug`)."""


@dataclass(frozen=True, slots=True)
class Event:
    """A gateway event as a sender queues it (R11, R22)."""

    id: str
    origin: int
    key: str
    op: str  # create | update | destroy
    value: dict[str, Any] | None
    version: tuple[int, int, int]  # [entry_version, timestamp, dsid]
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
    in_flight: tuple[int, list[Event], int] | None = None  # batch id, events, sent at
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
    def __init__(self, config: Config, site: int, run: dict[str, Any]) -> None:
        self.config = config
        self.site = site
        self.bug = run.get("bug")
        self.clock = Clock()
        self.entries: dict[str, tuple[dict[str, Any] | None, tuple[int, int, int]]] = {}
        self.applied: set[str] = set()
        self.seq = 0
        self.senders = {
            s.id: Dispatcher(s)
            for s in sorted(config.senders, key=lambda s: s.id)
            if s.site == site
        }
        self.remotes = frozenset(d.config.remote for d in self.senders.values())
        self.lines: list[str] = []
        self.stopping = False

    # -- the log ------------------------------------------------------------------------

    def log(self, t: int, at: int, step: dict[str, Any], observed: list[dict[str, Any]]) -> None:
        line = {"t": t, "at": at, **step, "observed": observed}
        self.lines.append(json.dumps(line, ensure_ascii=False))

    # -- R9-R11: client writes ----------------------------------------------------------

    def write(self, key: str, value: dict[str, Any] | None) -> None:
        t, at = self.clock.read()
        current = self.entries.get(key)
        entry_version = current[1][0] + 1 if current else 1
        timestamp = t
        if current is not None and t <= current[1][1]:
            timestamp = current[1][1] + 1
        version = (entry_version, timestamp, self.site)
        if value is None:
            op = "destroy"
        else:
            op = "create" if current is None or current[0] is None else "update"
        self.seq += 1
        event = Event(
            f"{self.site}:{self.seq}", self.site, key, op, value, version,
            frozenset({self.site, *self.remotes}), t,
        )  # fmt: skip
        self.entries[key] = (value, version)
        for dispatcher in self.senders.values():
            dispatcher.queue.append(event)
            dispatcher.wake.set()
        enqueued = {
            "kind": "enqueued", "site": self.site, "event": event.id, "key": key, "op": op,
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

    async def flush(self, dispatcher: Dispatcher, proxy: int) -> None:
        config = dispatcher.config
        if dispatcher.connection is None:
            try:
                dispatcher.connection = await asyncio.open_connection("127.0.0.1", proxy)
            except OSError:
                t, at = self.clock.read()
                dispatcher.next_retry_at = t + config.retry_interval_ms
                failed = {"kind": "connection_failed", "sender": config.id, "dispatcher": 0,
                          "remote": config.remote}  # fmt: skip
                self.log(t, at, {"op": "flush", "sender": config.id}, [failed])
                return
        t, at = self.clock.read()
        count = min(config.batch_size, len(dispatcher.queue))
        if self.bug == "wrong_flush" and count > 1:
            count -= 1  # takes one event fewer than R15
        events = list(dispatcher.queue)[:count]
        dispatcher.last_batch_id += 1
        batch_id = dispatcher.last_batch_id
        sent = {
            "kind": "sent", "sender": config.id, "dispatcher": 0, "batch_id": batch_id,
            "events": [e.id for e in events], "bytes_full": sum(size(e.value) for e in events),
            "bytes_delta": 0, "events_resent": sum(e.possible_duplicate for e in events),
        }  # fmt: skip
        self.log(t, at, {"op": "flush", "sender": config.id}, [sent])
        dispatcher.in_flight = (batch_id, events, t)
        _, writer = dispatcher.connection
        message = {"type": "batch", "sender": config.id, "batch_id": batch_id,
                   "events": [e.wire() for e in events]}  # fmt: skip
        with contextlib.suppress(OSError):  # else the ack will not come: R20 times it out
            await write_frame(writer, message)

    async def await_ack(self, dispatcher: Dispatcher) -> None:
        """R18 on the ack, or R20 when it is overdue."""
        assert dispatcher.in_flight is not None and dispatcher.connection is not None
        batch_id, events, sent_at = dispatcher.in_flight
        config = dispatcher.config
        reader, writer = dispatcher.connection
        deadline = sent_at + config.ack_timeout_ms
        ack: dict[str, Any] | None = None
        while ack is None and not self.stopping:
            t, _ = self.clock.read()
            if t >= deadline:
                break
            try:
                ack = await asyncio.wait_for(read_frame(reader), timeout=(deadline - t) / 1000)
            except TimeoutError:
                continue
            except (OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(max(0.0, (deadline - t) / 1000))
                continue
            if ack is None or ack.get("batch_id") != batch_id:
                ack = None
        if self.stopping and ack is None:
            return
        t, at = self.clock.read()
        if ack is None:  # R20
            dispatcher.connection = None
            writer.close()
            resent = self.bug != "resend_without_possible_duplicate"
            for index in range(len(events)):
                dispatcher.queue[index] = replace(
                    dispatcher.queue[index], possible_duplicate=resent
                )
            dispatcher.in_flight = None
            dispatcher.next_retry_at = t + config.retry_interval_ms
            timeout = {"kind": "timeout", "sender": config.id, "dispatcher": 0,
                       "batch_id": batch_id, "events": [e.id for e in events]}  # fmt: skip
            self.log(t, at, {"op": "timeout", "sender": config.id}, [timeout])
            return
        for _ in events:  # ok, duplicate and conflict all leave the queue (R18)
            dispatcher.queue.popleft()
        dispatcher.in_flight = None
        acked = {"kind": "acked", "sender": config.id, "dispatcher": 0, "batch_id": batch_id,
                 "removed": [e.id for e in events]}  # fmt: skip
        step = {"op": "deliver_ack", "sender": config.id, "batch_id": batch_id}
        self.log(t, at, step, [acked])

    # -- R16, R17, R22: the receiver ----------------------------------------------------

    async def receive(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                batch = await read_frame(reader)
                if batch is None:
                    return
                statuses = self.deliver(batch)
                await write_frame(writer, {"type": "ack", "batch_id": batch["batch_id"],
                                           "statuses": statuses})  # fmt: skip
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the peer went, or the site stops
        finally:
            writer.close()

    def deliver(self, batch: dict[str, Any]) -> list[str]:
        t, at = self.clock.read()
        observed: list[dict[str, Any]] = []
        statuses = []
        for wire in batch["events"]:
            version = tuple(wire["version"])
            status = self.status(wire["id"], wire["key"], version)
            statuses.append(status)
            applied = {"kind": "applied", "site": self.site, "sender": batch["sender"],
                       "event": wire["id"], "key": wire["key"], "status": status}  # fmt: skip
            observed.append(applied)
            if status != "ok":
                continue
            self.entries[wire["key"]] = (wire["value"], version)
            self.applied.add(wire["id"])
            observed.extend(self.forward(wire, t))
        step = {"op": "deliver", "sender": batch["sender"], "batch_id": batch["batch_id"]}
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


async def serve(run: dict[str, Any], site: int) -> None:
    config = parse_config(run["config"])
    node = Site(config, site, run)
    server = await asyncio.start_server(node.receive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    plan = json.loads(await asyncio.to_thread(sys.stdin.readline))
    start, end, grace = plan["start"], plan["end"], plan["grace"]
    await asyncio.sleep(max(0.0, (start - time.time_ns() / 1e6) / 1000))
    rng = random.Random(f"{run['seed']}:{site}")
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
    header = {"log": "events", "version": 1, "process": f"site-{site}", "config": run["config"]}
    with open(plan["log"], "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        out.writelines(line + "\n" for line in node.lines)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as source:
        run = json.load(source)
    asyncio.run(serve(run, int(sys.argv[2])))


if __name__ == "__main__":
    main()
