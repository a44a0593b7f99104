"""Ctrl-C during `wanconform live`: the proxies' connections end quietly.

On Ctrl-C, `asyncio.run` cancels every task, among them a proxy's handler of a sender's
connection. Python 3.11's `start_server` then calls `task.exception()` on the cancelled
handler, which raises, and the event loop printed "Exception in callback" with three
tracebacks between the progress line and "wanconform: interrupted: nothing written".
"""

from __future__ import annotations

import asyncio
from typing import Any

from conformance.live.run import Faults, Proxy
from conformance.live.wire import read_frame


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
