"""`wanconform live`: start the sites, the proxies, the load and the nemesis; collect the
event logs (docs/LIVE.md).

One OS process per site (`conformance.live.site`); in this process, one fault proxy per
sender between it and its remote's receiver, forwarding whole frames and, with
`--drop P` / `--delay MS` / `--duplicate P` / `--reset P`, dropping each batch or ack
frame with probability P / holding it up to MS / passing a batch twice / closing the link
instead (seeded per sender and frame, so a run's faults do not depend on timing),
and the nemesis, which kills a site with SIGKILL and starts it again, with or without
wipe, or cuts a sender off for a while (seeded). The nemesis logs `site_down` and
`site_up` in its own event log (`nemesis.jsonl`), fenced so that the merged run means
what R21 says (docs/LIVE.md): each step waits for what the processes say they have
logged, never for a time:

- down: the proxies stop passing frames from or to the site and hold new connections;
  the nemesis waits until every sender they told `hello` has sent its batch (it logged
  its flush first) and every batch they passed from the site has been answered (its
  receiver logged it first); then SIGKILL, then `site_down` is logged; only then do the
  proxies refuse new connections to it (`refused`, and the sender's `noted` once it
  logged its connection failure);
- up: the site is started from its log; the proxies hold new connections and the nemesis
  waits until every refusal is noted; `site_up` is logged; the proxies connect to the
  new process, and only then may it take a step.

Everything is bounded: the load runs `duration` seconds, the sites dispatch for a grace
time after it and exit; a site that does not is killed and the run fails. DIR gets the
logs and `live.json` whole at the end (`building_directory`), or nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.live.site import BUGS, COMPACT, FAILED, Clock
from conformance.live.wire import read_raw, write_frame, write_raw
from traces.config import Config
from traces.errors import WanconformError
from traces.outputs import LIVE_MARKER, building_directory
from traces.text import plural

START_DELAY_MS = 1000
"""From the plan to the first client write: every site has read it by then."""
NEMESES = ("kill", "wipe", "partition")
MAX_DRAIN_S = 3600
"""The longest drain a run may have (as --duration's longest load): a sender's
ack_timeout_ms and retry_interval_ms may be any 64-bit count, and a run is bounded."""
MIN_ACK_TIMEOUT_MS = 500
"""The shortest ack_timeout_ms a live run takes: a batch takes real time to cross the
proxy and be applied (tens of ms on a busy machine), and one delivered after its sender
timed it out is a disagreement the system did not cause (R20 took it out of the
network)."""
FENCE_S = 5.0
"""The longest the nemesis waits for senders to log what they were told (a sender that
does not answer by then is stuck, and the run would say so)."""


@dataclass(frozen=True)
class Faults:
    """What the proxies do to the frames they pass, each decided by the seed, the sender
    and the frame's number: drop it (`drop`), hold it up to `delay_ms`, pass a batch twice
    (`duplicate`: the receiver must answer the copy without applying it again, as Geode's
    receiver does with a batch id it has replied to), or close the link instead of
    passing it (`reset`: the sender's connection fails under it)."""

    drop: float = 0.0
    delay_ms: int = 0
    duplicate: float = 0.0
    reset: float = 0.0


@dataclass
class Proxy:
    """A fault proxy in front of one sender's remote receiver. `passing`: frames go
    through (else they are dropped); `state`: "up" (new connections reach the remote),
    "down" (refused: closed without `hello`) or "hold" (kept waiting)."""

    sender: str
    site: int
    remote: int
    upstream: int
    seed: int
    faults: Faults
    frames: int = 0
    partitioned: bool = False
    dropped: dict[str, int] = field(default_factory=lambda: {"batch": 0, "ack": 0})
    duplicated: int = 0
    resets: int = 0
    passing: bool = True
    state: str = "up"
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    unanswered: set[int] = field(default_factory=set)  # links whose batch awaits its ack
    greeted: set[int] = field(default_factory=set)  # links told `hello`, no batch yet
    refusing: int = 0  # connections told `refused` whose sender has not said `noted`
    links: set[asyncio.StreamWriter] = field(default_factory=set)

    def keep(self, kind: str) -> tuple[str, float]:
        """What becomes of frame number `frames` ("pass", "twice", "drop" or "reset"),
        and after how many seconds."""
        self.frames += 1
        rng = random.Random(f"{self.seed}:{self.sender}:{self.frames}")
        faults = self.faults
        draws = [rng.random() for _ in range(3)]
        delay = rng.uniform(0, faults.delay_ms) / 1000 if faults.delay_ms else 0.0
        if self.partitioned or draws[0] < faults.drop:
            self.dropped[kind] += 1
            return "drop", delay
        if draws[1] < faults.reset:
            self.resets += 1
            return "reset", delay
        if kind == "batch" and draws[2] < faults.duplicate:
            self.duplicated += 1
            return "twice", delay
        return "pass", delay

    def set_state(self, state: str, passing: bool | None = None) -> None:
        self.state = state
        if passing is not None:
            self.passing = passing
        self.changed.set()
        self.changed = asyncio.Event()

    def cut_links(self) -> None:
        for writer in list(self.links):
            writer.close()
        self.links.clear()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One sender's connection (`start_server`'s callback). Cancelled (Ctrl-C:
        `asyncio.run` cancels every task), it closes the link and ends as done: Python
        3.11's `start_server` calls `exception()` on its handler's task, which a cancelled
        task raises, and the loop would print that with three tracebacks."""
        try:
            await self.link(reader, writer)
        except asyncio.CancelledError:
            writer.close()

    async def link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            # Held while the remote is coming back, or while a kill is under way (it ends
            # "down": refused after the nemesis logged it, or back "up" and passing).
            while self.state == "hold" or (self.state == "up" and not self.passing):
                await self.changed.wait()
            if self.state == "down":  # R15's connection failure, logged before it is let go
                self.refusing += 1
                try:
                    await write_frame(writer, {"type": "refused"})
                    await asyncio.wait_for(read_raw(reader), timeout=2)
                except (OSError, asyncio.IncompleteReadError, TimeoutError):
                    pass
                finally:
                    self.refusing -= 1
                    writer.close()
                return
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
            except OSError:
                if self.state == "up" and self.passing:
                    writer.close()
                    return
                continue  # a kill began meanwhile: the link waits for its end, as above
            if self.state == "up" and self.passing:
                break
            # A kill began while it connected: its fence did not see this link (not yet
            # greeted), so a `hello` now would let the sender log a flush after the
            # `site_down` (R21: it must fail to connect). Wait for the kill's end instead.
            up_writer.close()
        self.links.update((writer, up_writer))
        link = id(writer)
        self.greeted.add(link)  # until its batch comes: the sender has logged its flush
        try:
            await write_frame(writer, {"type": "hello"})
        except OSError:
            self.greeted.discard(link)
            up_writer.close()
            return

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, kind: str) -> None:
            try:
                while (raw := await read_raw(source)) is not None:
                    self.greeted.discard(link)
                    if kind == "ack":
                        self.unanswered.discard(link)
                    if not self.passing:
                        continue
                    action, delay = self.keep(kind)
                    if action == "reset":  # the link closed under both ends
                        writer.close()
                        up_writer.close()
                        return
                    if action != "drop":
                        if delay:
                            await asyncio.sleep(delay)
                        if self.passing:  # (a kill may have begun meanwhile)
                            if kind == "batch":
                                self.unanswered.add(link)
                            await write_raw(sink, raw)
                            if action == "twice":
                                await write_raw(sink, raw)
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                sink.close()
                self.links.discard(sink)
                self.unanswered.discard(link)
                self.greeted.discard(link)

        await asyncio.gather(pump(reader, up_writer, "batch"), pump(up_reader, writer, "ack"))


async def until(done: Any) -> None:
    """Wait until `done()` holds, at most `FENCE_S`."""
    deadline = time.monotonic() + FENCE_S
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


@dataclass
class Runner:
    config: Config
    run: dict[str, Any]
    folder: Path
    processes: dict[int, subprocess.Popen[str]] = field(default_factory=dict)
    proxies: dict[str, Proxy] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    clock: Clock = field(default_factory=Clock)
    nemesis_lines: list[str] = field(default_factory=list)
    lives: dict[int, int] = field(default_factory=dict)
    kills: int = 0
    wipes: int = 0
    partitions: int = 0
    stopped: bool = False  # `_run` has killed the sites (Ctrl-C): a site started now is not
    out: str = ""  # DIR as the user named it (`folder` is where it is built)

    def spawn(self, site: int, mode: str = "") -> int:
        command = [sys.executable, "-m", "conformance.live.site",
                   str(self.folder / "run.json"), str(site)]  # fmt: skip
        if mode:
            command.append(mode)
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,  # Ctrl-C reaches this process only: it stops them
        )  # fmt: skip
        self.processes[site] = process
        if self.stopped and process.poll() is None:  # started by a thread of `to_thread`
            os.killpg(process.pid, signal.SIGKILL)  # after `_run` killed the others
            process.wait()
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise self.failure(site, line) or WanconformError(
                f"live: site {site} did not start (exit {process.wait()})"
            )
        return int(line.split()[1])

    def failure(self, site: int, said: str = "") -> WanconformError | None:
        """What a site that ended said it could not write (`said`: its stdout read so
        far), as the error of the run; None if it said nothing of the kind."""
        process = self.processes[site]
        process.wait()
        if process.stdout is not None:
            said += process.stdout.read()
        for line in said.splitlines():
            if line.startswith(FAILED):
                why = line.removeprefix(FAILED)
                return WanconformError(
                    f"{self.out or self.folder}: cannot write: {why} (site {site}; nothing written)"
                )
        return None

    def go(self, site: int, start: int, end: int, grace: int) -> None:
        process = self.processes[site]
        assert process.stdin is not None
        plan = {"proxies": {s.id: self.ports[s.id] for s in self.config.senders if s.site == site},
                "start": start, "end": end, "grace": grace,
                "life": self.lives.get(site, 0)}  # fmt: skip
        process.stdin.write(json.dumps(plan) + "\n")
        process.stdin.flush()

    def log(self, step: dict[str, Any]) -> None:
        t, at = self.clock.read()
        line = {"t": t, "at": at, **step, "observed": []}
        self.nemesis_lines.append(json.dumps(line, separators=COMPACT))

    def touching(self, site: int) -> list[Proxy]:
        return [p for p in self.proxies.values() if site in (p.site, p.remote)]

    async def kill(self, site: int) -> None:
        touching = self.touching(site)
        for proxy in touching:
            proxy.set_state(proxy.state, passing=False)
        # A sender told `hello` by the site's proxy logs its flush before it writes the
        # batch, and a batch the site sent is logged by its receiver before the ack:
        # wait for both (the site's own lines all come before its death).
        await until(lambda: not any((p.greeted and p.remote == site)
                                    or (p.unanswered and p.site == site)
                                    for p in touching))  # fmt: skip
        os.killpg(self.processes[site].pid, signal.SIGKILL)
        await asyncio.to_thread(self.processes[site].wait)
        self.log({"op": "site_down", "site": site})
        self.kills += 1
        for proxy in touching:
            if proxy.remote == site:
                proxy.set_state("down")
            proxy.cut_links()

    async def restart(self, site: int, wipe: bool, end: int, grace: int) -> None:
        self.lives[site] = self.lives.get(site, 0) + 1
        port = await asyncio.to_thread(self.spawn, site, "--recover-wiped" if wipe else "--recover")
        incoming = [p for p in self.proxies.values() if p.remote == site]
        for proxy in incoming:
            proxy.set_state("hold")
        # every connection failure given before is logged by its sender first
        await until(lambda: not any(p.refusing for p in incoming))
        self.log({"op": "site_up", "site": site, "wipe": wipe})
        self.wipes += wipe
        for proxy in self.touching(site):
            if proxy.remote == site:
                proxy.upstream = port
            proxy.set_state("up", passing=True)
        self.go(site, 0, end, grace)

    async def nemesis(self, kinds: list[str], start: int, end: int, grace: int) -> None:
        rng = random.Random(f"{self.run['seed']}:nemesis")
        sites = list(self.config.sites)
        while True:
            await asyncio.sleep(rng.uniform(0.8, 2.0))
            if time.time_ns() / 1e6 > end - 1500:
                return
            if "partition" in kinds and (kinds == ["partition"] or rng.random() < 0.3):
                proxy = self.proxies[rng.choice(sorted(self.proxies))]
                proxy.partitioned = True  # every frame lost, connections still made
                self.partitions += 1
                await asyncio.sleep(rng.uniform(0.3, 1.2))
                proxy.partitioned = False
                continue
            if "kill" not in kinds and "wipe" not in kinds:
                continue
            site = rng.choice(sites)
            await self.kill(site)
            await asyncio.sleep(rng.uniform(0.2, 0.8))
            wipe = "wipe" in kinds and ("kill" not in kinds or rng.random() < 0.5)
            await self.restart(site, wipe, end, grace)


async def _run(
    runner: Runner,
    duration_s: float,
    faults: Faults,
    nemesis: list[str],
    say: Any,
    progress: Callable[[int, int], None] | None,
) -> dict[str, Any]:
    config = runner.config
    (runner.folder / "run.json").write_text(json.dumps(runner.run))
    try:
        upstream = {site: await asyncio.to_thread(runner.spawn, site) for site in config.sites}
        servers = []
        for sender in config.senders:
            proxy = Proxy(sender.id, sender.site, sender.remote, upstream[sender.remote],
                          runner.run["seed"], faults)  # fmt: skip
            server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
            servers.append(server)
            runner.proxies[sender.id] = proxy
            runner.ports[sender.id] = server.sockets[0].getsockname()[1]
        start = time.time_ns() // 1_000_000 + START_DELAY_MS
        end = start + int(duration_s * 1000)
        grace = drain_ms(config)
        for site in config.sites:
            runner.go(site, start, end, grace)
        drain = f"+ {grace / 1000:g} s to drain"
        say(f"live: {plural(len(config.sites), 'site')} running for {duration_s:g} s ({drain})")
        chaos = None
        if nemesis:
            chaos = asyncio.create_task(runner.nemesis(nemesis, start, end, grace))
        deadline = time.monotonic() + (end + grace - time.time_ns() / 1e6) / 1000 + 30
        while (chaos is not None and not chaos.done()) or any(
            p.poll() is None for p in runner.processes.values()
        ):
            if time.monotonic() > deadline:
                raise WanconformError("live: a site did not stop in time; it was killed")
            for site, process in list(runner.processes.items()):  # (a restart may add one)
                if process.poll() == 2 and (failure := runner.failure(site)) is not None:
                    raise failure  # at once: the run cannot be written whole
            if progress is not None:  # seconds of the run and its drain, from its start
                now_ms = time.time_ns() // 1_000_000
                progress(
                    max(0, min(now_ms, end + grace) - start) // 1000, (end + grace - start) // 1000
                )
            await asyncio.sleep(0.2)
        if progress is not None:  # the sites have stopped: the run and its drain are over
            progress((end + grace - start) // 1000, (end + grace - start) // 1000)
        if chaos is not None:
            chaos.result()
        for server in servers:
            server.close()
        failed = {site: p.returncode for site, p in runner.processes.items() if p.returncode}
        for site in failed:
            if (failure := runner.failure(site)) is not None:
                raise failure
        if failed:
            raise WanconformError(f"live: site processes failed: {failed}")
        return {
            sid: {"dropped": p.dropped, "duplicated": p.duplicated, "resets": p.resets}
            for sid, p in runner.proxies.items()
        }
    finally:
        stop_sites(runner)


def drain_ms(config: Config) -> int:
    """How long the sites keep dispatching after the load: every sender's ack timeout and
    retry interval, and 1 s."""
    return max((s.ack_timeout_ms + s.retry_interval_ms for s in config.senders), default=0) + 1000


def forwards_back(config: Config) -> bool:
    """Whether some site receives an event and has a sender to a site that has it (its
    origin or one of its recipients, which R22 skips): what `forward_to_origin` changes.
    Followed from every origin along the senders, the recipients as R22 grows them."""
    remotes = {site: {s.remote for s in config.senders if s.site == site} for site in config.sites}
    for origin in config.sites:
        start = frozenset({origin, *remotes[origin]})
        todo = [(site, start) for site in remotes[origin]]
        seen = set(todo)
        while todo:
            site, received = todo.pop()
            for remote in remotes[site]:
                if remote in received:
                    return True
                state = (remote, received | remotes[site])
                if state not in seen:
                    seen.add(state)
                    todo.append(state)
    return False


def unrevealed(
    bug: str, config: Config, load: dict[str, Any], faults: Faults, nemesis: list[str]
) -> str | None:
    """What the run lacks for `bug` to change a line of its logs (so that validate could
    find it), or None."""
    senders = config.senders
    if not senders:
        return "a sender, and the configuration has none"
    if bug == "wrong_flush" and all(s.batch_size < 2 for s in senders):
        return "a sender with batch_size 2 or more (a flush of two or more events takes one fewer)"
    if bug == "forward_to_origin" and not forwards_back(config):
        return (
            "a site that receives an event and has a sender to a site that already has it "
            "(R22 skips that one): two sites both ways, or a ring"
        )
    if bug == "resend_without_possible_duplicate" and not (faults.drop or faults.reset or nemesis):
        return "a timeout to resend after: give --drop, --reset or --nemesis"
    if bug == "cursor_reset" and not any(
        s.parallel and config.buckets(s.site) > s.dispatcher_threads for s in senders
    ):
        return "a parallel sender with more buckets than dispatcher_threads (R31's cursor)"
    if bug == "dead_letter_after_ack" and not (
        load.get("fail")
        and any(
            s.failure_listener == "dlq" and config.receiver(s.remote).retry_attempts in (0, 1, 2)
            for s in senders
        )
    ):
        return (
            '--fail, and a sender with failure_listener "dlq" whose remote\'s receiver has '
            "retry_attempts 0, 1 or 2 (an injected failure lasts 1-3 attempts, R16.2)"
        )
    if bug == "conflate_in_flight" and not any(s.enable_batch_conflation for s in senders):
        return "a sender with enable_batch_conflation (R32)"
    if bug == "apply_duplicate_batch" and not faults.duplicate:
        return "a batch passed twice: give --duplicate"
    return None


def stop_sites(runner: Runner) -> None:
    """Kill every site still running (the run's end, an error, Ctrl-C). Ctrl-C again (or
    a second SIGINT) meanwhile is held until they are dead, then raised: it broke off the
    loop, and a site ran on after the command, its traceback after "interrupted" (as
    `conformance.spark.glue` holds it while its JVM starts)."""
    pressed: list[int] = []
    held = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda sig, _: pressed.append(sig)) if held else None
    try:
        runner.stopped = True
        for process in list(runner.processes.values()):  # (a spawning thread may add one)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    finally:
        if held:
            signal.signal(signal.SIGINT, previous or signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt


def live(
    config: Config,
    raw_config: dict[str, Any],
    out: Path,
    duration_s: float,
    seed: int,
    load: dict[str, Any],
    faults: Faults,
    nemesis: list[str],
    bug: str | None,
    say: Any,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the sites (`load`: the client load's `rate`, `keys` and `fail`); DIR gets
    their logs, their dead-letter stores, the nemesis's log and `live.json` (the run's
    record), whole at the end (`building_directory`). `progress(seconds, of)`: now and
    then while it runs."""
    if bug is not None and bug not in BUGS:
        raise WanconformError(f"--bug: unknown bug {bug!r} (one of {', '.join(BUGS)})")
    if "" in nemesis:  # "kill,", ",kill", "kill,,wipe"
        raise WanconformError(
            f"--nemesis: an empty name (one or more of {', '.join(NEMESES)}, separated by "
            "single commas)"
        )
    unknown = [kind for kind in nemesis if kind not in NEMESES]
    if unknown:
        raise WanconformError(
            f"--nemesis: unknown {unknown[0]!r} (one or more of {', '.join(NEMESES)}, "
            "separated by commas)"
        )
    twice = [kind for index, kind in enumerate(nemesis) if kind in nemesis[:index]]
    if twice:
        raise WanconformError(f"--nemesis: {twice[0]!r} given twice")
    lacking = None if bug is None else unrevealed(bug, config, load, faults, nemesis)
    if lacking is not None:
        raise WanconformError(
            f"--bug {bug}: cannot show in this run, and validate would find nothing: it "
            f"needs {lacking}"
        )
    if "partition" in nemesis and not config.senders:
        raise WanconformError(
            "--nemesis: partition cuts a sender off from its remote, and the configuration "
            "has no sender; leave partition out"
        )
    if drain_ms(config) > MAX_DRAIN_S * 1000:
        sender = max(config.senders, key=lambda s: s.ack_timeout_ms + s.retry_interval_ms)
        raise WanconformError(
            f"live: sender {sender.id}'s ack_timeout_ms + retry_interval_ms is "
            f"{sender.ack_timeout_ms + sender.retry_interval_ms:,} ms, and the sites dispatch "
            f"that long (+ 1 s) after the load to drain: at most {MAX_DRAIN_S:,} s in all; "
            "lower them for a live run"
        )
    hasty = min(config.senders, key=lambda s: s.ack_timeout_ms, default=None)
    if hasty is not None and hasty.ack_timeout_ms < MIN_ACK_TIMEOUT_MS:
        raise WanconformError(
            f"live: sender {hasty.id}'s ack_timeout_ms is {hasty.ack_timeout_ms}: at least "
            f"{MIN_ACK_TIMEOUT_MS} for a live run (a batch takes real time to cross and be "
            "applied; one applied after its sender timed it out would be a disagreement the "
            "system did not cause)"
        )
    slowest = min((s.ack_timeout_ms for s in config.senders), default=None)
    if slowest is not None and 4 * faults.delay_ms >= slowest:
        raise WanconformError(
            f"--delay: {faults.delay_ms} ms: keep it below a quarter of the smallest "
            f"ack_timeout_ms ({slowest}): R20 takes a timed-out batch out of the network, so "
            "a batch or ack delayed past the timeout would be a disagreement the system did "
            "not cause"
        )
    try:  # its own files (the sites say theirs: `Runner.failure`), a full disk
        with building_directory(out) as work:
            run = {"config": raw_config, "seed": seed, **load, "bug": bug}
            runner = Runner(config, run, work, out=str(out))
            done = asyncio.run(_run(runner, duration_s, faults, nemesis, say, progress))
            (work / "run.json").unlink()
            for path in work.glob("*.wipes"):  # the sites' own notes (conformance.live.site)
                path.unlink()
            checks = []  # each recovery's persistent queues against the site's log
            for path in sorted(work.glob("*.stores")):
                checks += [json.loads(line) for line in path.read_text().splitlines()]
                path.unlink()
            if nemesis:
                header = {"log": "events", "version": 1, "process": "nemesis", "config": raw_config}
                lines = [json.dumps(header, separators=COMPACT), *runner.nemesis_lines]
                (work / "nemesis.jsonl").write_text("".join(line + "\n" for line in lines))
            lines_of = {p.name: sum(1 for _ in p.open()) - 1 for p in sorted(work.glob("*.jsonl"))}
            record = {**run, "duration_s": duration_s, **asdict(faults),
                      "nemesis": nemesis, "kills": runner.kills, "wipes": runner.wipes,
                      "partitions": runner.partitions, "lines": lines_of,
                      "dropped": {sid: d["dropped"] for sid, d in done.items()},
                      "duplicated": {sid: d["duplicated"] for sid, d in done.items()},
                      "resets": {sid: d["resets"] for sid, d in done.items()}}  # fmt: skip
            if checks:
                record["queue_stores"] = {
                    "recoveries": len(checks),
                    "exact": sum(c["exact"] for c in checks),
                    "behind": sum(c["behind"] for c in checks),
                    "lost": [q for c in checks for q in c["lost"]],
                }
            (work / LIVE_MARKER).write_text(json.dumps(record, indent=2) + "\n")
            return record
    except OSError as exc:
        raise WanconformError(
            f"{out}: cannot write: {exc.strerror or exc} (nothing written)"
        ) from None
