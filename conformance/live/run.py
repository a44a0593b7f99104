"""`wanconform live`: start the sites, the proxies and the load; collect the event logs.

One OS process per site (`conformance.live.site`); in this process, one fault proxy per
sender between it and its remote's receiver, forwarding whole frames and, with
`--drop P`, dropping each batch or ack frame with probability P (seeded per sender and
frame, so a run's faults do not depend on timing). Everything is bounded: the load runs
`duration` seconds, the sites dispatch for a grace time after it and exit; a site that
does not is killed. The logs are written into a fresh folder next to DIR and renamed to
DIR at the end: DIR holds a whole run's logs or nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.live.site import BUGS
from conformance.live.wire import read_raw, write_raw
from traces.config import Config
from traces.errors import WanconformError
from traces.outputs import LIVE_MARKER, building_directory

START_DELAY_MS = 1000
"""From the plan to the first client write: every site has read it by then."""


def check_supported(config: Config) -> None:
    """The live sites implement the serial subset (docs/LIVE.md): one line naming what
    they do not, exit 2."""
    for sender in config.senders:
        unsupported = [
            (sender.parallel, "parallel"),
            (sender.dispatcher_threads != 1, "dispatcher_threads other than 1"),
            (sender.enable_batch_conflation, "enable_batch_conflation"),
            (sender.enable_persistence, "enable_persistence"),
            (sender.alert_threshold_ms != 0, "alert_threshold_ms"),
            (sender.manual_start, "manual_start"),
        ]
        for present, what in unsupported:
            if present:
                raise WanconformError(
                    f"--config: senders[{sender.id!r}]: {what}: the live sites implement "
                    "serial senders with one dispatcher, without conflation, persistence, "
                    "alerts or manual start (docs/LIVE.md)"
                )


@dataclass
class Proxy:
    """A fault proxy in front of one sender's remote receiver."""

    sender: str
    upstream: int
    seed: int
    drop: float
    frames: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: {"batch": 0, "ack": 0})

    def keep(self, kind: str) -> bool:
        self.frames += 1
        if self.drop <= 0:
            return True
        if random.Random(f"{self.seed}:{self.sender}:{self.frames}").random() >= self.drop:
            return True
        self.dropped[kind] += 1
        return False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()  # the sender sees its remote down (R15's connection failure)
            return

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, kind: str) -> None:
            try:
                while (raw := await read_raw(source)) is not None:
                    if self.keep(kind):
                        await write_raw(sink, raw)
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pump(reader, up_writer, "batch"), pump(up_reader, writer, "ack"))


def _spawn(run_file: Path, site: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "conformance.live.site", str(run_file), str(site)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # Ctrl-C reaches this process only: it stops them
    )  # fmt: skip


def _port(process: subprocess.Popen[str], site: int) -> int:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        raise WanconformError(f"live: site {site} did not start (exit {process.poll()})")
    return int(line.split()[1])


async def _run(
    config: Config, run: dict[str, Any], folder: Path, duration_s: float, drop: float, say: Any
) -> dict[str, Any]:
    run_file = folder / "run.json"
    run_file.write_text(json.dumps(run))
    processes = {site: _spawn(run_file, site) for site in config.sites}
    try:
        ports = {site: _port(process, site) for site, process in processes.items()}
        proxies: dict[str, Proxy] = {}
        proxy_ports: dict[str, int] = {}
        servers = []
        for sender in config.senders:
            proxy = Proxy(sender.id, ports[sender.remote], run["seed"], drop)
            server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
            servers.append(server)
            proxies[sender.id] = proxy
            proxy_ports[sender.id] = server.sockets[0].getsockname()[1]
        start = time.time_ns() // 1_000_000 + START_DELAY_MS
        end = start + int(duration_s * 1000)
        grace = max(s.ack_timeout_ms + s.retry_interval_ms for s in config.senders) + 1000
        for site, process in processes.items():
            assert process.stdin is not None
            plan = {"proxies": {s.id: proxy_ports[s.id] for s in config.senders if s.site == site},
                    "start": start, "end": end, "grace": grace,
                    "log": str(folder / f"site-{site}.jsonl")}  # fmt: skip
            process.stdin.write(json.dumps(plan) + "\n")
            process.stdin.flush()
        drain = f"+ {grace / 1000:g} s to drain"
        say(f"live: {len(processes)} sites running for {duration_s:g} s ({drain})")
        deadline = time.monotonic() + (end + grace - time.time_ns() / 1e6) / 1000 + 30
        while any(p.poll() is None for p in processes.values()):
            if time.monotonic() > deadline:
                raise WanconformError("live: a site did not stop in time; it was killed")
            await asyncio.sleep(0.2)
        for server in servers:
            server.close()
        failed = {site: p.returncode for site, p in processes.items() if p.returncode != 0}
        if failed:
            raise WanconformError(f"live: site processes failed: {failed}")
        return {sid: proxy.dropped for sid, proxy in proxies.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def live(
    config: Config,
    raw_config: dict[str, Any],
    out: Path,
    duration_s: float,
    seed: int,
    rate: float,
    keys: int,
    drop: float,
    bug: str | None,
    say: Any,
) -> dict[str, Any]:
    """Run the sites; DIR gets their logs and `live.json` (the run's record), whole at
    the end (`building_directory`)."""
    check_supported(config)
    if bug is not None and bug not in BUGS:
        raise WanconformError(f"--bug: unknown bug {bug!r} (one of {', '.join(BUGS)})")
    with building_directory(out) as work:
        run = {"config": raw_config, "seed": seed, "rate": rate, "keys": keys, "bug": bug}
        dropped = asyncio.run(_run(config, run, work, duration_s, drop, say))
        (work / "run.json").unlink()
        lines = {p.name: sum(1 for _ in p.open()) - 1 for p in sorted(work.glob("*.jsonl"))}
        record = {**run, "duration_s": duration_s, "drop": drop, "lines": lines,
                  "dropped": dropped}  # fmt: skip
        (work / LIVE_MARKER).write_text(json.dumps(record, indent=2) + "\n")
        return record
