"""EventLoopThreadPool: event loops in threads of this process.

Each worker thread runs its own loop (``ferroloop.new_event_loop`` unless
``loop_factory`` says otherwise). :meth:`~EventLoopThreadPool.submit` is
native (see ``loop-py/src/toolkit/pool.rs``): the job goes straight to the
least busy worker loop (or the pinned one) through that loop's door, runs
in a copy of the caller's context, and its outcome comes back to the
caller's future the same way. Cancelling that future cancels the job.
This module starts and stops the threads.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .. import _native
from .._policy import new_event_loop
from ._cancel import CancelScope

__all__ = ["EventLoopThreadPool", "PoolOptions", "create_pool", "run_in_pool"]

# How long close() waits for submitted work before stopping the loops.
_DRAIN_TIMEOUT = 2.5
# How long close() and abort() wait for a worker thread to end.
_JOIN_TIMEOUT = 5.0


class PoolOptions:
    """Defaults for :class:`EventLoopThreadPool` (``num_threads=0``: one
    per CPU)."""

    __slots__ = ("loop_factory", "num_threads")

    def __init__(
        self,
        num_threads: int = 0,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    ) -> None:
        self.num_threads = num_threads
        self.loop_factory = loop_factory

    def __repr__(self) -> str:
        return f"PoolOptions(num_threads={self.num_threads!r}, loop_factory={self.loop_factory!r})"


async def _run_in_scope(scope: CancelScope, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A job submitted with ``cancel_scope``: run inside it; a cancelled
    scope gives the caller ``CancelledError``."""
    async with scope:
        if asyncio.iscoroutine(target):
            result = await target
        elif callable(target):
            result = target(*args, **kwargs)
            if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                result = await result
        else:
            result = target
    if scope.cancel_called:
        raise asyncio.CancelledError
    return result


def _finish_loop(loop: asyncio.AbstractEventLoop) -> None:
    """After ``run_forever``: cancel what still runs, let it end (its
    callers are told), then close the loop (jobs never started are told
    the pool closed)."""
    for _ in range(10):
        tasks = asyncio.all_tasks(loop)
        if not tasks:
            break
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(asyncio.sleep(0))
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class EventLoopThreadPool(_native.PoolCore):
    """A pool of event loops, one per thread.

    ``async with EventLoopThreadPool(num_threads=4) as pool:`` starts it and
    closes it; ``pool.submit(fn, *args)`` runs ``fn`` (a coroutine function,
    a plain function, or a coroutine object) on a worker loop and returns an
    ``asyncio.Future`` on the caller's loop, already scheduled.
    """

    def __init__(
        self,
        options: PoolOptions | None = None,
        num_threads: int | None = None,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    ) -> None:
        if options is not None:
            num_threads = options.num_threads if num_threads is None else num_threads
            loop_factory = options.loop_factory if loop_factory is None else loop_factory
        if num_threads is not None and num_threads < 0:
            raise ValueError("num_threads must not be negative")
        self.num_threads: int = num_threads or os.cpu_count() or 4
        self._loop_factory = loop_factory or new_event_loop
        self._lock = threading.Lock()
        self._state = "new"
        self._threads: list[threading.Thread] = []
        self._stopped = _native.Event()

    def __repr__(self) -> str:
        return f"<EventLoopThreadPool running={self.is_running} threads={self.num_threads} metrics={self.get_metrics()}>"

    @property
    def is_running(self) -> bool:
        with self._lock:
            return self._state == "running"

    def get_metrics(self) -> dict[str, Any]:
        """Per worker: jobs running or queued (``active_tasks``), finished
        (``completed_tasks``) and submitted (``submitted_tasks``)."""
        counts = self._worker_counts()
        return {
            "is_running": self.is_running,
            "thread_count": self.num_threads,
            "active_tasks": [c[0] for c in counts],
            "completed_tasks": [c[1] for c in counts],
            "submitted_tasks": [c[2] for c in counts],
        }

    def _get_loop(self, index: int) -> asyncio.AbstractEventLoop:
        loops = self._loops()
        if not self.is_running or not 0 <= index < len(loops):
            raise RuntimeError("pool is not running")
        return loops[index]

    def _worker_main(self, index: int, ready: Any) -> None:
        loop = self._loop_factory()
        asyncio.set_event_loop(loop)
        try:
            self._register(index, loop)
            loop.call_soon(ready.done)
            loop.run_forever()
        finally:
            _finish_loop(loop)
            asyncio.set_event_loop(None)

    async def start(self) -> None:
        """Start the worker threads and wait until each runs its loop."""
        with self._lock:
            if self._state == "running":
                return
            if self._state != "new":
                raise RuntimeError("pool cannot be restarted after close()")
            self._state = "running"
        self._prepare(self.num_threads)
        ready = _native.WaitGroupCore()
        ready.add(self.num_threads)
        for index in range(self.num_threads):
            thread = threading.Thread(
                target=self._worker_main,
                args=(index, ready),
                name=f"EventLoopThread-{index}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()
        await ready.wait()
        self._accept(True)

    async def _stop(self, drain_timeout: float | None) -> None:
        with self._lock:
            if self._state != "running":
                if self._state == "new":
                    self._state = "closed"
                    self._stopped.set()
                return
            self._state = "closing"
        self._accept(False)
        if drain_timeout is not None and self._outstanding:
            try:
                async with asyncio.timeout(drain_timeout):
                    await self._drained()
            except TimeoutError:
                pass
        self._retire()
        for loop in self._loops():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass
        threads, self._threads = self._threads, []
        await asyncio.to_thread(lambda: [t.join(_JOIN_TIMEOUT) for t in threads])
        self._clear_workers()
        with self._lock:
            self._state = "closed"
        self._stopped.set()

    async def close(self, timeout: float | None = None) -> None:
        """Stop taking work, wait up to ``timeout`` seconds (default 2.5)
        for what was submitted, then stop the loops: jobs still running are
        cancelled (their callers get ``CancelledError``), jobs not started
        end with :class:`ThreadPoolClosedError`. Idempotent."""
        await self._stop(_DRAIN_TIMEOUT if timeout is None else timeout)

    async def abort(self) -> None:
        """Stop at once, without waiting for submitted work."""
        await self._stop(None)

    async def wait_closed(self) -> None:
        """Wait until the pool has stopped (at once if it never started)."""
        with self._lock:
            if self._state == "new":
                return
        await self._stopped.wait()

    async def __aenter__(self) -> EventLoopThreadPool:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def submit_many(
        self, targets: Iterable[Callable[..., Any] | Any], cancel_scope: CancelScope | None = None
    ) -> list[asyncio.Future[Any]]:
        """``submit`` each target (no arguments); their futures, in order."""
        return [self.submit(target, cancel_scope=cancel_scope) for target in targets]


async def create_pool(num_threads: int = 0, options: PoolOptions | None = None, **kwargs: Any) -> EventLoopThreadPool:
    """A started pool (close it, or use it with ``async with``)."""
    pool = EventLoopThreadPool(num_threads=num_threads, options=options, **kwargs)
    await pool.start()
    return pool


async def run_in_pool(coro: Any, *args: Any, num_threads: int = 0, **kwargs: Any) -> Any:
    """Run one job in a pool of its own, then close the pool."""
    pool = EventLoopThreadPool(num_threads=num_threads)
    await pool.start()
    try:
        return await pool.submit(coro, *args, **kwargs)
    finally:
        await pool.close()
