"""Ctrl-C during `wanconform live`: the proxies' connections end quietly.

On Ctrl-C, `asyncio.run` cancels every task, among them a proxy's handler of a sender's
connection. Python 3.11's `start_server` then calls `task.exception()` on the cancelled
handler, which raises, and the event loop printed "Exception in callback" with three
tracebacks between the progress line and "wanconform: interrupted: nothing written".
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.live.run import Faults, Proxy, Runner, stop_sites
from conformance.live.wire import read_frame
from traces.config import parse_config
from traces.errors import WanconformError

CONFIG = {"sites": [1, 2], "senders": [{"id": "ny", "site": 1, "remote": 2, "batch_size": 2}]}


async def cancelled_mid_link() -> list[dict[str, Any]]:
    """Open a link through a proxy to a remote that never answers, cancel every task as
    `asyncio.run` does on Ctrl-C, and return what reached the loop's exception handler."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    held: list[asyncio.StreamWriter] = []  # a receiver that has not answered yet (no task)
    remote = await asyncio.start_server(lambda _r, w: held.append(w), "127.0.0.1", 0)
    proxy = Proxy("ny", 1, 2, remote.sockets[0].getsockname()[1], 0, Faults())
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    assert await read_frame(reader) == {"type": "hello"}  # the proxy holds a live link
    me = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not me]
    assert others, "the proxy's handler is running"
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    for _ in range(5):  # the done callbacks run on the next turns of the loop
        await asyncio.sleep(0)
    writer.close()
    server.close()
    remote.close()
    return reported


def test_a_cancelled_proxy_link_reports_nothing_to_the_event_loop() -> None:
    assert asyncio.run(cancelled_mid_link()) == []


# --- Ctrl-C while the sites are killed: none outlives the command ---


def sleeper() -> subprocess.Popen[str]:
    """A process in a session of its own, as `Runner.spawn` starts a site."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], text=True, start_new_session=True
    )


def test_a_second_sigint_while_the_sites_are_killed_is_held_until_every_site_is(
    tmp_path: Path,
) -> None:
    # (was: it broke off the loop after the first site, and the second ran on after
    # "interrupted", its traceback on the terminal when its plan never came)
    runner = Runner(parse_config(CONFIG), {}, tmp_path)
    runner.processes = {1: sleeper(), 2: sleeper()}
    first = runner.processes[1]
    waited = first.wait

    def wait_then_press(timeout: float | None = None) -> int:
        code = waited(timeout)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again, between the two kills
        return code

    first.wait = wait_then_press  # type: ignore[method-assign]
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            stop_sites(runner)
        assert [p.poll() for p in runner.processes.values()] == [-signal.SIGKILL] * 2
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        for process in runner.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_site_started_after_the_sites_were_killed_is_killed_at_once(tmp_path: Path) -> None:
    # a thread of `asyncio.to_thread` still starting a site when Ctrl-C stopped the others
    (tmp_path / "run.json").write_text(json.dumps({"config": CONFIG, "seed": 0}))
    runner = Runner(parse_config(CONFIG), {"config": CONFIG, "seed": 0}, tmp_path)
    runner.stopped = True
    with pytest.raises(WanconformError) as info:
        runner.spawn(1)
    assert str(info.value) == "live: site 1 did not start (exit -9)"
    assert runner.processes[1].returncode == -signal.SIGKILL
