"""More event loops in one process (`loops` above 1).

The `Server` a process runs (alone, or as a supervised worker) is the
primary: it binds (or is handed) the listeners, handles signals and talks to
a supervisor. `ExtraLoops` runs `loops - 1` more `Server`s, each on its own
ferroloop loop in its own thread, serving the same listening sockets (each
loop's poller watches them; an accept that loses the race just finds
nothing). Each runs the app's lifespan on its loop, as a worker process
would. The primary starts them once it listens, waits for each to start
(one that fails stops the process as a failing lifespan does), stops them
when it stops (draining as it drains), and adds their counters to its own.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from .. import _native


class ExtraLoops:
    """`count` more servers of class `server_class` (the plain `Server`,
    whatever subclass the primary is: signals, the pid file and the
    supervisor's channel are the primary's alone)."""

    def __init__(self, server_class: type, primary: Any, count: int) -> None:
        self._server_class = server_class
        self._primary = primary
        self._servers: list[Any] = []
        self._threads: list[threading.Thread] = []
        self._failures: list[BaseException] = []
        self._count = count
        self._ready = _native.WaitGroupCore()
        self._reported: set[int] = set()
        self._reported_lock = threading.Lock()

    def _report(self, index: int) -> None:
        """Loop `index` started, or failed before it could: once each."""
        with self._reported_lock:
            if index in self._reported:
                return
            self._reported.add(index)
        self._ready.done()

    async def start(self, sockets: list[Any]) -> None:
        """Start the extra loops on `sockets`; return once each serves, or
        raise the first one's failure (after stopping the others)."""
        from .._policy import run

        primary = self._primary
        primary_loop = asyncio.get_running_loop()
        self._ready.add(self._count)
        for index in range(1, self._count + 1):
            server = self._server_class(primary.config)
            server._extra_loop = True
            server._is_worker = True  # no "running on" line, pid file or metrics of its own
            server._on_started = lambda index=index: self._report(index)

            def limit_reached(limit: int, primary=primary) -> None:
                # The process's limit: the primary decides (or recycles).
                primary_loop.call_soon_threadsafe(primary._request_limit_reached, limit)

            server._request_limit_reached = limit_reached
            self._servers.append(server)

            def main(server: Any = server, index: int = index) -> None:
                try:
                    run(server.serve(sockets=sockets), backend=primary.config.backend)
                except BaseException as exc:  # noqa: BLE001 - reported to the primary
                    self._failures.append(exc)
                    self._report(index)

            thread = threading.Thread(target=main, name=f"ferroloop-loop-{index}", daemon=True)
            self._threads.append(thread)
            thread.start()
        await self._ready.wait()
        if self._failures:
            await self.stop_and_join(handover=False)
            raise self._failures[0]

    def stop(self, handover: bool) -> None:
        for server in self._servers:
            if handover:
                server.retire()
            else:
                server.should_exit = True

    async def join(self) -> None:
        threads = list(self._threads)
        await asyncio.to_thread(lambda: [t.join() for t in threads])

    async def stop_and_join(self, handover: bool) -> None:
        self.stop(handover)
        await self.join()

    def force_exit(self) -> None:
        for server in self._servers:
            server.force_exit = True

    def stats(self) -> list[dict[str, Any]]:
        return [server.stats() for server in self._servers if server.started]


def add_up(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """`total` with the numbers of `more` added in (nested dicts alike);
    anything else keeps `total`'s value."""
    for key, value in more.items():
        mine = total.get(key)
        if isinstance(value, dict) and isinstance(mine, dict):
            add_up(mine, value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(mine, (int, float)):
            total[key] = mine + value
        elif key not in total:
            total[key] = value
    return total

