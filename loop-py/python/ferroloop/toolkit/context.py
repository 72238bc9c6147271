"""AsyncContext: Go's ``context.Context`` cancellation tree, across loops.

Cancelling a context (from any thread, or by leaving ``async with ctx``)
cancels its child contexts, the pool jobs submitted through it (each runs
in its own :class:`CancelScope`) and the task groups made from it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from ._cancel import CancelScope
from ._taskgroup import TaskGroup
from .pool import EventLoopThreadPool

__all__ = ["AsyncContext"]


class AsyncContext:
    def __init__(self, parent: AsyncContext | None = None) -> None:
        self._parent = parent
        self._guard = threading.Lock()
        self._cancelled = False
        self._children: set[AsyncContext] = set()
        self._futures: dict[asyncio.Future[Any], CancelScope] = {}
        self._task_groups: set[TaskGroup] = set()
        self._cancel_scope = CancelScope()
        if parent is not None:
            parent._adopt(self)

    def __repr__(self) -> str:
        return f"<AsyncContext cancelled={self.is_cancelled}>"

    @property
    def parent(self) -> AsyncContext | None:
        return self._parent

    @property
    def is_cancelled(self) -> bool:
        with self._guard:
            return self._cancelled

    def _adopt(self, child: AsyncContext) -> None:
        with self._guard:
            if not self._cancelled:
                self._children.add(child)
                return
        child.cancel()

    def _disown(self, child: AsyncContext) -> None:
        with self._guard:
            self._children.discard(child)

    def submit(self, pool: EventLoopThreadPool, target: Callable[..., Any] | Any, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """``pool.submit`` in a scope this context cancels."""
        with self._guard:
            if self._cancelled:
                future = asyncio.get_running_loop().create_future()
                future.cancel()
                return future
        scope = CancelScope()
        future = pool.submit(target, *args, cancel_scope=scope, **kwargs)
        with self._guard:
            cancelled = self._cancelled
            if not cancelled:
                self._futures[future] = scope
        if cancelled:  # cancel() ran while the job was being submitted
            scope.cancel()
            future.cancel()
        else:
            future.add_done_callback(self._forget)
        return future

    def _forget(self, future: asyncio.Future[Any]) -> None:
        with self._guard:
            self._futures.pop(future, None)

    def cancel(self) -> None:
        """Cancel this context and everything under it (idempotent)."""
        with self._guard:
            if self._cancelled:
                return
            self._cancelled = True
            children, self._children = list(self._children), set()
            futures, self._futures = dict(self._futures), {}
            groups, self._task_groups = list(self._task_groups), set()
        if self._parent is not None:
            self._parent._disown(self)
        self._cancel_scope.cancel()
        for group in groups:
            group.cancel_all()
        for child in children:
            child.cancel()
        for future, scope in futures.items():
            scope.cancel()
            if not future.done():
                try:
                    future.get_loop().call_soon_threadsafe(future.cancel)
                except RuntimeError:
                    pass

    def task_group(self, pool: EventLoopThreadPool | None = None, name: str | None = None, max_concurrency: int | None = None) -> TaskGroup:
        """A :class:`TaskGroup` whose children this context cancels."""
        group = TaskGroup(name=name, max_concurrency=max_concurrency, pool=pool)
        with self._guard:
            cancelled = self._cancelled
            if not cancelled:
                self._task_groups.add(group)
        if cancelled:
            group.cancel_all()
        return group

    async def __aenter__(self) -> AsyncContext:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.cancel()
