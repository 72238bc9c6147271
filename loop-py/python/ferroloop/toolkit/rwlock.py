"""AsyncRWMutex: Go's ``sync.RWMutex`` for tasks on any loops.

Many readers at once, or one writer. Writers go first: once a writer waits,
new readers wait behind it, so a stream of readers cannot starve writers.
The state is kept under a ``threading.Lock``; each waiter waits on a native
:class:`~ferroloop.toolkit.Event`, set by whoever hands it the lock (from
any thread). A waiter handed the lock but cancelled before it ran hands it
on in turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from .. import _native

__all__ = ["AsyncRWMutex"]


class AsyncRWMutex:
    """``async with rw.reader():`` shares; ``async with rw.writer():`` is
    exclusive. ``reader()`` is re-entrant within a task; a task holding
    one side asking for ``writer()`` gets RuntimeError at once (it would
    deadlock)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._readers = 0
        self._writer = False
        self._read_waiters: list[Any] = []
        self._write_waiters: deque[Any] = deque()
        self._depth: dict[asyncio.Task[Any], int] = {}
        self._writer_task: asyncio.Task[Any] | None = None

    @property
    def _pending_writers(self) -> int:
        return len(self._write_waiters)

    def __repr__(self) -> str:
        return (
            f"<AsyncRWMutex readers={self._readers} writer={self._writer}"
            f" pending_writers={self._pending_writers}>"
        )

    def _hand_over(self) -> list[Any]:
        """Who may go now (under the guard): a waiting writer once no
        reader is left, else every waiting reader."""
        if self._writer:
            return []
        if self._write_waiters:
            if self._readers:
                return []
            self._writer = True
            return [self._write_waiters.popleft()]
        readers, self._read_waiters = self._read_waiters, []
        self._readers += len(readers)
        return readers

    def _wake(self, tokens: list[Any]) -> None:
        for token in tokens:
            token.set()

    @staticmethod
    def _task(what: str) -> asyncio.Task[Any]:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError(f"{what}() must be used inside an active asyncio task")
        return task

    @asynccontextmanager
    async def reader(self) -> AsyncGenerator[None]:
        task = self._task("reader")
        with self._guard:
            if self._writer_task is task:
                raise RuntimeError("AsyncRWMutex: reader() cannot be used while the same task holds writer()")
            depth = self._depth.get(task, 0)
            if depth:
                self._depth[task] = depth + 1
                token = None
            elif not self._writer and not self._write_waiters:
                self._readers += 1
                self._depth[task] = 1
                token = None
            else:
                token = _native.Event()
                self._read_waiters.append(token)
        if token is not None:
            try:
                await token.wait()
            except BaseException:
                with self._guard:
                    if token in self._read_waiters:
                        self._read_waiters.remove(token)
                        woken = []
                    else:  # handed the lock already: give it back
                        self._readers -= 1
                        woken = self._hand_over()
                self._wake(woken)
                raise
            with self._guard:
                self._depth[task] = 1
        try:
            yield
        finally:
            with self._guard:
                depth = self._depth.pop(task, 1) - 1
                woken = []
                if depth:
                    self._depth[task] = depth
                else:
                    self._readers -= 1
                    woken = self._hand_over()
            self._wake(woken)

    @asynccontextmanager
    async def writer(self) -> AsyncGenerator[None]:
        task = self._task("writer")
        with self._guard:
            if task in self._depth:
                raise RuntimeError("AsyncRWMutex: writer() cannot be used while the same task holds reader()")
            if self._writer_task is task:
                raise RuntimeError("AsyncRWMutex: writer() is not reentrant")
            if not self._writer and not self._readers and not self._write_waiters:
                self._writer = True
                token = None
            else:
                token = _native.Event()
                self._write_waiters.append(token)
        if token is not None:
            try:
                await token.wait()
            except BaseException:
                with self._guard:
                    if token in self._write_waiters:
                        self._write_waiters.remove(token)
                    else:  # handed the lock already: give it back
                        self._writer = False
                    woken = self._hand_over()
                self._wake(woken)
                raise
        with self._guard:
            self._writer_task = task
        try:
            yield
        finally:
            with self._guard:
                self._writer_task = None
                self._writer = False
                woken = self._hand_over()
            self._wake(woken)
