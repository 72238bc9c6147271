"""TaskGroup: structured concurrency (a nursery), multiloop's flavour.

The group lives on one loop (the one that entered it). Its children are
tasks on that loop, or, with ``pool=``, jobs on the pool's loops (each in
a child :class:`CancelScope`). Leaving the block waits for every child;
the first child failure cancels the others; failures come out alone (one)
or as a ``BaseExceptionGroup``; children cancelled by the group or by
``cancel_all()`` are not errors. A cancelled host cancels the children and
still waits for them before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import TYPE_CHECKING, Any

from .. import _native
from ._cancel import CancelScope
from ._sync import CapacityLimiter

if TYPE_CHECKING:
    from .pool import EventLoopThreadPool

__all__ = ["TaskGroup", "TaskHandle", "TaskStatus"]


class _TaskStatus(enum.Enum):
    PENDING = 0
    STARTED = 1
    FINISHED = 2


class TaskStatus:
    """Given to a child started with :meth:`TaskGroup.start`; the child
    calls :meth:`started` once it is ready (from any thread)."""

    def __init__(self) -> None:
        self._started = _native.Event()
        self._called = False

    def started(self) -> None:
        self._called = True
        self._started.set()


class TaskHandle:
    """A child of a :class:`TaskGroup`; ``await handle`` gives its result."""

    def __init__(self, task: asyncio.Future[Any]) -> None:
        self._task = task
        self._start_event: Any = None

    @property
    def status(self) -> _TaskStatus:
        if self._task.done():
            return _TaskStatus.FINISHED
        if self._start_event is not None and self._start_event.is_set():
            return _TaskStatus.STARTED
        return _TaskStatus.PENDING

    @property
    def result(self) -> Any:
        if not self._task.done():
            raise RuntimeError("Task is not finished")
        if self._task.cancelled():
            raise asyncio.CancelledError
        return self._task.result()

    @property
    def exception(self) -> BaseException | None:
        if not self._task.done():
            raise RuntimeError("Task is not finished")
        if self._task.cancelled():
            return asyncio.CancelledError()
        return self._task.exception()

    def __await__(self) -> Any:
        return self._task.__await__()


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _cancel_tasks(tasks: list[asyncio.Future[Any]], scopes: list[CancelScope]) -> None:
    for task in tasks:
        if isinstance(task, asyncio.Task):
            task.cancel()
    for scope in scopes:
        scope.cancel()


class TaskGroup:
    def __init__(
        self,
        name: str | None = None,
        max_concurrency: int | None = None,
        limiter: CapacityLimiter | None = None,
        pool: EventLoopThreadPool | None = None,
    ) -> None:
        if max_concurrency is not None and max_concurrency <= 0:
            raise ValueError("max_concurrency must be >= 1")
        if max_concurrency is not None and limiter is not None:
            raise ValueError("Cannot pass both max_concurrency and limiter")
        self._name = name
        self._pool = pool
        self._limiter = limiter if limiter is not None else (
            CapacityLimiter(max_concurrency) if max_concurrency is not None else None
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()
        self._children: set[TaskHandle] = set()
        self._child_scopes: set[CancelScope] = set()
        self._consumed: set[asyncio.Future[Any]] = set()
        self._scope = CancelScope()
        self._exited = False

    def __repr__(self) -> str:
        return f"<TaskGroup name={self._name!r} children={len(self._children)}>"

    def _live(self) -> tuple[list[asyncio.Future[Any]], list[CancelScope]]:
        with self._guard:
            return [h._task for h in self._children if not h._task.done()], list(self._child_scopes)

    async def __aenter__(self) -> TaskGroup:
        if self._scope.cancel_called:
            raise RuntimeError("TaskGroup is not reusable after failure")
        self._loop = asyncio.get_running_loop()
        with self._guard:
            if self._exited:
                self._children.clear()
                self._consumed.clear()
                self._child_scopes.clear()
            self._exited = False
        await self._scope.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool | None:
        try:
            return await self._exit(exc_type, exc, tb)
        finally:
            with self._guard:
                self._exited = True
            self._loop = None

    async def _exit(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool | None:
        cancelled_by_us: set[asyncio.Future[Any]] = set()
        if exc is not None:
            tasks, scopes = self._live()
            _cancel_tasks(tasks, scopes)
            cancelled_by_us.update(tasks)
        try:
            errors = await self._wait_children(cancelled_by_us)
        except BaseException:
            # The host was cancelled while waiting: cancel the children,
            # wait for them all the same, then let the cancellation go on.
            with self._guard:
                self._exited = True
            tasks, scopes = self._live()
            _cancel_tasks(tasks, scopes)
            await self._drain(tasks)
            raise
        with self._guard:
            self._exited = True
        if isinstance(exc, asyncio.CancelledError):
            await self._scope.__aexit__(exc_type, exc, tb)
            return None
        if not errors:
            return await self._scope.__aexit__(exc_type, exc, tb)
        if exc is None and all(isinstance(e, asyncio.CancelledError) for e in errors):
            await self._scope.__aexit__(None, None, tb)
            if len(errors) == 1:
                raise errors[0]
            raise BaseExceptionGroup("taskgroup soft exit", errors)
        self._scope._mark_cancelled()
        await self._scope.__aexit__(exc_type, exc, tb)
        everything = ([exc] if exc is not None else []) + errors
        if len(everything) == 1:
            raise everything[0]
        raise BaseExceptionGroup("taskgroup crashed", everything)

    async def _wait_children(self, cancelled_by_us: set[asyncio.Future[Any]]) -> list[BaseException]:
        """Wait for every child (also those started meanwhile); the first
        real failure cancels the rest. The failures, in order."""
        errors: list[BaseException] = []
        seen: set[asyncio.Future[Any]] = set()
        pending: set[asyncio.Future[Any]] = set()
        crashed = False

        def cancel_rest() -> None:
            nonlocal crashed
            crashed = True
            with self._guard:
                scopes = list(self._child_scopes)
            _cancel_tasks(list(pending), scopes)
            cancelled_by_us.update(pending)
            self._scope._mark_cancelled()

        def collect(task: asyncio.Future[Any]) -> None:
            with self._guard:
                if task in self._consumed:
                    return
            if task.cancelled():
                error: BaseException = asyncio.CancelledError()
            else:
                error_or_none = task.exception()
                if error_or_none is None:
                    return
                error = error_or_none
            cancelling = getattr(task, "cancelling", lambda: 0)()
            if isinstance(error, asyncio.CancelledError) and (task in cancelled_by_us or cancelling > 0):
                return
            errors.append(error)
            if not crashed:
                cancel_rest()

        def take_in() -> None:
            if self._scope.cancel_called and not crashed:
                cancel_rest()
            with self._guard:
                children = [h._task for h in self._children]
            for task in children:
                if task in seen or task in pending:
                    continue
                if task.done():
                    seen.add(task)
                    collect(task)
                    continue
                if crashed:
                    _cancel_tasks([task], [])
                    cancelled_by_us.add(task)
                pending.add(task)

        async with CancelScope(shield=True):
            while True:
                take_in()
                if not pending:
                    return errors
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    seen.add(task)
                    collect(task)

    @staticmethod
    async def _drain(tasks: list[asyncio.Future[Any]]) -> None:
        pending = {t for t in tasks if not t.done()}
        while pending:
            try:
                done, pending = await asyncio.wait(pending)
            except asyncio.CancelledError:
                continue
            for task in done:
                _retrieve(task)

    def _check_loop(self) -> None:
        if self._loop is not None and asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                "TaskGroup is physically scoped to a single event loop and cannot spawn tasks "
                "from a foreign event loop or thread. Use EventLoopThreadPool for cross-loop tasks."
            )

    def _child_scope(self) -> CancelScope:
        scope = CancelScope()
        with self._guard:
            if self._scope.cancel_called:
                scope.cancel()
            self._child_scopes.add(scope)
        return scope

    def _limited(self, coro_fn: Any, *args: Any) -> Any:
        """``coro_fn(*args)`` (or a coroutine object) under the limiter."""
        limiter = self._limiter

        async def guarded() -> Any:
            assert limiter is not None
            async with limiter:
                if asyncio.iscoroutine(coro_fn):
                    return await coro_fn
                result = coro_fn(*args)
                if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                    return await result
                return result

        return guarded

    def _spawn(self, coro_fn: Any, args: tuple[Any, ...], what: str) -> TaskHandle:
        """A child running ``coro_fn(*args)``, tracked unless the group
        has exited (then cancelled, and RuntimeError)."""
        scope = None
        if self._pool is not None:
            scope = self._child_scope()
            if self._limiter is not None:
                future = self._pool.submit(self._limited(coro_fn, *args), cancel_scope=scope)
            elif asyncio.iscoroutine(coro_fn):
                future = self._pool.submit(coro_fn, cancel_scope=scope)
            else:
                future = self._pool.submit(coro_fn, *args, cancel_scope=scope)
            future.add_done_callback(lambda _f: self._forget_scope(scope))
        elif self._limiter is not None:
            future = asyncio.ensure_future(self._limited(coro_fn, *args)())
        else:
            future = asyncio.ensure_future(coro_fn if asyncio.iscoroutine(coro_fn) else coro_fn(*args))
        handle = TaskHandle(future)
        with self._guard:
            if self._exited:
                if scope is not None:
                    scope.cancel()
                future.cancel()
                future.add_done_callback(_retrieve)
                raise RuntimeError(f"TaskGroup is not active: cannot {what}() after the group exited")
            self._children.add(handle)
        return handle

    def _forget_scope(self, scope: CancelScope | None) -> None:
        with self._guard:
            self._child_scopes.discard(scope)  # type: ignore[arg-type]

    def start_soon(self, coro_fn: Any, *args: Any) -> TaskHandle:
        """Start ``coro_fn(*args)`` as a child; its handle at once."""
        self._check_loop()
        return self._spawn(coro_fn, args, "start_soon")

    async def start(self, coro_fn: Any, *args: Any) -> TaskHandle:
        """Start ``coro_fn(task_status, *args)`` as a child and wait until
        it calls ``task_status.started()``. A child that ends first: its
        exception here (or RuntimeError if it ended without one)."""
        self._check_loop()
        status = TaskStatus()
        handle = self._spawn(coro_fn, (status, *args), "start")
        handle._start_event = status._started
        future = handle._task
        future.add_done_callback(lambda _f: status._started.set())
        try:
            await status._started.wait()
        finally:
            if future.done():
                error: BaseException | None = None
                if future.cancelled():
                    if not status._called:
                        error = asyncio.CancelledError()
                elif future.exception() is not None:
                    error = future.exception()
                elif not status._called:
                    raise RuntimeError("Child exited without calling task_status.started()")
                if error is not None:
                    with self._guard:
                        self._consumed.add(future)
                        siblings = [h._task for h in self._children if h._task is not future and not h._task.done()]
                        scopes = list(self._child_scopes)
                    _cancel_tasks(siblings, scopes)
                    raise error
        return handle

    def cancel_all(self) -> None:
        """Cancel every child (from any thread)."""
        with self._guard:
            handles = list(self._children)
            scopes = list(self._child_scopes)
        for handle in handles:
            task = handle._task
            if isinstance(task, asyncio.Task):
                try:
                    task.get_loop().call_soon_threadsafe(task.cancel)
                except RuntimeError:
                    pass
        for scope in scopes:
            scope.cancel()
